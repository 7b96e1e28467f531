import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import canonicalize from 'canonicalize';
import { ZERO_HASH, canonicalJson, hashBlock, inContractOrder, sealBlock } from '#shared/ledger/hashing';
import type { UnhashedBlock } from '#shared/ledger/types';

// The expected hashes below were computed outside this code base, with `printf '%s' '<json>' | sha256sum`
// over the canonical JSON written out by hand (keys sorted, no spaces): any client can do the same.
const BLOCK: UnhashedBlock = {
  index: 1,
  chain_name: 'orders',
  timestamp: 1763740800.123,
  previous_hash: ZERO_HASH,
  events: [
    {
      event_id: 'orders_1_0',
      chain_name: 'orders',
      block_index: 1,
      entity_id: 'pkg-17',
      event_type: 'shipped',
      details: { weight_kg: 2.5, carrier: 'ups' },
      details_cid: null,
      details_nonce: null,
      details_metadata: null,
      timestamp: 1763740800.123,
      is_offchain: false,
    },
  ],
};
const BLOCK_CANONICAL =
  '{"chain_name":"orders","events":[{"block_index":1,"chain_name":"orders","details":{"carrier":"ups","weight_kg":2.5},' +
  '"details_cid":null,"details_metadata":null,"details_nonce":null,"entity_id":"pkg-17","event_id":"orders_1_0",' +
  '"event_type":"shipped","is_offchain":false,"timestamp":1763740800.123}],"index":1,' +
  '"previous_hash":"0000000000000000000000000000000000000000000000000000000000000000","timestamp":1763740800.123}';
const BLOCK_HASH = '7c0a8ae7b6f29ab9d7080d3fe69e001401e50e7aaaca4265fc57c3f94864c9dc';

describe('Block hashing (docs/rules.md, "Chains and blocks": SHA-256 of RFC 8785 JSON without `hash`)', () => {
  it('writes the canonical JSON a client would write by hand', () => {
    assert.equal(canonicalJson(BLOCK), BLOCK_CANONICAL);
  });

  it('hashes a block to the hand-computed vector', () => {
    assert.equal(hashBlock(BLOCK), BLOCK_HASH);
  });

  it('hashes a genesis block to the hand-computed vector', () => {
    const genesis = { index: 0, chain_name: 'main', timestamp: 1763740800, previous_hash: ZERO_HASH, events: [] };
    assert.equal(hashBlock(genesis), '1b4256f8f77d0b1fdfb0ea7f815c5faa282b29bf7269884b0c09db9971547474');
  });

  it('ignores the hash field itself and the order of keys', () => {
    const sealed = sealBlock(BLOCK);
    assert.equal(sealed.hash, BLOCK_HASH);
    assert.equal(hashBlock(sealed), BLOCK_HASH);
    const reordered = JSON.parse(
      JSON.stringify({ events: BLOCK.events, timestamp: BLOCK.timestamp, previous_hash: ZERO_HASH, chain_name: 'orders', index: 1 }),
    );
    assert.equal(hashBlock(reordered), BLOCK_HASH);
  });

  it("keeps an erasable event's subject and sealed details in what is hashed and answered, and adds nothing to other events", () => {
    const sealed = sealBlock(BLOCK);
    assert.equal(sealed.hash, BLOCK_HASH, 'an event without a subject hashes as it always did');
    assert.ok(!('subject_id' in sealed.events[0]!) && !('details_sealed' in sealed.events[0]!));
    const erasable = { ...BLOCK, events: [{ ...BLOCK.events[0]!, details: {}, subject_id: 'alice', details_sealed: '{"ciphertext":"…"}' }] };
    const block = sealBlock(erasable);
    assert.deepEqual(inContractOrder(block).events[0]!.subject_id, 'alice');
    assert.equal(inContractOrder(block).events[0]!.details_sealed, '{"ciphertext":"…"}');
    assert.equal(hashBlock(block), block.hash);
    assert.notEqual(
      sealBlock({ ...erasable, events: [{ ...erasable.events[0]!, details_sealed: '{"ciphertext":"other"}' }] }).hash,
      block.hash,
      'the block commits to the ciphertext',
    );
  });

  it('changes when any hashed field changes', () => {
    const tampered = structuredClone(BLOCK);
    tampered.events[0]!.details.carrier = 'dhl';
    assert.notEqual(hashBlock(tampered), BLOCK_HASH);
  });

  it('refuses values with no canonical form instead of hashing something else', () => {
    assert.throws(() => canonicalJson({ x: Number.NaN }), TypeError);
    assert.throws(() => canonicalJson({ x: '\ud800' }), TypeError);
    // Lone surrogates anywhere: in a key, after plain text, a low one alone, a high one at the end.
    for (const bad of [{ 'k\udc00': 1 }, { x: ['plain text \udfff'] }, { x: 'a\ud83d' }]) assert.throws(() => canonicalJson(bad), TypeError);
    assert.throws(() => canonicalJson({ x: Number.POSITIVE_INFINITY }), TypeError);
  });

  it('refuses cycles and BigInt', () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    assert.throws(() => canonicalJson(cycle), TypeError);
    assert.throws(() => canonicalJson({ n: 1n }), TypeError);
  });

  it('writes numbers as RFC 8785 says (ECMAScript Number serialization)', () => {
    const cases: [number, string][] = [
      [4.5, '4.5'],
      [0.002, '0.002'],
      [1e-7, '1e-7'],
      [1e21, '1e+21'],
      [1e30, '1e+30'],
      [-0, '0'],
      [5e-324, '5e-324'],
      [333333333.3333333, '333333333.3333333'],
      // biome-ignore lint/correctness/noPrecisionLoss: the literal that cannot be a double is the case under test
      [9007199254740993, '9007199254740992'],
      [0.1 + 0.2, '0.30000000000000004'],
      [-1.7976931348623157e308, '-1.7976931348623157e+308'],
    ];
    for (const [value, text] of cases) assert.equal(canonicalJson(value), text, String(value));
  });

  it('agrees with the canonicalize library on 5 000 generated JSON values', () => {
    // A seeded generator: keys and strings that sort differently by code unit than by code point,
    // escapes, astral characters, odd numbers, nesting, and members JSON leaves out.
    let seed = 0x2545f491;
    const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const atoms = ['', 'a', 'B', 'é', '\u20ac', '\ud83d\ude00', '\ue000', '\u0000', '"', '\\', '\n', '\u2028', 'z'.repeat(40)];
    const text = () => Array.from({ length: Math.floor(rand() * 4) }, () => pick(atoms)).join('');
    // biome-ignore lint/suspicious/noApproximativeNumericConstant: a number near π, not π, is what is serialized
    const numbers = [0, -0, 1, -1, 0.5, 1e21, 1e-7, 123456789012, 3.14159, -2.5e-300, 1.7976931348623157e308, 5e-324];
    const value = (depth: number): unknown => {
      const r = rand();
      if (depth > 4 || r < 0.3) return pick<unknown>([null, true, false, pick(numbers), rand() * 1e6, text()]);
      if (r < 0.55) return Array.from({ length: Math.floor(rand() * 5) }, () => value(depth + 1));
      const object: Record<string, unknown> = {};
      for (let i = Math.floor(rand() * 6); i > 0; i -= 1) object[text()] = rand() < 0.05 ? undefined : value(depth + 1);
      return object;
    };
    for (let i = 0; i < 5_000; i += 1) {
      const v = value(0);
      assert.equal(canonicalJson(v), canonicalize(v), JSON.stringify(v));
    }
  });
});
