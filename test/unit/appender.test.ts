/**
 * The appender and the ledger domain, offline: an in-memory repository that keeps the port's conditions
 * (test/support/memory-ledger-repository.ts), a virtual clock through the appender's now/sleep/random
 * seams, and several appenders sharing it as several Lambda instances share one table. What a user would
 * notice: every acknowledged event is on the chain exactly once, in one linear chain, batches land whole
 * or not at all, a lost answer is not appended twice, and retries with an Idempotency-Key append nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeadlineExceededError, DependencyUnavailableError, IdempotencyKeyReusedError, UnprocessableError } from '#shared/errors';
import { ChainAppender } from '#shared/ledger/appender';
import { settling } from '#shared/ledger/append/withdraw';
import { checkDeadline, withDeadline } from '#shared/deadline';
import { steadyNow } from '#shared/clock';
import { finishAbandonedRounds } from '#shared/ledger/sweep';
import type { EventDraft } from '#shared/ledger/events';
import { pendingSk } from '#shared/ledger/block-meta';
import { hashBlock } from '#shared/ledger/hashing';
import { createLedger, type Ledger } from '#shared/ledger/ledger';
import type { Block } from '#shared/ledger/types';
import { createMemoryLedgerRepository, type MemoryLedgerRepository } from '../support/memory-ledger-repository.ts';

/**
 * A clock that moves only when every instance is asleep, to the earliest wake-up (a discrete-event clock):
 * no test waits for real time, and work between sleeps takes no time, as a fast storage would. Time moves
 * once the repository has seen no call for a few turns of the event loop (every instance waits on a sleep).
 */
function virtualClock(repository: MemoryLedgerRepository, start = 1_750_000_000) {
  let seconds = start;
  const sleepers: { wake: number; resolve: () => void }[] = [];
  let ticking = false;
  const calls = () => [...repository.calls.values()].reduce((n, c) => n + c, 0);
  const tick = (quiet: number, seen: number) =>
    setImmediate(() => {
      const now = calls();
      if (now !== seen) return tick(0, now);
      if (quiet < 3) return tick(quiet + 1, seen);
      ticking = false;
      sleepers.sort((a, b) => a.wake - b.wake);
      const next = sleepers.shift();
      if (!next) return;
      seconds = Math.max(seconds, next.wake);
      next.resolve();
      if (sleepers.length > 0) schedule();
    });
  const schedule = () => {
    if (ticking) return;
    ticking = true;
    tick(0, calls());
  };
  return {
    now: () => seconds,
    sleep: (ms: number) =>
      new Promise<void>((resolve) => {
        sleepers.push({ wake: seconds + ms / 1000, resolve });
        schedule();
      }),
  };
}

/** A slow store: every call to the repository takes `ms` of the virtual clock before it is served. */
function everyRequestTakes(repository: MemoryLedgerRepository, clock: ReturnType<typeof virtualClock>, ms: number): void {
  for (const method of Object.keys(repository)) {
    if (typeof (repository as unknown as Record<string, unknown>)[method] === 'function') repository.holds.set(method, () => clock.sleep(ms));
  }
}

/** Each instance's appender, by its ledger (to read its counters). */
const appenders = new WeakMap<Ledger, ChainAppender>();

/** One "Lambda instance": its own appender (its own writer id) and ledger over the shared table. */
function instance(
  repository: MemoryLedgerRepository,
  clock = virtualClock(repository),
  options: { maxAttempts?: number; leaseMs?: number; waitMs?: number; maxLeadMs?: number; pendingShards?: number; gatherSiblings?: number } = {},
): Ledger {
  let seed = 1;
  const appender = new ChainAppender(repository, {
    maxAttempts: options.maxAttempts ?? 8,
    batchMax: 99,
    ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
    ...(options.waitMs ? { waitMs: options.waitMs } : {}),
    ...(options.maxLeadMs ? { maxLeadMs: options.maxLeadMs } : {}),
    ...(options.pendingShards ? { pendingShards: options.pendingShards } : {}),
    ...(options.gatherSiblings !== undefined ? { gatherSiblings: options.gatherSiblings } : {}),
    now: clock.now,
    sleep: clock.sleep,
    random: () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647,
  });
  const ledger = createLedger({ repository, appender, now: clock.now });
  appenders.set(ledger, appender);
  return ledger;
}

const counters = (ledgers: Ledger[]) => ledgers.map((l) => appenders.get(l)!.counters);

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
    const clock = virtualClock(repository);
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
    assert.ok(
      counters(instances).some((c) => c.followed > 0),
      'appends were handed to another instance',
    );
    assert.ok((repository.calls.get('commitRound') ?? 0) < 96, 'appends were combined into fewer commits');
    // Every block's record is written: found by hash, as a client finds it.
    assert.deepEqual(
      repository.recordsOf('orders').map((b) => b.hash),
      blocks.map((b) => b.hash),
    );
    assert.equal((await instances[5]!.getBlock('orders', { kind: 'hash', hash: blocks[40]!.hash })).index, 40);
    const stats = await instances[3]!.getStats('orders');
    assert.equal(stats.total_events, 96);
    assert.equal(stats.total_blocks, 97);
  });

  it('on a crowded chain a leader lets the next round gather: more events per head write and segment; two instances taking turns never wait', async () => {
    /** `writers` instances appending `each` events one after another on a store where every request takes 3 ms. */
    const run = async (writers: number, each: number, gatherSiblings: number) => {
      const repository = createMemoryLedgerRepository();
      const clock = virtualClock(repository);
      everyRequestTakes(repository, clock, 3);
      const instances = Array.from({ length: writers }, () => instance(repository, clock, { gatherSiblings, maxLeadMs: 200 }));
      await instances[0]!.createSubChain('orders');
      const started = clock.now();
      const acknowledged: string[] = [];
      await Promise.all(
        instances.map(async (ledger, i) => {
          for (let n = 0; n < each; n += 1) acknowledged.push((await ledger.appendEvent('orders', draft(`pkg-${i}`, n))).event_id);
        }),
      );
      const blocks = repository.blocksOf('orders');
      assertLinear(blocks);
      assert.deepEqual(eventIds(blocks.slice(1)).sort(), [...acknowledged].sort(), 'each acknowledged event once, nothing else');
      const rounds = counters(instances).reduce((n, c) => n + c.commits, 0);
      return {
        eventsPerRound: acknowledged.length / rounds,
        segments: (await repository.readSegments('orders', 0, 10_000, true)).length,
        ms: (clock.now() - started) * 1000,
      };
    };
    const [eager, gathering] = [await run(10, 12, 0), await run(10, 12, 2)];
    assert.ok(
      gathering.eventsPerRound >= 1.05 * eager.eventsPerRound,
      `events per round: ${gathering.eventsPerRound.toFixed(2)} gathering, ${eager.eventsPerRound.toFixed(2)} reading again at once`,
    );
    assert.ok(gathering.segments < eager.segments, `segments written: ${gathering.segments} gathering, ${eager.segments} at once`);
    // Two instances: a round serves at most one other, so nothing gathers and nobody waits for it.
    const [pairEager, pairGathering] = [await run(2, 12, 0), await run(2, 12, 2)];
    assert.equal(pairGathering.ms, pairEager.ms, 'two instances take as long with gathering on as off');
  });

  for (const shards of [1, 2]) {
    it(`waiting writers look at a head that may be a moment old (${shards} pending partition${shards > 1 ? 's' : ''}): still every acknowledged event exactly once`, async () => {
      const repository = createMemoryLedgerRepository();
      repository.staleLooks = true; // every other look answers the head as it was before its last write
      const clock = virtualClock(repository);
      const instances = Array.from({ length: 12 }, () => instance(repository, clock, { pendingShards: shards }));
      await instances[0]!.createSubChain('orders');
      const acknowledged: string[] = [];
      await Promise.all(
        instances.map(async (ledger, i) => {
          for (let n = 0; n < 10; n += 1) {
            if (i === 0 && n % 3 === 0) {
              const batch = await ledger.appendEvents(
                'orders',
                Array.from({ length: 60 }, (_, k) => draft(`batch-${n}`, k)),
              );
              acknowledged.push(...batch.map((a) => a.event_id));
            } else acknowledged.push((await ledger.appendEvent('orders', draft(`pkg-${i}`, n))).event_id);
          }
        }),
      );
      const blocks = repository.blocksOf('orders');
      assertLinear(blocks);
      assert.deepEqual(eventIds(blocks.slice(1)).sort(), [...acknowledged].sort(), 'each acknowledged event once, nothing else');
      assert.ok((repository.calls.get('lookHead') ?? 0) > 0, 'writers waited by looking');
    });
  }

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
    const ledger = instance(repository, virtualClock(repository), { maxAttempts: 3 });
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
      const clock = virtualClock(repository);
      const instances = Array.from({ length: 4 }, () => instance(repository, clock));
      await instances[0]!.createSubChain('orders');
      await instances[0]!.appendEvent('orders', draft('pkg'));
      const proofs = await Promise.all(instances.flatMap((ledger) => [ledger.submitProof('orders'), ledger.submitProof('orders')]));
      assert.equal(proofs.filter((p) => p.created).length, 1, `round ${round}: one anchor for one head`);
      assert.equal(new Set(proofs.map((p) => p.proof_id)).size, 1, 'every caller is answered that anchor');
      assert.equal(repository.blocksOf('main').length, 2);
    }
  });

  it('finishes the round of a leader that died between its commit and its records: nothing acknowledged lost, every record written', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const [victim, ...others] = Array.from({ length: 4 }, () => instance(repository, clock, { leaseMs: 500 }));
    await victim!.createSubChain('orders');
    // The victim commits its round, then freezes for good before its records are written.
    let frozen = false;
    repository.holds.set('writeRound', (_chain, round) => {
      if (!(round as { records: Block[] }).records.some((b) => b.events[0]?.entity_id === 'victim')) return undefined;
      frozen = true;
      return new Promise<void>(() => undefined);
    });
    void victim!.appendEvent('orders', draft('victim', 0));
    while (!frozen) await clock.sleep(5);
    repository.holds.delete('writeRound');
    const stuck = (await repository.getHead('orders'))!;
    assert.equal(stuck.headIndex, 1, 'the victim committed');
    assert.equal(stuck.materialized, 0, 'and wrote no record');
    assert.equal(
      (await others[0]!.getBlock('orders', { kind: 'index', index: 1 })).events[0]!.entity_id,
      'victim',
      'its block reads back meanwhile, from its pending append',
    );
    const acknowledged = await Promise.all(
      others.flatMap((ledger, i) => [0, 1, 2].map(async (n) => (await ledger.appendEvent('orders', draft(`o${i}`, n))).event_id)),
    );
    const blocks = repository.blocksOf('orders');
    assertLinear(blocks);
    assert.deepEqual(eventIds(blocks.slice(2)).sort(), [...acknowledged].sort());
    assert.deepEqual(
      repository.recordsOf('orders').map((b) => b.index),
      blocks.map((b) => b.index),
      'the next holder wrote the dead leader’s records',
    );
    assert.ok(counters(others).some((c) => c.recoveries > 0));
  });

  it('on a store whose every request takes 800 ms, leases outlast their rounds: every append lands once, none is redone or refused', async () => {
    // A round is a few requests; at 800 ms each it takes several times a quick day's 1 s lease. Leases that
    // lapsed mid-round would let the next writer take over and redo the round, and lapse the same way, until
    // writers gave up with 503 (measured with a fixed 1 s lease: "too busy to append now").
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const instances = Array.from({ length: 6 }, () => instance(repository, clock, { leaseMs: 1_000 }));
    await instances[0]!.createSubChain('orders');
    everyRequestTakes(repository, clock, 800);
    const acknowledged: string[] = [];
    await Promise.all(
      instances.map(async (ledger, i) => {
        for (let n = 0; n < 4; n += 1) acknowledged.push((await ledger.appendEvent('orders', draft(`pkg-${i}`, n))).event_id);
      }),
    );
    repository.holds.clear();
    const blocks = repository.blocksOf('orders');
    assertLinear(blocks);
    assert.deepEqual(eventIds(blocks.slice(1)).sort(), [...acknowledged].sort(), 'each acknowledged event once, nothing else');
    const all = counters(instances);
    assert.equal(
      all.reduce((n, c) => n + c.recoveries, 0),
      0,
      'no holder found its predecessor’s round unfinished',
    );
    assert.ok(
      all.some((c) => c.followed > 0),
      'writers waited on others’ rounds',
    );
  });

  it('a writer waiting long on a slow round looks seldom, not every few milliseconds', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const [leader, ...followers] = Array.from({ length: 4 }, () => instance(repository, clock, { leaseMs: 20_000, waitMs: 15_000 }));
    await leader!.createSubChain('orders');
    // The leader's commit takes 8 s (a stalled request); its lease stays live all that time.
    let stalled = false;
    repository.holds.set('commitRound', () => {
      if (stalled) return undefined;
      stalled = true;
      return clock.sleep(8_000);
    });
    const first = leader!.appendEvent('orders', draft('leader'));
    while (!stalled) await clock.sleep(5);
    const allLooks = () => ['lookHead', 'readSeals', 'readNewestSegments'].reduce((n, m) => n + (repository.calls.get(m) ?? 0), 0);
    const looksBefore = allLooks();
    const waited = await Promise.all(followers.map((ledger, i) => ledger.appendEvent('orders', draft(`f-${i}`))));
    const looks = allLooks() - looksBefore;
    await first;
    assert.equal(waited.length, 3, 'the followers were answered once the round went on');
    // Looking once per typical round (30 ms here) for 8 s would be about 270 looks each; spaced by a quarter
    // of the wait so far (at most 1 s), about 25.
    assert.ok(looks <= 3 * 30, `looks while waiting 8 s: ${looks}`);
    assertLinear(repository.blocksOf('orders'));
  });

  it('on a chain with one pending shard, a waiting writer finds its receipt in the newest segments: no head read, no round item', async () => {
    // Each look is a read: at the head, a waiting writer would also read the round's item when its metadata
    // is too large for the head, and the segments since when its round was not the newest.
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const instances = Array.from({ length: 8 }, () => instance(repository, clock));
    await instances[0]!.createSubChain('orders');
    await Promise.all(
      instances.map(async (ledger, i) => {
        for (let n = 0; n < 12; n += 1) await ledger.appendEvent('orders', draft(`pkg-${i}`, n));
      }),
    );
    assertLinear(repository.blocksOf('orders'));
    assert.equal((await repository.getHead('orders'))!.pendingShards ?? 1, 1, 'eight writers one after another do not crowd one shard');
    const followed = counters(instances).reduce((n, c) => n + c.followed, 0);
    const receipts = repository.calls.get('readNewestSegments') ?? 0;
    assert.ok(followed >= 20, `appends were handed over: ${followed}`);
    assert.ok(receipts >= followed, `every waiting writer looked at the segments: ${receipts} looks, ${followed} writers`);
    // Rounds here are large enough for their metadata to go to a round item, which a look at the head would read.
    assert.ok((repository.calls.get('putRound') ?? 0) > 0, 'some rounds had their metadata in a round item');
    assert.equal(repository.calls.get('getRound') ?? 0, 0, 'no waiting writer read a round item');
  });

  it('on a quiet chain, a writer whose leader went away before its append landed leads after one fruitless look', async () => {
    // Its receipts are in the segments; the head (who leads) is read when the first look finds none, not only
    // every few rounds: else it would wait 200 ms for a round nobody was going to make.
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const [first, writer] = [instance(repository, clock), instance(repository, clock)];
    await first!.createSubChain('orders');
    await repository.acquireLease('orders', 'gone', clock.now() * 1000, clock.now() * 1000 + 20);
    const started = clock.now();
    await writer!.appendEvent('orders', draft('writer'));
    const tookMs = (clock.now() - started) * 1000;
    assert.ok(tookMs < 120, `answered after ${tookMs} ms`);
    assert.equal(counters([writer!])[0]!.followed, 1, 'it waited as a follower first');
    assertLinear(repository.blocksOf('orders'));
  });

  it('a chain whose appends trickle in while a round is slow stays on one pending shard; a burst spreads it', async () => {
    // Every pending shard costs a seal per round: a chain is spread when appends arrive faster than a quarter of
    // what one partition takes (250 a second per shard), not when a slow round lets a few queue.
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const instances = Array.from({ length: 24 }, () => instance(repository, clock, { pendingShards: 4 }));
    await instances[0]!.createSubChain('orders');
    const queued = async (writers: Ledger[], everyMs: number, tag: string) => {
      await repository.acquireLease('orders', 'someone', clock.now() * 1000, clock.now() * 1000 + 400);
      await Promise.all(
        writers.map(async (ledger, i) => {
          await clock.sleep(1 + i * everyMs);
          await ledger.appendEvent('orders', draft(`${tag}-${i}`));
        }),
      );
    };
    // Ten appends 20 ms apart (50 a second) while another holds the lease: ten wait, slowly written.
    await queued(instances.slice(0, 10), 20, 'trickle');
    assert.equal((await repository.getHead('orders'))!.pendingShards ?? 1, 1, 'ten appends at 50 a second leave the chain on one shard');
    // Twelve within a few milliseconds: a burst.
    await queued(instances.slice(10, 22), 0.2, 'burst');
    assert.equal((await repository.getHead('orders'))!.pendingShards, 2, 'twelve appends at once spread the chain over two shards');
    assertLinear(repository.blocksOf('orders'));
    assert.equal(repository.blocksOf('orders').length, 1 + 22);
  });

  it('a cold burst spreads a chain over as many shards as it needs in one round, not one doubling a round', async () => {
    // Hundreds of writers at once on a new chain all write to its one shard, and read their receipts there: in
    // the simulation at 512 instances that partition's reads throttled while the chain doubled round by round.
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const instances = Array.from({ length: 41 }, () => instance(repository, clock, { pendingShards: 16 }));
    await instances[0]!.createSubChain('orders');
    await repository.acquireLease('orders', 'someone', clock.now() * 1000, clock.now() * 1000 + 400);
    await Promise.all(
      instances.slice(1).map(async (ledger, i) => {
        await clock.sleep(1 + i * 0.1);
        await ledger.appendEvent('orders', draft(`burst-${i}`));
      }),
    );
    // 40 waiting on one shard, written within 4 ms: 8 shards would hold 5 each (under the 8 that spread one).
    assert.equal((await repository.getHead('orders'))!.pendingShards, 8, 'forty appends at once spread the chain over eight shards');
    assertLinear(repository.blocksOf('orders'));
    assert.equal(repository.blocksOf('orders').length, 1 + 40);
  });

  it('a writer that saw others lately looks before it asks for the lease, and asks none that a live lease would refuse', async () => {
    // A lease request refused by a live lease still costs a write on the head's partition (a busy chain's limit).
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const [leader, writer, another] = [instance(repository, clock), instance(repository, clock), instance(repository, clock)];
    await leader!.createSubChain('orders');
    const stallCommit = (ms: number) => {
      let stalled = false;
      repository.holds.set('commitRound', () => {
        if (stalled) return undefined;
        stalled = true;
        return clock.sleep(ms);
      });
      return () => stalled;
    };
    // First the writer meets the leader: it follows the leader's round.
    let stalled = stallCommit(300);
    const first = leader!.appendEvent('orders', draft('leader', 0));
    while (!stalled()) await clock.sleep(5);
    await Promise.all([first, writer!.appendEvent('orders', draft('writer', 0))]);
    // A moment later (past the lease it saw, within the time it counts others as about) another instance leads.
    await clock.sleep(1_200);
    stalled = stallCommit(600);
    const second = another!.appendEvent('orders', draft('another', 0));
    while (!stalled()) await clock.sleep(5);
    const asked = repository.calls.get('acquireLease') ?? 0;
    const taken = counters([leader!, writer!, another!]).reduce((n, c) => n + c.leaseTakes, 0);
    await Promise.all([second, writer!.appendEvent('orders', draft('writer', 1))]);
    const refused =
      (repository.calls.get('acquireLease') ?? 0) - asked - (counters([leader!, writer!, another!]).reduce((n, c) => n + c.leaseTakes, 0) - taken);
    assert.equal(refused, 0, 'no lease request was refused');
    assert.equal(counters([writer!])[0]!.followed, 2, 'the writer followed both times');
    assertLinear(repository.blocksOf('orders'));
    assert.equal(repository.blocksOf('orders').length, 5);
  });

  for (const [size, where] of [
    [1, 'on the head'],
    [12, 'in a round item'],
  ] as const) {
    it(`a round written whole whose finish was lost (metadata ${where}) is finished by the next leader after its pending appends expired`, async () => {
      // The leader wrote the records and the segment, but the write saying so failed: the head still names the
      // round as unwritten. A week later TTL has deleted the pending appends (and the round item): the next
      // leader must not need them, or the chain could never be appended to again.
      const repository = createMemoryLedgerRepository();
      const clock = virtualClock(repository);
      const [leader, later] = [instance(repository, clock), instance(repository, clock)];
      await leader!.createSubChain('orders');
      repository.faults.set('finishRound', [Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' })]);
      const first = await leader!.appendEvents(
        'orders',
        Array.from({ length: size }, (_, i) => draft('leader', i)),
      );
      assert.equal(first.length, size);
      const head = (await repository.getHead('orders'))!;
      assert.ok((head.materialized ?? head.headIndex) < head.headIndex && !head.recentFlushed, 'the head still says the round is unwritten');
      if (size > 1) assert.ok(head.recent && 'round' in head.recent, 'its metadata is in a round item');
      await clock.sleep(7 * 24 * 3600 * 1000);
      repository.expireAll();
      const next = await later!.appendEvent('orders', draft('later'));
      assert.equal(next.block.index, size + 1);
      const blocks = repository.blocksOf('orders');
      assertLinear(blocks);
      assert.equal(blocks.length, size + 2);
      assert.equal(repository.recordsOf('orders').length, size + 2, 'every block has its record');
    });
  }

  it('the sweep finishes a round its leader left unwritten, before TTL takes its bodies; it leaves written and leased chains alone', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const [leader, other, sweeper] = [instance(repository, clock), instance(repository, clock), instance(repository, clock)];
    for (const name of ['orders', 'quiet', 'busy']) {
      await leader!.createSubChain(name);
      await leader!.appendEvent(name, draft('first'));
    }
    // DynamoDB refuses the round's records (through every retry): the commit stands and its caller is answered
    // with its block (a 503 would say it did not land), the body waits in its pending append, and nobody appends
    // to the chain again.
    repository.faults.set('writeRound', [Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' })]);
    const answered = await instance(repository, clock).appendEvent('orders', draft('leader'));
    assert.equal(answered.block.index, 2);
    assert.equal((await repository.getHead('orders'))!.headIndex, 2, 'the block is on the chain');
    assert.ok(!repository.recordsOf('orders').some((b) => b.index === 2), 'its record is not written');
    assert.equal((await repository.getBlock('orders', 2, true))?.hash, answered.block.hash, 'and it reads back, from its pending append');
    await other!.appendEvent('quiet', draft('other'));
    // On 'busy', another instance holds the lease over an unwritten round.
    repository.faults.set('writeRound', [Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' })]);
    await instance(repository, clock).appendEvent('busy', draft('other'));
    await clock.sleep(2_000);
    await repository.acquireLease('busy', 'someone', clock.now() * 1000, clock.now() * 1000 + 60_000);
    const result = await finishAbandonedRounds({ repository, appender: appenders.get(sweeper!)! }, () => 60_000);
    assert.deepEqual(result.finished, ['orders']);
    assert.deepEqual(result.leased, ['busy']);
    assert.deepEqual(result.failed, []);
    assert.equal(result.chains, 4, 'the Main Chain and the three Sub-Chains');
    const head = (await repository.getHead('orders'))!;
    assert.equal(head.recentFlushed, true, 'the head says the round is written');
    assert.equal(head.turnHolder ?? null, null, 'and the lease is given back');
    // A week later the pending appends are gone: the block is read from its record.
    repository.expireAll();
    const blocks = repository.recordsOf('orders');
    assertLinear(blocks);
    assert.deepEqual(
      blocks.slice(1).map((b) => b.events[0]?.entity_id),
      ['first', 'leader'],
    );
    assert.deepEqual((await finishAbandonedRounds({ repository, appender: appenders.get(sweeper!)! }, () => 60_000)).finished, [], 'nothing left to finish');
  });

  it('the sweep pages through the chain list: one cut short goes on where it stopped, one that reaches the end starts over, and a chain that fails holds back none after it', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const [leader, sweeper] = [instance(repository, clock), instance(repository, clock)];
    const names = ['c1', 'c2', 'c3', 'c4', 'c5'];
    for (const name of names) {
      await leader!.createSubChain(name);
      await leader!.appendEvent(name, draft('first'));
      // Each chain's round is committed and its records refused: its body waits in a pending append.
      repository.faults.set('writeRound', [Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' })]);
      await instance(repository, clock).appendEvent(name, draft(name));
    }
    await clock.sleep(2_000);
    const unwritten = async () => (await Promise.all(names.map((n) => repository.getHead(n)))).filter((h) => !h!.recentFlushed).map((h) => h!.chainName);
    assert.deepEqual(await unwritten(), names);
    const appender = appenders.get(sweeper!)!;
    // Time for the Main Chain and two Sub-Chains' rounds only (pages of 2).
    let budget = 3;
    const timeLeft = () => (budget > 0 ? 60_000 : 0);
    const counting: Pick<ChainAppender, 'finishAbandoned'> = {
      finishAbandoned: async (name) => {
        budget -= 1;
        return appender.finishAbandoned(name);
      },
    };
    const first = await finishAbandonedRounds({ repository, appender: counting }, timeLeft, 2);
    assert.deepEqual(first.finished, ['c1', 'c2', 'c3']);
    assert.equal(first.reachedEnd, false);
    assert.equal(first.resumed, false);
    assert.equal(first.stoppedAfter, 'c3');
    assert.deepEqual(await unwritten(), ['c4', 'c5']);
    // The next sweep goes on after c3; c4 fails, and c5 is finished all the same.
    repository.faults.set('getRecords', [new Error('c4 cannot be read')]);
    budget = 100;
    const second = await finishAbandonedRounds({ repository, appender: counting }, timeLeft, 2);
    assert.equal(second.resumed, true);
    assert.deepEqual(second.finished, ['c5']);
    assert.deepEqual(
      second.failed.map((f) => f.chain_name),
      ['c4'],
    );
    assert.equal(second.reachedEnd, true);
    assert.equal(second.chains, 2, 'it read only the heads after where the first stopped');
    assert.equal(await repository.getSweepPosition(), undefined, 'the end of the list clears the place');
    // The pass after starts over, and finishes c4.
    const third = await finishAbandonedRounds({ repository, appender: counting }, timeLeft, 2);
    assert.equal(third.resumed, false);
    assert.deepEqual(third.finished, ['c4']);
    assert.equal(third.chains, 6, 'the Main Chain and the five Sub-Chains');
    assert.deepEqual(await unwritten(), []);
    repository.expireAll();
    for (const name of names)
      assert.deepEqual(
        repository
          .recordsOf(name)
          .slice(1)
          .map((b) => b.events[0]?.entity_id),
        ['first', name],
        `${name}'s blocks read back after TTL`,
      );
  });

  it('writes again an append that landed below the cursor after a leader read past it, and seals it once', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const [slow, fast, leader] = Array.from({ length: 3 }, () => instance(repository, clock));
    await leader!.createSubChain('orders');
    // Another instance leads, so that both appends go as pending appends.
    await repository.acquireLease('orders', 'someone', clock.now() * 1000, clock.now() * 1000 + 300);
    // The slow writer's append takes a long way to the table: it lands after a leader sealed a later one.
    let landed = false;
    repository.holds.set('putPending', async (_chain, append) => {
      if ((append as { drafts: string }).drafts.includes('"slow"') && !landed) {
        landed = true;
        await clock.sleep(2_000);
      }
    });
    // The slow writer has learnt that receipts take 300 ms here (its looks at the head are 1.2 s apart).
    Object.assign((appenders.get(slow!) as unknown as { weatherOf(chain: string): object }).weatherOf('orders'), { receiptMs: 300, receiptDevMs: 0 });
    const startedS = clock.now();
    let tookMs = 0;
    const slowAppend = slow!.appendEvent('orders', draft('slow')).then((block) => {
      tookMs = (clock.now() - startedS) * 1000;
      return block;
    });
    await clock.sleep(5);
    const fastAppend = fast!.appendEvent('orders', draft('fast'));
    const [a, b] = await Promise.all([slowAppend, fastAppend]);
    const blocks = repository.blocksOf('orders');
    assertLinear(blocks);
    assert.deepEqual(eventIds(blocks.slice(1)).sort(), [a.event_id, b.event_id].sort(), 'each event once');
    assert.ok(blocks.findIndex((x) => x.events[0]?.entity_id === 'fast') < blocks.findIndex((x) => x.events[0]?.entity_id === 'slow'));
    assert.equal(counters([slow!])[0]!.rewrites, 1, 'the slow append was written again, above the cursor');
    // Its write took 2 s to land. Then it is answered within 350 ms: its first look misses, the head shows the
    // cursor past it and nobody leading (every record written), so the whole answer is read at once rather
    // than 200 ms later, and having written it again it leads at once rather than at its next look.
    assert.ok(tookMs <= 2_000 + 350, `answered ${Math.round(tookMs - 2_000)} ms after its write landed`);
  });

  it('looks at the head at least every second, however slow it has learnt receipts to be: a dead leader is replaced soon after its lease ends', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const [writer, creator] = Array.from({ length: 2 }, () => instance(repository, clock));
    await creator!.createSubChain('orders');
    // A leader that took the lease for 1.5 s and died: it never reads the pending appends.
    const leaseEndsS = clock.now() + 1.5;
    await repository.acquireLease('orders', 'dead', clock.now() * 1000, leaseEndsS * 1000);
    // The writer has learnt that receipts take 2 s here (a crowded chain of batches). Its looks at the head were
    // four of those apart (8 s), so it found the lease gone and led only then; now they are at most 1 s apart.
    Object.assign((appenders.get(writer!) as unknown as { weatherOf(chain: string): object }).weatherOf('orders'), { receiptMs: 2_000, receiptDevMs: 0 });
    const appended = await writer!.appendEvent('orders', draft('waited'));
    const lateS = clock.now() - leaseEndsS;
    const blocks = repository.blocksOf('orders');
    assertLinear(blocks);
    assert.deepEqual(eventIds(blocks.slice(1)), [appended.event_id], 'appended once');
    assert.ok(lateS <= 1.2, `answered ${lateS.toFixed(2)} s after the dead leader's lease ended`);
  });

  for (const [what, requestMs, promptMs, lateMs] of [
    ['a leader whose read answers late seals no append keyed within the settle time before the read was sent', 0, 1, 2],
    ['on a store whose requests take 30 ms, a leader leaves twice that for appends to land before it seals past them', 30, 12, 15],
  ] as const) {
    it(what, async () => {
      // A pending append's key is its writer's clock as it sends the write, so a write keyed just before a
      // leader's read may land just after the read was served. A leader that sealed a later-keyed append that
      // was there moved the cursor past the late one: skipped, left for its writer to find out and write again
      // (about a second on a busy chain). Counted from the read's answer (40 ms late here), the settle time
      // let that happen to appends keyed 2 ms before the read; a fixed 10 ms, to writes slower than that.
      const repository = createMemoryLedgerRepository();
      const clock = virtualClock(repository);
      const leader = instance(repository, clock);
      await leader.createSubChain('orders');
      const pendingOf = (entity: string, ms: number) => ({
        ref: { shard: 0, sk: pendingSk(ms, entity === 'late' ? '00000000000a' : '00000000000b') },
        drafts: JSON.stringify([{ events: [draft(entity)] }]),
      });
      const listPending = repository.listPending.bind(repository);
      let slowed = false;
      repository.listPending = async (...args: Parameters<typeof listPending>) => {
        if (slowed) return listPending(...args);
        slowed = true;
        const sentMs = clock.now() * 1000;
        const expires = Math.ceil(clock.now()) + 3_600;
        // Keyed a moment before the read was sent, and there when the read is served.
        await repository.putPending('orders', pendingOf('prompt', sentMs - promptMs), expires);
        const read = await listPending(...args);
        // Keyed before it, this one's write lands just after the read was served.
        await repository.putPending('orders', pendingOf('late', sentMs - lateMs), expires);
        await clock.sleep(40);
        return read;
      };
      if (requestMs > 0) everyRequestTakes(repository, clock, requestMs);
      await leader.appendEvent('orders', draft('leader', 0));
      // The next leader's round finds both, settled now.
      await leader.appendEvent('orders', draft('leader', 1));
      const blocks = repository.blocksOf('orders');
      assertLinear(blocks);
      const entities = blocks.slice(1).map((b) => b.events[0]!.entity_id);
      assert.equal(entities.filter((e) => e === 'late').length, 1, 'the late append is sealed, once');
      assert.equal(entities.filter((e) => e === 'prompt').length, 1, 'the prompt one too');
      assert.ok(entities.indexOf('late') < entities.indexOf('prompt'), 'in the order of their keys');
    });
  }

  it('on a busy chain, a writer whose seal is older than the few it reads finds it in the segments, and does not append it twice', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const options = { pendingShards: 2, leaseMs: 5_000 };
    const instances = Array.from({ length: 16 }, () => instance(repository, clock, options));
    const [writer, ...others] = instances;
    await writer!.createSubChain('orders');
    // A burst while another instance holds the lease: 16 pending appends in one partition, so the next
    // leader spreads the chain over two.
    await repository.acquireLease('orders', 'someone', clock.now() * 1000, clock.now() * 1000 + 300);
    const acknowledged: string[] = [];
    await Promise.all(instances.map(async (ledger, i) => acknowledged.push((await ledger.appendEvent('orders', draft(`burst-${i}`))).event_id)));
    assert.equal((await repository.getHead('orders'))!.pendingShards, 2, 'the chain is spread over two pending partitions');
    // Then the others keep the chain busy, round after round, while the writer appends now and then: what
    // it last saw of the head is many rounds old when it looks for its seal.
    const busy = others.slice(0, 8).map(async (ledger, i) => {
      for (let n = 0; n < 12; n += 1) acknowledged.push((await ledger.appendEvent('orders', draft(`busy-${i}`, n))).event_id);
    });
    const writing = (async () => {
      for (let n = 0; n < 6; n += 1) {
        await clock.sleep(40);
        acknowledged.push((await writer!.appendEvent('orders', draft('writer', n))).event_id);
      }
    })();
    await Promise.all([...busy, writing]);
    const blocks = repository.blocksOf('orders');
    assertLinear(blocks);
    assert.deepEqual(eventIds(blocks.slice(1)).sort(), [...acknowledged].sort(), 'each acknowledged event once, nothing else');
    assert.equal(counters([writer!])[0]!.rewrites, 0, 'no append of the writer was written again');
  });

  it('on a chain with one pending shard, a writer whose round is older than the newest few segments finds its receipt at its next look', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    everyRequestTakes(repository, clock, 2);
    const segments = async () => (await repository.readSegments('orders', 0, 10_000, true)).length;
    // The writer's first look for its receipt is served only once 6 more rounds (each its segment) have been
    // made: a writer on a throttled instance, or one whose first look came late, on a chain making small rounds.
    let heldUntil: number | undefined;
    let looks = 0;
    const slow = new Proxy(repository, {
      get: (target, key, receiver) => {
        const method = Reflect.get(target, key, receiver) as (...args: unknown[]) => Promise<unknown>;
        if (key !== 'readNewestSegments' && key !== 'readSegments') return method;
        return async (...args: unknown[]) => {
          looks += 1;
          if (looks === 1) {
            const enough = (await segments()) + 6;
            while ((await segments()) < enough) await clock.sleep(5);
            heldUntil = clock.now();
          }
          return method.apply(target, args);
        };
      },
    });
    const writer = instance(slow, clock, { leaseMs: 5_000 });
    const others = [instance(repository, clock, { leaseMs: 5_000 }), instance(repository, clock, { leaseMs: 5_000 })];
    await writer.createSubChain('orders');
    const acknowledged: string[] = [];
    let writing = true;
    // Two instances appending one after another: small rounds, each with its segment.
    const busy = others.map(async (ledger, i) => {
      for (let n = 0; writing || n < 2; n += 1) acknowledged.push((await ledger.appendEvent('orders', draft(`busy-${i}`, n))).event_id);
    });
    await clock.sleep(20);
    // The writer follows (another instance holds the lease) and is sealed in one of the next rounds.
    await repository.acquireLease('orders', 'someone', clock.now() * 1000, clock.now() * 1000 + 30);
    acknowledged.push((await writer.appendEvent('orders', draft('writer'))).event_id);
    const answeredAfterMs = (clock.now() - heldUntil!) * 1000;
    writing = false;
    await Promise.all(busy);
    const blocks = repository.blocksOf('orders');
    assertLinear(blocks);
    assert.deepEqual(eventIds(blocks.slice(1)).sort(), [...acknowledged].sort(), 'each acknowledged event once, nothing else');
    assert.equal(counters([writer])[0]!.followed, 1, 'the writer waited for a leader');
    // Looking at the newest four again and again, it would find it only once a look at the head said the cursor
    // was past it for a while (200 ms here), and then by reading every segment since.
    assert.ok(answeredAfterMs <= 100, `answered ${Math.round(answeredAfterMs)} ms after its first look was served (${looks} looks)`);
  });

  it('a batch found in the segments after newer rounds, its metadata split over two of them, is answered whole and once', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    // A slow writer (a throttled instance): each look at the head takes a while, and rounds go on meanwhile,
    // so its batch is no longer on the head when it looks, but in the segments; 60 blocks pack over 4 KB.
    const slow = new Proxy(repository, {
      get: (target, key, receiver) =>
        key === 'getHead'
          ? async (...args: Parameters<MemoryLedgerRepository['getHead']>) => {
              await clock.sleep(80);
              return target.getHead(...args);
            }
          : Reflect.get(target, key, receiver),
    });
    const writer = instance(slow, clock, { leaseMs: 5_000 });
    const others = Array.from({ length: 8 }, () => instance(repository, clock, { leaseMs: 5_000 }));
    await writer.createSubChain('orders');
    await repository.acquireLease('orders', 'someone', clock.now() * 1000, clock.now() * 1000 + 100);
    const acknowledged: string[] = [];
    const busy = others.map(async (ledger, i) => {
      for (let n = 0; n < 12; n += 1) acknowledged.push((await ledger.appendEvent('orders', draft(`busy-${i}`, n))).event_id);
    });
    const appended = await writer.appendEvents(
      'orders',
      Array.from({ length: 60 }, (_, n) => draft('writer', n)),
    );
    assert.equal(appended.length, 60, 'the whole batch is answered');
    acknowledged.push(...appended.map((a) => a.event_id));
    await Promise.all(busy);
    const blocks = repository.blocksOf('orders');
    assertLinear(blocks);
    assert.deepEqual(eventIds(blocks.slice(1)).sort(), [...acknowledged].sort(), 'each acknowledged event once, nothing else');
    assert.equal(counters([writer])[0]!.rewrites, 0, 'the batch was not written again');
  });

  it('a follower that waits past its deadline moves the cursor past its append: 503, and it never lands', async () => {
    const repository = createMemoryLedgerRepository();
    const clock = virtualClock(repository);
    const patient = instance(repository, clock, { waitMs: 400 });
    await patient.createSubChain('orders');
    await repository.acquireLease('orders', 'stuck', clock.now() * 1000, clock.now() * 1000 + 60_000);
    await assert.rejects(patient.appendEvent('orders', draft('late')), (error: unknown) => (error as { statusCode?: number }).statusCode === 503);
    await repository.releaseLease('orders', 'stuck');
    const later = await instance(repository, clock).appendEvent('orders', draft('later'));
    assert.deepEqual(eventIds(repository.blocksOf('orders').slice(1)), [later.event_id], 'only the later event is on the chain');
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

describe('settling a failed append while DynamoDB is unavailable', () => {
  const unavailable = () => Promise.reject(new DependencyUnavailableError('DynamoDB'));
  const core = (waitMs: number) => {
    const slept: number[] = [];
    const appender = new ChainAppender(createMemoryLedgerRepository(), {
      maxAttempts: 3,
      batchMax: 10,
      waitMs,
      sleep: async (ms) => {
        slept.push(ms);
      },
    });
    return { appender, slept };
  };

  it('outside an invocation (no deadline) tries again for at most waitMs in all, then gives the error', async () => {
    const { appender, slept } = core(2_000);
    await assert.rejects(settling(appender, unavailable), DependencyUnavailableError);
    const total = slept.reduce((n, ms) => n + ms, 0);
    assert.ok(slept.length >= 3, `tried again ${slept.length} times`);
    assert.ok(total <= 2_000, `waited ${total} ms in all`);
  });

  it('inside an invocation, until its deadline less the 500 ms grace', async () => {
    const { appender, slept } = core(60_000);
    await withDeadline(steadyNow() + 1_000, () => assert.rejects(settling(appender, unavailable), DependencyUnavailableError));
    // The sleeps here take no time, so the deadline stays 1 s away: no single wait may reach past it less the grace.
    assert.ok(slept.length >= 2, `tried again ${slept.length} times`);
    assert.ok(Math.max(...slept) < 1_000 - 500, `a wait of ${Math.max(...slept)} ms would pass the deadline less its grace`);
  });
});

describe('one process under steady load (the local stack runs every request in one process)', () => {
  it('commits each batch within the deadlines of the callers it serves, not of the caller that started the queue', async () => {
    const repository = createMemoryLedgerRepository();
    // As the SDK does: once the invocation's deadline has passed, every DynamoDB request of it is aborted.
    for (const method of Object.keys(repository)) {
      if (typeof (repository as unknown as Record<string, unknown>)[method] !== 'function') continue;
      repository.holds.set(method, async () => {
        checkDeadline('DynamoDB');
        await new Promise((done) => setTimeout(done, 2));
      });
    }
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 99 }) });
    await ledger.createSubChain('steady');
    // The first caller has 1.6 s; callers keep coming for 2.5 s, each with 10 s, so the queue is seldom empty.
    const settled = (p: Promise<unknown>) =>
      p.then(
        (value) => ({ status: 'fulfilled' as const, value }),
        (reason: unknown) => ({ status: 'rejected' as const, reason }),
      );
    const first = settled(withDeadline(steadyNow() + 1_600, () => ledger.appendEvent('steady', draft('first'))));
    const later: ReturnType<typeof settled>[] = [];
    const until = Date.now() + 2_500;
    for (let n = 0; Date.now() < until; n += 1) {
      later.push(settled(withDeadline(steadyNow() + 10_000, () => ledger.appendEvent('steady', draft(`later-${n}`)))));
      await new Promise((done) => setTimeout(done, 1));
    }
    const outcomes = await Promise.all([first, ...later]);
    const failed = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [`${i}: ${String(o.reason)}`] : []));
    assert.deepEqual(failed.slice(0, 3), [], `${failed.length} of ${outcomes.length} appends failed after the first caller's deadline`);
    assert.ok(later.length > 100, `${later.length} callers came`);
    const blocks = repository.blocksOf('steady');
    assertLinear(blocks);
    assert.equal(blocks.length, 1 + outcomes.length, 'the genesis block and one block per event');
  });

  it('answers 503 to a caller whose deadline passed while it waited, and never commits its event after that', async () => {
    const repository = createMemoryLedgerRepository();
    let release!: () => void;
    const gate = new Promise<void>((done) => (release = done));
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 1 }) });
    await ledger.createSubChain('slow');
    let held = false;
    repository.holds.set('commitRound', async () => {
      if (!held) {
        held = true;
        await gate;
      }
    });
    const first = ledger.appendEvent('slow', draft('first'));
    await new Promise((done) => setTimeout(done, 20));
    const late = withDeadline(steadyNow() + 50, () => ledger.appendEvent('slow', draft('late')));
    await new Promise((done) => setTimeout(done, 100));
    release();
    await first;
    await assert.rejects(late, DeadlineExceededError);
    await new Promise((done) => setTimeout(done, 50));
    const entities = repository.blocksOf('slow').flatMap((b) => b.events.map((e) => e.entity_id));
    assert.deepEqual(entities, ['slow', 'first'].slice(entities[0] === 'slow' ? 0 : 1));
  });
});
