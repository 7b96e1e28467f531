/**
 * Reading a chain's metadata back when a caller wants many blocks far apart (a tile of level 1: 256 blocks,
 * 256 apart; a proof: ~17 nodes across the chain). Each is one read of the segment holding it, no more
 * segments than the span can need, a bounded number at once, and one read of the head for them all:
 * hundreds of requests at once time out on a busy table (the bench's tile audit answered 503 before).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChainAppender } from '#shared/ledger/appender';
import { completedNodeCount, type MetaRun, packRun, SEGMENT_MAX_BYTES, splitRun, unpackRun } from '#shared/ledger/block-meta';
import { createLedger } from '#shared/ledger/ledger';
import type { EventDraft } from '#shared/ledger/events';
import { createMemoryLedgerRepository } from '../support/memory-ledger-repository.ts';

const draft = (n: number): EventDraft => ({
  entity_id: `e${n}`,
  event_type: 't',
  details: { n },
  details_cid: null,
  details_nonce: null,
  details_metadata: null,
  is_offchain: false,
});

describe('block reads of far-apart blocks', () => {
  it('reads 256 blocks 100 apart with one segment each, at most 16 at once, and the head only if a span needs it', async () => {
    const repository = createMemoryLedgerRepository();
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 256 }) });
    await ledger.createSubChain('far');
    // Batches of 50: segments of 50 blocks, so a read of 16 segments would be 800 blocks where one is wanted.
    for (let n = 0; n < 520; n += 1)
      await ledger.appendEvents(
        'far',
        Array.from({ length: 50 }, (_, i) => draft(n * 50 + i)),
      );
    const head = await repository.getHead('far');
    assert.ok(head && head.headIndex >= 25_600);

    let inFlight = 0;
    let most = 0;
    const limits: number[] = [];
    repository.holds.set('readSegments', async (...args: unknown[]) => {
      limits.push(args[2] as number);
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 1));
      inFlight -= 1;
    });
    const headReads = repository.calls.get('getHead') ?? 0;
    const indices = Array.from({ length: 256 }, (_, i) => i * 100 + 99);
    const data = await repository.readTreeData('far', indices, true);
    repository.holds.delete('readSegments');
    const headReadsAfter = repository.calls.get('getHead') ?? 0;

    assert.equal(data.size, 256, 'every block wanted was found');
    for (const index of [99, 12_899, 25_599]) {
      const block = await repository.getBlock('far', index, true);
      assert.equal(data.get(index)?.hash, block?.hash, `block ${index}'s hash`);
    }
    assert.equal(limits.length, 256, 'one segment read per block');
    assert.ok(
      limits.every((l) => l === 1),
      'each read asks for the one segment that holds its block',
    );
    assert.ok(most <= 16, `${most} reads at once`);
    // The head is read once for all of them at most, and only if a span is not in segments (here none is).
    assert.equal(headReadsAfter - headReads, 0, 'no read of the head: every block wanted is in a segment');
  });

  it("keeps the newest blocks' metadata read on the head: read again, they cost no request (the head committed them)", async () => {
    const repository = createMemoryLedgerRepository();
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 256 }) });
    await ledger.createSubChain('tail');
    for (let n = 0; n < 12; n += 1) await ledger.appendEvents('tail', [draft(n)]);
    const head = (await repository.getHead('tail'))!;
    assert.ok(head.recent && 'run' in head.recent, "a lone writer's newest blocks are on the head");
    const newest = head.recent.run.blocks.map((b) => b.index);
    const requests = () => (repository.calls.get('getHead') ?? 0) + (repository.calls.get('readSegments') ?? 0) + (repository.calls.get('getRound') ?? 0);

    const first = await repository.readTreeData('tail', newest, true);
    const before = requests();
    const again = await repository.readTreeData('tail', newest, true);
    assert.equal(requests(), before, 'no read of the head or segments the second time');
    assert.deepEqual(again, first);
    for (const index of newest) assert.equal(again.get(index)?.hash, (await repository.getBlock('tail', index, true))?.hash);

    // A block past what was kept is read from the head again.
    await ledger.appendEvents('tail', [draft(99)]);
    const after = requests();
    const past = await repository.readTreeData('tail', [head.headIndex + 1], true);
    assert.ok(past.get(head.headIndex + 1), 'the new block is found');
    assert.ok(requests() > after, 'by reading the head');
  });

  it('stores a round in segments of under 4 KB each, consecutive and linked, so a proof reads one read unit per node', () => {
    const hex = (n: number) => n.toString(16).padStart(64, '0');
    const blocks = Array.from({ length: 256 }, (_, i) => {
      const index = 1_000 + i;
      return {
        index,
        hash: hex(index),
        timestamp: 1_700_000_000 + i / 1000,
        nodes: Array.from({ length: completedNodeCount(index) }, (_, k) => hex(index * 64 + k)),
        ref: { shard: 0, sk: `1700000000000#${index.toString(16).padStart(12, '0')}` },
        position: 0,
      };
    });
    const run: MetaRun = { prev: hex(999), blocks };
    assert.ok(packRun(run).length > 20_000, 'a full round packs over 20 KB');
    const pieces = splitRun(run);
    assert.ok(pieces.length >= 6, `${pieces.length} segments`);
    let prev = run.prev;
    for (const piece of pieces) {
      assert.ok(packRun(piece).length <= SEGMENT_MAX_BYTES, `a segment of ${packRun(piece).length} bytes`);
      assert.equal(piece.prev, prev, 'each segment names the hash before its first block');
      prev = piece.blocks.at(-1)!.hash;
      assert.deepEqual(unpackRun(packRun(piece)), piece, 'each segment reads back whole');
    }
    assert.deepEqual(
      pieces.flatMap((p) => p.blocks),
      blocks,
      'together, every block once, in order',
    );
  });

  it('reads a round whose wave of segments was cut short (a later one written, an earlier one not) from the head: no committed block reads as missing', async () => {
    // A round's segments go in one wave of BatchWriteItems after its commit. One request of it dropped, and
    // its leader killed before it wrote it again, left a later segment written and an earlier one not, with
    // the round's metadata still on the head (in its round item). A read by index from the earlier one's
    // blocks found the later segment, took the span as read, and never looked at the head: the block read as
    // missing (404), and a retry of the batch's Idempotency-Key answered 500 (the simulation's large batches,
    // seed 10).
    const repository = createMemoryLedgerRepository();
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 256 }) });
    await ledger.createSubChain('cut');
    await ledger.appendEvents('cut', [draft(0)]);
    const writeRound = repository.writeRound.bind(repository);
    let cut = 0;
    repository.writeRound = async (chainName, round) => {
      const pieces = splitRun(round.segment);
      if (chainName !== 'cut' || pieces.length < 2) return writeRound(chainName, round);
      cut += 1;
      // The records and every segment but the first are written; then the wave fails.
      await writeRound(chainName, { records: round.records, segment: pieces[1]! });
      for (const piece of pieces.slice(2)) await writeRound(chainName, { records: [], segment: piece });
      throw new Error('a request of the wave dropped, and its leader died');
    };
    await ledger
      .appendEvents(
        'cut',
        Array.from({ length: 98 }, (_, i) => draft(1 + i)),
      )
      .catch(() => undefined);
    repository.writeRound = writeRound;
    assert.ok(cut >= 1, 'the round of 98 blocks was cut into segments, and its wave cut short');
    const head = (await repository.getHead('cut'))!;
    assert.ok(head.recent && 'round' in head.recent, "the round's metadata is still on the head, in its round item");
    const committed = repository.blocksOf('cut');
    assert.equal(committed.length, 100, 'the genesis block, one event and the batch of 98 are on the chain');

    for (const consistent of [true, false]) {
      for (const index of [2, 20, 60, 99]) {
        const block = await repository.getBlock('cut', index, consistent);
        assert.equal(block?.hash, committed[index]!.hash, `block ${index} (${consistent ? 'strong' : 'eventual'} read)`);
      }
    }
    const page = await repository.getBlockRange('cut', 0, 99, false, true);
    assert.deepEqual(
      page.map((b) => b.index),
      committed.map((b) => b.index),
      'a page across the gap holds every block, in order',
    );
  });
});
