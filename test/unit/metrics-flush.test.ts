/**
 * Counts reach the shared counters without timers: Lambda freezes an instance between requests, so a
 * timer may never fire. An instance flushes at the end of a request when the interval has passed or
 * MAX_PENDING_REQUESTS are held back, and a reaped instance loses at most what it held since its last flush.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_PENDING_REQUESTS, type SharedCounters, type Totals, addTotals, createMetrics, emptyTotals } from '#shared/metrics/metrics';

function counters() {
  let stored: Totals = emptyTotals();
  let writes = 0;
  const shared: SharedCounters = {
    shards: 32,
    add: async (_shard, delta) => {
      writes += 1;
      stored = addTotals(stored, delta);
    },
    read: async () => stored,
  };
  return { shared, requests: () => stored.success + stored.failed, writes: () => writes };
}

describe('metrics flush at the end of a request, never from a timer', () => {
  it('holds counts back within the interval and adds them at the next request once it has passed', async () => {
    const { shared, requests, writes } = counters();
    const metrics = createMetrics({ shared, flushMs: 300 });
    await metrics.record(200, 0.01); // the instance's first request flushes (and brings its cold start)
    assert.equal(requests(), 1);
    await metrics.record(200, 0.01);
    await metrics.record(404, 0.01);
    assert.equal(requests(), 1, 'within the interval: held back');
    await new Promise((r) => setTimeout(r, 400)); // a frozen instance: nothing runs
    assert.equal(requests(), 1, 'no request, no flush: nothing ran while the instance was idle');
    await metrics.record(200, 0.01);
    assert.equal(requests(), 4, 'the next request adds everything held back');
    assert.equal(writes(), 2);
  });

  it(`holds back at most ${MAX_PENDING_REQUESTS - 1} requests: the most a reaped instance can lose`, async () => {
    const { shared, requests, writes } = counters();
    const metrics = createMetrics({ shared, flushMs: 60_000 });
    const total = 3 * MAX_PENDING_REQUESTS + 7;
    for (let i = 0; i < total; i += 1) {
      await metrics.record(200, 0.001);
      assert.ok(i + 1 - requests() < MAX_PENDING_REQUESTS, `after ${i + 1} requests, ${i + 1 - requests()} held back`);
    }
    // The instance is reaped now: what it held is lost, and no more than the bound.
    const lost = total - requests();
    assert.ok(lost > 0 && lost < MAX_PENDING_REQUESTS, `lost ${lost}`);
    assert.equal(writes(), 1 + 3, 'one write for the first request, then one per MAX_PENDING_REQUESTS');
  });

  it("reports the appender's counters, its rare paths too, summed across instances", async () => {
    const { shared } = counters();
    const ledger = { eventsAppended: 10, conflicts: 1, commits: 4, leaseTakes: 2, pendingReads: 4, roundWrites: 5, rewrites: 2, recoveries: 1 };
    const one = createMetrics({ shared, flushMs: 0, ledgerCounters: () => ledger });
    const other = createMetrics({ shared, flushMs: 0, ledgerCounters: () => ({ ...ledger, rewrites: 1, recoveries: 0 }) });
    await one.record(200, 0.01);
    await other.record(200, 0.01);
    const { body } = await one.render();
    assert.match(body, /^ledger_append_rewrites_total 3$/m, 'appends written again after landing below the cursor');
    assert.match(body, /^ledger_append_recoveries_total 1$/m, 'rounds of a dead leader finished by another');
    assert.match(body, /^ledger_append_round_writes_total 10$/m);
    assert.match(body, /^ledger_events_appended_total 20$/m);
  });

  it('keeps the counts of a flush the store refused, for the next one', async () => {
    let fail = true;
    let stored: Totals = emptyTotals();
    const shared: SharedCounters = {
      shards: 1,
      add: async (_shard, delta) => {
        if (fail) throw new Error('DynamoDB is down');
        stored = addTotals(stored, delta);
      },
      read: async () => stored,
    };
    const metrics = createMetrics({ shared, flushMs: 0 });
    await assert.rejects(metrics.record(200, 0.01), /DynamoDB is down/);
    fail = false;
    await metrics.record(200, 0.01);
    assert.equal(stored.success, 2);
  });
});
