/**
 * QLDB's hashing (shared/qldb/hashing.ts), checked against output not made by our code:
 *
 * - a real QLDB block: the BLOCK_SUMMARY and REVISION_DETAILS records of a QLDB stream kept as test fixtures by
 *   AWS's sample aws-samples/amazon-qldb-streams-dmv-sample-lambda-python (tests/unit/fixtures.py, commit
 *   d4c7d40; ledger vehicle-registration, block HbD9IggL584EPHmfwjmVz0/3, 2019-12-11). Every hash in it
 *   rebuilds: the revision's, its transaction's, the entries hash and the block hash. One edit in the fixture:
 *   its revision data says FirstName "Nova", while the block's own statement inserted 'Testing new 600'; the
 *   revision hash QLDB published is the hash of what was inserted, and here the data is that;
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
});
