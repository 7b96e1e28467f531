/**
 * The cloud's throughput, measured in the simulation (docs/capacity.md, "Measured in the simulation"): N
 * single-request Lambda instances per chain append as fast as they can (each with an Idempotency-Key, as the
 * verified client sends them), over the simulated DynamoDB with its latencies, transactions, per-partition
 * limits and billing. Every instance has a core of its own, as on AWS: the code's CPU time costs no virtual
 * time, so what bounds the rate is the protocol's requests and DynamoDB's limits, which is what this measures
 * and what this 2-core machine cannot show.
 */
import { DomainError } from '#shared/errors';
import type { EventDraft } from '#shared/ledger/events';
import { PRICES } from '../../bench/prices.ts';
import { type InstanceSettings, SimInstance } from './lambda.ts';
import { awsDynamo, describeRequest, NO_FAULTS, SimNetwork } from './network.ts';
import type { SimDynamo } from './dynamo/engine.ts';
import { World } from './world.ts';

export interface LoadOptions {
  chains: number;
  instancesPerChain: number;
  /** Virtual time measured, after the warm-up (ms). */
  durationMs: number;
  warmupMs: number;
  /** The event's details, bytes of JSON (the bench's events are about 100). */
  detailsBytes: number;
  /** Appender settings other than the service's defaults (to compare a change with them). */
  appender?: InstanceSettings['appender'];
  /** Keep every request and every answer of the run, in time order (LoadResult.trace). */
  trace?: boolean;
  /** Append without an Idempotency-Key (each append has one otherwise, as the verified client sends them). */
  unkeyed?: boolean;
  /** Events per append: 1 (POST …/events), or a batch (POST …/events/batch: at most 98 with a key). */
  batchSize?: number;
  /**
   * Instances start at moments drawn within this long (ms; 0: all at the same moment, a herd no real burst
   * makes: API Gateway and Lambda's cold starts spread a burst's first requests over hundreds of ms).
   */
  rampMs?: number;
}

export interface LoadResult {
  chains: number;
  instances: number;
  /** Acknowledged events a second, all chains. */
  eventsPerSecond: number;
  perChainEventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Write and read units billed per acknowledged event (the window's). */
  wcuPerEvent: number;
  rcuPerEvent: number;
  /** The busiest partition's write units a second, and which; the same for read units. */
  hottestWcuPerSecond: number;
  hottestPartition: string;
  hottestRcuPerSecond: number;
  hottestReadPartition: string;
  throttled: number;
  /** Answers other than success (503s), per thousand appends. */
  refusedPerThousand: number;
  /** DynamoDB on-demand, per million events (writes and reads). */
  dynamoDollarsPerMillion: number;
  requestsPerEvent: number;
  /** With `trace`: `<ms> <instance> <request or answer>` lines. */
  trace?: string[];
}

/** How far an eventually consistent read that lags may lag under load (ms; see runLoad). */
export const EVENTUAL_LAG_MS = 20;

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0);

/**
 * The simulated AWS a load runs on: DynamoDB with its eventually consistent reads as AWS serves them (a write is
 * acknowledged once two of the partition's three replicas have it, and such a read goes to any of the three: the
 * DynamoDB paper, USENIX ATC 2022, so a third of them may miss a write of the last moments, here by up to 20 ms, an
 * assumption, no figure is published; the invariant runs keep every read up to 200 ms stale. Before, every look here
 * was that stale, and a waiting writer's look at 200 ms missed a seal written 150 ms before it, which taught its
 * writer to look later), the network, and instances made as they are needed. Its chains are created one after
 * another by the first instance.
 */
async function loadWorld(world: World, names: string[], options: { trace?: boolean | undefined; appender?: InstanceSettings['appender'] | undefined }) {
  const dynamo = awsDynamo(world, { eventualWindowMs: EVENTUAL_LAG_MS, laggingShare: 1 / 3, ttlDelayMs: [0, 60_000] });
  const network = new SimNetwork(world, dynamo, NO_FAULTS, 5_000, options.trace === true);
  let made = 0;
  const instance = () =>
    new SimInstance(`i${++made}`, 0, world, network, { timeoutMs: 29_000, tableName: 'ledger', ...(options.appender ? { appender: options.appender } : {}) });
  const admin = instance();
  let ready = false;
  void (async () => {
    for (const name of names) await admin.invoke((l) => l.createSubChain(name));
    ready = true;
  })();
  await world.run(() => ready, 3_600_000);
  /** Instances made for the load (the one that created the chains aside). */
  const instances = () => made - 1;
  return { dynamo, network, instance, instances };
}

/**
 * A measured window's write and read units and requests: the totals when it starts and when it ends (both scheduled
 * now), per partition, with the busiest partition of each.
 */
function measureWindow(world: World, dynamo: SimDynamo, network: SimNetwork, from: number, to: number) {
  type Totals = Map<string, { wcu: number; rcu: number }>;
  const snapshot = (): Totals => new Map([...dynamo.totals].map(([k, v]) => [k, { ...v }]));
  let before: Totals | undefined;
  let after: Totals | undefined;
  let startRequests = 0;
  let endRequests = 0;
  world.at(from, () => {
    before = snapshot();
    startRequests = network.requests;
  });
  world.at(to, () => {
    after = snapshot();
    endRequests = network.requests;
  });
  return {
    ended: () => after !== undefined,
    units() {
      let wcu = 0;
      let rcu = 0;
      let hottest = ['', 0] as [string, number];
      let hottestRead = ['', 0] as [string, number];
      for (const [partition, total] of after ?? new Map()) {
        const start = before?.get(partition) ?? { wcu: 0, rcu: 0 };
        const w = total.wcu - start.wcu;
        const r = total.rcu - start.rcu;
        wcu += w;
        rcu += r;
        if (w > hottest[1]) hottest = [partition, w];
        if (r > hottestRead[1]) hottestRead = [partition, r];
      }
      return { wcu, rcu, hottest, hottestRead, requests: endRequests - startRequests };
    },
  };
}

/** DynamoDB on-demand for `events` events that took these units, per million events. */
const dollarsPerMillion = (wcu: number, rcu: number, events: number) =>
  (1e6 * (wcu * PRICES.dynamoWriteRequestUnit + rcu * PRICES.dynamoReadRequestUnit)) / events;

export async function runLoad(seed: number, options: LoadOptions): Promise<LoadResult> {
  if (!(options.chains >= 1 && options.instancesPerChain >= 1)) throw new RangeError('chains and instancesPerChain must be at least 1');
  if (!(options.durationMs > 0 && options.warmupMs >= 0)) throw new RangeError('durationMs must be positive and warmupMs not negative');
  const world = new World(seed);
  world.begin();
  try {
    const names = Array.from({ length: options.chains }, (_, i) => `load-${i}`);
    const { dynamo, network, instance } = await loadWorld(world, names, options);
    const answers: { at: number; instance: string; line: string }[] = [];

    const measureFrom = world.now() + options.warmupMs;
    const measureTo = measureFrom + options.durationMs;
    const latencies: number[] = [];
    let acked = 0;
    let refused = 0;
    let running = 0;
    const details = { pad: 'x'.repeat(Math.max(0, options.detailsBytes - 10)) };
    const batch = options.batchSize ?? 1;
    const worker = async (chain: string, n: number) => {
      running += 1;
      const own = instance();
      for (let j = 0; world.now() < measureTo; j += 1) {
        const drafts: EventDraft[] = Array.from({ length: batch }, (_, k) => ({
          entity_id: `${chain}-${n}-${j}-${k}`,
          event_type: 'load',
          details,
          details_cid: null,
          details_nonce: null,
          details_metadata: null,
          is_offchain: false,
        }));
        const started = world.now();
        const keyed = options.unkeyed ? undefined : { idempotency: { caller: `w${n}`, key: `${chain}-${n}-${j}` } };
        const result = await own.invoke<unknown>((l) => (batch === 1 ? l.appendEvent(chain, drafts[0]!, keyed) : l.appendEvents(chain, drafts, keyed)));
        if (options.trace)
          answers.push({
            at: world.elapsed(),
            instance: own.name,
            line: `answered ${result.kind === 'answered' ? 'ok' : result.kind} after ${world.now() - started} ms`,
          });
        if (started < measureFrom || started >= measureTo) continue;
        if (result.kind === 'answered') {
          acked += batch;
          latencies.push(result.endedAt - result.startedAt);
        } else {
          refused += 1;
          if (result.kind === 'failed' && !(result.error instanceof DomainError)) throw result.error;
        }
      }
      running -= 1;
    };
    let toStart = names.length * options.instancesPerChain;
    for (const chain of names)
      for (let n = 0; n < options.instancesPerChain; n += 1) {
        const start = () => {
          toStart -= 1;
          void worker(chain, n);
        };
        if (options.rampMs) world.at(world.now() + world.random() * options.rampMs, start);
        else start();
      }
    const window = measureWindow(world, dynamo, network, measureFrom, measureTo);
    await world.run(() => toStart === 0 && running === 0, options.warmupMs + options.durationMs + 120_000);

    const { wcu, rcu, hottest, hottestRead, requests } = window.units();
    const seconds = options.durationMs / 1000;
    latencies.sort((a, b) => a - b);
    const events = Math.max(1, acked);
    return {
      chains: options.chains,
      instances: options.chains * options.instancesPerChain,
      eventsPerSecond: acked / seconds,
      perChainEventsPerSecond: acked / seconds / options.chains,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      wcuPerEvent: wcu / events,
      rcuPerEvent: rcu / events,
      hottestWcuPerSecond: hottest[1] / seconds,
      hottestPartition: hottest[0].replace(/^ledger\|\|/, ''),
      hottestRcuPerSecond: hottestRead[1] / seconds,
      hottestReadPartition: hottestRead[0].replace(/^ledger\|\|/, ''),
      throttled: dynamo.throttled,
      refusedPerThousand: (1000 * refused) / Math.max(1, acked + refused),
      dynamoDollarsPerMillion: dollarsPerMillion(wcu, rcu, events),
      requestsPerEvent: requests / events,
      ...(options.trace
        ? {
            trace: [...network.trace.map((t) => ({ at: t.at, instance: t.instance, line: describeRequest(t) })), ...answers]
              .sort((x, y) => x.at - y.at)
              .map((t) => `${String(t.at).padStart(7)} ms  ${t.instance} ${t.line}`),
          }
        : {}),
    };
  } finally {
    world.end();
  }
}

/** Open loop: appends arrive at a rate whatever the ledger's latency, each an invocation (npm run bench:cloud -- --rates). */
export interface ArrivalOptions {
  /** Mean arrivals a second on the one chain. */
  ratePerSecond: number;
  /**
   * `poisson`: exponential gaps, as independent callers make them. `burst`: each second's arrivals within its first
   * 100 ms (ten times the mean rate for a tenth of the time, then nothing), as a batch job or a retry storm makes them.
   */
  profile: 'poisson' | 'burst';
  durationMs: number;
  warmupMs: number;
  detailsBytes: number;
  appender?: InstanceSettings['appender'];
  /** Keep every request, answer and arrival (`trace` in the result). */
  trace?: boolean;
}

export interface ArrivalResult {
  ratePerSecond: number;
  profile: ArrivalOptions['profile'];
  /** Appends that arrived in the window, and those answered (a refusal is a 503 the caller retries). */
  arrived: number;
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  wcuPerEvent: number;
  rcuPerEvent: number;
  dynamoDollarsPerMillion: number;
  requestsPerEvent: number;
  refusedPerThousand: number;
  /** Instances Lambda made: one for each invocation that found every earlier one busy, so also the most busy at once. */
  instances: number;
  throttled: number;
  /** With `trace`: `<ms> <instance> <request, answer or arrival>` lines. */
  trace?: string[];
}

/**
 * Appends arriving at `ratePerSecond` on one chain, each served as API Gateway and Lambda serve a request: by an idle
 * instance when one is warm (the most recently freed), else by a new one. Latency is from arrival to answer; the
 * sim has no cold-start time (a new instance costs nothing here: on AWS a cold start adds about 200–400 ms to the
 * invocation that makes it, and the count of instances says how many did).
 */
export async function runArrivals(seed: number, options: ArrivalOptions): Promise<ArrivalResult> {
  if (!(options.ratePerSecond > 0)) throw new RangeError('ratePerSecond must be more than 0');
  if (!(options.durationMs > 0 && options.warmupMs >= 0)) throw new RangeError('durationMs must be positive and warmupMs not negative');
  const world = new World(seed);
  world.begin();
  try {
    const chain = 'arrivals';
    const { dynamo, network, instance, instances } = await loadWorld(world, [chain], options);

    const start = world.now();
    const measureFrom = start + options.warmupMs;
    const measureTo = measureFrom + options.durationMs;
    // The arrival times, drawn before the run (so that the latencies cannot change them).
    const arrivals: number[] = [];
    if (options.profile === 'poisson') {
      for (let t = start; ; ) {
        t += (-Math.log(Math.max(1e-12, world.random())) / options.ratePerSecond) * 1000;
        if (t >= measureTo) break;
        arrivals.push(t);
      }
    } else {
      for (let second = start; second < measureTo; second += 1000) {
        for (let i = 0; i < Math.round(options.ratePerSecond); i += 1) arrivals.push(second + world.random() * 100);
      }
      arrivals.sort((a, b) => a - b);
    }
    const idle: SimInstance[] = [];
    const latencies: number[] = [];
    let arrived = 0;
    let acked = 0;
    let refused = 0;
    let open = arrivals.length;
    const details = { pad: 'x'.repeat(Math.max(0, options.detailsBytes - 10)) };
    const answers: { at: number; instance: string; line: string }[] = [];
    arrivals.forEach((at, n) => {
      world.at(at, () => {
        const own = idle.pop() ?? instance();
        if (options.trace) answers.push({ at: world.elapsed(), instance: own.name, line: `arrival a-${n}` });
        const inWindow = at >= measureFrom && at < measureTo;
        if (inWindow) arrived += 1;
        const draft: EventDraft = {
          entity_id: `a-${n}`,
          event_type: 'load',
          details,
          details_cid: null,
          details_nonce: null,
          details_metadata: null,
          is_offchain: false,
        };
        void own
          .invoke((l) => l.appendEvent(chain, draft, { idempotency: { caller: 'open', key: `a-${n}` } }))
          .then((result) => {
            open -= 1;
            idle.push(own);
            if (options.trace)
              answers.push({
                at: world.elapsed(),
                instance: own.name,
                line: `answered a-${n} ${result.kind === 'answered' ? 'ok' : result.kind} after ${(world.now() - at).toFixed(0)} ms`,
              });
            if (!inWindow) return;
            if (result.kind === 'answered') {
              acked += 1;
              latencies.push(result.endedAt - at);
            } else {
              refused += 1;
              if (result.kind === 'failed' && !(result.error instanceof DomainError)) throw result.error;
            }
          });
      });
    });
    const window = measureWindow(world, dynamo, network, measureFrom, measureTo);
    await world.run(() => open === 0 && window.ended(), options.warmupMs + options.durationMs + 120_000);

    const { wcu, rcu, requests } = window.units();
    latencies.sort((a, b) => a - b);
    const events = Math.max(1, acked);
    return {
      ratePerSecond: options.ratePerSecond,
      profile: options.profile,
      arrived,
      eventsPerSecond: acked / (options.durationMs / 1000),
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      p999Ms: percentile(latencies, 99.9),
      wcuPerEvent: wcu / events,
      rcuPerEvent: rcu / events,
      dynamoDollarsPerMillion: dollarsPerMillion(wcu, rcu, events),
      requestsPerEvent: requests / events,
      refusedPerThousand: (1000 * refused) / Math.max(1, acked + refused),
      instances: instances(),
      throttled: dynamo.throttled,
      ...(options.trace
        ? {
            trace: [...network.trace.map((t) => ({ at: t.at, instance: t.instance, line: describeRequest(t) })), ...answers]
              .sort((x, y) => x.at - y.at)
              .map((t) => `${String(t.at).padStart(7)} ms  ${t.instance} ${t.line}`),
          }
        : {}),
    };
  } finally {
    world.end();
  }
}
