/**
 * The Lambda-faithful local runtime: each function a pool of single-request instances running its
 * bundle. Observed from outside, as a user would: cold starts in /metrics, the concurrency limit, one
 * request per instance (no two concurrent appends share a process's group commit), and the single-
 * process mode still there for debugging.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, metricOf, stopAndRemove, startStack, type Stack } from '#test/support/stack';

let pooled: Stack;
let single: Stack;

/** A contract that keeps its instance busy a while (a run's clock is fixed by its input, so it counts instead). */
const BUSY = (iterations: number) => `function execute(event) { let x = 0; for (let i = 0; i < ${iterations}; i++) x += i; return { ok: x > 0 }; }`;

before(async () => {
  [pooled, single] = await Promise.all([
    startStack({ env: { SVC_LOCAL_RUNTIME: 'instances', SVC_LOCAL_MAX_INSTANCES: '3', SVC_METRICS_FLUSH_MS: '0', SVC_CONTRACT_TIMEOUT_MS: '10000' } }),
    startStack({ env: { SVC_LOCAL_RUNTIME: 'single-process' } }),
  ]);
});

after(() => stopAndRemove(pooled, single));

describe('Functions as pools of single-request instances (SVC_LOCAL_RUNTIME=instances)', () => {
  it('says how it runs at start', () => {
    assert.match(pooled.output(), /Functions: each a pool of single-request instances, up to 3 each/);
    assert.match(single.output(), /Functions: all in this process/);
  });

  it('starts a new instance per concurrent request, up to the limit, and counts the cold starts', async () => {
    const before = await metricOf(pooled, 'lambda_cold_starts_total');
    assert.equal((await call(pooled.url, 'POST', '/api/v2/contracts', { contract_id: 'busy', version: '1.0.0', implementation: BUSY(5_000_000) })).status, 201);
    const run = () => call(pooled.url, 'POST', '/api/v2/contracts/execute', { contract_id: 'busy', event: { entity_id: 'x', event: 'run', details: {} } });
    const alone = performance.now();
    assert.equal((await run()).status, 200);
    const single = performance.now() - alone;
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 6 }, run));
    const elapsed = performance.now() - started;
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200, 200, 200, 200],
      'past the limit, requests wait for an instance',
    );
    // Six runs on at most 3 instances take at least two rounds of one run.
    assert.ok(elapsed >= 1.5 * single, `6 runs on 3 instances took ${Math.round(elapsed)} ms; one alone ${Math.round(single)} ms`);
    const after = await metricOf(pooled, 'lambda_cold_starts_total');
    // The contracts pool grew to its limit (the first request's instance was already warm or counted before).
    assert.ok(after - before >= 2 && after - before <= 3, `cold starts went from ${before} to ${after}`);
  });

  it('serves concurrent appends from separate instances, each in its own block, combined only through DynamoDB', async () => {
    assert.equal((await call(pooled.url, 'POST', '/api/v1/chains/apart/create')).status, 201);
    const commits = await metricOf(pooled, 'ledger_append_commits_total');
    const events = await Promise.all(
      Array.from({ length: 3 }, (_, i) => call(pooled.url, 'POST', '/api/v1/chains/apart/events', { entity_id: `e${i}`, event_type: 'apart' })),
    );
    assert.deepEqual(
      events.map((e) => e.status),
      [200, 200, 200],
    );
    const blocks = await call(pooled.url, 'GET', '/api/v1/chains/apart/blocks?limit=10');
    assert.equal(blocks.body.total, 4, 'one block per event');
    // Each instance serves one request. Appends on separate instances may still share a transaction, but
    // only through DynamoDB: a leader seals the pending appends other instances wrote (docs/appending.md).
    // So 1 to 3 commits, depending on timing.
    const made = (await metricOf(pooled, 'ledger_append_commits_total')) - commits;
    assert.ok(made >= 1 && made <= 3, `${made} commits for 3 appends`);
  });

  it('keeps the one-process mode for debugging, where concurrent appends share a process', async () => {
    assert.equal((await call(single.url, 'POST', '/api/v1/chains/together/create')).status, 201);
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) => call(single.url, 'POST', '/api/v1/chains/together/events', { entity_id: `e${i}`, event_type: 'together' })),
    );
    assert.ok(answers.every((a) => a.status === 200));
    assert.ok((await metricOf(single, 'ledger_append_commits_total')) < 16, 'group commit joined some of them in one process');
  });
});
