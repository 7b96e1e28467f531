/**
 * One simulated run of the append protocol from a seed (docs/simulation.md): callers append to one chain
 * through single-request Lambda instances over the simulated DynamoDB, with the faults the options ask for
 * drawn from the seed; then the world goes quiet, the hourly sweep runs, and the invariants are checked.
 * The same seed and options give the same run, request for request.
 */
import type { AppendResult } from '#shared/ledger/ledger';
import { DomainError, OutcomeUnknownError } from '#shared/errors';
import type { EventDraft } from '#shared/ledger/events';
import { frontierRoot } from '#shared/ledger/merkle';
import { type AppendRecord, type AttemptOutcome, check, checkTiles, type Observations, observe, readChain } from './invariants.ts';
import { type InstanceSettings, SimInstance } from './lambda.ts';
import { awsDynamo, describeRequest, type FaultRates, type FaultScript, type Misread, type Mutation, NO_FAULTS, SimNetwork } from './network.ts';
import { EPOCH_MS, World } from './world.ts';

export interface ScenarioOptions {
  /** Concurrent callers, each appending one event at a time through an instance of its own. */
  callers: number;
  appendsPerCaller: number;
  /** The share of appends sent with an Idempotency-Key (and retried with it on a failure). */
  idempotentShare: number;
  /**
   * The share of keyed appends that also get an attempt with the same Idempotency-Key and another body (an event of
   * another entity), sent within 3 s of the first attempt (before, during or after a takeover of the key's hold), and
   * retried as the append is: a key names one request, so at most one of the two bodies lands, and each attempt is
   * answered with its own body's blocks or refused (checked with the other invariants). None by default, and then no
   * draw is made for it (the other profiles' seeds replay as before).
   */
  otherBodyShare?: number;
  /**
   * The share of appends that are a batch of `batchSize` events in one request (one outcome for them all); none
   * by default, and then no draw is made for it (the other profiles' seeds replay as before).
   */
  batchShare?: number;
  batchSize?: number;
  /** How many more times a caller sends an append with a key that did not get an answer (a 409 included). */
  retries: number;
  /**
   * How long a request holds its Idempotency-Key (ms; the service's 60 s). Shorter than an append may take,
   * a retry takes the key over from an attempt still in flight (frozen, or waiting for its round).
   */
  holdMs: number;
  faults: FaultRates;
  /** One outage this long (ms; 0: none), starting within the workload's first 2 s: DynamoDB unreachable. */
  outageMs: number;
  /** Each instance's clock is off by up to this much, either way (ms). */
  skewMs: number;
  /** The chance that an invocation's instance is killed at some moment within it. */
  killRate: number;
  /** The chance that an invocation's instance freezes (for up to `freezeMs`) at some moment within it. */
  freezeRate: number;
  freezeMs: number;
  /** How far back an eventually consistent read may answer from (ms). */
  eventualWindowMs: number;
  /** TTL deletes an expired item within this long (ms). */
  ttlDelayMs: readonly [number, number];
  timeoutMs: number;
  /**
   * After the sweep, once TTL has taken the rounds' seals (an hour, and its delay), every append with an
   * Idempotency-Key is sent once more with it: a client retrying hours later, within the key's day. Its answer
   * must be the first's (or, for an append that never landed, a new one), never a second landing.
   */
  lateRetries: boolean;
  /** Settings of the appender under test (the service's defaults otherwise). */
  appender?: InstanceSettings['appender'];
  /** Keep a trace of every request, fault and answer. */
  trace?: boolean;
  /** Faults a test chooses for given requests (over the drawn ones). */
  script?: FaultScript;
  /** A deliberately broken variant: requests changed on their way (the callers' instances only). */
  mutate?: Mutation;
  /** A deliberately broken variant: answers read wrongly on their way back (the callers' instances only). */
  misread?: Misread;
  /**
   * When (ms from the workload's start) caller `c` sends its `j`th append: a targeted schedule (profile `pair`).
   * Unset: a caller sends its next append as soon as the last is answered.
   */
  schedule?: (c: number, j: number) => number;
  /**
   * Callers served by one instance at once (1: Lambda's one invocation an instance): more is the local stack's
   * single-process runtime, whose concurrent appends share the appender (profile `shared`).
   */
  callersPerInstance?: number;
  /** A deliberately broken runtime: a shared instance answers each invocation with the one answered before it. */
  shiftAnswers?: boolean;
}

export const DEFAULT_SCENARIO: ScenarioOptions = {
  callers: 4,
  appendsPerCaller: 4,
  idempotentShare: 0.5,
  retries: 2,
  holdMs: 60_000,
  faults: NO_FAULTS,
  outageMs: 0,
  skewMs: 0,
  killRate: 0,
  freezeRate: 0,
  freezeMs: 2_000,
  eventualWindowMs: 200,
  ttlDelayMs: [0, 60_000],
  timeoutMs: 29_000,
  lateRetries: true,
};

export interface RunResult {
  seed: number;
  problems: string[];
  /** Blocks on the chain at the end (the genesis included). */
  blocks: number;
  /** The chain's pending shards at the end (they grow when a round finds many appends waiting). */
  shards: number;
  acked: number;
  refused: number;
  unknown: number;
  /** Answers of 500 that say the outcome could not be settled (OutcomeUnknownError). */
  unsettled: number;
  /** Answers of 503 (the append did not land and never will). */
  unavailable: number;
  /** Answers that replayed an earlier attempt's blocks under its Idempotency-Key. */
  replayed: number;
  requests: number;
  throttled: number;
  /** Virtual time the workload took (ms). */
  elapsedMs: number;
  trace: string[];
}

const CHAIN = 'sim';

/** Refuses settings that make no sense, naming them. */
export function checkOptions(options: ScenarioOptions): void {
  const positive = (name: string, value: number) => {
    if (!(Number.isInteger(value) && value >= 1)) throw new RangeError(`${name} must be a whole number of at least 1, not ${value}`);
  };
  const share = (name: string, value: number) => {
    if (!(value >= 0 && value <= 1)) throw new RangeError(`${name} must be between 0 and 1, not ${value}`);
  };
  positive('callers (instances)', options.callers);
  positive('callersPerInstance', options.callersPerInstance ?? 1);
  positive('appendsPerCaller', options.appendsPerCaller);
  share('idempotentShare', options.idempotentShare);
  share('batchShare', options.batchShare ?? 0);
  share('otherBodyShare', options.otherBodyShare ?? 0);
  if (options.batchShare) positive('batchSize', options.batchSize ?? 0);
  share('killRate', options.killRate);
  share('freezeRate', options.freezeRate);
  for (const [name, rate] of Object.entries(options.faults)) share(`faults.${name}`, rate);
  if (Object.values(options.faults).reduce((a, b) => a + b, 0) > 0.5)
    throw new RangeError('the fault rates add up to more than 0.5: nothing would get through');
  if (!(options.holdMs > 0)) throw new RangeError(`holdMs must be more than 0, not ${options.holdMs}`);
  if (!(options.retries >= 0)) throw new RangeError(`retries must not be negative, not ${options.retries}`);
  if (!(options.eventualWindowMs >= 0)) throw new RangeError(`eventualWindowMs must not be negative, not ${options.eventualWindowMs}`);
  if (!(options.outageMs >= 0 && options.outageMs < options.timeoutMs))
    throw new RangeError(`outageMs must be at least 0 and less than the function's timeout, not ${options.outageMs}`);
  if (!(options.freezeMs >= 0)) throw new RangeError(`freezeMs must not be negative, not ${options.freezeMs}`);
  if (!(options.timeoutMs > 2_000)) throw new RangeError(`timeoutMs must be more than the 1.5 s kept to answer, not ${options.timeoutMs}`);
  if (!(options.skewMs >= 0 && options.skewMs < options.timeoutMs))
    throw new RangeError(`skewMs must be at least 0 and less than the function's timeout, not ${options.skewMs}`);
  const [least, most] = options.ttlDelayMs;
  if (!(least >= 0 && most >= least)) throw new RangeError(`ttlDelayMs must be [least, most] with 0 ≤ least ≤ most, not [${least}, ${most}]`);
}

export async function runScenario(seed: number, options: ScenarioOptions = DEFAULT_SCENARIO): Promise<RunResult> {
  checkOptions(options);
  const world = new World(seed);
  const trace: string[] = [];
  const say = (line: string) => {
    if (options.trace) trace.push(`${String(world.elapsed()).padStart(7)} ms  ${line}`);
  };
  world.begin();
  try {
    const dynamo = awsDynamo(world, options);
    const network = new SimNetwork(world, dynamo, options.faults, 5_000, options.trace, options.script, options.mutate, options.misread);
    const quiet = new SimNetwork(world, dynamo, NO_FAULTS);
    const settings: InstanceSettings = {
      timeoutMs: options.timeoutMs,
      tableName: 'ledger',
      idempotencyHoldMs: options.holdMs,
      ...(options.appender ? { appender: options.appender } : {}),
    };
    let made = 0;
    const perInstance = options.callersPerInstance ?? 1;
    const newInstance = (over = network, callers = false) => {
      made += 1;
      const skew = options.skewMs ? Math.round((world.random() * 2 - 1) * options.skewMs) : 0;
      const own =
        callers && (perInstance > 1 || options.shiftAnswers) ? { ...settings, shared: perInstance > 1, shiftAnswers: options.shiftAnswers === true } : settings;
      const instance = new SimInstance(`i${made}`, skew, world, over, own);
      say(`${instance.name} starts (clock ${skew >= 0 ? '+' : ''}${skew} ms)`);
      return instance;
    };
    // TTL runs beside everything, as DynamoDB's background process.
    const ttl = setInterval(() => {
      dynamo.expire(world.now());
      world.inert();
    }, 10_000);

    const admin = newInstance(quiet);
    const created = await runFor(
      world,
      admin.invoke((ledger) => ledger.createSubChain(CHAIN)),
    );
    if (created.kind !== 'answered') throw new Error(`the chain could not be created: ${created.kind}`);

    const observations: Observations = { blocks: new Map(), checkpoints: [], overruns: [] };
    const appends: AppendRecord[] = [];
    const started = world.now();
    let running = options.callers;
    /** Attempts with another body still on their way (otherBodyShare). */
    let otherBodies = 0;
    if (options.outageMs > 0) {
      const from = started + Math.round(world.random() * 2_000);
      network.down = { from, until: from + options.outageMs };
      say(`DynamoDB unreachable from ${from - EPOCH_MS} ms for ${options.outageMs} ms`);
    }

    /** One attempt of an append (one event, or a batch: one record per event) through `target`, its outcome recorded and observed. */
    const attempt = async (target: SimInstance, records: AppendRecord[], c: number, j: number) => {
      const { key } = records[0]!;
      const drafts: EventDraft[] = records.map((record, k) => ({
        entity_id: record.entity,
        event_type: 'sim',
        details: records.length > 1 ? { c, j, k } : { c, j },
        details_cid: null,
        details_nonce: null,
        details_metadata: null,
        is_offchain: false,
      }));
      const idempotency = key ? { idempotency: { caller: `c${c}`, key } } : undefined;
      const result =
        records.length > 1
          ? await target.invoke((ledger) => ledger.appendEvents(CHAIN, drafts, idempotency))
          : await target.invoke((ledger) => ledger.appendEvent(CHAIN, drafts[0]!, idempotency));
      const name = records.length > 1 ? `${records[0]!.entity}…(${records.length})` : records[0]!.entity;
      if (result.kind !== 'lost' && result.endedAt > result.startedAt + options.timeoutMs)
        observations.overruns.push(`${name}: answered ${result.endedAt - result.startedAt} ms after it started`);
      if (result.kind === 'lost' && result.why === 'timeout')
        observations.overruns.push(`${name}: its invocation ran to the function's timeout and was stopped`);
      // Each event of a batch gets its own block in the answer; a failure is every event's.
      const answers =
        result.kind === 'answered'
          ? records.length > 1
            ? (result.value as AppendResult[] & { replayed?: boolean }).map((one) => ({ ...one, replayed: (result.value as { replayed?: boolean }).replayed }))
            : [result.value]
          : undefined;
      if (answers && answers.length !== records.length) observations.overruns.push(`${name}: ${records.length} events sent, ${answers.length} answered`);
      const outcomes = records.map((record, k) => {
        const outcome = answers ? outcomeOf({ ...result, value: answers[k] } as never) : outcomeOf(result);
        record.attempts.push(outcome);
        if (outcome.kind === 'acked') observe(observations, outcome.index, outcome.hash);
        return outcome;
      });
      say(`${target.name} ${name}${key ? ` (key ${key})` : ''}: ${describe(outcomes[0]!)}`);
      return outcomes[0]!;
    };

    /** The appends sent with a key, with their caller and position (what the late retries send again). */
    const keyed: { records: AppendRecord[]; c: number; j: number }[] = [];
    // Callers' instances: one each, or one for every `callersPerInstance` callers (a dead one replaced for all of them).
    const slots: SimInstance[] = [];
    const instanceOf = (c: number): SimInstance => {
      const slot = Math.floor(c / perInstance);
      if (!slots[slot] || slots[slot].dead) slots[slot] = newInstance(network, true);
      return slots[slot];
    };
    const caller = async (c: number) => {
      let instance = instanceOf(c);
      for (let j = 0; j < options.appendsPerCaller; j += 1) {
        if (options.schedule) await pauseUntil(world, started + options.schedule(c, j));
        const entity = `c${c}-a${j}`;
        const key = world.random() < options.idempotentShare ? `k-${entity}` : undefined;
        const size = options.batchShare && world.random() < options.batchShare ? options.batchSize! : 1;
        const records: AppendRecord[] = Array.from({ length: size }, (_, k) => ({
          entity: size > 1 ? `${entity}-e${k}` : entity,
          ...(key ? { key } : {}),
          attempts: [],
        }));
        appends.push(...records);
        if (key) keyed.push({ records, c, j });
        if (key && options.otherBodyShare && world.random() < options.otherBodyShare) {
          // The same key with another body, from another instance of the same caller, a moment before or after.
          const other: AppendRecord[] = [{ entity: `${entity}-other`, key, body: 'other', attempts: [] }];
          appends.push(...other);
          keyed.push({ records: other, c, j });
          otherBodies += 1;
          const at = world.now() + world.random() * 3_000;
          world.at(at, () => {
            void (async () => {
              for (let n = 0; n <= options.retries; n += 1) {
                const outcome = await attempt(newInstance(network, true), other, c, j);
                if (outcome.kind === 'acked' || (outcome.kind === 'refused' && outcome.status < 500 && outcome.status !== 409)) break;
                await pauseFor(world, 100 + world.random() * 400);
              }
              otherBodies -= 1;
            })();
          });
        }
        for (let n = 0; n <= (key ? options.retries : 0); n += 1) {
          if (instance.dead) instance = instanceOf(c);
          const target = instance;
          if (world.random() < options.killRate) world.at(world.now() + world.random() * 2_000, () => target.kill());
          if (world.random() < options.freezeRate)
            world.at(world.now() + world.random() * 1_000, () => {
              target.freeze(world.random() * options.freezeMs);
              world.inert();
            });
          const outcome = await attempt(target, records, c, j);
          // A 409 (the key held by an attempt in flight) is retried: once the hold lapses, the retry takes the key over.
          if (outcome.kind === 'acked' || (outcome.kind === 'refused' && outcome.status < 500 && outcome.status !== 409)) break;
          await pauseFor(world, 100 + world.random() * 400);
        }
      }
      running -= 1;
    };

    // A monitor reads the head now and then, as a client tracking checkpoints would.
    const monitor = newInstance(quiet);
    const watch = setInterval(() => {
      if (monitor.busy) return world.inert();
      void monitor
        .invoke((ledger) => ledger.getStats(CHAIN))
        .then(async () => {
          const head = await monitor.repository.getHead(CHAIN);
          if (head?.frontier)
            observations.checkpoints.push({ size: head.headIndex + 1, root: frontierRoot(head.frontier.map((h) => Buffer.from(h, 'hex'))).toString('hex') });
          if (head) observe(observations, head.headIndex, head.headHash);
        });
    }, 250);

    for (let c = 0; c < options.callers; c += 1) void caller(c);
    const finished = await world.run(() => running === 0 && otherBodies === 0, 30 * 60_000);
    clearInterval(watch);
    if (!finished) observations.overruns.push('the workload did not finish within 30 minutes of virtual time');
    const elapsedMs = world.now() - started;

    // Quiet: after an hour, the sweep finishes what leaders left (TTL has not taken their pending appends yet).
    await runFor(world, pauseFor(world, 3_600_000), 3_700_000);
    const sweeper = newInstance(quiet);
    const swept = await runFor(
      world,
      sweeper.invoke((ledger) => sweeper.appender.finishAbandoned(CHAIN).then(() => ledger.getStats(CHAIN))),
    );
    if (swept.kind !== 'answered') observations.overruns.push(`the sweep did not finish: ${swept.kind}`);

    if (options.lateRetries && keyed.length > 0) {
      // Hours later, within the key's day: the seals the rounds wrote are gone (TTL, an hour and its delay).
      await runFor(world, pauseFor(world, 3_600_000 + options.ttlDelayMs[1] + 60_000), 3_800_000);
      const late = newInstance(quiet);
      say('late retries: every keyed append sent once more');
      for (const { records, c, j } of keyed) await runFor(world, attempt(late, records, c, j));
    }
    clearInterval(ttl);

    // The horizon: past every TTL (pending appends live 7 days; rounds, seals and keys less), so that what is read
    // below stands on what is kept for good. A leader that never wrote its records had passed every seed, its blocks
    // rebuilt from the pending appends still there at the end of a run of two virtual hours.
    await runFor(world, pauseFor(world, HORIZON_MS), HORIZON_MS + 60_000);
    dynamo.expire(world.now());

    const checker = newInstance(quiet);
    const chain = await runFor(
      world,
      checker.invoke(() => readChain(checker.repository, CHAIN)),
    );
    if (chain.kind !== 'answered') throw new Error(`the chain could not be read back: ${chain.kind}`);
    // And every block by its hash: its record, keyed by the hash (read in batches of 100, as a page's are).
    const byHash = await runFor(
      world,
      checker.invoke(async () => {
        const missing: string[] = [];
        const blocks = chain.value.blocks;
        for (let from = 0; from < blocks.length; from += 100) {
          const some = blocks.slice(from, from + 100);
          const found = await checker.repository.getRecords(CHAIN, some, true);
          for (const block of some)
            if (found.get(block.index)?.hash !== block.hash) missing.push(`block ${block.index} is not found by its hash past the horizon`);
        }
        return missing;
      }),
    );
    if (byHash.kind !== 'answered') throw new Error(`the blocks could not be read by hash: ${byHash.kind}`);
    // And in tiles, as a C2SP log client reads the chain: entry bundles and hash tiles built from what is kept.
    const tiled = await runFor(
      world,
      checker.invoke(() => checkTiles(checker.repository, CHAIN, chain.value.blocks)),
    );
    if (tiled.kind !== 'answered') throw new Error(`the chain could not be read in tiles: ${tiled.kind}`);
    const finalHead = await runFor(
      world,
      checker.invoke(() => checker.repository.getHead(CHAIN)),
    );
    const problems = [...check(chain.value, appends, observations), ...byHash.value, ...tiled.value];
    const count = (kind: AttemptOutcome['kind']) => appends.filter((a) => a.attempts.some((t) => t.kind === kind)).length;
    return {
      seed,
      problems,
      blocks: chain.value.blocks.length,
      shards: finalHead.kind === 'answered' ? (finalHead.value?.pendingShards ?? 1) : 0,
      acked: count('acked'),
      refused: appends.filter((a) => a.attempts.every((t) => t.kind === 'refused')).length,
      unknown: appends.filter((a) => !a.attempts.some((t) => t.kind === 'acked') && a.attempts.some((t) => t.kind === 'unknown')).length,
      unsettled: appends.flatMap((a) => a.attempts).filter((t) => t.kind === 'unknown' && t.why === UNSETTLED).length,
      unavailable: appends.flatMap((a) => a.attempts).filter((t) => t.kind === 'refused' && t.status === 503).length,
      replayed: appends.flatMap((a) => a.attempts).filter((t) => t.kind === 'acked' && t.replayed).length,
      requests: network.requests,
      throttled: dynamo.throttled,
      elapsedMs,
      // In time order (a stable sort keeps each moment's lines in the order they happened).
      trace: [...trace, ...network.trace.map((t) => `${String(t.at).padStart(7)} ms  ${t.instance} ${describeRequest(t)}`)].sort(
        (a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10),
      ),
    };
  } finally {
    world.end();
  }
}

const UNSETTLED = 'outcome unknown (500)';

/** How far past the run the final reads are made: past every TTL the protocol sets (the longest, 7 days). */
const HORIZON_MS = 8 * 86_400_000;

function outcomeOf(result: Awaited<ReturnType<SimInstance['invoke']>>): AttemptOutcome {
  if (result.kind === 'answered') {
    const value = result.value as { event_id: string; block: { index: number; hash: string }; replayed?: boolean };
    return { kind: 'acked', index: value.block.index, hash: value.block.hash, eventId: value.event_id, replayed: value.replayed === true };
  }
  if (result.kind === 'lost') return { kind: 'unknown', why: result.why };
  const error = result.error;
  // The documented 500: the service could not settle whether the append landed, and says so.
  if (error instanceof OutcomeUnknownError) return { kind: 'unknown', why: UNSETTLED };
  if (error instanceof DomainError) return { kind: 'refused', status: error.statusCode, message: error.message };
  return { kind: 'refused', status: 500, message: `${(error as Error)?.name}: ${(error as Error)?.message}` };
}

function describe(outcome: AttemptOutcome): string {
  if (outcome.kind === 'acked') return `block ${outcome.index}${outcome.replayed ? ' (replayed)' : ''}`;
  if (outcome.kind === 'refused') return `${outcome.status} ${outcome.message}`;
  return `unknown (${outcome.why})`;
}

/** Waits `ms` of virtual time (the world runs meanwhile). */
function pauseFor(_world: World, ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits until the virtual time `at` (at once when it has passed). */
function pauseUntil(world: World, at: number): Promise<void> {
  return pauseFor(world, Math.max(0, at - world.now()));
}

/** Runs the world until `promise` settles; answers its value. */
async function runFor<T>(world: World, promise: Promise<T>, limitMs = 30 * 60_000): Promise<T> {
  let done = false;
  let value: T | undefined;
  let failure: unknown;
  promise.then(
    (v) => {
      done = true;
      value = v;
    },
    (e) => {
      done = true;
      failure = e ?? new Error('rejected');
    },
  );
  await world.run(() => done, limitMs);
  if (failure) throw failure;
  if (!done) throw new Error(`did not finish within ${limitMs / 60_000} minutes of virtual time`);
  return value as T;
}

export { EPOCH_MS };
