/**
 * Secure events (red team, 2026-12-07, time and replays). A nonce after a failed append is given back only when
 * nothing was appended: an append whose outcome is unknown (a 500 that may have landed) keeps it spent, or a relay's
 * retry lands the one signature twice. And the block records who signed the event, so that anyone can check it again
 * and tell it from a copy any writer of the chain could append.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, it } from 'node:test';
import { checkBlock } from '#client/blocks';
import { VerificationError } from '#client/errors';
import { createAdmin, secureEventMessage } from '#shared/admin/admin';
import { ChainNotFoundError, OutcomeUnknownError } from '#shared/errors';
import { buildBlocks } from '#shared/ledger/blocks';
import { signatureProblem } from '#shared/ledger/signed-events';
import type { Block } from '#shared/ledger/types';
import { checkPage } from '#shared/verify/pages';

const pair = generateKeyPairSync('ed25519');
const publicKey = pair.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');

/** An admin domain over a ledger whose appends fail as told, then land; its nonces in memory. */
function world(failures: Error[]) {
  const spent = new Set<string>();
  const landed: string[] = [];
  const admin = createAdmin({
    repository: {
      useNonce: async (signer: string, nonce: string) => !spent.has(`${signer} ${nonce}`) && Boolean(spent.add(`${signer} ${nonce}`)),
      releaseNonce: async (signer: string, nonce: string) => void spent.delete(`${signer} ${nonce}`),
    } as never,
    organizations: { getOrganization: async (org_id: string) => ({ org_id, name: org_id, public_key: publicKey }) as never },
    ledger: {
      appendEvent: async (chain: string, draft: { entity_id: string }) => {
        const failure = failures.shift();
        if (failure) throw failure;
        landed.push(draft.entity_id);
        return { event_id: `${chain}_${landed.length}_0`, block: { index: landed.length } };
      },
    } as never,
    access: { chain: async () => undefined } as never,
    sealer: undefined as never,
    identity: { kind: 'file', path: '/nonexistent/identity.json' },
    licenseKey: undefined,
    peerTimeoutMs: 1_000,
    apiKeyHeader: 'X-API-Key',
  });
  const fields = { entity_id: 'ship-9', event_type: 'cleared', details: { berth: 12 }, nonce: 'nonce-0001' };
  const body = { ...fields, org_id: 'port', signature: sign(null, secureEventMessage({ chain_name: 'gates', ...fields }), pair.privateKey).toString('hex') };
  return { admin, body, landed };
}

describe("a secure event's nonce after a failed append", () => {
  it('stays spent when the outcome is unknown: the retry is 409, the signature lands at most once', async () => {
    const { admin, body, landed } = world([new OutcomeUnknownError('gates')]);
    await assert.rejects(admin.secureEvent('gates', body), OutcomeUnknownError);
    await assert.rejects(admin.secureEvent('gates', body), /already used/);
    assert.deepEqual(landed, []);
  });

  it('stays spent after an error of no known kind (a bug, a crash of a dependency): the outcome is not known either', async () => {
    const { admin, body } = world([new TypeError('something broke')]);
    await assert.rejects(admin.secureEvent('gates', body), TypeError);
    await assert.rejects(admin.secureEvent('gates', body), /already used/);
  });

  it('is given back when nothing was appended (a chain that does not exist): the same body lands once it does', async () => {
    const { admin, body, landed } = world([new ChainNotFoundError('gates')]);
    await assert.rejects(admin.secureEvent('gates', body), ChainNotFoundError);
    const res = await admin.secureEvent('gates', body);
    assert.equal(res.verified, true);
    assert.deepEqual(landed, ['ship-9']);
  });
});

describe("a secure event's block", () => {
  /** What an organization signs: the event's fields (details_metadata and node_id when it names them) and a nonce. */
  interface Signed {
    entity_id: string;
    event_type: string;
    details: Record<string, unknown>;
    details_metadata?: Record<string, unknown>;
    node_id?: string;
    nonce: string;
  }
  /**
   * A block of one secure event on `chain` (gates), signed as the relay records it, sealed (hashed) like any block; its
   * stored signature, details or whole signed record replaced, or its details off chain, as a test asks.
   */
  function signedBlock(
    options: {
      chain?: string;
      fields?: Signed;
      signature?: string;
      details?: Record<string, unknown>;
      offChain?: boolean;
      salt?: string;
      record?: unknown;
    } = {},
  ): Block {
    const chain = options.chain ?? 'gates';
    const fields = options.fields ?? { entity_id: 'ship-9', event_type: 'cleared', details: { berth: 12 }, nonce: 'nonce-0001' };
    const signature = sign(null, secureEventMessage({ chain_name: chain, ...fields }), pair.privateKey).toString('hex');
    const record =
      'record' in options
        ? options.record
        : {
            org_id: 'port',
            public_key: publicKey,
            nonce: fields.nonce,
            ...(fields.node_id ? { node_id: fields.node_id } : {}),
            signature: options.signature ?? signature,
          };
    const [block] = buildBlocks(
      chain,
      { headIndex: 0, headHash: 'a'.repeat(64) },
      [
        {
          events: [
            {
              entity_id: fields.entity_id,
              event_type: fields.event_type,
              details: options.offChain ? {} : (options.details ?? fields.details),
              details_cid: options.offChain ? 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy' : null,
              details_nonce: options.offChain ? '00'.repeat(12) : null,
              details_metadata: fields.details_metadata ?? null,
              is_offchain: options.offChain === true,
              ...(options.salt ? { salt: options.salt } : {}),
              signed: record as never,
            },
          ],
        },
      ],
      () => 1_795_291_099,
    );
    return block!;
  }
  const flipped = (hex: string) => `${hex.slice(0, 10)}${hex[10] === '0' ? '1' : '0'}${hex.slice(11)}`;

  it('records who signed it, and its signature verifies again over the stored fields, for the node and for the client', () => {
    const block = signedBlock();
    assert.equal(block.events[0]!.signed?.org_id, 'port');
    assert.equal(signatureProblem(block), undefined);
    checkBlock(block as never, 'gates');
    assert.equal(checkPage([block], { chain: 'gates', offset: 1, size: 2, keepBlocks: false }).failure, undefined);
  });

  it('is refused by every verifier when its signature or its details were changed and the block hashed again (an operator, or a copy dressed as signed)', () => {
    const good = signedBlock().events[0]!.signed!.signature;
    for (const forged of [signedBlock({ signature: flipped(good) }), signedBlock({ details: { berth: 13 } })]) {
      assert.match(signatureProblem(forged) ?? '', /signature by 'port' does not verify with the key it names/);
      assert.throws(
        () => checkBlock(forged as never, 'gates'),
        (e: unknown) => e instanceof VerificationError && e.failure === 'event-signature',
      );
      assert.match(checkPage([forged], { chain: 'gates', offset: 1, size: 2, keepBlocks: false }).failure?.message ?? '', /does not verify/);
    }
  });

  it("verifies again an event signed with details_metadata and a node_id, on a channel's chain with its salt", () => {
    const block = signedBlock({
      chain: 'channel-deals',
      fields: {
        entity_id: 'deal-4',
        event_type: 'approved',
        details: { amount: 1e21, note: 'ü\u2028' },
        details_metadata: {},
        node_id: 'node-1',
        nonce: 'nonce-0002',
      },
      salt: '0f'.repeat(16),
    });
    // As a reader gets it: through JSON.
    const read = JSON.parse(JSON.stringify(block)) as Block;
    assert.equal(signatureProblem(read), undefined);
    checkBlock(read as never, 'channel-deals');
  });

  it('names a malformed signature record (null, a string, a number for a nonce) as one, in the node and the client, never a crash (a review)', () => {
    for (const malformed of [null, 'signed', { org_id: 'port', public_key: publicKey, nonce: 7, signature: '00' }]) {
      const block = signedBlock({ record: malformed });
      assert.match(signatureProblem(block) ?? '', /records a malformed signature/, JSON.stringify(malformed));
      assert.throws(
        () => checkBlock(block as never, 'gates'),
        (e: unknown) => e instanceof VerificationError && e.failure === 'event-signature',
        JSON.stringify(malformed),
      );
    }
  });

  it('leaves an event whose details went off chain unchecked (its signed details are in IPFS), not failed', () => {
    const block = signedBlock({ offChain: true });
    assert.equal(signatureProblem(block), undefined);
    checkBlock(block as never, 'gates');
  });
});
