/**
 * QLDB's hashing (shared/qldb/hashing.ts), checked against output not made by our code:
 *
 * - a real QLDB block: the BLOCK_SUMMARY and REVISION_DETAILS records of a QLDB stream kept as test fixtures by
 *   AWS's sample aws-samples/amazon-qldb-streams-dmv-sample-lambda-python (tests/unit/fixtures.py, commit
 *   d4c7d40; ledger vehicle-registration, block HbD9IggL584EPHmfwjmVz0/3, 2019-12-11). Every hash in it
 *   rebuilds: the revision's, its transaction's, the entries hash and the block hash. One edit in the fixture:
 *   its revision data says FirstName "Nova", while the block's own statement inserted 'Testing new 600'; the
 *   revision hash QLDB published is the hash of what was inserted, and here the data is that;
 * - a second real revision: GetRevision's answer kept as a test fixture by AWS's sample aws-samples/amazon-qldb-kvs-nodejs
 *   (test/sampleRevisionResponse.json, commit 9cb3323; block KLXwBc1ml2A4Yjc8jbFMX3/429, 2021-06-02), whose hash
 *   rebuilds from its metadata and data as they stand;
 * - the Ion project's Ion Hash vectors (ion-hash-test, shipped in the ion-hash-js package): the bytes an Ion
 *   value is hashed as, with an identity hasher, and MD5 digests.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import * as ion from 'ion-js';
import { cryptoHasherProvider, type Hasher, makeHashReader } from 'ion-hash-js';
import { blockHash, compareHashes, dot, ionHash, merkleRoot, revisionHash } from '#shared/qldb/hashing';
import { makeStrand } from '../support/qldb-journal.ts';
import { BLOCK } from '../support/qldb-real-block.ts';

const require = createRequire(import.meta.url);

/** The revision of aws-samples/amazon-qldb-kvs-nodejs's test/sampleRevisionResponse.json (its `Revision.IonText`), as QLDB answered it. */
const KVS_REVISION =
  '{blockAddress:{strandId:"KLXwBc1ml2A4Yjc8jbFMX3",sequenceNo:429},hash:{{DrFztoBrWKz+mCV+BnnMfEZRwfJcD+DNLRPLc16SidY=}},' +
  'data:{_key:"myKey1",_val:"MyValue1"},metadata:{id:"5vHoYG5m0OZCsqdYCs8XLH",version:13,txTime:2021-06-02T07:03:05.226Z,txId:"EVaGjT4dxspC4GUhHi4DDJ"}}';

describe('QLDB hashing, against a second real revision (another ledger, another year)', () => {
  it('rebuilds its hash from its metadata and data, and a changed value or version does not', () => {
    const revision = ion.load(KVS_REVISION)!;
    const published = Buffer.from(revision.get('hash')!.uInt8ArrayValue()!);
    assert.deepEqual(revisionHash(revision.get('metadata')!, revision.get('data')!), published);
    const changed = KVS_REVISION.replace('MyValue1', 'MyValue2');
    assert.notDeepEqual(revisionHash(ion.load(changed)!.get('metadata')!, ion.load(changed)!.get('data')!), published);
    const version = KVS_REVISION.replace('version:13', 'version:12');
    assert.notDeepEqual(revisionHash(ion.load(version)!.get('metadata')!, ion.load(version)!.get('data')!), published);
  });
});

describe('QLDB hashing, against a real QLDB block', () => {
  it("rebuilds the revision's hash from its metadata and data", () => {
    assert.deepEqual(revisionHash(BLOCK.revision.metadata, BLOCK.revision.data), BLOCK.revision.hash);
    // The fixture's edited data ("Nova") is not what QLDB hashed.
    assert.notDeepEqual(revisionHash(BLOCK.revision.metadata, BLOCK.revision.data.replace('Testing new 600', 'Nova')), BLOCK.revision.hash);
  });

  it("finds the transaction's hash and the revisions' root among the entries, and rebuilds the entries hash and the block hash", () => {
    const has = (h: Buffer) => BLOCK.entriesHashList.some((e) => e.equals(h));
    assert.ok(has(ionHash(BLOCK.transactionInfo)), 'the Ion hash of transactionInfo is in entriesHashList');
    assert.ok(has(merkleRoot([BLOCK.revision.hash])), "the revisions' Merkle root is in entriesHashList");
    assert.deepEqual(merkleRoot(BLOCK.entriesHashList), BLOCK.entriesHash);
    assert.deepEqual(blockHash(BLOCK.entriesHash, BLOCK.previousBlockHash), BLOCK.blockHash);
  });

  it('compares bytes as signed, from the last: unsigned order, or a left fold for the root, give other hashes', () => {
    // 0x80 is -128 signed, so it sorts before 0x01.
    assert.ok(compareHashes(Buffer.from([0x00, 0x80]), Buffer.from([0xff, 0x01])) < 0);
    assert.ok(compareHashes(Buffer.from([0x01, 0x00]), Buffer.from([0x00, 0x00])) > 0, 'the last byte ties, so the first decides');
    const unsigned = (a: Buffer, c: Buffer) => {
      const [x, y] = Buffer.compare(Buffer.from(a).reverse(), Buffer.from(c).reverse()) < 0 ? [a, c] : [c, a];
      return Buffer.concat([x, y]);
    };
    assert.notDeepEqual(createHash('sha256').update(unsigned(BLOCK.entriesHash, BLOCK.previousBlockHash)).digest(), BLOCK.blockHash);
    const fold = BLOCK.entriesHashList.reduce<Buffer>((acc, h) => dot(acc, h), Buffer.alloc(0));
    assert.notDeepEqual(fold, BLOCK.entriesHash);
  });

  it('a changed byte anywhere changes the hash it feeds', () => {
    const changed = Buffer.from(BLOCK.previousBlockHash);
    changed[31]! ^= 1;
    assert.notDeepEqual(blockHash(BLOCK.entriesHash, changed), BLOCK.blockHash);
    assert.notDeepEqual(revisionHash(BLOCK.revision.metadata.replace('version: 0', 'version: 1'), BLOCK.revision.data), BLOCK.revision.hash);
  });

  it('a Merkle root carries an odd last hash up unchanged; an empty list has an empty root', () => {
    const [a, b, c] = BLOCK.entriesHashList as [Buffer, Buffer, Buffer];
    assert.deepEqual(merkleRoot([a, b, c]), dot(dot(a, b), c));
    assert.deepEqual(merkleRoot([a]), a);
    assert.equal(merkleRoot([]).length, 0);
    assert.deepEqual(dot(Buffer.alloc(0), a), a);
  });
});

describe("QLDB hashing, against the Ion project's Ion Hash vectors", () => {
  it('hashes each vector value as the vectors say (identity hasher: the bytes; MD5: the digest)', () => {
    const file = join(dirname(require.resolve('ion-hash-js/package.json')), 'ion-hash-test', 'ion_hash_tests.ion');
    const reader = ion.makeReader(readFileSync(file, 'utf8'));
    const identity = (): Hasher => {
      let bytes: number[] = [];
      return {
        update: (b) => void bytes.push(...b),
        digest: () => {
          const out = Uint8Array.from(bytes);
          bytes = [];
          return out;
        },
      };
    };
    const counts = { vectors: 0, identity: 0, md5: 0 };
    const unreadable: string[] = [];
    while (reader.next() !== null) {
      counts.vectors += 1;
      reader.stepIn();
      let source: Uint8Array | undefined;
      let expect: ion.dom.Value | null = null;
      while (reader.next() !== null) {
        if (reader.fieldName() === 'ion') {
          try {
            const writer = ion.makeBinaryWriter();
            writer.writeValue(reader);
            writer.close();
            source = writer.getBytes();
          } catch (error) {
            // ion-js cannot read a symbol ID whose text is unknown ($0 and the like).
            unreadable.push((error as Error).message);
          }
        } else if (reader.fieldName() === '10n') {
          // The value given as Ion binary, without its version marker.
          const bytes: number[] = [];
          reader.stepIn();
          while (reader.next() !== null) bytes.push(Number(reader.numberValue()));
          reader.stepOut();
          source = Uint8Array.from([0xe0, 0x01, 0x00, 0xea, ...bytes]);
        } else if (reader.fieldName() === 'expect') expect = ion.load(reader);
      }
      reader.stepOut();
      if (!source || !expect) continue;
      for (const [kind, provider] of [
        ['identity', identity],
        ['md5', cryptoHasherProvider('md5')],
      ] as const) {
        const steps: ion.dom.Value | null = (expect as ion.dom.Value).get(kind);
        if (!steps) continue;
        const digests: ion.dom.Value[] = [...(steps as unknown as Iterable<ion.dom.Value>)].filter((v: ion.dom.Value) => v.getAnnotations().includes('digest'));
        if (digests.length === 0) continue;
        const want: Buffer = Buffer.from([...(digests.at(-1)! as unknown as Iterable<ion.dom.Value>)].map((v: ion.dom.Value) => Number(v.numberValue())));
        assert.deepEqual(ionHash(source, provider), want, `vector ${counts.vectors} (${kind}): ${ion.dumpText(ion.load(source)!)}`);
        counts[kind] += 1;
      }
    }
    assert.equal(counts.vectors, 137);
    assert.ok(counts.identity >= 130 && counts.md5 >= 3, JSON.stringify(counts));
    assert.ok(unreadable.length <= 3 && unreadable.every((m) => /symbol/i.test(m)), unreadable.join('; '));
  });
});

describe('QLDB hashing, against ion-hash-js', () => {
  it("hashes every value of a generated journal (blocks, transactions, revisions' metadata and data) as the Ion project's own implementation does", () => {
    const reference = (value: ion.dom.Value) => {
      const reader = makeHashReader(ion.makeReader(ion.dumpBinary(value)), cryptoHasherProvider('sha256'));
      reader.next();
      reader.next();
      return Buffer.from(reader.digest());
    };
    let compared = 0;
    for (const block of makeStrand({ count: 12, revisionsPerBlock: 4, mixed: true })) {
      const value = ion.load(block.ion)!;
      const values = [
        value,
        value.get('transactionInfo')!,
        ...[...(value.get('revisions') as unknown as Iterable<ion.dom.Value>)].flatMap((r) => [r.get('metadata'), r.get('data')].filter((v) => v !== null)),
      ];
      for (const v of values) {
        assert.deepEqual(ionHash(v), reference(v), ion.dumpText(v));
        compared += 1;
      }
    }
    assert.ok(compared > 100, String(compared));
  });

  it('hashes random Ion values of every type as ion-hash-js does (a property over 2,000 seeded values)', () => {
    // Every Ion type and the edges QLDB documents can hold: typed nulls, big and negative ints, nan and the infinities,
    // negative zeros, decimals with exponents and trailing zeros, timestamps at every precision and offset (the
    // unknown one included), astral characters, symbols, blobs, clobs, s-expressions, annotations, structs with a
    // repeated field name, nested a few levels. One seeded generator: a failure prints its value, and repeats.
    let state = 0x9e3779b9;
    const random = () => {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = Math.imul(state ^ (state >>> 15), state | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const digits = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 10)).join('');
    /** An integer's digits: no leading zero (Ion text refuses one), n of them at least one. */
    const whole = (n: number) => `${1 + Math.floor(random() * 9)}${digits(Math.max(0, n - 1))}`;
    const text = () => pick(['', 'a', 'Oslo', 'é', '€ 42.50', '😀', 'line\\nbreak', 'quote\\"d', '\\u0000', 'x'.repeat(40)]);
    const scalar = (): string =>
      pick<() => string>([
        () =>
          pick([
            'null',
            'null.null',
            'null.bool',
            'null.int',
            'null.float',
            'null.decimal',
            'null.timestamp',
            'null.string',
            'null.symbol',
            'null.blob',
            'null.clob',
            'null.list',
            'null.sexp',
            'null.struct',
          ]),
        () => pick(['true', 'false']),
        () =>
          pick(['0', '-1', '1', '127', '-128', '18446744073709551616', '-18446744073709551617', `${pick(['', '-'])}${whole(1 + Math.floor(random() * 25))}`]),
        () => pick(['nan', '+inf', '-inf', '0e0', '-0e0', '5e-324', '1.7976931348623157e308', `${whole(3)}.${digits(3)}e${Math.floor(random() * 40) - 20}`]),
        () =>
          pick([
            '0.',
            '-0.',
            '-0.00',
            '1.0d5',
            '-0d-3',
            '1.50',
            '0.5',
            `${pick(['', '-'])}${whole(1 + Math.floor(random() * 30))}.${digits(Math.floor(random() * 12))}`,
            `1d${Math.floor(random() * 200) - 100}`,
          ]),
        () =>
          pick([
            '2007T',
            '2007-02T',
            '2007-02-23',
            '2007-02-23T12:14Z',
            '2007-02-23T12:14:33-00:00',
            '2007-02-23T12:14:33.079+05:30',
            '2007-02-23T12:14:33.0790000Z',
            '2024-01-01T00:00:00.000Z',
          ]),
        () => JSON.stringify(text()),
        () => pick(['a', 'Vehicle', "'with space'", "'é'", "''"]),
        () => `{{${Buffer.from(digits(Math.floor(random() * 20))).toString('base64')}}}`,
        () => `{{"${pick(['', 'clob', 'a\\nb', 'x'.repeat(30)])}"}}`,
      ])();
    const annotate = (v: string) => (random() < 0.15 ? `${pick(['a', "'b c'", 'x'])}::${random() < 0.3 ? 'y::' : ''}${v}` : v);
    const value = (depth: number): string => {
      const kind = depth >= 4 ? 0 : Math.floor(random() * 5);
      const n = Math.floor(random() * 4);
      const many = (f: () => string) => Array.from({ length: n }, f);
      if (kind === 1) return annotate(`[${many(() => value(depth + 1)).join(', ')}]`);
      if (kind === 2) return annotate(`(${many(() => value(depth + 1)).join(' ')})`);
      if (kind === 3) {
        const names = ['a', 'b', 'Name', "'é'", "''"];
        // A name may repeat: an Ion struct is a multiset of fields.
        return annotate(`{${many(() => `${pick(names)}: ${value(depth + 1)}`).join(', ')}}`);
      }
      return annotate(scalar());
    };
    const reference = (v: ion.dom.Value) => {
      const reader = makeHashReader(ion.makeReader(ion.dumpBinary(v)), cryptoHasherProvider('sha256'));
      reader.next();
      reader.next();
      return Buffer.from(reader.digest());
    };
    for (let i = 0; i < 2_000; i += 1) {
      const source = value(0);
      const loaded = ion.load(source)!;
      assert.deepEqual(ionHash(loaded), reference(loaded), `value ${i}: ${source}`);
    }
  });
});
