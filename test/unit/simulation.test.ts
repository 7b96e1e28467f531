/**
 * The append protocol in the deterministic simulation of AWS (test/sim/, docs/simulation.md): the service's
 * real append path on simulated Lambda instances and a simulated DynamoDB, on virtual time, every choice drawn
 * from a seed. Here: the simulated DynamoDB keeps the rules the protocol relies on; a run replays exactly
 * from its seed; the invariants hold over more than a thousand seeds of three profiles; deliberately broken
 * variants of the protocol are caught; and the bugs the simulation found stay fixed.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { allTableSpecs } from '#shared/storage/tables';
import { ROOT } from '#infra/bundling';
import { chooseNode, LAMBDA_NODE_MAJOR, type NodeChoice } from '#infra/sim/runtime';
import { SimDynamo } from '#test/sim/dynamo/engine';
import type { FaultScript, Mutation } from '#test/sim/network';
import { runArrivals, runLoad } from '#test/sim/load';
import { PROFILES } from '#test/sim/profiles';
import { checkOptions, runScenario, type ScenarioOptions } from '#test/sim/scenario';

function engine(overrides: Partial<ConstructorParameters<typeof SimDynamo>[0]> = {}) {
  const { ledger } = allTableSpecs({ ledger: 'ledger', registry: 'registry', rateLimits: 'ratelimits', connections: 'connections' });
  let n = 0;
  return new SimDynamo({
    tables: { ledger },
    eventualWindowMs: 100,
    transactionMs: () => 10,
    ttlDelayMs: [0, 0],
    partitionWcu: 1_000,
    partitionRcu: 3_000,
    random: () => ((n += 1) % 10) / 10,
    ...overrides,
  });
}
const S = (s: string) => ({ S: s });
const N = (n: number) => ({ N: String(n) });
const key = (pk: string) => ({ pk: S(pk), sk: S('X') });
/** The first cancellation reason of a cancelled transaction. */
const firstReason = (outcome: ReturnType<typeof now>) => (outcome.ok ? '' : ((outcome.extra?.CancellationReasons ?? []) as { Code: string }[])[0]?.Code);
const now = (answer: ReturnType<SimDynamo['execute']>) => {
  assert.ok(!('afterMs' in answer), 'answered at once');
  return answer.outcome;
};

describe('the simulated DynamoDB keeps the rules the protocol relies on', () => {
  it('conditional writes: a failed condition writes nothing and answers the item (ALL_OLD); updates compute from the item before', () => {
    const db = engine();
    assert.equal(
      now(db.execute('PutItem', { TableName: 'ledger', Item: { ...key('a'), v: N(1) }, ConditionExpression: 'attribute_not_exists(pk)' }, 0)).ok,
      true,
    );
    const again = now(
      db.execute(
        'PutItem',
        {
          TableName: 'ledger',
          Item: { ...key('a'), v: N(2) },
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
        1,
      ),
    );
    assert.deepEqual(again, {
      ok: false,
      type: 'ConditionalCheckFailedException',
      message: 'The conditional request failed',
      extra: { Item: { ...key('a'), v: N(1) } },
    });
    const update = {
      TableName: 'ledger',
      Key: key('a'),
      UpdateExpression: 'SET v = v + :one, w = :w REMOVE gone',
      ConditionExpression: 'v = :v',
      ExpressionAttributeValues: { ':one': N(1), ':w': S('x'), ':v': N(1) },
    };
    assert.equal(now(db.execute('UpdateItem', update, 2)).ok, true);
    assert.deepEqual(db.current('ledger', key('a')), { ...key('a'), v: N(2), w: S('x') });
    assert.equal(now(db.execute('UpdateItem', update, 3)).ok, false, 'v is 2 now');
  });

  it('refuses a placeholder that no expression uses, as DynamoDB does', () => {
    const out = now(
      db0().execute(
        'PutItem',
        { TableName: 'ledger', Item: key('a'), ConditionExpression: 'attribute_not_exists(pk)', ExpressionAttributeValues: { ':x': N(1) } },
        0,
      ),
    );
    assert.equal(out.ok ? '' : out.type, 'ValidationException');
  });

  it('transactions: atomic, decided at arrival, holding their items until they commit; a token answers a retry as the first', () => {
    const db = engine();
    const items = [
      { Put: { TableName: 'ledger', Item: key('t1'), ConditionExpression: 'attribute_not_exists(pk)' } },
      { Put: { TableName: 'ledger', Item: key('t2') } },
    ];
    const answer = db.execute('TransactWriteItems', { TransactItems: items, ClientRequestToken: 'tok' }, 100);
    assert.ok('afterMs' in answer);
    // While it holds t1: a single write to t1 is refused with TransactionConflictException, a transaction cancelled.
    const single = now(db.execute('PutItem', { TableName: 'ledger', Item: key('t1') }, 105));
    assert.equal(single.ok ? '' : single.type, 'TransactionConflictException');
    const other = now(db.execute('TransactWriteItems', { TransactItems: [{ Put: { TableName: 'ledger', Item: key('t1') } }] }, 105));
    assert.equal(firstReason(other), 'TransactionConflict');
    assert.equal(db.current('ledger', key('t1')), undefined, 'not visible before it commits');
    assert.equal(answer.commit().outcome.ok, true);
    assert.ok(db.current('ledger', key('t1')) && db.current('ledger', key('t2')));
    // The same token again (an SDK retry after a lost answer): the first answer, nothing applied twice.
    assert.deepEqual(now(db.execute('TransactWriteItems', { TransactItems: items, ClientRequestToken: 'tok' }, 200)), { ok: true, output: {} });
    const conditionFailed = now(db.execute('TransactWriteItems', { TransactItems: items }, 201));
    assert.equal(firstReason(conditionFailed), 'ConditionalCheckFailed');
  });

  it('an eventually consistent read may answer a moment-old item; a strong one never does', () => {
    const db = engine({ random: () => 0.99 });
    db.execute('PutItem', { TableName: 'ledger', Item: { ...key('e'), v: N(1) } }, 0);
    db.execute('PutItem', { TableName: 'ledger', Item: { ...key('e'), v: N(2) } }, 1_000);
    const get = (ConsistentRead: boolean) =>
      now(db.execute('GetItem', { TableName: 'ledger', Key: key('e'), ConsistentRead }, 1_050)) as unknown as { output: { Item: unknown } };
    assert.deepEqual(get(false).output.Item, { ...key('e'), v: N(1) }, 'from 99 ms ago, inside the 100 ms window');
    assert.deepEqual(get(true).output.Item, { ...key('e'), v: N(2) });
  });

  it('throttles a partition past 1,000 write units a second (not billed, nothing written), and TTL deletes what expired', () => {
    const db = engine();
    const big = 'x'.repeat(100 * 1024);
    let throttled = 0;
    for (let i = 0; i < 12; i += 1) {
      const out = now(db.execute('PutItem', { TableName: 'ledger', Item: { pk: S('hot'), sk: S(`k${i}`), big: S(big) } }, 10));
      if (!out.ok) throttled += 1;
    }
    assert.equal(throttled, 3, '9 writes of 100 units fit in a second, the rest are refused');
    db.execute('PutItem', { TableName: 'ledger', Item: { ...key('ttl'), ttl: N(5) } }, 10);
    assert.equal(db.expire(4_999), 0);
    assert.equal(db.expire(5_000), 1);
    assert.equal(db.current('ledger', key('ttl')), undefined);
  });
});

function db0() {
  return engine();
}

describe('a simulated run', () => {
  it('measures batches (npm run bench:cloud -- --batch N): each answered batch counts its events, one instance commits them in one transaction', async () => {
    const window = { chains: 1, detailsBytes: 100, durationMs: 1_000, warmupMs: 200 };
    const single = await runLoad(1, { ...window, instancesPerChain: 1 });
    const batches = await runLoad(1, { ...window, instancesPerChain: 1, batchSize: 40 });
    assert.ok(batches.eventsPerSecond % 40 === 0, `${batches.eventsPerSecond} events/s: whole batches of 40`);
    assert.ok(batches.eventsPerSecond > 5 * single.eventsPerSecond, `${batches.eventsPerSecond} vs ${single.eventsPerSecond} events/s one at a time`);
    assert.ok(batches.requestsPerEvent < 0.2, `${batches.requestsPerEvent} requests an event`);
  });

  it("4 instances sending batches of 98: a writer finds its batch soon after the round that sealed it, wherever the round's segments cut it", async () => {
    // A round's metadata is cut into segments under 4 KB, so a batch of 98 spans two or three. A writer's first
    // look reads the newest few; when they held only its batch's tail, its next looks restarted at the first
    // block found instead of the batch's first, never read the segment before again, and waited for the whole
    // answer: p99 8-14x p50 (1,158-1,815 ms, seeds 1-6). And a sweep that read a whole page waited a look's
    // interval before the next page: p99 2.7-2.9x p50 on these seeds with the first fix alone.
    for (const seed of [2, 3]) {
      const run = await runLoad(seed, { chains: 1, instancesPerChain: 4, batchSize: 98, unkeyed: true, detailsBytes: 100, durationMs: 2_000, warmupMs: 300 });
      assert.ok(run.p99Ms <= 2.5 * run.p50Ms, `seed ${seed}: p99 ${run.p99Ms} ms against p50 ${run.p50Ms} ms`);
      assert.ok(run.eventsPerSecond >= 2_000, `seed ${seed}: ${run.eventsPerSecond} events/s (1,372 before)`);
    }
  });

  it('measures an open loop (npm run bench:cloud -- --rates): appends arrive at their rate whatever the latency, each served by an idle instance or a new one', async () => {
    const window = { durationMs: 2_000, warmupMs: 500, detailsBytes: 100 };
    const slow = await runArrivals(1, { ...window, ratePerSecond: 5, profile: 'poisson', trace: true });
    const busy = await runArrivals(1, { ...window, ratePerSecond: 100, profile: 'poisson' });
    // Poisson arrivals: 10 and 200 expected in the window (within five standard deviations).
    assert.ok(slow.arrived >= 1 && slow.arrived <= 26, `${slow.arrived} arrivals at 5/s`);
    assert.ok(busy.arrived >= 130 && busy.arrived <= 270, `${busy.arrived} arrivals at 100/s`);
    for (const run of [slow, busy]) {
      assert.equal(run.eventsPerSecond * 2, run.arrived - (run.refusedPerThousand * run.arrived) / 1000, 'every arrival answered or refused');
      assert.ok(run.p50Ms > 0 && run.p50Ms <= run.p99Ms && run.p99Ms <= run.p999Ms, `${run.p50Ms} ≤ ${run.p99Ms} ≤ ${run.p999Ms} ms`);
    }
    // --trace: each arrival, the requests it made and its answer, with the latency the table counts.
    const trace = slow.trace ?? [];
    const answered = trace.filter((line) => / answered a-\d+ ok after \d+ ms$/.test(line));
    assert.equal(trace.filter((line) => / arrival a-\d+$/.test(line)).length, answered.length + trace.filter((l) => / answered a-\d+ (?!ok)/.test(l)).length);
    assert.ok(answered.length >= slow.arrived, `${answered.length} answers traced for ${slow.arrived} arrivals in the window`);
    assert.ok(
      trace.some((line) => /i\d+ (TransactWriteItems|UpdateItem CHAIN#arrivals)/.test(line)),
      'the requests are traced beside them',
    );
    assert.equal(busy.trace, undefined, 'no trace unless asked');
    assert.ok(busy.instances > slow.instances, `${busy.instances} instances at 100/s against ${slow.instances} at 5/s: Lambda scales out`);
    // A burst (each second's arrivals in its first 100 ms) needs about one instance per arrival of the burst.
    const burst = await runArrivals(1, { ...window, ratePerSecond: 20, profile: 'burst' });
    assert.equal(burst.arrived, 40);
    assert.ok(burst.instances >= 10, `${burst.instances} instances for bursts of 20`);
  });

  it('replays exactly from its seed: the same requests, faults and answers, in the same order', async () => {
    const options: ScenarioOptions = { ...PROFILES.faults!, trace: true };
    const [a, b] = [await runScenario(7, options), await runScenario(7, options)];
    assert.ok(a.trace.length > 100);
    assert.deepEqual(a.trace, b.trace);
    assert.notDeepEqual((await runScenario(8, options)).trace, a.trace, 'another seed, another run');
  });

  it('DynamoDB unreachable for 3 s: appends caught in it are answered 503 (withdrawn), none 500, nothing lost', async () => {
    // As the local stack's reliability test stops DynamoDB Local: new requests are refused, answers in flight lost.
    // Before a refused write was known to have changed nothing, and settling waited for DynamoDB, these seeds
    // answered 95 appends 500 (outcome unknown) in 30 chaos runs.
    const options: ScenarioOptions = { ...PROFILES.calm!, callers: 6, outageMs: 3_000 };
    let unavailable = 0;
    for (let seed = 1; seed <= 10; seed += 1) {
      const run = await runScenario(seed, options);
      assert.deepEqual(run.problems, [], `seed ${seed}`);
      assert.equal(run.unsettled, 0, `seed ${seed}: no append answered 500`);
      unavailable += run.unavailable;
    }
    assert.ok(unavailable >= 10, `appends answered 503 in the outage: ${unavailable}`);
  });

  it("keys whose answers were never recorded after their round: a retry answers from the key's bound append, hours later too", async () => {
    // A pending append's key gets no answer written (its record names the pending append), and here the
    // answers a takeover records after it settles a key are lost too (the request dropped): retries (taking
    // keys over from attempts in flight, and every key sent again hours later, once TTL has taken the rounds'
    // seals) must answer from the bound append every time. On a crowd (a chain spread
    // over shards) a late retry found no seal before, took its append for never sealed and appended it again:
    // every crowd seed failed so.
    const dropAnswers: FaultScript = ({ operation, input }) =>
      operation === 'UpdateItem' && String(input.UpdateExpression).startsWith('SET #status = :done') ? 'drop' : undefined;
    let replayed = 0;
    const runs = [
      ...Array.from({ length: 8 }, (_, i) => ({ profile: 'takeover', seed: i + 1 })),
      ...Array.from({ length: 2 }, (_, i) => ({ profile: 'crowd', seed: i + 1 })),
    ];
    let spread = 0;
    for (const { profile, seed } of runs) {
      const run = await runScenario(seed, { ...PROFILES[profile]!, script: dropAnswers });
      assert.deepEqual(run.problems, [], `${profile} seed ${seed}`);
      replayed += run.replayed;
      if (run.shards >= 2) spread += 1;
    }
    assert.equal(spread, 2, 'every crowd spread its chain over shards');
    assert.ok(replayed >= 50, `retries answered from a bound append: ${replayed}`);
  });

  it('refuses settings that make no sense, naming them', () => {
    const base = PROFILES.calm!;
    assert.throws(() => checkOptions({ ...base, callers: 0 }), /callers \(instances\) must be a whole number of at least 1/);
    assert.throws(() => checkOptions({ ...base, eventualWindowMs: -1 }), /eventualWindowMs must not be negative/);
    assert.throws(() => checkOptions({ ...base, skewMs: 60_000 }), /skewMs must be at least 0 and less than the function's timeout/);
    assert.throws(() => checkOptions({ ...base, faults: { ...base.faults, drop: 2 } }), /faults.drop must be between 0 and 1/);
    assert.throws(() => checkOptions({ ...base, outageMs: -5 }), /outageMs must be at least 0/);
    assert.throws(() => checkOptions({ ...base, holdMs: 0 }), /holdMs must be more than 0/);
  });
});

/**
 * The Node the seeds run on: Lambda's (nodejs24.x, from the npm registry when this is another major, installed once
 * as `npm run sim` installs it), as the functions whose code the simulation runs would; and about a third less CPU
 * a seed than Node 20 here (calm 102 ms against 149, faults 154 against 209). This process's Node when that one
 * cannot be had (no registry), which the test's diagnostic names.
 */
const seedNode = (() => {
  let choice: NodeChoice | undefined;
  return (): NodeChoice => {
    if (!choice) {
      try {
        choice = chooseNode(LAMBDA_NODE_MAJOR, { allowMismatch: true, say: (line) => process.stderr.write(`${line}\n`) });
      } catch (error) {
        process.stderr.write(`No Node ${LAMBDA_NODE_MAJOR} for the seeds (${(error as Error).message}); they run on ${process.version}\n`);
        choice = { path: process.execPath, version: process.version, source: 'mismatch allowed' };
      }
    }
    return choice;
  };
})();

/**
 * Runs `npm run simulate -- --runs PROFILE:FROM-TO[:even] …` (the soaks one after the other) as one process, on
 * `seedNode`; answers its output and exit code. One process a core, not one a profile: a fresh process runs its first
 * tens of seeds up to twice as slowly (1,052 seeds took 114 s of CPU in two processes against 150 s in seven).
 */
function simulate(runs: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(seedNode().path, ['bin/run.mjs', 'test/sim/main.ts', ...runs.flatMap((run) => ['--runs', run])], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('npm run simulate, as a reader types it', () => {
  const simulateWith = (...args: string[]) =>
    spawnSync(process.execPath, ['bin/run.mjs', 'test/sim/main.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });

  it('prints its usage on --help, and says a mistake in its arguments with the usage, never a stack trace', () => {
    const help = simulateWith('--help');
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage:/);
    for (const name of Object.keys(PROFILES)) assert.match(help.stdout, new RegExp(`\\b${name}\\b`), `the profiles are named: ${name}`);
    for (const [args, said] of [
      [['--bogus'], /Unknown option '--bogus'/],
      [['--seed', 'abc'], /--seed takes a whole number, not 'abc'/],
      [['--profile', 'nope', '--seed', '1'], /no simulation profile 'nope': one of calm, faults/],
      [['--seeds', '5-1'], /--seeds takes FROM-TO, not '5-1'/],
      [['--late-retries', 'odd'], /--late-retries takes all or even, not 'odd'/],
      [['--runs', 'calm:1-2:odd'], /--runs takes PROFILE:FROM-TO\[:even\], not 'calm:1-2:odd'/],
    ] as const) {
      const run = simulateWith(...args);
      assert.equal(run.status, 2, `${args.join(' ')}: ${run.stdout}${run.stderr}`);
      assert.match(run.stderr, said);
      assert.match(run.stderr, /\n\nUsage:/, 'the usage follows');
      assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
      assert.equal(run.stdout, '', 'nothing ran');
    }
  });
});

describe("npm run simulate, on Lambda's Node", () => {
  it('runs its seeds on the Node Lambda runs (24) when typed on another, and says so; the same run either way', (t) => {
    const lambdas = seedNode();
    // The Node a reader types on: the one that started the run (which then moved to Lambda's, test/run.ts).
    const typedOn = process.env.LEDGER_TEST_HOST_NODE ?? process.execPath;
    if (lambdas.path === typedOn) return t.skip(`this is Node ${process.version}: nothing to move to`);
    const typedVersion = spawnSync(typedOn, ['--version'], { encoding: 'utf8' }).stdout.trim();
    const args = ['bin/run.mjs', 'test/sim/main.ts', '--profile', 'chaos', '--seed', '63'];
    const moved = spawnSync(typedOn, args, { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    assert.equal(moved.status, 0, moved.stderr);
    assert.match(
      moved.stderr,
      new RegExp(`Running on Lambda's Node, ${lambdas.version.replaceAll('.', '\\.')} \\(this is ${typedVersion.replaceAll('.', '\\.')}\\)`),
    );
    const there = spawnSync(lambdas.path, args, { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    assert.equal(there.status, 0, there.stderr);
    assert.equal(there.stderr, '', 'on that Node already: nothing to say');
    assert.equal(moved.stdout, there.stdout, 'the same run');
    assert.match(moved.stdout, /^seed 63 \(chaos\): \d+ blocks/);
  });
});

describe('the invariants hold over many seeds (two processes, one per core)', () => {
  // Within 3 minutes on this 2-core machine, with room for its slower days: since every run ends with late
  // retries (2026-11-27), 1,070 seeds took 134 s here and 191 s in a CI run. Calm, faults and chaos now end
  // with them on even seeds only (crowds and takeovers on all), and the costlier profiles run fewer seeds
  // (the soaks run more: docs/simulation.md). On Lambda's Node (seedNode), 73 s with the machine to itself.
  it('1,102 seeds: 640 calm, 200 with faults, 80 in chaos, 12 crowds (a chain spread over pending shards), 70 takeovers, 40 with batches, 10 with large batches, 30 pairs (two direct commits at once), 20 with shared instances', async (t) => {
    const started = Date.now();
    const cores = [
      ['calm:1-640:even', 'crowd:1-12', 'large-batches:1-10:even', 'pair:1-30', 'shared:1-20'],
      ['faults:1-200:even', 'chaos:1-80:even', 'takeover:1-70', 'batches:1-40:even'],
    ];
    const runs = await Promise.all(cores.map((runs) => simulate(runs)));
    const summaries: string[] = [];
    runs.forEach(({ code, out }, i) => {
      assert.equal(code, 0, out);
      const lines = out.split('\n').filter((line) => / seeds of '/.test(line));
      assert.equal(lines.length, cores[i]!.length, out);
      for (const line of lines) assert.match(line, / 0 failing/, out);
      summaries.push(...lines);
    });
    t.diagnostic(`${summaries.join('; ')}; ${Math.round((Date.now() - started) / 1000)} s on Node ${seedNode().version}`);
  });
});

// -------------------------------------------------------------------------------------------------------
// Broken variants: each changes requests on their way to DynamoDB (the service's code is untouched), and the
// simulation must catch it. The seed that first catches each is the one named; a change to the simulation
// that moves it is found here.

const headUpdates = (operation: string, input: Record<string, any>): Record<string, any>[] =>
  operation === 'UpdateItem'
    ? [input]
    : operation === 'TransactWriteItems'
      ? input.TransactItems.map((i: Record<string, any>) => i.Update).filter(Boolean)
      : [];
/** Drops the expression values a changed request no longer uses (DynamoDB refuses unused ones). */
const prune = (u: Record<string, any>) => {
  const text = `${u.UpdateExpression} ${u.ConditionExpression}`;
  for (const k of Object.keys(u.ExpressionAttributeValues ?? {})) if (!text.includes(k)) delete u.ExpressionAttributeValues[k];
};

/**
 * A mutation that drops puts from every BatchWriteItem: those `drop` picks among a table's requests (their keys'
 * `pk`s, in order). A table left with none keeps one harmless put, as a batch must name at least one.
 */
const dropPuts =
  (drop: (pks: string[]) => (pk: string, i: number) => boolean): Mutation =>
  (operation, input) => {
    if (operation !== 'BatchWriteItem') return;
    for (const [table, requests] of Object.entries(input.RequestItems as Record<string, Record<string, any>[]>)) {
      const pks = requests.map((r) => String(r.PutRequest?.Item?.pk?.S ?? ''));
      const dropped = drop(pks);
      const kept = requests.filter((_, i) => !dropped(pks[i]!, i));
      input.RequestItems[table] = kept.length > 0 ? kept : [{ PutRequest: { Item: { pk: { S: 'UNUSED' }, sk: { S: 'x' } } } }];
    }
  };

/** A leader's round commit (not a direct one: the head's update on the lease, moving the cursor), every third: its instance killed as it lands. */
const killAtRoundCommit: FaultScript = ({ operation, input, n }) =>
  n % 3 === 0 &&
  headUpdates(operation, input).some((u) => u.UpdateExpression?.includes('sealed_to = :newCursor') && u.ConditionExpression?.includes('turn_holder = :writer'))
    ? 'kill'
    : undefined;

const VARIANTS: { name: string; options: ScenarioOptions; caughtBy: RegExp }[] = [
  {
    name: 'a commit and a lease without their conditions (head, cursor, holder)',
    options: {
      ...PROFILES.calm!,
      mutate: ((operation, input) => {
        for (const u of headUpdates(operation, input)) {
          if (
            u.ConditionExpression?.startsWith('head_index = :expected AND ') ||
            u.ConditionExpression?.includes('turn_holder = :writer OR turn_expires_ms < :now')
          ) {
            u.ConditionExpression = 'attribute_exists(pk)';
            prune(u);
          }
        }
      }) as Mutation,
    },
    caughtBy: /fork/,
  },
  {
    name: 'a withdrawal without its condition (it can move the cursor back)',
    options: {
      ...PROFILES.chaos!,
      mutate: ((operation, input) => {
        if (operation === 'UpdateItem' && input.UpdateExpression === 'SET sealed_to = :sk') input.ConditionExpression = 'attribute_exists(pk)';
      }) as Mutation,
    },
    caughtBy: /on the chain \d+ times|a 503 landed after it was answered/,
  },
  {
    // One caller: a lone writer, whose appends are direct commits (since rounds stopped being transactions,
    // 4 callers' few direct commits no longer met a lost answer within 30 seeds).
    name: "a lone writer's direct commit without its ClientRequestToken, one transaction answer in five lost",
    options: {
      ...PROFILES.calm!,
      callers: 1,
      appendsPerCaller: 8,
      script: ({ operation, n }) => (operation === 'TransactWriteItems' && n % 5 === 0 ? 'lost-answer' : undefined),
      mutate: ((operation, input) => {
        if (operation === 'TransactWriteItems') delete input.ClientRequestToken;
      }) as Mutation,
    },
    caughtBy: /on the chain \d+ times/,
  },
  {
    name: 'a pending append whose lost answer is taken as a key already taken',
    options: {
      ...PROFILES.calm!,
      script: ({ operation, input, n }) => (operation === 'PutItem' && input.Item?.drafts && n % 3 === 0 ? 'lost-answer' : undefined),
      mutate: ((operation, input) => {
        if (operation === 'PutItem' && input.Item?.drafts) delete input.ReturnValuesOnConditionCheckFailure;
      }) as Mutation,
    },
    caughtBy: /on the chain \d+ times|multiple operations on one item|a 503 landed after it was answered/,
  },
  {
    // A writer in a shard other than the first decides whether its append was sealed from its shard's seals
    // (append/seals.ts): they must be written with each round's records, before the next commit.
    name: "a round's seals never written (a crowd, whose chain has several pending shards)",
    options: {
      ...PROFILES.crowd!,
      mutate: dropPuts(() => (pk) => pk.startsWith('SEAL#')),
    },
    caughtBy: /on the chain \d+ times|a 503 landed after it was answered/,
  },
  {
    // Reads rebuild a block whose record is not written yet from the pending append it came from (block-reads.ts):
    // until that expires (7 days). Without the final reads past every TTL, this variant passed every seed.
    name: "a leader that never writes its own append's record (its blocks then stand on pending appends, which expire)",
    options: {
      ...PROFILES.calm!,
      // A round's records in order: the leader's own blocks come first.
      mutate: dropPuts((pks) => {
        const first = pks.findIndex((pk) => pk.startsWith('HASH#'));
        return (_, i) => i === first;
      }),
    },
    caughtBy: /missing|not found by its hash|not on the final chain|could not be read back/,
  },
  {
    // A request that takes an Idempotency-Key over settles the pending append the key's record names
    // (append/withdraw.ts, settleBound): with nothing named, the attempt it took over from is sealed beside its own.
    name: "a key's record never bound to its pending append (retries take keys over from attempts in flight)",
    options: {
      ...PROFILES.takeover!,
      mutate: ((operation, input) => {
        // The bind before a write, and the pending append's key a new record is made naming.
        if (operation === 'UpdateItem' && String(input.UpdateExpression).startsWith('SET bound_shard')) {
          input.UpdateExpression = 'SET bound_nothing = :token';
          prune(input);
        }
        if (operation === 'PutItem' && String(input.Item?.pk?.S).startsWith('IDEMPOTENCY#'))
          for (const name of ['bound_shard', 'bound_sk', 'bound_after', 'bound_token', 'bound_fingerprint']) delete input.Item[name];
      }) as Mutation,
    },
    caughtBy: /on the chain \d+ times/,
  },
  {
    // A direct commit (a lone writer's transaction on the head it remembers) cancelled because another writer's
    // transaction held the head is not committed: the storage layer answers 'conflict', and the long way settles it.
    // Read as committed, its blocks are acknowledged and never written. The pair profile's schedule makes two direct
    // commits meet in flight; the other profiles had reached it by luck (2 of 400 seeds of faults).
    name: "a direct commit cancelled for another's transaction on the head (TransactionConflict) taken as committed",
    options: {
      ...PROFILES.pair!,
      misread: (operation, input, outcome) => {
        if (operation !== 'TransactWriteItems' || outcome.ok) return undefined;
        const direct = input.TransactItems.some((i: Record<string, any>) => String(i.Update?.ConditionExpression ?? '').includes('turn_expires_ms < :now'));
        const reasons = (outcome.extra?.CancellationReasons ?? []) as { Code?: string }[];
        return direct && reasons.some((r) => r.Code === 'TransactionConflict') ? { ok: true, output: {} } : undefined;
      },
    },
    caughtBy: /fork|a lost acknowledged append|is missing|not on the final chain/,
  },
  {
    // A key names one request: a retry with another body is refused (422), never answered with the first body's
    // blocks. With the records' fingerprints read as the request's own, the check that tells two bodies apart passes
    // every one: the workload's attempts with another body (takeover's otherBodyShare) are answered the first's blocks.
    name: "an Idempotency-Key's record read as if every body were the request's own (a retry with another body answered the first's blocks)",
    options: {
      ...PROFILES.takeover!,
      misread: (operation, input, outcome) => {
        const pk = String(input.Item?.pk?.S ?? input.Key?.pk?.S ?? '');
        if ((operation !== 'PutItem' && operation !== 'UpdateItem') || !pk.startsWith('IDEMPOTENCY#')) return undefined;
        const own = input.Item?.fingerprint ?? input.ExpressionAttributeValues?.[':fingerprint'];
        if (!own) return undefined;
        const item = (outcome.ok ? outcome.output.Attributes : outcome.extra?.Item) as Record<string, unknown> | undefined;
        if (!item) return undefined;
        const same = { ...item, ...('fingerprint' in item ? { fingerprint: own } : {}), ...('bound_fingerprint' in item ? { bound_fingerprint: own } : {}) };
        return outcome.ok ? { ok: true, output: { ...outcome.output, Attributes: same } } : { ...outcome, extra: { ...outcome.extra, Item: same } };
      },
    },
    caughtBy: /was acknowledged at block \d+ and is at block \d+|acknowledged \(block \d+\) and is not on the chain|two bodies of the Idempotency-Key/,
  },
  {
    // A round's records and segment are written before the head says so (its lease given back "written", the next
    // commit taking its metadata off the head). With six of every ten BatchWriteItems failing and read as done, the
    // head is marked written while the writes never landed: the correlated faults the real code passes (below).
    name: "a round's record and segment writes that failed, read as written (the head marked written before they landed)",
    options: {
      ...PROFILES.calm!,
      script: ({ operation, n }) => (operation === 'BatchWriteItem' && n % 10 < 6 ? 'server-error' : undefined),
      misread: (operation, _input, outcome) => (operation === 'BatchWriteItem' && !outcome.ok ? { ok: true, output: {} } : undefined),
    },
    caughtBy: /missing|not found by its hash|not on the final chain|could not be read back|lost acknowledged/,
  },
  {
    // A leader killed as its round's commit lands never writes that round's records and segment: the head must still
    // say they are not written, so that the next leader writes them from the round's pending appends before it moves
    // on. A commit that marks its records written itself passes every profile (its leader always writes them a moment
    // later; 30 calm seeds) and is caught only when that leader dies between the two (issue 70).
    name: "a round's commit that marks its own records written (a leader killed as that commit lands leaves them unwritten)",
    options: {
      ...PROFILES.calm!,
      script: killAtRoundCommit,
      mutate: ((operation, input) => {
        for (const u of headUpdates(operation, input))
          if (u.UpdateExpression?.includes('sealed_to = :newCursor')) u.ExpressionAttributeValues[':materialized'] = u.ExpressionAttributeValues[':index'];
      }) as Mutation,
    },
    caughtBy: /is missing|does not link/,
  },
  {
    // A process serving several callers at once (the local stack's single-process runtime) must answer each with its
    // own blocks: one that answers each with the result of the invocation answered before it passed the simulation
    // while it ran one invocation an instance (issue 70).
    name: 'a process serving several callers that answers each with the previous one’s result (answers shifted by one)',
    options: { ...PROFILES.shared!, shiftAnswers: true },
    caughtBy: /was acknowledged at block \d+ and is at block \d+|was acknowledged \(block \d+\) and is not on the chain/,
  },
  {
    // A leader commits its own batch with their records in its transaction, and writes only the others' after.
    name: "a leader's commit that drops the records of its own batch (written nowhere else)",
    options: {
      ...PROFILES.batches!,
      mutate: ((operation, input) => {
        if (
          operation === 'TransactWriteItems' &&
          input.TransactItems.some((i: Record<string, any>) => i.Update?.ConditionExpression?.includes('turn_holder = :writer'))
        )
          input.TransactItems = input.TransactItems.filter((i: Record<string, any>) => !String(i.Put?.Item?.pk?.S).startsWith('HASH#'));
      }) as Mutation,
    },
    caughtBy: /a lost acknowledged append|is missing/,
  },
];

describe('deliberately broken variants of the protocol are caught', () => {
  for (const variant of VARIANTS) {
    it(variant.name, async (t) => {
      for (let seed = 1; seed <= 30; seed += 1) {
        const { problems } = await runScenario(seed, variant.options);
        if (problems.length === 0) continue;
        assert.match(problems.join('\n'), variant.caughtBy);
        t.diagnostic(`caught at seed ${seed}: ${problems[0]}`);
        return;
      }
      assert.fail('30 seeds and not caught');
    });
  }
  it("a round's record and segment writes failing in bursts while every head write goes through break nothing", async () => {
    // Correlated faults the profiles almost never draw (they fail requests one by one): 6 attempts of every 10
    // BatchWriteItems fail, often all three of a request's, so whole rounds' records and segments are refused while
    // their commits land. The sweep, reads and later leaders must still make every acknowledged block readable.
    const script: FaultScript = ({ operation, n }) => (operation === 'BatchWriteItem' && n % 10 < 6 ? 'server-error' : undefined);
    for (const [profile, seeds] of [
      ['calm', 6],
      ['chaos', 2],
    ] as const) {
      for (let seed = 1; seed <= seeds; seed += 1)
        assert.deepEqual((await runScenario(seed, { ...PROFILES[profile]!, script })).problems, [], `${profile} seed ${seed}`);
    }
  });

  it("leaders killed as their rounds' commits land, before those rounds' records and segments are written, lose nothing", async () => {
    // The next leader finds the head not marked written, writes the dead leader's round from its pending appends, and
    // goes on; a writer whose append that round sealed finds its receipt. Batches make rounds of 16 blocks and more,
    // whose records are written while the next round is read and built.
    for (const [profile, seeds] of [
      ['batches', 4],
      ['chaos', 2],
    ] as const) {
      for (let seed = 1; seed <= seeds; seed += 1)
        assert.deepEqual((await runScenario(seed, { ...PROFILES[profile]!, script: killAtRoundCommit })).problems, [], `${profile} seed ${seed}`);
    }
  });

  it('the same scripted faults without the variant break nothing', async () => {
    for (const variant of VARIANTS.filter((v) => v.options.script)) {
      for (let seed = 1; seed <= 10; seed += 1)
        assert.deepEqual(
          (await runScenario(seed, { ...variant.options, mutate: undefined, misread: undefined })).problems,
          [],
          `${variant.name}, seed ${seed}`,
        );
    }
  });
});

// -------------------------------------------------------------------------------------------------------
// What the simulation found, kept as seeds of the profile that found each (docs/simulation.md, "Found").

const FOUND: { seed: number; profile: string; what: string }[] = [
  { seed: 13, profile: 'calm', what: 'a single write meeting a transaction in flight answered 500 (TransactionConflictException)' },
  { seed: 6, profile: 'faults', what: "a leader's round commit whose answer was lost was committed again" },
  { seed: 19, profile: 'faults', what: 'a pending append whose answer was lost was written twice' },
  { seed: 22, profile: 'faults', what: 'a leader whose lease lapsed wrote again its append another leader had sealed' },
  { seed: 20, profile: 'chaos', what: 'a leader whose read failed answered 503 without withdrawing the append it had just written' },
  { seed: 63, profile: 'chaos', what: 'a leader answered 503 after its own blocks were committed' },
  {
    seed: 14,
    profile: 'takeover',
    what: 'a retry that took its key over from an attempt still pending: both sealed in one round, whose transaction held two answers of one key (500)',
  },
  {
    seed: 668,
    profile: 'chaos',
    what: "a leader whose lease lapsed in a stall found every key above its stale cursor sealed by others, and answered an undocumented 500 ('no free key')",
  },
  {
    seed: 155,
    profile: 'shared',
    what: "a direct commit after a round kept the round's mark that the head's recent metadata was in a segment: the next direct commit left its blocks' metadata out of the head, and they were lost to reads by index (records kept)",
  },
  {
    seed: 10,
    profile: 'large-batches',
    what: "a round's wave of segments cut short (a later one written, an earlier one not): its blocks read as missing, and a key's retry answered 500",
  },
];

describe('what the simulation found stays fixed', () => {
  for (const { seed, profile, what } of FOUND) {
    it(`${profile} seed ${seed}: ${what}`, async () => {
      assert.deepEqual((await runScenario(seed, PROFILES[profile]!)).problems, []);
    });
  }
});
