/**
 * `npm run bench:instances [-- COUNTS [SECONDS [NAME=VALUE,...]]]`: N single-request instances appending to one
 * chain, for same-machine comparisons (A/B pairs) of the append protocol. One local stack (functions as pools of
 * single-request instances, DynamoDB Local on disk) with the given settings; then, for each count in COUNTS
 * (default `8,1,2,4,8,16`: the first warms the stack up), a fresh chain, one second of warm-up, and SECONDS
 * (default 10) of closed-loop appends over HTTP from that many connections. Per count it prints what a change to
 * the protocol moves: appends a second, p50/p99, non-2xx answers, DynamoDB requests per append, write and read
 * units per event (priced by DynamoDB's rules, shared/storage/capacity.ts), events per commit, lease takes and
 * lost races per append, appends written again, whether the chain holds exactly the events acknowledged (its
 * count against the 2xx answers; it exits 1 if not), and the CPU per append of the service and of DynamoDB Local
 * (from /proc; Linux only).
 *
 * An A/B pair: run it with and without a setting, twice each, one after the other (this machine's speed drifts
 * between minutes; a pair run back to back shares the weather), e.g.
 *   npm run bench:instances -- 8,2,4,8,16 10 SVC_APPEND_GATHER_SIBLINGS=0
 *   npm run bench:instances -- 8,2,4,8,16 10
 * `npm run bench` measures the same scenario for the record (bench/results), with the capacity model.
 */
import { existsSync } from 'node:fs';
import { settingsSchema } from '#shared/config';
import { removeDir, startStack, tempDataDir } from '#test/support/stack';
import { join } from 'node:path';
import { capacityDelta, readCapacity, settleReports } from './capacity.ts';
import { cpuSeconds } from './resources.ts';
import { AS_DEPLOYED, cannonAppends, flushInstances, ledgerCounters, mustCreate } from './service.ts';

const usage = 'Usage: npm run bench:instances [-- COUNTS [SECONDS [NAME=VALUE,...]]]   e.g. -- 8,2,4,8,16 10 SVC_APPEND_GATHER_SIBLINGS=0';
const counts = (process.argv[2] ?? '8,1,2,4,8,16').split(',').map(Number);
const seconds = Number(process.argv[3] ?? 10);
const settings = Object.fromEntries(
  (process.argv[4] ?? '')
    .split(',')
    .filter(Boolean)
    .map((pair) => pair.split('=') as [string, string]),
);
if (counts.some((n) => !Number.isInteger(n) || n < 1 || n > 64) || !(seconds > 0)) {
  console.error(usage);
  process.exit(2);
}
// A misspelt setting would be ignored by the stack, and the pair would compare a run with itself.
for (const [name, value] of Object.entries(settings)) {
  if (!(name in settingsSchema.shape) || value === undefined) {
    console.error(`${name}${value === undefined ? ' has no value' : ' is not a setting (docs/settings.md)'}\n${usage}`);
    process.exit(2);
  }
}
const maxInstances = Math.max(...counts);
const FLUSH_MS = 500;

/** CPU seconds a process has used, from /proc; undefined where there is none (not Linux, no such process). */
const cpuOf = (pid: number | undefined) => (pid !== undefined && existsSync(`/proc/${pid}/stat`) ? cpuSeconds(pid) : undefined);

const dir = tempDataDir('bench-instances');
const stack = await startStack({
  dataDir: dir,
  timeoutMs: 120_000,
  env: {
    ...AS_DEPLOYED,
    SVC_LOG_LEVEL: 'warn',
    SVC_LOCAL_RUNTIME: 'instances',
    SVC_LOCAL_MAX_INSTANCES: String(maxInstances),
    // Every instance adds its counters to /metrics at the end of a request once this has passed (no timer,
    // as on Lambda); flushInstances sends each one a request after it.
    SVC_METRICS_FLUSH_MS: String(FLUSH_MS),
    SVC_DYNAMODB_IN_MEMORY: 'false',
    SVC_CAPACITY_REPORT_DIR: join(dir, 'capacity'),
    ...settings,
  },
});

/** `x / per`, rounded; NaN when `per` is 0. */
const perEvent = (x: number, per: number, digits = 2) => (per > 0 ? +(x / per).toFixed(digits) : Number.NaN);

/** The columns printed per count; every value is right-aligned under its label. */
const LABELS = [
  'instances',
  'appends/s',
  'p50 ms',
  'p99 ms',
  'non-2xx',
  'requests/append',
  'WCU/event',
  'RCU/event',
  'events/commit',
  'leases/append',
  'lost races/append',
  'rewritten',
  'exactly once',
];
const units = (dir: string) => readCapacity(dir).totals;
const sum = (totals: ReturnType<typeof units>, kind: 'wcu' | 'rcu') => Object.values(totals).reduce((n, u) => n + u[kind], 0);
let notExactlyOnce = 0;
/** The measured requests' `details.n` start here (the warm-up's at 0): each request's body is its own. */
const MEASURED_FROM = 1_000_000;

/**
 * Whether the chain holds every acknowledged append once: no request's body twice (a double append), and at least as
 * many events as 2xx answers (none lost) and at most as many as requests sent (autocannon leaves the requests still
 * in flight when its time ends unanswered, and they land).
 */
async function exactlyOnce(chain: string, acknowledged: number, sent: number): Promise<string> {
  const seen = new Set<number>();
  let doubled = 0;
  for (let offset = 0; ; offset += 100) {
    const page = (await fetch(`${stack.url}/api/v1/chains/${chain}/blocks?offset=${offset}&limit=100`).then((r) => r.json())) as {
      blocks: { events: { details?: { n?: number } }[] }[];
    };
    for (const event of page.blocks.flatMap((b) => b.events)) {
      const n = event.details?.n;
      if (typeof n !== 'number') continue; // the chain's own first block
      if (seen.has(n)) doubled += 1;
      seen.add(n);
    }
    if (page.blocks.length < 100) break;
  }
  if (doubled > 0) return `NO: ${doubled} appended twice`;
  if (seen.size < acknowledged) return `NO: ${acknowledged - seen.size} acknowledged, not on the chain`;
  if (seen.size > sent) return `NO: ${seen.size} events for ${sent} requests`;
  return 'yes';
}
const line = (cells: string[], cpu: string) => `${cells.map((c, k) => c.padStart(LABELS[k]!.length)).join('  ')}  ${cpu}`;

try {
  console.log(`settings: ${Object.keys(settings).length ? JSON.stringify(settings) : 'defaults'}; ${seconds} s per count`);
  console.log(line(LABELS, 'CPU ms/append (service + DynamoDB Local)'));
  for (const [i, n] of counts.entries()) {
    const chain = `instances-${i}-${n}-${Date.now() % 100_000}`;
    await mustCreate(stack, chain);
    const warm = await cannonAppends(stack, chain, n, 1_000);
    await flushInstances(stack, maxInstances, FLUSH_MS);
    await settleReports();
    const unitsBefore = units(join(dir, 'capacity'));
    const before = await ledgerCounters(stack);
    const cpuBefore = [cpuOf(stack.pid), cpuOf(stack.dynamoPid)];
    const result = await cannonAppends(stack, chain, n, seconds * 1_000, MEASURED_FROM);
    const cpuAfter = [cpuOf(stack.pid), cpuOf(stack.dynamoPid)];
    await flushInstances(stack, maxInstances, FLUSH_MS);
    const after = await ledgerCounters(stack);
    await settleReports();
    const moved = capacityDelta(units(join(dir, 'capacity')), unitsBefore);
    const events = after.events - before.events;
    const once = await exactlyOnce(chain, warm['2xx'] + result['2xx'], warm.requests.sent + result.requests.sent);
    if (once !== 'yes') notExactlyOnce += 1;
    const [service, dynamodbLocal] = cpuBefore.map((b, k) =>
      b === undefined || cpuAfter[k] === undefined ? Number.NaN : perEvent((cpuAfter[k]! - b) * 1000, events, 1),
    );
    const cells = [
      n,
      +(result.requests.total / seconds).toFixed(1),
      result.latency.p50,
      result.latency.p99,
      result.non2xx,
      perEvent(after.requests - before.requests, events),
      perEvent(sum(moved, 'wcu'), events),
      perEvent(sum(moved, 'rcu'), events),
      perEvent(events, after.commits - before.commits),
      perEvent(after.leaseTakes - before.leaseTakes, events, 3),
      perEvent(after.conflicts - before.conflicts, events, 3),
      after.rewrites - before.rewrites,
      once,
    ];
    console.log(line(cells.map(String), `${service} + ${dynamodbLocal}`));
  }
} finally {
  await stack.stop();
  removeDir(dir);
}
if (notExactlyOnce > 0) {
  console.error(`${notExactlyOnce} count(s) left the chain with other events than those acknowledged`);
  process.exitCode = 1;
}
