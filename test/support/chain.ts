/**
 * A chain read back whole through the API, and the checks a fork or a half-written block would break.
 * Shared by the integration tests, the reliability suite and anything else that audits a chain from outside.
 */
import assert from 'node:assert/strict';
import { hashBlock } from '#shared/ledger/hashing';
import type { Block } from '#shared/ledger/types';
import { call } from './stack.ts';

/** Every block of the chain, page by page (100 at a time), under `prefix`; all of them up to the head. */
export async function readAllBlocks(base: string, chain: string, prefix = '/api/v1'): Promise<Block[]> {
  const blocks: Block[] = [];
  for (;;) {
    const page = await call(base, 'GET', `${prefix}/chains/${chain}/blocks?limit=100&offset=${blocks.length}`);
    assert.equal(page.status, 200, page.text);
    blocks.push(...page.body.blocks);
    if (blocks.length >= page.body.total || page.body.blocks.length === 0) {
      assert.equal(blocks.length, page.body.total, 'every block up to the head can be read');
      return blocks;
    }
  }
}

/**
 * Asserts indices 0…head each exactly once (no gap) and every hash recomputed (no half-written block);
 * answers how many blocks do not link to the one before (forks), for the caller to assert or report.
 */
export function checkBlocks(blocks: Block[]): { forks: number } {
  let forks = 0;
  blocks.forEach((block, i) => {
    assert.equal(block.index, i, `block ${i} is where it should be (no gap)`);
    assert.equal(block.hash, hashBlock(block), `block ${i} is whole: its hash recomputes`);
    if (i > 0 && block.previous_hash !== blocks[i - 1]!.hash) forks += 1;
  });
  return { forks };
}
