/**
 * `npm run bench [-- --quick] [-- --out FILE]`: the service side by side with its limits, in one run.
 *
 * Starts the local stack (`npm start`'s launcher) on a persisted DynamoDB Local in a temporary data dir,
 * measures the limits straight against DynamoDB Local, then the service over HTTP with autocannon, and
 * `ledger-verify` on a long chain. Writes bench/results/<date>.json and prints a table in which each
 * service figure is a ratio to its limit. `--quick` runs every scenario briefly (CI proves the harness).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon, { type Result } from 'autocannon';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createLedgerRepository } from '#shared/storage/ledger-repository';
import { createDynamoClient } from '#shared/storage/client';
import { BLOCK_SHARDS } from '#shared/storage/keys';
import { METRICS_SHARDS } from '#shared/storage/metrics-repository';
import { settingsSchema } from '#shared/config';
import { call, removeDir, startStack, type Stack } from '#test/support/stack';
import { getItem, percentile, RawWriter, runFor, type LoopResult } from './limits.ts';
import { loadMainProfile, monotonicUs, summarize, type ProfileSummary, type Window } from './profile.ts';
import { round, sample, type Usage } from './resources.ts';
import { AS_DEPLOYED, cannonAppends, eventBody, flushInstances, type LedgerCounters, ledgerCounters, mustCreate } from './service.ts';
import { markdownTable, printTable } from './table.ts';
import { type ClientFigures, clientFigures } from './client.ts';
import { capacityDelta, capacityModel, formatModel, readCapacity, settleReports, type CapacityModel, type ModelSettings } from './capacity.ts';
import { formatPrices, priceRows, qldbRows } from './prices.ts';

const ROOT = new URL('../', import.meta.url).pathname;
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    markdown: { type: 'boolean', default: false },
    out: { type: 'string' },
    help: { type: 'boolean' },
  },
});
if (args.help) {
  process.stdout.write(
    'Usage: npm run bench [-- --quick] [-- --profile] [-- --markdown] [-- --out FILE]\n\n' +
      '  --quick    every scenario briefly: proves the harness (CI), not the speed\n' +
      "  --profile  run the service and the verifier under V8's profiler; the JSON gets where each scenario's CPU went\n" +
      "  --markdown also print the figures as a Markdown table (the README's)\n",
  );
  process.exit(0);
}
const QUICK = args.quick!;
/** Length of each timed scenario. */
const SCENARIO_MS = QUICK ? 500 : 10_000;
/**
 * How long a measured append scenario runs: SCENARIO_MS, or with --quick a few appends per client however long they
 * take. A quick window of 0.5 s on a busy machine (a CI run with the simulation beside it) could end before a chain's
 * first append was answered, and measure nothing.
 */
const appendSpan = (clients: number): number | { amount: number } => (QUICK ? { amount: 4 * clients } : SCENARIO_MS);
/** The same span as autocannon's options, for the read scenarios. */
const cannonSpan = (clients: number): { amount: number } | { duration: number } => {
  const span = appendSpan(clients);
  return typeof span === 'number' ? { duration: span / 1000 } : span;
};
// Quick: four tiles (three full), enough for every step of the tiled audit to run; the full run sizes the figure.
const VERIFY_BLOCKS = QUICK ? 1_000 : 100_000;
const WARMUP_MS = QUICK ? 1_000 : 20_000;
const READ_CHAIN_BLOCKS = QUICK ? 500 : 6_000;
const READ_CONNECTIONS = 16;
/** Distinct blocks read through the service, cold then warm. */
const READ_BLOCKS = QUICK ? 300 : 3_000;
const CLIENT_CALLS = QUICK ? 30 : 300;
const BATCH_EVENTS = 99;
/**
 * A verified read of one block by index on AWS, on an instance that has read nothing of the chain yet (the
 * dearest case): one request, the block with its evidence (bench/client.ts counts it), about 15 ms of Lambda
 * (DynamoDB reads, most in parallel). Its reads, each strongly consistent and under 4 KB (1 RCU): the head
 * twice, the block's record, and the metadata segments holding the block and the 17 tree nodes of an inclusion
 * proof in a 100,000-block tree, 19 in all (a segment packs under 4 KB: shared/ledger/block-meta.ts, splitRun).
 * An estimate from the reads the service makes, not a measurement. Warm (an instance that has seen the chain
 * reach the client's trusted size and keeps those segments and the record), the same read costs no read unit.
 */
const VERIFIED_READ = { requests: 1, rcu: 2 + 1 + 19, ms: 15 };
const BATCH_CONNECTIONS = 4;
/** Single-request instances on one chain (each a sequential client). */
const INSTANCE_COUNTS = QUICK ? [1, 4] : [1, 2, 4, 8, 16];
/** Contract workers of the bench's stack, and the hostile runs the contracts scenario keeps going at once. */
const CONTRACT_WORKERS = 8;
const HOSTILE_RUNS = 6;
/** The scenario run once more on a busy chain's shape (the ceilings come from it). */
const BUSY = 'busy' as const;
/** The scenario the capacity model is printed for (the others are in the JSON). */
const MODEL_INSTANCES = QUICK ? 4 : 8;
/** The stack's settings the model needs: the bench runs with the defaults. */
const MODEL_SETTINGS: ModelSettings = {
  tables: { ledger: 'ledger', registry: 'registry', rateLimits: 'ratelimits', connections: 'connections' },
  blockShards: BLOCK_SHARDS,
  pendingShards: settingsSchema.shape.SVC_APPEND_PENDING_SHARDS.parse(undefined),
  metricsShards: METRICS_SHARDS,
  batchMax: settingsSchema.shape.SVC_APPEND_BATCH_MAX.parse(undefined),
  maxLeadMs: settingsSchema.shape.SVC_APPEND_MAX_LEAD_MS.parse(undefined),
};
/**
 * A busy chain's shape, for the ceilings: its head says 16 pending shards, as leaders that found many waiting
 * would have grown it, so that writers read their shard's seals rather than the head (docs/capacity.md).
 */
const BUSY_SHARDS = 16;
/** How often an instance adds its counts to the shared ones: the default (its writes are priced), 1 s in a quick run (its waits are shorter). */
const METRICS_FLUSH_MS = QUICK ? 500 : settingsSchema.shape.SVC_METRICS_FLUSH_MS.parse(undefined);

export interface Figure {
  name: string;
  kind: 'limit' | 'service';
  unit: string;
  rate: number;
  p50_ms: number;
  p99_ms: number;
  ops: number;
  seconds: number;
  concurrency: number;
  conflicts: number;
  status: { '2xx': number; '4xx': number; '5xx': number; errors: number };
  /** Transactions and blocks per transaction (service appends, from /metrics). */
  commits?: number;
  blocks_per_commit?: number;
  /** DynamoDB requests and write transactions (committed or not) per acknowledged event, from /metrics. */
  dynamo_requests_per_event?: number;
  transact_writes_per_event?: number;
  /** DynamoDB read units per read (eventually consistent reads are half a unit per started 4 KB). */
  rcu_per_read?: number;
  resources: Record<string, Usage>;
}

/**
 * BATCH_CONNECTIONS clients posting BATCH_EVENTS-event batches to one chain for `ms`; with --quick, two batches each
 * however long they take: a batch can take longer than the quick run's 1 s on a busy machine, and a window that
 * ends before any batch is answered measures nothing.
 */
let batchN = 0;
function cannonBatches(stack: Stack, chain: string, ms: number): Promise<Result> {
  return autocannon({
    url: stack.url,
    connections: BATCH_CONNECTIONS,
    ...(QUICK ? { amount: 2 * BATCH_CONNECTIONS } : { duration: ms / 1000 }),
    timeout: 30,
    requests: [
      {
        method: 'POST',
        path: `/api/v1/chains/${chain}/events/batch`,
        headers: { 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ events: Array.from({ length: BATCH_EVENTS }, () => eventBody(chain, batchN++)) }) }),
      },
    ],
  });
}

/** The items in a random order (Fisher–Yates). */
function shuffled<T>(items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export interface Target {
  name: string;
  figure: string;
  limit: string | null;
  value: number;
  ratio: number | null;
  target: string;
  met: boolean;
}

// ---- progress --------------------------------------------------------------------------------------

const STEPS = [
  'start the local stack',
  'warm up',
  'limit: raw append, 1 writer',
  'limit: raw append, 8 writers on 8 chains',
  'limit: raw append, 99 blocks per transaction',
  'prepare the read chain',
  'limit: raw GetItem',
  'limit: raw entity Query',
  'service: one chain, 1 client',
  'service: one chain, 8 clients',
  'service: one chain, 32 clients',
  'service: 8 chains x 4 clients',
  'service: one chain, 2 processes x 16 clients',
  'service: one chain, N single-request instances',
  'service: block by index, cold',
  'service: block by index, warm',
  'service: entity trace',
  'service: batch endpoint',
  'service: batch endpoint, single-request instances',
  'service: 6 hostile contracts at once',
  `build a ${VERIFY_BLOCKS}-block chain`,
  'limit: raw block-page Query',
  'ledger-verify, first run',
  'ledger-verify',
  'ledger-verify --tiles, first run',
  'ledger-verify --tiles',
  'verified client: reads and appends',
] as const;
const tty = process.stderr.isTTY === true;
let step = 0;
let stepStarted = 0;
let ticker: NodeJS.Timeout | undefined;
let detail = '';

function progress(name: (typeof STEPS)[number]): void {
  step = STEPS.indexOf(name) + 1;
  stepStarted = performance.now();
  detail = '';
  draw(true);
}
let detailPrinted = 0;
function setDetail(text: string): void {
  detail = text;
  // Without a terminal, a line at most every 5 s: logs stay readable.
  if (!tty && performance.now() - detailPrinted > 5_000) {
    detailPrinted = performance.now();
    process.stderr.write(`    ${text}\n`);
  }
}
function draw(first = false): void {
  const elapsed = ((performance.now() - stepStarted) / 1000).toFixed(0);
  const line = first ? `[${step}/${STEPS.length}] ${STEPS[step - 1]}` : `[${step}/${STEPS.length}] ${STEPS[step - 1]} ${elapsed}s ${detail}`;
  if (tty) process.stderr.write(`\r\x1b[K${line}`);
  else if (first) process.stderr.write(`${line}\n`);
}
function startTicker(): void {
  if (tty) ticker = setInterval(() => draw(), 500);
}
function endProgress(): void {
  if (ticker) clearInterval(ticker);
  if (tty) process.stderr.write('\r\x1b[K');
}

// ---- helpers ---------------------------------------------------------------------------------------

function fromLoop(name: string, unit: string, concurrency: number, loop: LoopResult, resources: Record<string, Usage>, perOp = 1): Figure {
  const sorted = [...loop.latencies].sort((a, b) => a - b);
  return {
    name,
    kind: 'limit',
    unit,
    rate: round((loop.ops * perOp) / loop.seconds, 0),
    p50_ms: round(percentile(sorted, 50), 2),
    p99_ms: round(percentile(sorted, 99), 2),
    ops: loop.ops,
    seconds: round(loop.seconds, 2),
    concurrency,
    conflicts: loop.conflicts,
    status: { '2xx': 0, '4xx': 0, '5xx': 0, errors: 0 },
    resources,
  };
}

function fromCannon(name: string, unit: string, concurrency: number, results: Result[], resources: Record<string, Usage>, perRequest = 1): Figure {
  const seconds = Math.max(...results.map((r) => r.duration));
  const ok = results.reduce((n, r) => n + r['2xx'], 0);
  const weighted = (pick: (r: Result) => number) => results.reduce((n, r) => n + pick(r) * r['2xx'], 0) / Math.max(1, ok);
  return {
    name,
    kind: 'service',
    unit,
    rate: round((ok * perRequest) / seconds, 0),
    // Several autocannon instances (one per chain): p50 weighted by requests, p99 the worst of them.
    p50_ms: round(
      weighted((r) => r.latency.p50),
      2,
    ),
    p99_ms: round(Math.max(...results.map((r) => r.latency.p99)), 2),
    ops: ok,
    seconds: round(seconds, 2),
    concurrency,
    conflicts: 0,
    status: {
      '2xx': ok,
      '4xx': results.reduce((n, r) => n + r['4xx'], 0),
      '5xx': results.reduce((n, r) => n + r['5xx'], 0),
      errors: results.reduce((n, r) => n + r.errors + r.timeouts, 0),
    },
    resources,
  };
}

/** Runs `fn`; answers its result and how far the ledger counters of `stacks` moved meanwhile, summed. */
async function countersAround<T>(stacks: Stack[], fn: () => Promise<T>, flush?: () => Promise<void>): Promise<[T, LedgerCounters]> {
  await flush?.();
  const before = await Promise.all(stacks.map(ledgerCounters));
  const out = await fn();
  await flush?.();
  const after = await Promise.all(stacks.map(ledgerCounters));
  const moved = (k: keyof LedgerCounters) => after.reduce((n, a, i) => n + a[k] - before[i]![k], 0);
  const keys = [
    'events',
    'conflicts',
    'commits',
    'requests',
    'transactWrites',
    'transactItems',
    'leaseTakes',
    'pendingReads',
    'roundWrites',
    'rewrites',
  ] as const;
  return [out, Object.fromEntries(keys.map((k) => [k, moved(k)])) as unknown as LedgerCounters];
}

/** Gives an append figure its lost races, its transactions and the blocks each carried. */
function withCommits(figure: Figure, moved: LedgerCounters): Figure {
  figure.conflicts = moved.conflicts;
  figure.commits = moved.commits;
  figure.blocks_per_commit = round(moved.events / Math.max(1, moved.commits), 1);
  figure.dynamo_requests_per_event = round(moved.requests / Math.max(1, moved.events), 2);
  figure.transact_writes_per_event = round(moved.transactWrites / Math.max(1, moved.events), 2);
  return figure;
}

// ---- the run ---------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const startedAt = new Date();
  startTicker();
  progress('start the local stack');
  const dataDir = join(ROOT, '.data', `bench-${process.pid}`);
  mkdirSync(dataDir, { recursive: true });
  const profileDir = join(dataDir, 'profiles');
  const mainCapacityDir = join(dataDir, 'capacity-main');
  // The one-process figures (group commit inside a process) run with every function in the launcher; the
  // scenario of N single-request instances (as Lambda runs) gets its own stack below.
  const stack = await startStack({
    dataDir,
    // Eight contract workers: the hostile-contracts scenario runs six at once and still needs one for a benign run.
    env: {
      ...AS_DEPLOYED,
      SVC_DYNAMODB_IN_MEMORY: 'false',
      // The full run's JVM compiles with C2 too, as every earlier run's did (its figures stay comparable); the quick
      // run proves the harness and keeps the default.
      SVC_DYNAMODB_LOCAL_JIT: QUICK ? 'quick' : 'full',
      SVC_LOG_LEVEL: 'warn',
      SVC_LOCAL_RUNTIME: 'single-process',
      SVC_CONTRACT_WORKERS: String(CONTRACT_WORKERS),
      // Its DynamoDB requests priced per partition, for the read units a read costs.
      SVC_CAPACITY_REPORT_DIR: mainCapacityDir,
    },
    timeoutMs: 120_000,
    nodeArgs: args.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, 'service')}`] : [],
  });
  const figures: Figure[] = [];
  const windows: Window[] = [];
  let report: Record<string, unknown> | undefined;
  let instanceFigures: Figure[] = [];
  let pooledBatchFigure: Figure | undefined;
  let contracts: ContractsFigure | undefined;
  const capacityModels: Partial<Record<number | 'busy', CapacityModel>> = {};
  let verify: { blocks: number; seconds: number; blocks_per_s: number; exit_code: number | null; resources: Record<string, Usage> } | undefined;
  let verifyFirst: typeof verify;
  const verifyTiles: { name: string; blocks: number; seconds: number; blocks_per_s: number; exit_code: number | null; resources: Record<string, Usage> }[] = [];
  try {
    const endpoint = stack.dynamoEndpoint;
    if (!endpoint) throw new Error('the stack did not name its DynamoDB endpoint');
    const pids = { service: stack.pid, dynamodb: stack.dynamoPid };
    const client = createDynamoClient({ region: 'us-east-1', endpoint, accessKeyId: stack.dynamoAccessKeyId });
    const repository = createLedgerRepository({ client, tableName: 'ledger' });
    const measure = async <T>(fn: () => Promise<T>, morePids: Record<string, number> = {}): Promise<[T, Record<string, Usage>]> => {
      const sampler = sample({ ...pids, ...morePids });
      const fromUs = monotonicUs();
      const out = await fn();
      windows.push({ name: STEPS[step - 1]!, fromUs, toUs: monotonicUs() });
      return [out, sampler.stop()];
    };

    for (const chain of ['raw1', 'rawbatch', 'reads', 'one1', 'one8', 'one32', 'shared', 'batch', 'verify']) await mustCreate(stack, chain);
    for (let i = 0; i < 8; i += 1) {
      await mustCreate(stack, `raw8-${i}`);
      await mustCreate(stack, `multi-${i}`);
    }

    // -- warm-up: DynamoDB Local's JVM and the service compile their hot paths under load first, or the
    // first scenarios would measure the JIT (the raw 1-writer limit read a third of its warm rate).
    progress('warm up');
    await mustCreate(stack, 'warmup');
    const warm = await RawWriter.open(repository, 'warmup');
    await runFor(WARMUP_MS / 2, 1, () => warm.append());
    const warmBlock = { index: 1, hash: (await repository.listBlockHashes('warmup', 1))[1]! };
    await runFor(WARMUP_MS / 4, 8, () => getItem(client, 'ledger', warmBlock));
    // Reads by index as well, the cold path (a segment and a record from DynamoDB) and the warm one: each block
    // of the warm-up chain in turn, round and round. The cold pass later then measures an instance cache that
    // never saw its blocks, not code compiled on the spot (the raw GetItem limit is warmed the same way).
    const warmBlocks = Math.max(1, (await repository.getHead('warmup'))!.headIndex);
    let warmNext = 0;
    await Promise.all([
      cannonAppends(stack, 'warmup', 8, WARMUP_MS / 4),
      autocannon({
        url: stack.url,
        connections: 4,
        duration: WARMUP_MS / 4000,
        requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/api/v1/chains/warmup/blocks/${1 + (warmNext++ % warmBlocks)}` }) }],
      }),
    ]);

    // -- limits: DynamoDB Local alone
    progress('limit: raw append, 1 writer');
    const raw1 = await RawWriter.open(repository, 'raw1');
    const [loop1, use1] = await measure(() => runFor(SCENARIO_MS, 1, () => raw1.append()));
    const rawOne = fromLoop('raw append, 1 writer', 'appends/s', 1, loop1, use1);
    figures.push(rawOne);

    progress('limit: raw append, 8 writers on 8 chains');
    const writers8 = await Promise.all(Array.from({ length: 8 }, (_, i) => RawWriter.open(repository, `raw8-${i}`)));
    const [loop8, use8] = await measure(() => runFor(SCENARIO_MS, 8, (w) => writers8[w]!.append()));
    const rawEight = fromLoop('raw append, 8 writers x 8 chains', 'appends/s', 8, loop8, use8);
    figures.push(rawEight);

    progress('limit: raw append, 99 blocks per transaction');
    const rawB = await RawWriter.open(repository, 'rawbatch');
    const [loopB, useB] = await measure(() => runFor(SCENARIO_MS, 1, () => rawB.append(BATCH_EVENTS)));
    const rawBatch = fromLoop('raw append, 99 blocks per transaction', 'events/s', 1, loopB, useB, BATCH_EVENTS);
    figures.push(rawBatch);

    progress('prepare the read chain');
    const reads = await RawWriter.open(repository, 'reads');
    for (let done = 0; done < READ_CHAIN_BLOCKS; done += BATCH_EVENTS) {
      await reads.append(Math.min(BATCH_EVENTS, READ_CHAIN_BLOCKS - done));
      setDetail(`${Math.min(done + BATCH_EVENTS, READ_CHAIN_BLOCKS)}/${READ_CHAIN_BLOCKS} blocks`);
    }
    const readHashes = await repository.listBlockHashes('reads', READ_CHAIN_BLOCKS);
    const randomIndex = () => 1 + Math.floor(Math.random() * READ_CHAIN_BLOCKS);
    const randomBlock = () => {
      const index = randomIndex();
      return { index, hash: readHashes[index]! };
    };
    const randomEntity = () => RawWriter.entity('reads', Math.floor(Math.random() * 64));

    progress('limit: raw GetItem');
    const [loopG, useG] = await measure(() => runFor(SCENARIO_MS, READ_CONNECTIONS, () => getItem(client, 'ledger', randomBlock())));
    const rawGet = fromLoop('raw GetItem (block by index)', 'reads/s', READ_CONNECTIONS, loopG, useG);
    figures.push(rawGet);

    progress('limit: raw entity Query');
    const [loopQ, useQ] = await measure(() =>
      runFor(SCENARIO_MS, READ_CONNECTIONS, async () => {
        await repository.queryEntityBlocks(randomEntity());
      }),
    );
    const rawTrace = fromLoop('raw entity-index Query (trace)', 'traces/s', READ_CONNECTIONS, loopQ, useQ);
    figures.push(rawTrace);

    // -- the service over HTTP
    const appendScenario = async (label: (typeof STEPS)[number], name: string, chains: string[], connectionsEach: number) => {
      progress(label);
      const [[results, usage], moved] = await countersAround([stack], () =>
        measure(() => Promise.all(chains.map((c) => cannonAppends(stack, c, connectionsEach, appendSpan(connectionsEach))))),
      );
      const figure = withCommits(fromCannon(name, 'appends/s', connectionsEach * chains.length, results, usage), moved);
      figures.push(figure);
      return figure;
    };
    const one1 = await appendScenario('service: one chain, 1 client', 'service append, one chain, 1 client', ['one1'], 1);
    const one8 = await appendScenario('service: one chain, 8 clients', 'service append, one chain, 8 clients', ['one8'], 8);
    const one32 = await appendScenario('service: one chain, 32 clients', 'service append, one chain, 32 clients', ['one32'], 32);
    const multi = await appendScenario(
      'service: 8 chains x 4 clients',
      'service append, 8 chains x 4 clients',
      Array.from({ length: 8 }, (_, i) => `multi-${i}`),
      4,
    );

    // Two processes on one chain, as two Lambda instances would be: group commit inside each, conditional
    // writes between them. Here lost races (conflicts) are expected and every one is retried.
    let twoProcesses: Figure | undefined;
    progress('service: one chain, 2 processes x 16 clients');
    const second = await startStack({
      dataDir: join(dataDir, 'second'),
      env: {
        ...AS_DEPLOYED,
        SVC_DYNAMODB_ENDPOINT: endpoint,
        SVC_DYNAMODB_ACCESS_KEY_ID: stack.dynamoAccessKeyId,
        SVC_LOG_LEVEL: 'warn',
        SVC_LOCAL_RUNTIME: 'single-process',
      },
      timeoutMs: 120_000,
    });
    try {
      const [[results, usage], moved] = await countersAround([stack, second], () =>
        measure(() => Promise.all([stack, second].map((s) => cannonAppends(s, 'shared', 16, appendSpan(16)))), { service2: second.pid }),
      );
      twoProcesses = withCommits(fromCannon('service append, one chain, 2 processes x 16 clients', 'appends/s', 32, results, usage), moved);
      figures.push(twoProcesses);
    } finally {
      await second.stop();
    }

    // N single-request instances on one chain, as a burst on one chain runs on Lambda: N sequential
    // clients, each request on its own instance (the pool grows to N), combining only through DynamoDB.
    progress('service: one chain, N single-request instances');
    instanceFigures = [];
    // Every instance prices its DynamoDB requests per partition into this directory (the capacity model).
    const capacityDir = join(dataDir, 'capacity');
    const pooled = await startStack({
      dataDir: join(dataDir, 'pooled'),
      env: {
        ...AS_DEPLOYED,
        SVC_DYNAMODB_ENDPOINT: endpoint,
        SVC_DYNAMODB_ACCESS_KEY_ID: stack.dynamoAccessKeyId,
        SVC_LOG_LEVEL: 'warn',
        SVC_LOCAL_RUNTIME: 'instances',
        SVC_LOCAL_MAX_INSTANCES: String(Math.max(...INSTANCE_COUNTS)),
        SVC_METRICS_FLUSH_MS: String(METRICS_FLUSH_MS),
        SVC_CAPACITY_REPORT_DIR: capacityDir,
      },
      timeoutMs: 120_000,
    });
    try {
      for (const n of [...INSTANCE_COUNTS, BUSY] as const) {
        const busy = n === BUSY;
        const instances = busy ? MODEL_INSTANCES : n;
        setDetail(busy ? `${instances} instances on a busy chain's shape` : `${n} instance(s)`);
        const chain = busy ? 'instances-busy' : `instances-${n}`;
        await mustCreate(pooled, chain);
        if (busy) {
          await client.send(
            new UpdateCommand({
              TableName: 'ledger',
              Key: { pk: `CHAIN#${chain}`, sk: 'HEAD' },
              UpdateExpression: 'SET pending_shards = :s',
              ExpressionAttributeValues: { ':s': BUSY_SHARDS },
            }),
          );
        }
        // Start the instances first (cold starts are not what this measures).
        await cannonAppends(pooled, chain, instances, 1_000);
        // The first flush's pause is counted from the warm-up's end: the reports' settling is part of it.
        let idleSince: number | undefined = performance.now();
        // Its CPU and memory are the pooled stack's (all its instances are threads of that one process).
        await settleReports();
        const priced = readCapacity(capacityDir);
        const [[results, usage], moved] = await countersAround(
          [pooled],
          () => measure(() => cannonAppends(pooled, chain, instances, appendSpan(instances)).then((r) => [r]), { service: pooled.pid }),
          () => {
            const since = idleSince;
            idleSince = undefined;
            return flushInstances(pooled, instances, METRICS_FLUSH_MS, since);
          },
        );
        const figure = withCommits(
          fromCannon(
            busy
              ? `service append, one chain, ${instances} instances, ${BUSY_SHARDS} pending shards`
              : `service append, one chain, ${n} single-request instance(s)`,
            'appends/s',
            instances,
            results,
            usage,
          ),
          moved,
        );
        figures.push(figure);
        if (!busy) instanceFigures.push(figure);
        await settleReports();
        const pricedAfter = readCapacity(capacityDir);
        capacityModels[busy ? 'busy' : n] = capacityModel(
          capacityDelta(pricedAfter.totals, priced.totals),
          moved.events,
          moved.commits,
          pricedAfter.unknownBefore - priced.unknownBefore,
          MODEL_SETTINGS,
          moved,
        );
      }
      // The batch endpoint as Lambda runs it: each client's requests on an instance of its own.
      progress('service: batch endpoint, single-request instances');
      await mustCreate(pooled, 'instances-batch');
      await cannonBatches(pooled, 'instances-batch', 1_000); // the instances started first
      const [[pooledBatch, usePooledBatch], pooledBatchMoved] = await countersAround(
        [pooled],
        () => measure(() => cannonBatches(pooled, 'instances-batch', SCENARIO_MS), { service: pooled.pid }),
        () => flushInstances(pooled, BATCH_CONNECTIONS, METRICS_FLUSH_MS),
      );
      pooledBatchFigure = withCommits(
        fromCannon(
          `service batch endpoint (${BATCH_EVENTS} events per request), ${BATCH_CONNECTIONS} single-request instances`,
          'events/s',
          BATCH_CONNECTIONS,
          [pooledBatch],
          usePooledBatch,
          BATCH_EVENTS,
        ),
        pooledBatchMoved,
      );
      figures.push(pooledBatchFigure);
    } finally {
      await pooled.stop();
    }

    // Block by index through the service, cold then warm: READ_BLOCKS distinct blocks never read through it before,
    // each once, then the same blocks again (the instance's read cache holds them). Priced in DynamoDB read units.
    progress('service: block by index, cold');
    const readIndices = shuffled(Array.from({ length: READ_CHAIN_BLOCKS }, (_, i) => i + 1)).slice(0, READ_BLOCKS);
    /** Reads of the chosen blocks in turn: each once (cold, and warm in a quick run), or round and round for a scenario's time (warm). */
    const readPass = async (warm: boolean): Promise<[Result, Record<string, Usage>, number]> => {
      await settleReports();
      const before = readCapacity(mainCapacityDir).totals;
      let next = 0;
      const [result, usage] = await measure(() =>
        autocannon({
          url: stack.url,
          connections: READ_CONNECTIONS,
          ...(warm && !QUICK ? { duration: SCENARIO_MS / 1000 } : { amount: readIndices.length }),
          requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/api/v1/chains/reads/blocks/${readIndices[next++ % readIndices.length]}` }) }],
        }),
      );
      await settleReports();
      // The read units of what a block read touches (records, the chain's segments and head), not of the stack's other work meanwhile.
      const rcu = Object.entries(capacityDelta(readCapacity(mainCapacityDir).totals, before))
        .filter(([key]) => ['ledger||HASH#', 'ledger||SEG#reads', 'ledger||CHAIN#reads'].some((prefix) => key.startsWith(prefix)))
        .reduce((sum, [, units]) => sum + units.rcu, 0);
      return [result, usage, round(rcu / Math.max(1, result['2xx']), 3)];
    };
    const [coldResult, useCold, coldRcu] = await readPass(false);
    const readFigure = { ...fromCannon('service block by index, cold', 'reads/s', READ_CONNECTIONS, [coldResult], useCold), rcu_per_read: coldRcu };
    figures.push(readFigure);
    progress('service: block by index, warm');
    const [warmResult, useWarm, warmRcu] = await readPass(true);
    const warmFigure = {
      ...fromCannon('service block by index, warm (the same blocks again)', 'reads/s', READ_CONNECTIONS, [warmResult], useWarm),
      rcu_per_read: warmRcu,
    };
    figures.push(warmFigure);

    progress('service: entity trace');
    const [traceResult, useT] = await measure(() =>
      autocannon({
        url: stack.url,
        connections: READ_CONNECTIONS,
        ...cannonSpan(READ_CONNECTIONS),
        requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/api/v1/entities/${randomEntity()}/trace` }) }],
      }),
    );
    const traceFigure = fromCannon('service entity trace', 'traces/s', READ_CONNECTIONS, [traceResult], useT);
    figures.push(traceFigure);

    progress('service: batch endpoint');
    const [[batchResult, useBatch], batchMoved] = await countersAround([stack], () => measure(() => cannonBatches(stack, 'batch', SCENARIO_MS)));
    const batchFigure = withCommits(
      fromCannon(`service batch endpoint (${BATCH_EVENTS} events per request)`, 'events/s', BATCH_CONNECTIONS, [batchResult], useBatch, BATCH_EVENTS),
      batchMoved,
    );
    figures.push(batchFigure);

    // -- hostile contracts: six endless loops at once, while health, appends and a benign contract are timed
    progress('service: 6 hostile contracts at once');
    contracts = await hostileContracts(stack);

    // -- ledger-verify on a long chain
    progress(`build a ${VERIFY_BLOCKS}-block chain`);
    const long = await RawWriter.open(repository, 'verify');
    for (let done = 0; done < VERIFY_BLOCKS - 1; ) {
      const n = Math.min(BATCH_EVENTS, VERIFY_BLOCKS - 1 - done);
      if (await long.append(n)) done += n;
      if (done % (BATCH_EVENTS * 20) < BATCH_EVENTS) setDetail(`${done + 1}/${VERIFY_BLOCKS} blocks`);
    }
    // What DynamoDB Local serves of the reads a page the service has not kept causes: 100 blocks' metadata and
    // records, 6 pages in flight. One block off the pages' boundaries, so that no page is kept by this loop.
    progress('limit: raw block-page Query');
    let nextPage = 0;
    const [loopP, useP] = await measure(() =>
      runFor(SCENARIO_MS, 6, async () => {
        const from = ((nextPage++ * 100) % (VERIFY_BLOCKS - 100)) + 1;
        await repository.getBlockRange('verify', from, from + 99, false);
      }),
    );
    const rawPages = fromLoop('raw block-page Query (100 blocks per page)', 'blocks/s', 6, loopP, useP, 100);
    figures.push(rawPages);

    // By pages: the first run reads each page from its blocks' records and keeps it whole; the second reads the kept pages.
    type VerifyRun = NonNullable<typeof verify>;
    const verifyRun = async (name: 'ledger-verify, first run' | 'ledger-verify'): Promise<VerifyRun> => {
      progress(name);
      const from = monotonicUs();
      const profiling = args.profile && name === 'ledger-verify' ? join(profileDir, 'verifier') : undefined;
      const { run, usage } = await timedVerify(stack.url, 'verify', pids, profiling);
      windows.push({ name, fromUs: from, toUs: monotonicUs() });
      if (run.code !== 0) throw new Error(`${name} did not verify the chain:\n${run.output}`);
      return {
        blocks: VERIFY_BLOCKS,
        seconds: round(run.seconds, 2),
        blocks_per_s: round(VERIFY_BLOCKS / run.seconds, 0),
        exit_code: run.code,
        resources: usage,
      };
    };
    verifyFirst = await verifyRun('ledger-verify, first run');
    verify = await verifyRun('ledger-verify');

    // The same chain as a C2SP log: the first run computes and keeps every full tile, the second reads them.
    for (const [name, label] of [
      ['ledger-verify --tiles, first run', 'full tiles computed from blocks and kept'],
      ['ledger-verify --tiles', 'full tiles kept'],
    ] as const) {
      progress(name);
      setDetail(label);
      const from = monotonicUs();
      const { run: t, usage } = await timedVerify(stack.url, 'verify', pids, undefined, ['--tiles']);
      windows.push({ name, fromUs: from, toUs: monotonicUs() });
      if (t.code !== 0) throw new Error(`${name} did not verify the chain:\n${t.output}`);
      verifyTiles.push({
        name,
        blocks: VERIFY_BLOCKS,
        seconds: round(t.seconds, 2),
        blocks_per_s: round(VERIFY_BLOCKS / t.seconds, 0),
        exit_code: t.code,
        resources: usage,
      });
    }

    progress('verified client: reads and appends');
    const verifiedClient: ClientFigures = await clientFigures(stack.url, 'verify', VERIFY_BLOCKS, CLIENT_CALLS);

    endProgress();
    const targets: Target[] = [
      ratioTarget('one chain, 32 clients vs raw 1 writer', one32, rawOne, 2),
      {
        name: 'one chain, 32 clients: p99 latency',
        figure: one32.name,
        limit: null,
        value: one32.p99_ms,
        ratio: null,
        target: '<= 100 ms',
        met: one32.p99_ms <= 100,
      },
      {
        name: 'one chain, 32 clients: 5xx',
        figure: one32.name,
        limit: null,
        value: one32.status['5xx'],
        ratio: null,
        target: '0',
        met: one32.status['5xx'] === 0,
      },
      ratioTarget('8 chains vs raw 8 writers', multi, rawEight, 0.8),
      ratioTarget('batch endpoint vs a raw 99-block transaction', batchFigure, rawBatch, 0.8),
      ratioTarget('batch endpoint, single-request instances, vs a raw 99-block transaction', pooledBatchFigure!, rawBatch, 0.8),
      {
        name: 'ledger-verify, first run',
        figure: 'ledger-verify, first run',
        limit: rawPages.name,
        value: verifyFirst!.blocks_per_s,
        ratio: round(verifyFirst!.blocks_per_s / rawPages.rate, 2),
        // The target is an audit's steady state (pages kept by an earlier one), as for tiles; the first run is reported.
        target: '(reported)',
        met: true,
      },
      {
        name: 'ledger-verify',
        figure: 'ledger-verify',
        limit: rawPages.name,
        value: verify.blocks_per_s,
        ratio: round(verify.blocks_per_s / rawPages.rate, 2),
        target: '>= 25000 blocks/s',
        met: verify.blocks_per_s >= 25_000,
      },
      ...verifyTiles.map((v) => ({
        name: v.name,
        figure: v.name,
        limit: rawPages.name,
        value: v.blocks_per_s,
        ratio: round(v.blocks_per_s / rawPages.rate, 2),
        // The target is the monitor's steady state (tiles kept); the first run is reported.
        target: v.name === 'ledger-verify --tiles' ? '>= 50000 blocks/s' : '(reported)',
        met: v.name === 'ledger-verify --tiles' ? v.blocks_per_s >= 50_000 : true,
      })),
      ratioTarget('reads by index, cold, vs raw GetItem', readFigure, rawGet, 0.7),
      ratioTarget('reads by index, warm, vs raw GetItem', warmFigure, rawGet, 2),
      ratioTarget('traces vs raw entity Query', traceFigure, rawTrace, null),
      ratioTarget('one chain, 1 client vs raw 1 writer', one1, rawOne, null),
      ratioTarget('one chain, 8 clients vs raw 1 writer', one8, rawOne, null),
      ratioTarget('one chain, 2 processes vs raw 1 writer', twoProcesses!, rawOne, null),
      ...instanceTargets(instanceFigures),
      ...capacityTargets(capacityModels[MODEL_INSTANCES], capacityModels.busy),
      ...contractTargets(contracts),
      ...clientTargets(verifiedClient),
    ];
    report = {
      date: startedAt.toISOString(),
      quick: QUICK,
      scenario_seconds: SCENARIO_MS / 1000,
      machine: machine(),
      storage: 'DynamoDB Local, persisted to disk (-dbPath), same machine',
      figures,
      verify,
      verify_first: verifyFirst,
      verify_tiles: verifyTiles,
      capacity: capacityModels,
      ...(capacityModels[MODEL_INSTANCES] ? { prices: priceRows(capacityModels[MODEL_INSTANCES]!, BATCH_EVENTS, VERIFIED_READ), qldb: qldbRows() } : {}),
      contracts,
      client: verifiedClient,
      targets,
    };
  } finally {
    endProgress();
    await stack.stop();
    // The service writes its profile as it exits.
    if (report && args.profile) report.profile = profiles(profileDir, windows);
    if (!report) removeDir(dataDir);
  }
  // The day's first free name (<date>.json, <date>-2.json, …): a second run of a day never overwrites the first.
  const named = (n: number) => join(ROOT, 'bench', 'results', `${startedAt.toISOString().slice(0, 10)}${n > 1 ? `-${n}` : ''}${QUICK ? '-quick' : ''}.json`);
  let free = 1;
  while (!args.out && existsSync(named(free))) free += 1;
  const out = args.out ?? named(free);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  printTable(report as never);
  const c = report.contracts as ContractsFigure | undefined;
  if (c) {
    process.stdout.write(
      `\n${c.hostile_runs} hostile contracts at once (${c.hostile.runs} runs, ${JSON.stringify(c.hostile.statuses)}, slowest ${c.hostile.max_ms} ms): ` +
        `health p50/p99 ${c.health.p50_ms}/${c.health.p99_ms} ms, append ${c.append.p50_ms}/${c.append.p99_ms} ms, benign contract ${c.benign.p50_ms}/${c.benign.p99_ms} ms\n`,
    );
  }
  const model = capacityModels[MODEL_INSTANCES];
  if (model) process.stdout.write(`\n${formatModel(model, `one chain, ${MODEL_INSTANCES} single-request instances`, MODEL_SETTINGS)}\n`);
  const busyModel = capacityModels.busy;
  if (busyModel) {
    process.stdout.write(
      `\n${formatModel(busyModel, `one chain, ${MODEL_INSTANCES} instances, a busy chain's ${BUSY_SHARDS} pending shards: the ceilings`, MODEL_SETTINGS)}\n`,
    );
  }
  if (model) process.stdout.write(`\n${formatPrices(priceRows(model, BATCH_EVENTS, VERIFIED_READ))}\n`);
  if (report.profile) printProfiles(report.profile as ReturnType<typeof profiles>);
  if (args.markdown) process.stdout.write(`\n${markdownTable(report as never)}`);
  removeDir(dataDir);
  process.stdout.write(`\nWritten: ${out}\n`);
}

/** Per scenario, where the service's CPU went; for ledger-verify, the verifier's too. */
function profiles(dir: string, windows: Window[]): { service: Record<string, ProfileSummary>; verifier?: ProfileSummary } {
  const service = loadMainProfile(join(dir, 'service'));
  const verifier = loadMainProfile(join(dir, 'verifier'));
  return {
    service: service ? Object.fromEntries(windows.map((w) => [w.name, summarize(service, w)])) : {},
    ...(verifier ? { verifier: summarize(verifier) } : {}),
  };
}

function printProfiles(p: ReturnType<typeof profiles>): void {
  const show = (title: string, s: ProfileSummary) => {
    const origins = Object.entries(s.by_origin)
      .slice(0, 5)
      .map(([k, v]) => `${k} ${Math.round((100 * v) / Math.max(1, s.busy_ms))}%`);
    process.stdout.write(`\n${title}: busy ${s.busy_ms} of ${s.window_ms} ms; ${origins.join(', ')}\n`);
    for (const f of s.top.slice(0, 6)) process.stdout.write(`  ${String(f.pct).padStart(5)}%  ${f.fn}\n`);
  };
  for (const [name, summary] of Object.entries(p.service)) {
    if (/32 clients|block by index|batch endpoint|ledger-verify/.test(name)) show(`service profile, ${name}`, summary);
  }
  if (p.verifier) show('verifier profile, ledger-verify', p.verifier);
}

/** Issue 18's targets for N single-request instances on one chain. */
function instanceTargets(byN: Figure[]): Target[] {
  const [one] = byN;
  if (!one) return [];
  const worst = byN.reduce((w, f) => (f.rate / one.rate < w.rate / one.rate ? f : w), one);
  const at = (n: number) => byN.find((f) => f.concurrency === n);
  const eight = at(8);
  const targets: Target[] = [
    {
      name: 'N instances: rate never below 0.9x one instance',
      figure: worst.name,
      limit: one.name,
      value: worst.rate,
      ratio: round(worst.rate / one.rate, 2),
      target: '>= 0.9x',
      met: worst.rate / one.rate >= 0.9,
    },
    {
      name: 'N instances: 5xx',
      figure: 'all N',
      limit: null,
      value: byN.reduce((n, f) => n + f.status['5xx'] + f.status.errors, 0),
      ratio: null,
      target: '0',
      met: byN.every((f) => f.status['5xx'] === 0 && f.status.errors === 0),
    },
  ];
  if (eight) {
    targets.push(
      { name: '8 instances: p99 latency', figure: eight.name, limit: null, value: eight.p99_ms, ratio: null, target: '<= 300 ms', met: eight.p99_ms <= 300 },
      {
        name: '8 instances: write transactions per event',
        figure: eight.name,
        limit: null,
        value: eight.transact_writes_per_event ?? NaN,
        ratio: null,
        target: '<= 0.5',
        met: (eight.transact_writes_per_event ?? 1) <= 0.5,
      },
      {
        name: '8 instances: DynamoDB requests per event',
        figure: eight.name,
        limit: null,
        value: eight.dynamo_requests_per_event ?? NaN,
        ratio: null,
        target: '<= 4',
        met: (eight.dynamo_requests_per_event ?? 99) <= 4,
      },
    );
  }
  return targets;
}

export interface ContractsFigure {
  hostile_runs: number;
  contract_timeout_ms: number;
  hostile: { runs: number; statuses: Record<string, number>; max_ms: number };
  health: { p50_ms: number; p99_ms: number; n: number };
  append: { p50_ms: number; p99_ms: number; n: number };
  benign: { p50_ms: number; p99_ms: number; n: number };
}

/**
 * Six endless loops kept running as contracts (each stopped at its CPU limit, then sent again) while one
 * client each times health, appends and a benign contract, one request after another.
 */
/** Verification's price per call on the long chain: requests added, and bytes of proof per read. */
function clientTargets(client: ClientFigures): Target[] {
  const { read, append } = client;
  const figure = (name: string, value: number, target: string, met: boolean): Target => ({
    name,
    figure: 'verified client',
    limit: null,
    value,
    ratio: null,
    target,
    met,
  });
  return [
    figure(
      'verified read: requests added',
      round(read.verified.requests_per_call - read.plain.requests_per_call, 2),
      '<= 1',
      read.verified.requests_per_call - read.plain.requests_per_call <= 1,
    ),
    figure(
      `verified read: bytes of proof (${client.chain_blocks}-block chain)`,
      read.verified.proof_bytes_per_call,
      '<= 2048',
      read.verified.proof_bytes_per_call <= 2048,
    ),
    figure('verified read: p50 added (ms)', read.added_p50_ms, '(reported)', true),
    {
      name: 'verified read: p50 vs a plain read',
      figure: 'verified client',
      limit: 'plain client read',
      value: read.verified.p50_ms,
      ratio: round(read.verified.p50_ms / read.plain.p50_ms, 2),
      target: '<= 1.3x',
      met: read.verified.p50_ms <= 1.3 * read.plain.p50_ms,
    },
    figure(
      'verified append: requests added',
      round(append.verified.requests_per_call - append.plain.requests_per_call, 2),
      '<= 1',
      append.verified.requests_per_call - append.plain.requests_per_call <= 1,
    ),
    figure('verified append: bytes of proof', append.verified.proof_bytes_per_call, '(reported)', true),
    figure('verified append: p50 added (ms)', append.added_p50_ms, '(reported)', true),
  ];
}

async function hostileContracts(stack: Stack): Promise<ContractsFigure> {
  const timeoutMs = settingsSchema.shape.SVC_CONTRACT_TIMEOUT_MS.parse(undefined);
  for (const [id, implementation] of [
    ['bench-spin', 'function execute() { for (;;) {} }'],
    ['bench-calm', 'function execute(event) { return { ok: true, entity: event.entity_id }; }'],
  ]) {
    const res = await call(stack.url, 'POST', '/api/v2/contracts', { contract_id: id, version: '1.0.0', implementation });
    if (res.status !== 201) throw new Error(`registering ${id}: ${res.status} ${res.text}`);
  }
  await mustCreate(stack, 'calm');
  const execute = (id: string) => call(stack.url, 'POST', '/api/v2/contracts/execute', { contract_id: id, event: { entity_id: 'e', event: 'x', details: {} } });
  // Every worker started first: a worker's start (loading the module, compiling QuickJS) is a cold start,
  // not part of a run, as an instance's is not part of its requests' time on Lambda.
  await Promise.all(Array.from({ length: HOSTILE_RUNS + 1 }, () => execute('bench-calm')));
  const until = performance.now() + SCENARIO_MS;
  const statuses: Record<string, number> = {};
  let hostileMax = 0;
  let hostileRuns = 0;
  const timed = async (run: () => Promise<{ status: number }>, into: number[], ok: number) => {
    while (performance.now() < until) {
      const t0 = performance.now();
      const res = await run();
      if (res.status !== ok) throw new Error(`expected ${ok} during the hostile contracts, got ${res.status}`);
      into.push(performance.now() - t0);
    }
  };
  const health: number[] = [];
  const append: number[] = [];
  const benign: number[] = [];
  let n = 0;
  await Promise.all([
    ...Array.from({ length: HOSTILE_RUNS }, async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        const res = await execute('bench-spin');
        hostileMax = Math.max(hostileMax, performance.now() - t0);
        hostileRuns += 1;
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }),
    timed(() => call(stack.url, 'GET', '/api/v1/health'), health, 200),
    timed(() => call(stack.url, 'POST', '/api/v1/chains/calm/events', eventBody('calm', n++)), append, 200),
    timed(() => execute('bench-calm'), benign, 200),
  ]);
  const stats = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return { p50_ms: round(percentile(sorted, 50), 1), p99_ms: round(percentile(sorted, 99), 1), n: xs.length };
  };
  return {
    hostile_runs: HOSTILE_RUNS,
    contract_timeout_ms: timeoutMs,
    hostile: { runs: hostileRuns, statuses, max_ms: Math.round(hostileMax) },
    health: stats(health),
    append: stats(append),
    benign: stats(benign),
  };
}

/** Issue 19's targets: hostile contracts do not hold up anything else. */
function contractTargets(c: ContractsFigure | undefined): Target[] {
  if (!c) return [];
  const figure = `${c.hostile_runs} hostile contracts at once (SVC_CONTRACT_WORKERS=${CONTRACT_WORKERS})`;
  const all422 = Object.keys(c.hostile.statuses).every((s) => s === '422');
  return [
    { name: 'hostile contracts: health p99', figure, limit: null, value: c.health.p99_ms, ratio: null, target: '<= 100 ms', met: c.health.p99_ms <= 100 },
    { name: 'hostile contracts: append p99', figure, limit: null, value: c.append.p99_ms, ratio: null, target: '<= 250 ms', met: c.append.p99_ms <= 250 },
    {
      name: 'hostile contracts: each ends 422 within its limit + 1 s',
      figure,
      limit: null,
      value: c.hostile.max_ms,
      ratio: null,
      target: `422, <= ${c.contract_timeout_ms + 1_000} ms`,
      met: all422 && c.hostile.max_ms <= c.contract_timeout_ms + 1_000,
    },
    { name: 'hostile contracts: benign contract p50', figure, limit: null, value: c.benign.p50_ms, ratio: null, target: '< 50 ms', met: c.benign.p50_ms < 50 },
  ];
}

/** Issue 18's AWS targets, from the capacity model of the N-instance scenario. */
function capacityTargets(model: CapacityModel | undefined, busy: CapacityModel | undefined): Target[] {
  if (!model) return [];
  const name = `capacity model (${MODEL_INSTANCES} instances)`;
  // The ceilings: from the busy chain's shape when it ran (writers read their shard's seals, not the head).
  const ceilings = busy ?? model;
  const ceilingName = busy ? `capacity model (${MODEL_INSTANCES} instances, ${BUSY_SHARDS} pending shards)` : name;
  const tenThousand = ceilings.service.find((s) => s.chains === 10_000)!;
  const shared = ceilings.classes.filter((c) => c.scope === 'service' && c.name !== 'metrics counters' && c.wcu_per_event > 0);
  return [
    {
      name: `AWS model: one chain (the lower of write units ${ceilings.one_chain.write_unit_bound} and commit latency ${ceilings.one_chain.latency_bound ?? '-'})`,
      figure: ceilingName,
      limit: null,
      value: ceilings.one_chain.events_per_s,
      ratio: null,
      target: '>= 5000 events/s',
      met: ceilings.one_chain.events_per_s >= 5_000,
    },
    ...(ceilings.latency
      ? [
          {
            name: 'AWS model: p99 append latency at that rate',
            figure: ceilingName,
            limit: null,
            value: ceilings.latency.p99_append_ms,
            ratio: null,
            target: '<= 100 ms',
            met: ceilings.latency.p99_append_ms <= 100,
          },
        ]
      : []),
    {
      name: 'AWS model: write units per acknowledged event',
      figure: name,
      limit: null,
      value: model.wcu_per_event,
      ratio: null,
      target: '<= 4',
      met: model.wcu_per_event <= 4,
    },
    {
      name: 'AWS model: read units per acknowledged event',
      figure: name,
      limit: null,
      value: model.rcu_per_event,
      ratio: null,
      target: '<= 2',
      met: model.rcu_per_event <= 2,
    },
    {
      name: 'AWS model: 10,000 chains',
      figure: ceilingName,
      limit: null,
      value: tenThousand.events_per_s,
      ratio: null,
      target: '>= 100000 events/s',
      met: tenThousand.events_per_s >= 100_000,
    },
    {
      name: "AWS model: partitions every chain's appends write",
      figure: ceilingName,
      limit: null,
      value: shared.length,
      ratio: null,
      target: '0',
      met: shared.length === 0,
    },
  ];
}

function ratioTarget(name: string, service: Figure, limit: Figure, atLeast: number | null): Target {
  const ratio = round(service.rate / limit.rate, 2);
  return {
    name,
    figure: service.name,
    limit: limit.name,
    value: service.rate,
    ratio,
    target: atLeast === null ? '(reported)' : `>= ${atLeast}x`,
    met: atLeast === null ? true : ratio >= atLeast,
  };
}

/** Runs the ledger-verify CLI as a user would; its own CPU is sampled as `verifier`. */
function timedVerify(
  url: string,
  chain: string,
  pids: Record<string, number | undefined>,
  profileDir: string | undefined,
  extraArgs: string[] = [],
): Promise<{ run: { seconds: number; code: number | null; output: string }; usage: Record<string, Usage> }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const profiling = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    const child = spawn(process.execPath, [...profiling, join(ROOT, 'bin', 'ledger-verify.mjs'), '--url', url, '--chain', chain, ...extraArgs], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const sampler = sample({ ...pids, verifier: child.pid });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => {
      output += d;
      const last = /(\d+)\/(\d+) (blocks|entries)/.exec(String(d).split('\n').filter(Boolean).pop() ?? '');
      if (last) setDetail(`${last[1]}/${last[2]} ${last[3]}`);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ run: { seconds: (performance.now() - t0) / 1000, code, output }, usage: sampler.stop() }));
  });
}

function machine() {
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memory_gib: round(totalmem() / 2 ** 30, 0),
    os: `Linux ${release()}`,
    node: process.version,
    java: /version "([^"]+)"/.exec(java.stderr ?? '')?.[1] ?? 'unknown',
  };
}

main().catch((error) => {
  endProgress();
  process.stderr.write(`bench failed: ${(error as Error).stack ?? error}\n`);
  process.exitCode = 1;
});
