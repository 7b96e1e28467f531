/**
 * Proofs read the tree nodes the blocks hold strongly consistent: the newest nodes sit on blocks
 * committed moments before the head said the tree has them, and an eventually consistent read that
 * missed one would turn a valid request into a 500. DynamoDB Local is always consistent, so this is
 * checked here, on the reads the proofs ask for.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { leafHash, verifyConsistency, verifyInclusion } from '#shared/ledger/merkle';
import { createProofs } from '#shared/ledger/proofs';
import type { LedgerRepository } from '#shared/ledger/repository';
import { extendTree } from '#shared/ledger/tree';
import type { ChainHead } from '#shared/ledger/types';

function chain(size: number) {
  const hashes = Array.from({ length: size }, (_, i) => createHash('sha256').update(`b${i}`).digest('hex'));
  const { frontier, treeNodes } = extendTree([], 0, hashes);
  const head = { chainName: 'c', headIndex: size - 1, headHash: hashes[size - 1]!, frontier } as ChainHead;
  const reads = { consistent: 0, eventual: 0 };
  const repository = {
    getHead: async () => head,
    readTreeData: async (_: string, indices: readonly number[], consistent?: boolean) => {
      reads[consistent ? 'consistent' : 'eventual'] += indices.length;
      return new Map(indices.map((i) => [i, { hash: hashes[i]!, treeNodes: treeNodes[i]! }]));
    },
  } as unknown as LedgerRepository;
  const signer = async () => ({ nodeId: 'n', publicKey: '00'.repeat(32), sign: () => Buffer.alloc(64) });
  return { proofs: createProofs({ repository, signer }), hashes, reads };
}

describe('proofs read the tree strongly consistent', () => {
  it('inclusion and consistency proofs verify, and none of their reads is eventually consistent', async () => {
    const { proofs, hashes, reads } = chain(1000);
    const inclusion = await proofs.inclusion('c', '999');
    verifyInclusion(
      999,
      1000,
      leafHash(Buffer.from(hashes[999]!, 'hex')),
      inclusion.proof.map((h) => Buffer.from(h, 'hex')),
      Buffer.from(inclusion.root, 'hex'),
    );
    const consistency = await proofs.consistency('c', 300, 1000);
    verifyConsistency(
      300,
      1000,
      consistency.proof.map((h) => Buffer.from(h, 'hex')),
      Buffer.from(consistency.first_root, 'hex'),
      Buffer.from(consistency.second_root, 'hex'),
    );
    assert.ok(reads.consistent > 0);
    assert.equal(reads.eventual, 0);
  });
});
