/**
 * `npm run bench:cloud [-- --quick]`: the append protocol's throughput on AWS, measured in the deterministic
 * simulation (test/sim/load.ts, docs/simulation.md): one chain with 1, 2, 4, … 1,024 single-request instances
 * appending as fast as they can, then 1,000 chains at once. Each instance has a core of its own, as on AWS, so
 * this measures the protocol's requests against DynamoDB's latencies and per-partition limits, not this
 * machine's CPU. Writes bench/results/<date>-cloud.json and prints the table docs/capacity.md keeps
 * ("Measured in the simulation"). Each point runs 3 s of virtual time after 1 s of warm-up (the 1,000 chains:
 * 1 s after 0.5 s); the whole takes about 15 minutes here. `--quick`: 1 to 16 instances and 10 chains, half a
 * second each (a check of the harness, not a measurement).
 *
 * A comparison (docs/capacity.md's experiments): `--instances 2,16,256` measures those points of one chain only,
 * and `--appender '{"maxLeadMs":0}'` runs them with appender settings other than the service's; `--unkeyed`
 * appends without Idempotency-Keys (what an event's own items cost); `--batch N` appends batches of N events (the
 * batch endpoint; latencies are a batch's); `--chains 100 --instances 16` runs 100 chains of
 * 16 instances each; none of them writes a results file. `--trace FILE` (with one point, or one rate: its Poisson run) writes that run's every request and answer to FILE.
 *
 * Then the open loop (test/sim/load.ts, runArrivals): appends arriving at 5 to 2,000 a second on one chain, as
 * independent callers (Poisson) and as bursts (each second's arrivals in its first 100 ms), each served by an idle
 * instance or a new one, as API Gateway and Lambda serve requests; the latency a caller sees at that rate, from
 * arrival to answer. `--rates 5,50,…` runs only those rates; `--quick` runs 5 and 50 a second, Poisson only.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type ArrivalResult, type LoadResult, runArrivals, runLoad } from '../test/sim/load.ts';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    quick: { type: 'boolean', default: false },
    seed: { type: 'string', default: '1' },
    instances: { type: 'string' },
    appender: { type: 'string' },
    trace: { type: 'string' },
    unkeyed: { type: 'boolean', default: false },
    batch: { type: 'string', default: '1' },
    chains: { type: 'string', default: '1' },
    ramp: { type: 'string', default: '0' },
    rates: { type: 'string' },
  },
});
const quick = values.quick!;
const seed = Number(values.seed);
const window = quick ? { durationMs: 500, warmupMs: 250 } : { durationMs: 3_000, warmupMs: 1_000 };
const only = values.instances?.split(',').map(Number);
if (only?.some((n) => !(Number.isInteger(n) && n >= 1))) throw new RangeError(`--instances takes whole numbers of at least 1, not ${values.instances}`);
const appender = values.appender ? (JSON.parse(values.appender) as NonNullable<Parameters<typeof runLoad>[1]['appender']>) : undefined;
const unkeyed = values.unkeyed!;
const batchSize = Number(values.batch);
if (!(Number.isInteger(batchSize) && batchSize >= 1 && batchSize <= 98)) throw new RangeError(`--batch takes 1 to 98 events, not ${values.batch}`);
const chains = Number(values.chains);
if (!(Number.isInteger(chains) && chains >= 1)) throw new RangeError(`--chains takes a whole number of at least 1, not ${values.chains}`);
const rampMs = Number(values.ramp);
if (!(rampMs >= 0)) throw new RangeError(`--ramp takes milliseconds, 0 or more, not ${values.ramp}`);
/** Open loop: arrivals a second on one chain (Poisson and bursts), each an invocation; `--rates` alone runs only those. */
const rates = values.rates?.split(',').map(Number);
if (rates?.some((r) => !(r > 0))) throw new RangeError(`--rates takes arrivals a second, more than 0, not ${values.rates}`);
const comparison = only !== undefined || appender !== undefined || unkeyed || batchSize > 1 || chains > 1 || rampMs > 0 || rates !== undefined;
if (values.trace !== undefined && (only?.length ?? 0) + (rates?.length ?? 0) !== 1)
  throw new RangeError('--trace FILE takes one point: --instances N, or --rates R (its Poisson run)');
const counts = only ?? (quick ? [1, 2, 4, 16] : [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]);
const manyChains = quick ? 10 : 1_000;

const rows: (LoadResult & { realSeconds: number })[] = [];
const print = (r: LoadResult & { realSeconds: number }) =>
  process.stdout.write(
    `${String(r.chains).padStart(5)} chain(s) × ${String(r.instances / r.chains).padStart(4)}: ${r.eventsPerSecond.toFixed(0).padStart(7)} events/s, p50 ${r.p50Ms.toFixed(0)} ms, p99 ${r.p99Ms.toFixed(0)} ms, ${r.wcuPerEvent.toFixed(2)} WCU and ${r.rcuPerEvent.toFixed(2)} RCU an event, hottest partitions ${r.hottestWcuPerSecond.toFixed(0)} WCU/s (${r.hottestPartition}) and ${r.hottestRcuPerSecond.toFixed(0)} RCU/s (${r.hottestReadPartition}), ${r.throttled} throttled, $${r.dynamoDollarsPerMillion.toFixed(2)} a million (${r.realSeconds.toFixed(0)} s real)\n`,
  );

for (const n of rates ? [] : counts) {
  const started = Date.now();
  const result = {
    ...(await runLoad(seed, {
      chains,
      instancesPerChain: n,
      detailsBytes: 100,
      ...window,
      ...(appender ? { appender } : {}),
      ...(values.trace ? { trace: true } : {}),
      ...(unkeyed ? { unkeyed } : {}),
      ...(batchSize > 1 ? { batchSize } : {}),
      ...(rampMs > 0 ? { rampMs } : {}),
    })),
    realSeconds: (Date.now() - started) / 1000,
  };
  if (values.trace && result.trace) {
    writeFileSync(values.trace, `${result.trace.join('\n')}\n`);
    delete result.trace;
    process.stdout.write(`trace written to ${values.trace}\n`);
  }
  rows.push(result);
  print(result);
}
if (!comparison) {
  // A shorter window for the many chains: the simulation's real time grows faster than its instances.
  const started = Date.now();
  const many = quick ? window : { durationMs: 1_000, warmupMs: 500 };
  const result = {
    ...(await runLoad(seed, { chains: manyChains, instancesPerChain: 1, detailsBytes: 100, ...many })),
    realSeconds: (Date.now() - started) / 1000,
  };
  rows.push(result);
  print(result);
}

// Open loop: the latency a caller sees at a rate, whatever the ledger's latency (a window of 2 s after 0.5 s).
const openRates = rates ?? (quick ? [5, 50] : only || comparison ? [] : [5, 20, 50, 100, 200, 500, 1_000, 2_000]);
const arrivals: (ArrivalResult & { realSeconds: number })[] = [];
for (const rate of openRates) {
  for (const profile of quick ? (['poisson'] as const) : (['poisson', 'burst'] as const)) {
    const started = Date.now();
    const result = {
      ...(await runArrivals(seed, {
        ratePerSecond: rate,
        profile,
        durationMs: quick ? 1_000 : 2_000,
        warmupMs: 500,
        detailsBytes: 100,
        ...(appender ? { appender } : {}),
        ...(values.trace && profile === 'poisson' ? { trace: true } : {}),
      })),
      realSeconds: (Date.now() - started) / 1000,
    };
    if (values.trace && result.trace) {
      writeFileSync(values.trace, `${result.trace.join('\n')}\n`);
      delete result.trace;
      process.stdout.write(`trace written to ${values.trace}\n`);
    }
    arrivals.push(result);
    process.stdout.write(
      `open loop, ${String(rate).padStart(5)}/s ${profile.padEnd(7)}: p50 ${result.p50Ms.toFixed(0)} ms, p99 ${result.p99Ms.toFixed(0)} ms, p99.9 ${result.p999Ms.toFixed(0)} ms, ${result.wcuPerEvent.toFixed(2)} WCU and ${result.rcuPerEvent.toFixed(2)} RCU an event, ${result.instances} instances, ${result.refusedPerThousand.toFixed(0)}‰ refused, ${result.throttled} throttled, $${result.dynamoDollarsPerMillion.toFixed(2)} a million (${result.realSeconds.toFixed(0)} s real)\n`,
    );
  }
}
const openTable = [
  '| arrivals/s | profile | answered/s | p50 | p99 | p99.9 | WCU / event | RCU / event | instances | refused ‰ | throttled | DynamoDB $ / million |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...arrivals.map(
    (r) =>
      `| ${r.ratePerSecond} | ${r.profile} | ${r.eventsPerSecond.toFixed(0)} | ${r.p50Ms.toFixed(0)} ms | ${r.p99Ms.toFixed(0)} ms | ${r.p999Ms.toFixed(0)} ms | ${r.wcuPerEvent.toFixed(2)} | ${r.rcuPerEvent.toFixed(2)} | ${r.instances} | ${r.refusedPerThousand.toFixed(0)} | ${r.throttled} | ${r.dynamoDollarsPerMillion.toFixed(2)} |`,
  ),
].join('\n');
if (arrivals.length > 0) process.stdout.write(`\n${openTable}\n`);
if (rows.length === 0) process.exit(0);

const lone = rows[0]!.eventsPerSecond;
const table = [
  '| chains × instances | events/s | × one instance | p50 | p99 | WCU / event | RCU / event | hottest partition, WCU/s | hottest partition, RCU/s | throttled | DynamoDB $ / million |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.chains} × ${r.instances / r.chains} | ${r.eventsPerSecond.toFixed(0)} | ${r.chains === 1 ? (r.eventsPerSecond / lone).toFixed(2) : '–'} | ${r.p50Ms.toFixed(0)} ms | ${r.p99Ms.toFixed(0)} ms | ${r.wcuPerEvent.toFixed(2)} | ${r.rcuPerEvent.toFixed(2)} | ${r.hottestWcuPerSecond.toFixed(0)} | ${r.hottestRcuPerSecond.toFixed(0)} | ${r.throttled} | ${r.dynamoDollarsPerMillion.toFixed(2)} |`,
  ),
].join('\n');
process.stdout.write(`\n${table}\n`);
if (!quick && !comparison) {
  const dir = join(import.meta.dirname, 'results');
  mkdirSync(dir, { recursive: true });
  // A day's later runs beside its first (-2, -3, …): the docs cite each by name.
  const day = new Date().toISOString().slice(0, 10);
  let file = join(dir, `${day}-cloud.json`);
  for (let n = 2; existsSync(file); n += 1) file = join(dir, `${day}-cloud-${n}.json`);
  writeFileSync(file, `${JSON.stringify({ seed, window, rows, arrivals }, null, 2)}\n`);
  process.stdout.write(`\nwritten to ${file}\n`);
}
