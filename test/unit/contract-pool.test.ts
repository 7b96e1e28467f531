/**
 * The contract pool: runs on worker threads with a deadline enforced from outside, a bounded queue, and
 * deterministic time and chance. Real QuickJS in real worker threads; nothing mocked.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ContractsBusyError, createContractPool } from '#shared/business/contract-pool';
import { ContractExecutionError } from '#shared/business/sandbox';

const limits = { timeoutMs: 300, memoryBytes: 32 * 1024 * 1024, stackBytes: 256 * 1024, maxResultBytes: 1024 * 1024 };
const pool = createContractPool({ limits, workers: 2, queue: 2 });
after(() => pool.close());

const timed = async <T>(run: () => Promise<T>): Promise<{ ms: number; result: PromiseSettledResult<T> }> => {
  const t0 = performance.now();
  const [result] = await Promise.allSettled([run()]);
  return { ms: performance.now() - t0, result: result! };
};

describe('Contract pool (worker threads, hard deadlines)', () => {
  it('runs a contract and answers its JSON', async () => {
    assert.deepEqual(await pool.run('function execute(e, c) { return { total: e.a + e.b, chain: c.chain } }', { a: 40, b: 2 }, { chain: 'x' }), {
      total: 42,
      chain: 'x',
    });
    await pool.check('function execute() { return 1 }');
    await assert.rejects(pool.check('const x = 1;'), ContractExecutionError);
  });

  it('stops a loop spent inside builtins at its deadline, from outside, and goes on with a fresh worker', async () => {
    const hostile = 'function execute() { const a = []; for (let i = 0; i < 100000; i++) a.push(new Array(1e6).fill(7).join(",").length); return a.length }';
    const { ms, result } = await timed(() => pool.run(hostile, {}, {}));
    assert.equal(result.status, 'rejected');
    assert.ok((result as PromiseRejectedResult).reason instanceof ContractExecutionError);
    assert.match(((result as PromiseRejectedResult).reason as Error).message, /ran out of (time|CPU time|memory)/);
    assert.ok(ms < limits.timeoutMs + 1_000, `stopped after ${Math.round(ms)} ms`);
    assert.deepEqual(await pool.run('function execute() { return "still here" }', {}, {}), 'still here');
  });

  it('ends an endless loop within its limit plus one second', async () => {
    const { ms, result } = await timed(() => pool.run('function execute() { for (;;) {} }', {}, {}));
    assert.equal(result.status, 'rejected');
    assert.ok(ms < limits.timeoutMs + 1_000, `stopped after ${Math.round(ms)} ms`);
  });

  it('refuses runs past the workers and the queue with 429 and Retry-After', async () => {
    const slow = 'function execute() { for (;;) {} }';
    const runs = Array.from({ length: 5 }, () => pool.run(slow, {}, {}).catch((e: Error) => e));
    const outcomes = await Promise.all(runs);
    const busy = outcomes.filter((o) => o instanceof ContractsBusyError) as ContractsBusyError[];
    assert.equal(busy.length, 1, '2 running + 2 queued; the fifth is refused');
    assert.equal(busy[0]!.statusCode, 429);
    assert.equal(busy[0]!.headers['Retry-After'], '1');
    assert.ok(outcomes.filter((o) => o instanceof ContractExecutionError).length === 4);
  });

  it('makes time and chance part of the input: a run can be replayed', async () => {
    const source =
      'function execute(e) { return { r: [Math.random(), Math.random()], now: Date.now(), d: new Date().toISOString(), sab: typeof SharedArrayBuffer, atomics: typeof Atomics } }';
    const one = (await pool.run(source, { n: 1 }, { timestamp: 1795291099.5 })) as { r: number[]; now: number; d: string; sab: string; atomics: string };
    const again = await pool.run(source, { n: 1 }, { timestamp: 1795291099.5 });
    const other = (await pool.run(source, { n: 2 }, { timestamp: 1795291099.5 })) as typeof one;
    assert.deepEqual(again, one, 'the same input, the same run');
    assert.notDeepEqual(other.r, one.r, 'another input, other random numbers');
    assert.ok(one.r.every((x) => x >= 0 && x < 1) && one.r[0] !== one.r[1]);
    assert.equal(one.now, 1795291099500);
    assert.equal(one.d, new Date(1795291099500).toISOString());
    assert.equal(one.sab, 'undefined');
    assert.equal(one.atomics, 'undefined');
  });
});
