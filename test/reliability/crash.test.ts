/**
 * Crashes under load. The service is killed with SIGKILL at random moments, 10 times, and restarted on
 * the same data; then DynamoDB Local itself is killed and restarted under the running service. Every
 * acknowledged event must be on the chain exactly once, no block half-written, the chain must verify;
 * while DynamoDB is down the answers are 503 with Retry-After, and the service recovers by itself.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { startDynamoDbLocal, type DynamoDbLocal } from '#infra/local/dynamodb-local';
import { MAX_LEASE_MS } from '#shared/ledger/append/settings';
import { isAlive, removeDir, startStack, tempDataDir, type Stack } from '#test/support/stack';
import { AS_NPM_START, CI, readWholeChain, reconcile, report } from './support.ts';

const KILLS = 10;
const CLIENTS = 16;
const ddbDir = tempDataDir('crash-ddb');
const svcDir = tempDataDir('crash-svc');
let dynamo: DynamoDbLocal;
let stack: Stack | undefined;

/** A small seeded generator: the kill moments are random but a failure can be replayed. */
const SEED = Number(process.env.RELIABILITY_SEED ?? Date.now() % 100_000);
let state = SEED;
const random = () => (state = (state * 1103515245 + 12345) >>> 0) / 2 ** 32;

const startService = () =>
  startStack({ dataDir: svcDir, env: { SVC_DYNAMODB_ENDPOINT: dynamo.endpoint, SVC_DYNAMODB_ACCESS_KEY_ID: dynamo.accessKeyId, ...AS_NPM_START } });

before(async () => {
  dynamo = await startDynamoDbLocal({ dataDir: ddbDir, inMemory: false });
  stack = await startService();
});

after(async () => {
  await stack?.stop();
  await dynamo?.stop();
  removeDir(ddbDir);
  removeDir(svcDir);
});

interface Load {
  acknowledged: Map<string, string>;
  /** When each acknowledged event was acknowledged (epoch ms). */
  ackedAt: Map<string, number>;
  statuses: Map<string, number>;
  unexpected5xx: number;
  retryAfterMissing: number;
  firstOkAfter(ms: number): number | undefined;
}

/** Clients appending to `chain` at whatever `base()` is now, until `stop()`; connection errors are outcomes too. */
function loadOn(base: () => string, chain: string, clients: number, tag: string) {
  const load: Load = {
    acknowledged: new Map(),
    ackedAt: new Map(),
    statuses: new Map(),
    unexpected5xx: 0,
    retryAfterMissing: 0,
    firstOkAfter(ms) {
      // Acknowledgements are recorded in time order.
      return [...this.ackedAt.values()].find((t) => t > ms);
    },
  };
  let running = true;
  const count = (what: string) => load.statuses.set(what, (load.statuses.get(what) ?? 0) + 1);
  const done = Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let n = 0; running; n += 1) {
        const key = `${tag}/${client}/${n}`;
        try {
          const res = await fetch(`${base()}/api/v1/chains/${chain}/events`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ entity_id: `c${client}`, event_type: 'tick', details: { key } }),
            signal: AbortSignal.timeout(15_000),
          });
          const body = (await res.json()) as { event_id?: string };
          count(String(res.status));
          if (res.status === 200) {
            load.acknowledged.set(key, body.event_id!);
            load.ackedAt.set(key, Date.now());
          } else if (res.status === 503) {
            if (!res.headers.get('retry-after')) load.retryAfterMissing += 1;
            await new Promise((r) => setTimeout(r, 100));
          } else if (res.status >= 500) load.unexpected5xx += 1;
        } catch {
          // The service died under this request: its outcome is unknown, so it is not acknowledged.
          count('connection lost');
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    }),
  );
  const stop = async () => {
    running = false;
    unstopped.delete(stop);
    await done;
  };
  unstopped.add(stop);
  return { load, stop };
}

/**
 * Loads a test started and has not stopped: a test that fails before it stops its load (a probe that timed out)
 * must not leave clients appending, which kept the file running after its last test until CI's limit.
 */
const unstopped = new Set<() => Promise<void>>();
afterEach(async () => {
  await Promise.all([...unstopped].map((stop) => stop()));
});

describe('Crashes under load', () => {
  it(`SIGKILL of the service ${KILLS} times at random moments loses nothing and half-writes nothing`, async (t) => {
    assert.equal((await fetch(`${stack!.url}/api/v1/chains/crashy/create`, { method: 'POST' })).status, 201);
    const { load, stop } = loadOn(() => stack!.url, 'crashy', CLIENTS, 'kill');
    const moments: number[] = [];
    for (let kill = 0; kill < KILLS; kill += 1) {
      const wait = 200 + Math.floor(random() * (CI ? 800 : 1500));
      moments.push(wait);
      await new Promise((r) => setTimeout(r, wait));
      process.kill(stack!.pid, 'SIGKILL');
      await stack!.stop(); // waits for the exit
      stack = await startService();
    }
    await new Promise((r) => setTimeout(r, 500));
    await stop();
    const { blocks, forks } = await readWholeChain(stack!.url, 'crashy');
    const { lost, duplicated } = reconcile(blocks, load.acknowledged);
    report(t, {
      area: 'faults',
      what: `service SIGKILLed ${KILLS} times under ${CLIENTS} clients`,
      tried: `kills after ${moments.join(', ')} ms (seed ${SEED}); ${load.acknowledged.size} acknowledged; outcomes ${JSON.stringify(Object.fromEntries(load.statuses))}`,
      lost,
      forks,
      unexpected5xx: load.unexpected5xx,
      notes: `${blocks.length} blocks, ${duplicated} duplicated`,
    });
    assert.equal(forks, 0);
    assert.equal(lost, 0, 'every acknowledged event survived the kills');
    assert.equal(duplicated, 0);
    assert.equal(load.unexpected5xx, 0);
    assert.equal(load.retryAfterMissing, 0);
    // Requests whose answer was lost may have committed: the chain holds at least every acknowledged event.
    assert.ok(blocks.length - 1 >= load.acknowledged.size);
  });

  it('DynamoDB killed and restarted: 503 with Retry-After while it is down, then the service recovers by itself', async (t) => {
    assert.equal((await fetch(`${stack!.url}/api/v1/chains/outage/create`, { method: 'POST' })).status, 201);
    const { load, stop } = loadOn(() => stack!.url, 'outage', 8, 'outage');
    await new Promise((r) => setTimeout(r, 1_000));
    const port = dynamo.port;
    dynamo.killNow();
    await dynamo.stop();
    const downAt = Date.now();
    const before503 = load.statuses.get('503') ?? 0;
    await new Promise((r) => setTimeout(r, 500));
    // A client that sends a new append while DynamoDB is down is told 503 with when to retry, at once. (The
    // load's own requests in flight at the kill may instead wait for DynamoDB, settling what they wrote, and be
    // answered when it is back: how many of them are told 503 during the outage depends on where each was.)
    const probes: { status: number; retryAfter: string | null; ms: number }[] = [];
    for (let i = 0; i < 3; i += 1) {
      const sent = Date.now();
      const res = await fetch(`${stack!.url}/api/v1/chains/outage/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ entity_id: 'probe', event_type: 'tick', details: { probe: i } }),
        signal: AbortSignal.timeout(15_000),
      });
      await res.json();
      probes.push({ status: res.status, retryAfter: res.headers.get('retry-after'), ms: Date.now() - sent });
    }
    await new Promise((r) => setTimeout(r, Math.max(0, 3_000 - (Date.now() - downAt))));
    const health = await fetch(`${stack!.url}/api/v1/health`);
    const during503 = (load.statuses.get('503') ?? 0) - before503;
    dynamo = await startDynamoDbLocal({ dataDir: ddbDir, inMemory: false, port });
    const upAt = Date.now();
    let recoveredAt: number | undefined;
    for (let waited = 0; waited < 60_000 && recoveredAt === undefined; waited += 100) {
      await new Promise((r) => setTimeout(r, 100));
      recoveredAt = load.firstOkAfter(upAt);
    }
    await new Promise((r) => setTimeout(r, 1_000));
    await stop();
    const { blocks, forks } = await readWholeChain(stack!.url, 'outage');
    const { missing, duplicated } = reconcile(blocks, load.acknowledged);
    // DynamoDB Local acknowledges a transaction before its SQLite file has it: SIGKILLed, it can come back
    // without its last commits (measured, with no service in between). Those are the emulator's loss, and
    // can only be commits acknowledged in the moment before the kill; anything else missing is ours.
    const byEmulator = missing.filter((key) => load.ackedAt.get(key)! <= downAt && load.ackedAt.get(key)! > downAt - 1_000);
    const lost = missing.length - byEmulator.length;
    report(t, {
      area: 'faults',
      what: 'DynamoDB Local SIGKILLed for 3 s under 8 clients',
      tried: `new appends while down: ${probes.map((p) => `${p.status} in ${p.ms} ms`).join(', ')}; ${during503} answers of 503 to the load while down (health ${health.status}); recovered ${recoveredAt ? `${recoveredAt - upAt} ms` : 'never'} after DynamoDB was back (${upAt - downAt} ms down); outcomes ${JSON.stringify(Object.fromEntries(load.statuses))}`,
      lost,
      forks,
      unexpected5xx: load.unexpected5xx,
      notes: `${duplicated} duplicated; ${byEmulator.length} acknowledged in the last second before the kill were lost by DynamoDB Local itself (its SQLite had not written them)`,
    });
    assert.equal(health.status, 503, 'health says the service is degraded while DynamoDB is down');
    for (const probe of probes) {
      assert.equal(probe.status, 503, 'a new append while DynamoDB is down is told 503');
      assert.ok(probe.retryAfter, 'with when to retry');
      assert.ok(probe.ms < 5_000, `at once, not at its deadline: ${probe.ms} ms`);
    }
    assert.equal(load.retryAfterMissing, 0, 'every 503 says when to retry');
    assert.equal(load.unexpected5xx, 0, 'no other 5xx');
    assert.ok(recoveredAt !== undefined, 'appends succeed again without restarting the service');
    assert.equal(forks, 0);
    assert.equal(lost, 0, `acknowledged events missing that DynamoDB Local had time to keep: ${missing.join(', ')}`);
    assert.ok(byEmulator.length <= 16, `at most the commits in flight at the kill: ${byEmulator.length}`);
    assert.equal(duplicated, 0);
  });

  it('instances killed mid-request, mid-combine: every acknowledged event once, the chain still linear', async (t) => {
    // The ledger function as a pool of single-request instances; SIGUSR2 stops a busy one abruptly.
    const pooled = await startStack({
      dataDir: tempDataDir('crash-pool'),
      env: { SVC_DYNAMODB_ENDPOINT: dynamo.endpoint, SVC_DYNAMODB_ACCESS_KEY_ID: dynamo.accessKeyId, SVC_LOCAL_MAX_INSTANCES: '8' },
    });
    try {
      const create = await fetch(`${pooled.url}/api/v1/chains/killed/create`, { method: 'POST' });
      assert.equal(create.status, 201);
      const { load, stop } = loadOn(() => pooled.url, 'killed', CLIENTS, 'killed');
      const kills: number[] = [];
      const until = Date.now() + (CI ? 8_000 : 20_000);
      while (Date.now() < until) {
        const wait = 150 + Math.floor(random() * 350);
        await new Promise((r) => setTimeout(r, wait));
        process.kill(pooled.pid, 'SIGUSR2');
        kills.push(wait);
      }
      const lastKill = Date.now();
      // Past the lease of any instance that died holding it, appends go on. A lease lasts 1 s, longer while
      // requests are slow (20 typical requests), never more than MAX_LEASE_MS: on a starved CI machine a
      // killed holder's lease can hold the chain up past 2 s, and that is the design, not a stall.
      const resumeBound = MAX_LEASE_MS + 2_000;
      for (let waited = 0; waited < resumeBound + 1_000 && load.firstOkAfter(lastKill) === undefined; waited += 100) {
        await new Promise((r) => setTimeout(r, 100));
      }
      await new Promise((r) => setTimeout(r, 1_000));
      await stop();
      const resumed = load.firstOkAfter(lastKill);
      const resumedAfter = resumed === undefined ? 'never' : `${resumed - lastKill} ms`;
      const stopped = (pooled.output().match(/Fault injected: stopped a busy ledger instance/g) ?? []).length;
      // A killed instance's caller gets API Gateway's own 500: an outcome, as a lost connection is.
      const crashed = load.statuses.get('500') ?? 0;
      const { blocks, forks } = await readWholeChain(pooled.url, 'killed');
      const { lost, missing, duplicated } = reconcile(blocks, load.acknowledged);
      report(t, {
        area: 'faults',
        what: `ledger instances killed mid-request under ${CLIENTS} clients`,
        tried: `${stopped} busy instances stopped (of ${kills.length} signals, seed ${SEED}); ${load.acknowledged.size} acknowledged; appends resumed ${resumedAfter} after the last kill; outcomes ${JSON.stringify(Object.fromEntries(load.statuses))}`,
        lost,
        forks,
        unexpected5xx: load.unexpected5xx - crashed,
        notes: `${duplicated} duplicated; ${crashed} answers of 500 from killed instances`,
      });
      assert.ok(stopped >= 5, `instances were killed mid-request (${stopped})`);
      assert.deepEqual(missing, [], 'every acknowledged event is on the chain under its id');
      assert.equal(duplicated, 0);
      assert.equal(forks, 0);
      assert.equal(load.unexpected5xx - crashed, 0, 'no 5xx but the killed instances’ own');
      assert.equal(load.retryAfterMissing, 0);
      // A lease at its cap, then one round.
      assert.ok(resumed !== undefined && resumed - lastKill < resumeBound, `appends resumed after the last kill (after ${resumedAfter})`);
    } finally {
      await pooled.stop();
      removeDir(pooled.dataDir);
    }
  });

  it('the launcher SIGKILLed with its own DynamoDB Local: the JVM ends with it, and the next start serves the same data', async (t) => {
    const dataDir = tempDataDir('crash-launcher');
    try {
      const first = await startStack({ dataDir, env: { SVC_DYNAMODB_IN_MEMORY: 'false', ...AS_NPM_START } });
      const orphan = first.dynamoPid!;
      assert.equal((await fetch(`${first.url}/api/v1/chains/own/create`, { method: 'POST' })).status, 201);
      const acknowledged = new Map<string, string>();
      for (let n = 0; n < 20; n += 1) {
        const res = await fetch(`${first.url}/api/v1/chains/own/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ entity_id: 'e', event_type: 't', details: { key: `own/${n}` } }),
        });
        assert.equal(res.status, 200);
        acknowledged.set(`own/${n}`, ((await res.json()) as { event_id: string }).event_id);
      }
      process.kill(first.pid, 'SIGKILL');
      // It reads its standard input, a pipe from the launcher, and ends when that ends (LoopbackDynamoDbLocal.java): a
      // JVM left running had held the data dir's lock, and one left while it started could not be found by the next start.
      for (const until = Date.now() + 15_000; isAlive(orphan) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 100));
      assert.ok(!isAlive(orphan), 'the JVM ended with its killed launcher');
      const second = await startStack({ dataDir, env: { SVC_DYNAMODB_IN_MEMORY: 'false', ...AS_NPM_START } });
      try {
        const { blocks, forks } = await readWholeChain(second.url, 'own');
        const { lost, duplicated } = reconcile(blocks, acknowledged);
        report(t, {
          area: 'faults',
          what: 'launcher SIGKILLed, its DynamoDB Local ending with it',
          tried: `20 acknowledged events; the JVM (pid ${orphan}) ended with the launcher, the restart read ${blocks.length} blocks`,
          lost,
          forks,
          unexpected5xx: 0,
        });
        assert.equal(lost, 0);
        assert.equal(duplicated, 0);
        assert.equal(forks, 0);
      } finally {
        await second.stop();
        await first.stop();
      }
    } finally {
      removeDir(dataDir);
    }
  });

  it('the whole stack SIGKILLed under load (launcher, instances and its DynamoDB Local at once): no acknowledged event lost', async (t) => {
    // DynamoDB Local answers a transaction a moment before its file holds it; the launcher journals each
    // acknowledged write (fsync'd) and replays what DynamoDB Local lost at the next start.
    const dataDir = tempDataDir('crash-group');
    const env = { SVC_DYNAMODB_IN_MEMORY: 'false', ...AS_NPM_START };
    let current = await startStack({ dataDir, env });
    const rounds = CI ? 3 : 5;
    const replayed: number[] = [];
    try {
      assert.equal((await fetch(`${current.url}/api/v1/chains/group/create`, { method: 'POST' })).status, 201);
      const { load, stop } = loadOn(() => current.url, 'group', CLIENTS, 'group');
      for (let round = 0; round < rounds; round += 1) {
        // Kill in full flow: once this start has acknowledged 40 more events, at a random moment after.
        const target = load.acknowledged.size + 40;
        for (let waited = 0; load.acknowledged.size < target && waited < 30_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
        await new Promise((r) => setTimeout(r, Math.floor(random() * 300)));
        // The JVM and the launcher (with every instance thread) at the same moment.
        process.kill(current.dynamoPid!, 'SIGKILL');
        process.kill(current.pid, 'SIGKILL');
        await current.stop();
        current = await startStack({ dataDir, env });
        replayed.push(Number(/Restored (\d+) acknowledged/.exec(current.output())?.[1] ?? 0));
      }
      await new Promise((r) => setTimeout(r, 500));
      await stop();
      const { blocks, forks } = await readWholeChain(current.url, 'group');
      const { lost, missing, duplicated } = reconcile(blocks, load.acknowledged);
      report(t, {
        area: 'faults',
        what: `the whole local stack SIGKILLed ${rounds} times under ${CLIENTS} clients`,
        tried: `seed ${SEED}; ${load.acknowledged.size} acknowledged; writes replayed from the journal per restart: ${replayed.join(', ')}; outcomes ${JSON.stringify(Object.fromEntries(load.statuses))}`,
        lost,
        forks,
        unexpected5xx: load.unexpected5xx,
        notes: `${blocks.length} blocks, ${duplicated} duplicated`,
      });
      assert.deepEqual(missing, [], 'every acknowledged event is on the chain');
      assert.equal(duplicated, 0);
      assert.equal(forks, 0);
      assert.equal(load.unexpected5xx, 0);
    } finally {
      await current.stop();
      removeDir(dataDir);
    }
  });
});
