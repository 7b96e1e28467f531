/**
 * The head an instance remembers after its commit (`landed`, shared/ledger/append/direct-commit.ts) is the head the
 * commit wrote: every commit removes the head's mark that its recent metadata is already in a segment. A remembered
 * head that kept the mark made the next direct commit leave the last one's blocks out of the head's metadata: they
 * were lost to reads by index (the simulation's shared instances, seed 155 of `shared`, kept in its FOUND seeds).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { landed } from '#shared/ledger/append/direct-commit';
import type { AppenderCore } from '#shared/ledger/append/core';
import type { Block, ChainHead } from '#shared/ledger/types';

const core = { counters: { commits: 0, blocksAppended: 0, eventsAppended: 0 } } as unknown as AppenderCore;
const block = (index: number) => ({ index, hash: `${index}`.padStart(64, '0'), events: [{}] }) as unknown as Block;

describe('the head a commit leaves, as its instance remembers it', () => {
  it("is never marked as having its recent metadata in a segment: the commit's own metadata is not", () => {
    // A round's end marked the head flushed (finishRound), and the remembered head kept it, with no recent run.
    const afterRound = {
      chainName: 'c',
      headIndex: 20,
      headHash: block(20).hash,
      eventCount: 20,
      proofCount: 0,
      recent: null,
      recentFlushed: true,
    } as unknown as ChainHead;
    const run = { prev: afterRound.headHash, blocks: [] };
    const after = landed(core, afterRound, [block(21), block(22), block(23)], [], { recent: { run } });
    assert.equal(after.recentFlushed, false);
    assert.equal(after.headIndex, 23);
    assert.deepEqual(after.recent, { run });
  });
});
