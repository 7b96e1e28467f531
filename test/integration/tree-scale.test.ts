/**
 * A chain of 20 000 blocks on DynamoDB Local: checkpoints, inclusion and consistency proofs read
 * O(log n) block items — counted here — and never the whole chain.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkpointMessage } from '#shared/ledger/checkpoint';
import { ChainAppender } from '#shared/ledger/appender';
import { createLedger } from '#shared/ledger/ledger';
import { leafHash, verifyConsistency, verifyInclusion } from '#shared/ledger/merkle';
import { createProofs } from '#shared/ledger/proofs';
import type { LedgerRepository } from '#shared/ledger/repository';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';
import { generateKeyPairSync, sign, verify } from 'node:crypto';

const BLOCKS = 20_000;
let storage: TestDynamo;
let counted: { blockItemsRead: number; hashListsRead: number };
let repo: LedgerRepository;

before(async () => {
  // Its own DynamoDB Local: 20,000 blocks written in the run's shared one slowed the files beside it 3-4 times.
  storage = await startTestDynamo('scale', { own: true });
  const real = storage.repository;
  counted = { blockItemsRead: 0, hashListsRead: 0 };
  // Every read of block items, counted: the tree's nodes live on blocks.
  repo = {
    ...real,
    readTreeData: async (chain, indices, consistent) => {
      counted.blockItemsRead += new Set(indices).size;
      return real.readTreeData(chain, indices, consistent);
    },
    listBlockHashes: async (chain, to) => {
      counted.hashListsRead += 1;
      return real.listBlockHashes(chain, to);
    },
    getBlockRange: async (chain, from, to, desc) => {
      counted.blockItemsRead += to - from + 1;
      return real.getBlockRange(chain, from, to, desc);
    },
  };
  const appender = new ChainAppender(repo, { maxAttempts: 8, batchMax: 40 });
  const ledger = createLedger({ repository: repo, appender });
  await ledger.createSubChain('big');
  const started = Date.now();
  for (let from = 1; from < BLOCKS; from += 2_000) {
    const count = Math.min(2_000, BLOCKS - from);
    await Promise.all(
      Array.from({ length: count }, (_, i) =>
        ledger.appendEvent('big', {
          entity_id: `e${from + i}`,
          event_type: 't',
          details: { n: from + i },
          details_cid: null,
          details_nonce: null,
          details_metadata: null,
          is_offchain: false,
        }),
      ),
    );
  }
  process.stderr.write(`  (appended ${BLOCKS - 1} events in ${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
});

after(async () => {
  await storage?.stop();
});

describe(`A chain of ${BLOCKS} blocks`, () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const proofs = () =>
    createProofs({
      repository: repo,
      signer: async () => ({ nodeId: 'node-test', publicKey: '', sign: (bytes) => sign(null, bytes, privateKey) }),
    });
  const logBound = (n: number) => 2 * Math.ceil(Math.log2(n)) + 3;

  it('signs a checkpoint of the whole chain without reading a single block', async () => {
    counted.blockItemsRead = 0;
    const checkpoint = await proofs().checkpoint('big');
    assert.equal(checkpoint.tree_size, BLOCKS);
    assert.ok(verify(null, checkpointMessage(checkpoint), publicKey, Buffer.from(checkpoint.signature, 'hex')));
    assert.equal(counted.blockItemsRead, 0);
  });

  it(`proves inclusion of any block reading at most ${logBound(BLOCKS)} block items`, async () => {
    const checkpoint = await proofs().checkpoint('big');
    for (const index of [0, 1, 4_095, 4_096, 12_345, BLOCKS - 2, BLOCKS - 1]) {
      counted.blockItemsRead = 0;
      const proof = await proofs().inclusion('big', String(index));
      assert.ok(counted.blockItemsRead <= logBound(BLOCKS), `block ${index}: ${counted.blockItemsRead} items read`);
      assert.equal(proof.root, checkpoint.root);
      verifyInclusion(
        index,
        BLOCKS,
        leafHash(Buffer.from(proof.block_hash, 'hex')),
        proof.proof.map((h) => Buffer.from(h, 'hex')),
        Buffer.from(checkpoint.root, 'hex'),
      );
    }
  });

  it(`proves consistency between sizes reading at most ${logBound(BLOCKS) + 2} block items`, async () => {
    for (const [first, second] of [
      [1, BLOCKS],
      [777, 13_001],
      [8_192, BLOCKS],
      [BLOCKS - 1, BLOCKS],
    ] as const) {
      counted.blockItemsRead = 0;
      const p = await proofs().consistency('big', first, second);
      assert.ok(counted.blockItemsRead <= logBound(BLOCKS) + 2, `${first}→${second}: ${counted.blockItemsRead} items read`);
      verifyConsistency(
        first,
        second,
        p.proof.map((h) => Buffer.from(h, 'hex')),
        Buffer.from(p.first_root, 'hex'),
        Buffer.from(p.second_root, 'hex'),
      );
    }
  });

  it('anchors the chain in the Main Chain without reading its block hashes', async () => {
    const ledger = createLedger({ repository: repo, appender: new ChainAppender(repo, { maxAttempts: 8, batchMax: 40 }) });
    counted.hashListsRead = 0;
    counted.blockItemsRead = 0;
    const proof = await ledger.submitProof('big');
    assert.ok(proof.created);
    assert.equal(proof.details?.tree_size, BLOCKS);
    assert.equal(proof.details?.merkle_root, (await proofs().checkpoint('big')).root);
    assert.equal(counted.hashListsRead, 0);
    assert.equal(counted.blockItemsRead, 0);
  });
});
