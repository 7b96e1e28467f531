/**
 * Contract runs admitted across the service (shared/business/contract-admission.ts): at most so many at once and
 * so many waiting, whichever instance serves each run; one more refused at once with 429 and Retry-After; waiters
 * first, in order; a slot an instance died holding taken back at its expiry; a write lost to another instance read
 * again, and one whose answer was lost recognised as landed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ContractsBusyError, createContractAdmission, memoryRunSlots, type RunSlotStore } from '#shared/business/contract-admission';

/** A clock the test moves: sleeping advances it, so waits take no real time. */
function clock(start = 1_000_000) {
  const c = {
    t: start,
    now: () => c.t,
    sleep: async (ms: number) => {
      c.t += ms;
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
  return c;
}

const OPTIONS = { runsAtOnce: 2, waiting: 1, holdMs: 2_000, maxWaitMs: 1_000, retryAfterSeconds: 2, pollMs: 50 };

/** A run that lasts until the test lets it end. */
function held() {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  return { release, work: async () => done };
}

/** Lets every pending promise run. */
const settle = async () => {
  for (let i = 0; i < 20; i += 1) await new Promise((resolve) => setImmediate(resolve));
};

describe('contract admission', () => {
  it('admits as many runs at once as allowed, queues as many as may wait, and refuses one more at once with 429 and Retry-After', async () => {
    const store = memoryRunSlots();
    const c = clock();
    // Waiting is polled on the clock; the test's sleeps do not advance it here, so the waiter keeps waiting.
    const admission = createContractAdmission(store, { ...OPTIONS, now: c.now, sleep: () => new Promise((resolve) => setImmediate(resolve)) });
    const [a, b, w] = [held(), held(), held()];
    const runA = admission.admit(a.work);
    const runB = admission.admit(b.work);
    await settle();
    assert.equal(Object.keys(store.state.runs).length, 2, 'two runs hold the two slots');
    let waiterRan = false;
    const waiter = admission.admit(async () => {
      waiterRan = true;
      await w.work();
      return 'waited';
    });
    await settle();
    assert.equal(Object.keys(store.state.waits).length, 1, 'the third waits');
    const refused = await admission.admit(async () => 'ran').catch((error: unknown) => error);
    assert.ok(refused instanceof ContractsBusyError, String(refused));
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.headers['Retry-After'], '2');
    assert.match(refused.message, /every contract slot is taken and the queue is full/);
    assert.equal(waiterRan, false);

    a.release();
    await runA;
    await settle();
    assert.equal(waiterRan, true, 'the waiter takes the slot let go');
    assert.deepEqual(Object.keys(store.state.waits), []);
    b.release();
    w.release();
    assert.equal(await waiter, 'waited');
    await runB;
    assert.deepEqual(store.state.runs, {}, 'every slot let go');
  });

  it('holds one caller to half the slots and half the queue: its flood leaves the others room, and its waiter does not hold theirs back', async () => {
    const store = memoryRunSlots();
    const admission = createContractAdmission(store, { ...OPTIONS, waiting: 2, sleep: () => new Promise((resolve) => setImmediate(resolve)) });
    const [a1, a2, b1] = [held(), held(), held()];
    const runA1 = admission.admit(a1.work, 'org:acme');
    await settle();
    const runA2 = admission.admit(a2.work, 'org:acme');
    await settle();
    assert.equal(Object.keys(store.state.runs).length, 1, 'acme holds its half (one of two slots); its second run waits');
    assert.equal(Object.keys(store.state.waits).length, 1);
    const third = await admission.admit(async () => 'ran', 'org:acme').catch((error: unknown) => error);
    assert.ok(third instanceof ContractsBusyError, String(third));
    assert.match(third.message, /this caller already holds its share/);
    // globex is not behind acme's waiter: it takes the free slot at once.
    const runB1 = admission.admit(b1.work, 'org:globex');
    await settle();
    assert.equal(Object.keys(store.state.runs).length, 2, 'globex runs beside acme');
    a1.release();
    await runA1;
    await settle();
    assert.equal(Object.keys(store.state.waits).length, 0, "acme's waiter runs once acme's first run ends");
    a2.release();
    b1.release();
    await Promise.all([runA2, runB1]);
    assert.deepEqual(store.state.runs, {});
  });

  it('lets a slot go whatever the run ended in', async () => {
    const store = memoryRunSlots();
    const admission = createContractAdmission(store, OPTIONS);
    await assert.rejects(
      admission.admit(async () => {
        throw new Error('the contract threw');
      }),
      /the contract threw/,
    );
    assert.deepEqual(store.state.runs, {});
  });

  it('takes back a slot whose instance died holding it, once it expires', async () => {
    const store = memoryRunSlots();
    const c = clock();
    store.state = { runs: { dead1: c.t + 500, dead2: c.t + 500 }, waits: {}, version: 7 };
    const admission = createContractAdmission(store, { ...OPTIONS, now: c.now, sleep: c.sleep });
    // Both slots are held: it waits, and the dead runs' entries expire within its wait.
    assert.equal(await admission.admit(async () => 'ran'), 'ran');
    assert.ok(c.t >= 1_000_500, `waited until they expired (${c.t - 1_000_000} ms)`);
    assert.deepEqual(store.state.runs, {});
  });

  it('a waiter gives up at its longest wait: 429, and its entry is gone', async () => {
    const store = memoryRunSlots();
    const c = clock();
    store.state = { runs: { r1: c.t + 60_000, r2: c.t + 60_000 }, waits: {}, version: 1 };
    const admission = createContractAdmission(store, { ...OPTIONS, now: c.now, sleep: c.sleep });
    const refused = await admission.admit(async () => 'ran').catch((error: unknown) => error);
    assert.ok(refused instanceof ContractsBusyError);
    assert.match(refused.message, /no contract slot came free in time/);
    assert.ok(c.t - 1_000_000 <= OPTIONS.maxWaitMs, `waited ${c.t - 1_000_000} ms`);
    assert.deepEqual(store.state.waits, {});
  });

  it('waiters go first, in order of arrival: a newcomer takes only a slot no waiter is owed', async () => {
    const store = memoryRunSlots();
    const c = clock();
    store.state = { runs: { r1: c.t + 60_000 }, waits: { early: c.t + 900, late: c.t + 950 }, version: 3 };
    // The clock stands still: the waiters stay (they are other instances', polling meanwhile).
    const admission = createContractAdmission(store, { ...OPTIONS, waiting: 5, now: c.now, sleep: () => new Promise((resolve) => setImmediate(resolve)) });
    let ran = false;
    const newcomer = admission.admit(async () => {
      ran = true;
    });
    await settle();
    assert.equal(ran, false, 'one slot is free, but two waiters are owed it');
    assert.equal(Object.keys(store.state.waits).length, 3, 'the newcomer queues behind them');
    // The first waiter takes the free slot: the newcomer is now second in line, and still not owed one.
    await store.replace({ runs: { ...store.state.runs, early: c.t + 2_000 }, waits: { ...store.state.waits, early: 0 } }, store.state.version);
    await settle();
    assert.equal(ran, false);
    // The second takes its own once r1 ends; then the newcomer's turn comes.
    await store.leave('r1');
    await store.leave('late');
    await settle();
    assert.equal(ran, true);
    await newcomer;
  });

  it('reads again after a write lost to another instance, and knows a write whose answer was lost', async () => {
    const inner = memoryRunSlots();
    let lost = 0;
    let landedUnanswered = 0;
    const store: RunSlotStore = {
      read: () => inner.read(),
      leave: (id) => inner.leave(id),
      async replace(next, expected) {
        if (lost < 2) {
          // Another instance wrote first.
          lost += 1;
          await inner.replace({ runs: {}, waits: {} }, inner.state.version);
          return false;
        }
        if (landedUnanswered < 1) {
          // It landed, but the answer said otherwise (a retry after a lost answer, refused by its own write).
          landedUnanswered += 1;
          await inner.replace(next, expected);
          return false;
        }
        return inner.replace(next, expected);
      },
    };
    const admission = createContractAdmission(store, OPTIONS);
    let during: string[] = [];
    assert.equal(
      await admission.admit(async () => {
        during = Object.keys(inner.state.runs);
        return 'ran';
      }),
      'ran',
    );
    assert.equal(lost, 2);
    assert.equal(landedUnanswered, 1);
    assert.equal(during.length, 1, 'one slot held, once');
    assert.deepEqual(inner.state.runs, {});
  });

  it('does not wait when the invocation has no time left for a whole run after the wait', async () => {
    const store = memoryRunSlots();
    const c = clock();
    store.state = { runs: { r1: c.t + 60_000, r2: c.t + 60_000 }, waits: {}, version: 1 };
    const { withDeadline } = await import('#shared/deadline');
    const { steadyNow } = await import('#shared/clock');
    const admission = createContractAdmission(store, { ...OPTIONS, now: c.now, sleep: c.sleep });
    // 1.5 s left, a run may hold its slot 2 s: no wait would leave it time to run.
    const refused = await withDeadline(steadyNow() + 1_500, () => admission.admit(async () => 'ran')).catch((error: unknown) => error);
    assert.ok(refused instanceof ContractsBusyError);
    assert.match(refused.message, /every contract slot is taken;/);
    assert.equal(c.t, 1_000_000, 'refused at once');
    assert.deepEqual(store.state.waits, {});
  });
});
