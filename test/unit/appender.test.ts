/**
 * The appender and the ledger domain, offline: an in-memory repository that keeps the port's conditions
 * (test/support/memory-ledger-repository.ts), a virtual clock through the appender's now/sleep/random
 * seams, and several appenders sharing it as several Lambda instances share one table. What a user would
 * notice: every acknowledged event is on the chain exactly once, in one linear chain, batches land whole
 * or not at all, a lost answer is not appended twice, and retries with an Idempotency-Key append nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DependencyUnavailableError, IdempotencyKeyReusedError, UnprocessableError } from '#shared/errors';
import { ChainAppender } from '#shared/ledger/appender';
import type { EventDraft } from '#shared/ledger/events';
import { hashBlock } from '#shared/ledger/hashing';
import { createLedger, type Ledger } from '#shared/ledger/ledger';
import type { Block } from '#shared/ledger/types';
import { createMemoryLedgerRepository, type MemoryLedgerRepository } from '../support/memory-ledger-repository.ts';

/** A clock that moves only when someone sleeps: no test waits for real time. */
function virtualClock(start = 1_750_000_000) {
  let seconds = start;
  return {
    now: () => seconds,
    sleep: async (ms: number) => {
      seconds += ms / 1000;
      await new Promise<void>((resolve) => setImmediate(resolve));
    },
  };
}

/** One "Lambda instance": its own appender (its own writer id) and ledger over the shared table. */
function instance(repository: MemoryLedgerRepository, clock = virtualClock(), options: { maxAttempts?: number } = {}): Ledger {
  let seed = 1;
  const appender = new ChainAppender(repository, {
    maxAttempts: options.maxAttempts ?? 8,
    batchMax: 99,
    now: clock.now,
    sleep: clock.sleep,
    random: () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647,
  });
  return createLedger({ repository, appender, now: clock.now });
}

const draft = (entity: string, n = 0): EventDraft => ({
  entity_id: entity,
  event_type: 'shipped',
  details: { n },
  details_cid: null,
  details_nonce: null,
  details_metadata: null,
  is_offchain: false,
});

/** Indices 0…head once each, every hash recomputed, every block linked to the one before. */
function assertLinear(blocks: Block[]): void {
  blocks.forEach((block, i) => {
    assert.equal(block.index, i, 'no gap, no duplicate index');
    assert.equal(hashBlock(block), block.hash, `block ${i} is whole`);
    if (i > 0) assert.equal(block.previous_hash, blocks[i - 1]!.hash, `block ${i} links to block ${i - 1} (no fork)`);
  });
}

const eventIds = (blocks: Block[]) => blocks.flatMap((b) => b.events.map((e) => e.event_id));

describe('appending (offline, in-memory repository)', () => {
  it('keeps one linear chain with every acknowledged event exactly once when 8 instances append at once', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock();
    const instances = Array.from({ length: 8 }, () => instance(repository, clock));
    await instances[0]!.createSubChain('orders');
    const acknowledged: string[] = [];
    // Each instance serves one request at a time, as a Lambda instance does; the instances run at once.
    await Promise.all(
      instances.map(async (ledger, i) => {
        for (let n = 0; n < 12; n += 1) acknowledged.push((await ledger.appendEvent('orders', draft(`pkg-${i}`, n))).event_id);
      }),
    );
    const blocks = repository.blocksOf('orders');
    assertLinear(blocks);
    assert.equal(blocks.length, 1 + 96, 'the genesis block and one block per event');
    assert.deepEqual(eventIds(blocks).sort(), [...acknowledged].sort(), 'each acknowledged event once, nothing else');
    // The instances raced, and combined through the table: others' pending appends sealed in fewer commits.
    assert.ok((repository.calls.get('putPending') ?? 0) > 0, 'appends were handed to another instance');
    assert.ok((repository.calls.get('commitRound') ?? 0) < 96, 'appends were combined into fewer commits');
    const stats = await instances[3]!.getStats('orders');
    assert.equal(stats.total_events, 96);
    assert.equal(stats.total_blocks, 97);
  });

  it('lands a batch as consecutive blocks in one commit, and refuses one over the atomic limit without writing', async () => {
    const repository = createMemoryLedgerRepository();
    const ledger = instance(repository);
    await ledger.createSubChain('orders');
    const appended = await ledger.appendEvents(
      'orders',
      Array.from({ length: 5 }, (_, n) => draft('pkg', n)),
    );
    assert.deepEqual(
      appended.map((a) => a.block.index),
      [1, 2, 3, 4, 5],
    );
    assert.equal(repository.calls.get('commitRound'), 1, 'one commit for the whole batch');
    await assert.rejects(
      ledger.appendEvents(
        'orders',
        Array.from({ length: 100 }, (_, n) => draft('pkg', n)),
      ),
      (error: unknown) => error instanceof UnprocessableError && /at most 99 events/.test(error.message),
    );
    assert.equal(repository.blocksOf('orders').length, 6, 'nothing of the refused batch was written');
    assertLinear(repository.blocksOf('orders'));
  });

  it('acknowledges a commit whose answer was lost (a timeout) once, without appending it again', async () => {
    const repository = createMemoryLedgerRepository();
    const ledger = instance(repository);
    await ledger.createSubChain('orders');
    const timeout = Object.assign(new Error('socket timed out'), { name: 'TimeoutError' });
    repository.lostAnswers.push(timeout);
    const { event_id, block } = await ledger.appendEvent('orders', draft('pkg'));
    const blocks = repository.blocksOf('orders');
    assert.equal(blocks.length, 2);
    assert.equal(block.index, 1);
    assert.deepEqual(eventIds(blocks.slice(1)), [event_id]);
  });

  it('fails an append whose every commit is refused by an unavailable DynamoDB, and leaves nothing half-written', async () => {
    const repository = createMemoryLedgerRepository();
    const ledger = instance(repository, virtualClock(), { maxAttempts: 3 });
    await ledger.createSubChain('orders');
    await ledger.appendEvent('orders', draft('pkg', 1));
    repository.faults.set(
      'commitRound',
      Array.from({ length: 50 }, () => new DependencyUnavailableError('DynamoDB')),
    );
    await assert.rejects(ledger.appendEvents('orders', [draft('pkg', 2), draft('pkg', 3)]), (error: unknown) => {
      assert.ok(error instanceof Error && 'statusCode' in error && (error as { statusCode: number }).statusCode === 503, `a 503, not ${error}`);
      return true;
    });
    repository.faults.clear();
    const blocks = repository.blocksOf('orders');
    assert.equal(blocks.length, 2, 'neither event of the failed batch is on the chain');
    // The chain goes on where it was.
    await ledger.appendEvent('orders', draft('pkg', 4));
    assertLinear(repository.blocksOf('orders'));
  });

  it('answers a retry with the same Idempotency-Key from the first append, and refuses the key with another body', async () => {
    const repository = createMemoryLedgerRepository();
    const [first, second] = [instance(repository), instance(repository)];
    await first.createSubChain('orders');
    const options = { idempotency: { caller: 'key-1', key: 'order-17' } };
    const original = await first.appendEvent('orders', draft('pkg', 17), options);
    // The retry reaches another instance, as it would behind API Gateway.
    const retry = await second.appendEvent('orders', draft('pkg', 17), options);
    assert.equal(retry.event_id, original.event_id);
    assert.equal(retry.replayed, true);
    assert.equal(repository.blocksOf('orders').length, 2, 'the retry appended nothing');
    await assert.rejects(second.appendEvent('orders', draft('pkg', 18), options), IdempotencyKeyReusedError);
    // Another caller's equal key is its own.
    const other = await second.appendEvent('orders', draft('pkg', 18), { idempotency: { caller: 'key-2', key: 'order-17' } });
    assert.notEqual(other.event_id, original.event_id);
    assert.equal(repository.blocksOf('orders').length, 3);
  });

  it('anchors a Sub-Chain in the Main Chain once per head', async () => {
    const repository = createMemoryLedgerRepository();
    const ledger = instance(repository);
    await ledger.createSubChain('orders');
    await ledger.appendEvent('orders', draft('pkg'));
    const proof = await ledger.submitProof('orders');
    assert.equal(proof.created, true);
    const again = await ledger.submitProof('orders');
    assert.equal(again.created, false, 'nothing new since: the proof still holds');
    const main = repository.blocksOf('main');
    assertLinear(main);
    assert.equal(main.length, 2, 'one anchor block');
    assert.equal((await ledger.getStats('orders')).proof_count, 1);
    assert.equal((await ledger.getStats('main')).proof_count, 1, 'the Main Chain holds one anchor');
  });

  it('anchors a head once when several instances ask at the same moment (never two anchors in one transaction)', async () => {
    for (let round = 0; round < 20; round += 1) {
      const repository = createMemoryLedgerRepository();
      const clock = virtualClock();
      const instances = Array.from({ length: 4 }, () => instance(repository, clock));
      await instances[0]!.createSubChain('orders');
      await instances[0]!.appendEvent('orders', draft('pkg'));
      const proofs = await Promise.all(instances.flatMap((ledger) => [ledger.submitProof('orders'), ledger.submitProof('orders')]));
      assert.equal(proofs.filter((p) => p.created).length, 1, `round ${round}: one anchor for one head`);
      assert.equal(new Set(proofs.map((p) => p.proof_id)).size, 1, 'every caller is answered that anchor');
      assert.equal(repository.blocksOf('main').length, 2);
    }
  });

  it('refuses events on a chain that does not exist, and Sub-Chain names outside the rule', async () => {
    const repository = createMemoryLedgerRepository();
    const ledger = instance(repository);
    await assert.rejects(ledger.appendEvent('nope', draft('pkg')), (error: unknown) => (error as { statusCode?: number }).statusCode === 404);
    await assert.rejects(ledger.createSubChain('no spaces'), (error: unknown) => (error as { statusCode?: number }).statusCode === 400);
    await ledger.createSubChain('orders');
    await assert.rejects(ledger.createSubChain('orders'), (error: unknown) => (error as { statusCode?: number }).statusCode === 409);
  });
});
