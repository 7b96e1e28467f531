/**
 * Request and ledger metrics (docs/rules.md, "Health and metrics"), rendered by prom-client in Prometheus text 0.0.4.
 *
 * Counts are kept per instance in memory and, with the `dynamodb` backend (the cloud stack), added into
 * shared counters so that /metrics covers the whole service, not one Lambda instance: each instance
 * flushes its deltas with one ADD update at most every SVC_METRICS_FLUSH_MS, to one of the store's shards
 * (each its own partition, so thousands of instances never meet on one), and a scrape sums the shards.
 */
import client from 'prom-client';

/**
 * At most this many requests' counts wait in an instance for the flush interval: the bound on what a
 * reaped instance can take with it, whatever its request rate.
 */
export const MAX_PENDING_REQUESTS = 50;

/** Latency buckets of http_request_duration_seconds (upper bounds, seconds). */
export const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** What is counted: request outcomes and latencies, and the ledger's appends and lost races. */
export interface Totals {
  success: number;
  failed: number;
  latencySum: number;
  /** Requests per latency bucket, not cumulative; the last entry is above the largest bound. */
  buckets: number[];
  eventsAppended: number;
  conflicts: number;
  /** Transactions that committed blocks; several blocks share one under group commit. */
  commits: number;
  /** Function instances that started and served a request (Lambda cold starts). */
  coldStarts: number;
  /** Requests sent to DynamoDB, and the write transactions among them (every attempt, committed or not). */
  dynamoRequests: number;
  dynamoTransactWrites: number;
  /** The items of those transactions. */
  dynamoTransactItems: number;
  /** Chain leases taken, and pending-append reads: with the commits, a commit's requests on a chain's serial path. */
  leaseTakes: number;
  pendingReads: number;
  /** Writes on a round's serial path besides its commit (a round item, the records, the segment, the release). */
  roundWrites: number;
  /** Pending appends written again (they landed below the cursor), and rounds of a dead leader finished by another. */
  rewrites: number;
  recoveries: number;
  /**
   * Requests whose integration failed at the gateway (a function that crashed, timed out or could not start),
   * by function: the client got API Gateway's bare 500 or 503, never a response of the service's own.
   */
  integrationErrors: Record<string, number>;
  /** Items served from an instance's read cache, and reads it sent on to DynamoDB, by kind (record, segment, tile, page, evidence). */
  cacheHits: Record<string, number>;
  cacheMisses: Record<string, number>;
}

export const emptyTotals = (): Totals => ({
  success: 0,
  failed: 0,
  latencySum: 0,
  buckets: new Array(BUCKETS.length + 1).fill(0),
  eventsAppended: 0,
  conflicts: 0,
  commits: 0,
  coldStarts: 0,
  dynamoRequests: 0,
  dynamoTransactWrites: 0,
  dynamoTransactItems: 0,
  leaseTakes: 0,
  pendingReads: 0,
  roundWrites: 0,
  rewrites: 0,
  recoveries: 0,
  integrationErrors: {},
  cacheHits: {},
  cacheMisses: {},
});

function addCounts(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const sum = { ...a };
  for (const [key, n] of Object.entries(b)) sum[key] = (sum[key] ?? 0) + n;
  return sum;
}

/** What each count moved from `before` to `now`. */
function deltas(now: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(now).map(([key, n]) => [key, n - (before[key] ?? 0)]));
}

export function addTotals(a: Totals, b: Totals): Totals {
  return {
    success: a.success + b.success,
    failed: a.failed + b.failed,
    latencySum: a.latencySum + b.latencySum,
    buckets: a.buckets.map((n, i) => n + (b.buckets[i] ?? 0)),
    eventsAppended: a.eventsAppended + b.eventsAppended,
    conflicts: a.conflicts + b.conflicts,
    commits: a.commits + b.commits,
    coldStarts: a.coldStarts + b.coldStarts,
    dynamoRequests: a.dynamoRequests + b.dynamoRequests,
    dynamoTransactWrites: a.dynamoTransactWrites + b.dynamoTransactWrites,
    dynamoTransactItems: a.dynamoTransactItems + b.dynamoTransactItems,
    leaseTakes: a.leaseTakes + b.leaseTakes,
    pendingReads: a.pendingReads + b.pendingReads,
    roundWrites: a.roundWrites + b.roundWrites,
    rewrites: a.rewrites + b.rewrites,
    recoveries: a.recoveries + b.recoveries,
    integrationErrors: addCounts(a.integrationErrors, b.integrationErrors),
    cacheHits: addCounts(a.cacheHits, b.cacheHits),
    cacheMisses: addCounts(a.cacheMisses, b.cacheMisses),
  };
}

/** The appender's counters that /metrics reports. */
export interface LedgerCounts {
  eventsAppended: number;
  conflicts: number;
  commits: number;
  leaseTakes: number;
  pendingReads: number;
  roundWrites: number;
  rewrites: number;
  recoveries: number;
}

/** The port for shared counters (DynamoDB in the cloud stack). */
export interface SharedCounters {
  /** How many shards the counters are spread over; an instance adds to one of them. */
  readonly shards: number;
  add(shard: number, delta: Totals): Promise<void>;
  /** The sum of every shard. */
  read(): Promise<Totals>;
}

export interface MetricsOptions {
  shared?: SharedCounters | undefined;
  /** Flush at most this often; 0 flushes after every request. */
  flushMs: number;
  /** The ledger's own counters in this process (events appended, lost races), read at each flush. */
  ledgerCounters?: () => LedgerCounts;
  /** This process's DynamoDB requests so far, read at each flush. */
  dynamoCounters?: () => { requests: number; transactWrites: number; transactItems: number };
  /** Whether this process is a function instance (its first request is a cold start); not for the gateway's own counts. */
  coldStart?: boolean;
  /** This process's read cache (shared/storage/read-cache.ts): its hits and misses so far, read at each flush, and the bytes it holds. */
  readCache?: () => { counts: { hits: Record<string, number>; misses: Record<string, number> }; bytes: number };
  /** Per witness (with SVC_WITNESSES): the last tree size it cosigned, its cosignatures and its failures. */
  witnesses?: () => Promise<{ witness: string; lastSize: number; cosigned: number; failures: number }[]>;
}

/** A prom-client metric whose values come from a callback (for totals summed elsewhere). */
function computed(
  name: string,
  help: string,
  type: 'counter' | 'gauge' | 'histogram',
  values: () => Promise<{ value: number; labels?: Record<string, string | number>; metricName?: string }[]>,
) {
  return {
    name,
    help,
    type,
    aggregator: 'sum',
    get: async () => ({ name, help, type, aggregator: 'sum', values: await values() }),
    reset: () => undefined,
  } as unknown as client.Metric;
}

export function createMetrics(options: MetricsOptions) {
  // What this instance counted: everything (memory backend), or what is not yet in the shared counters.
  // Metrics are made once per instance, at its first request: that is its cold start.
  let pending: Totals = { ...emptyTotals(), coldStarts: options.coldStart === false ? 0 : 1 };
  let lastLedger: LedgerCounts = { eventsAppended: 0, conflicts: 0, commits: 0, leaseTakes: 0, pendingReads: 0, roundWrites: 0, rewrites: 0, recoveries: 0 };
  let lastDynamo = { requests: 0, transactWrites: 0, transactItems: 0 };
  let lastCache: { hits: Record<string, number>; misses: Record<string, number> } = { hits: {}, misses: {} };
  let lastFlush = 0;
  let flushing: Promise<void> | undefined;
  const shard = Math.floor(Math.random() * (options.shared?.shards ?? 1));

  function takeLedgerDeltas(): void {
    if (options.ledgerCounters) {
      // Copied, not kept: the appender's counters object keeps changing under us.
      const now = { ...options.ledgerCounters() };
      pending.eventsAppended += now.eventsAppended - lastLedger.eventsAppended;
      pending.conflicts += now.conflicts - lastLedger.conflicts;
      pending.commits += now.commits - lastLedger.commits;
      pending.leaseTakes += now.leaseTakes - lastLedger.leaseTakes;
      pending.pendingReads += now.pendingReads - lastLedger.pendingReads;
      pending.roundWrites += now.roundWrites - lastLedger.roundWrites;
      pending.rewrites += now.rewrites - lastLedger.rewrites;
      pending.recoveries += now.recoveries - lastLedger.recoveries;
      lastLedger = now;
    }
    if (options.dynamoCounters) {
      const dynamo = { ...options.dynamoCounters() };
      pending.dynamoRequests += dynamo.requests - lastDynamo.requests;
      pending.dynamoTransactWrites += dynamo.transactWrites - lastDynamo.transactWrites;
      pending.dynamoTransactItems += dynamo.transactItems - lastDynamo.transactItems;
      lastDynamo = dynamo;
    }
    if (options.readCache) {
      const { hits, misses } = options.readCache().counts;
      const now = { hits: { ...hits }, misses: { ...misses } };
      pending.cacheHits = addCounts(pending.cacheHits, deltas(now.hits, lastCache.hits));
      pending.cacheMisses = addCounts(pending.cacheMisses, deltas(now.misses, lastCache.misses));
      lastCache = now;
    }
  }

  /** Requests counted since the last flush. */
  const pendingRequests = () => pending.success + pending.failed;

  /**
   * Adds what this instance counted to the shared counters, when due: SVC_METRICS_FLUSH_MS since the last
   * flush, or MAX_PENDING_REQUESTS held back. Called at the end of each request, before the answer leaves:
   * never from a timer, which a frozen Lambda instance may never run. So a frozen instance holds at most
   * what its last requests counted since its last flush (fewer than MAX_PENDING_REQUESTS, all answered
   * within SVC_METRICS_FLUSH_MS of that flush), until its next request adds them, or its reaping loses them.
   */
  async function flush(force = false): Promise<void> {
    if (!options.shared) return;
    if (!force && Date.now() - lastFlush < options.flushMs && pendingRequests() < MAX_PENDING_REQUESTS) return;
    if (flushing) return flushing;
    takeLedgerDeltas();
    const delta = pending;
    pending = emptyTotals();
    lastFlush = Date.now();
    flushing = options.shared.add(shard, delta).catch((error) => {
      pending = addTotals(pending, delta); // keep the counts for the next flush
      throw error;
    });
    try {
      await flushing;
    } finally {
      flushing = undefined;
    }
  }

  async function totals(): Promise<Totals> {
    takeLedgerDeltas();
    if (!options.shared) return pending;
    await flush(true);
    return options.shared.read();
  }

  /** A count per cache kind: every kind this process's cache has, 0 when none was counted yet. */
  const byKind = (counts: Record<string, number>) => {
    const kinds = { ...Object.fromEntries(Object.keys(options.readCache?.().counts.hits ?? {}).map((kind) => [kind, 0])), ...counts };
    return Object.entries(kinds).map(([kind, value]) => ({ value, labels: { cache: kind } }));
  };

  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  let scraped: Totals = emptyTotals();
  registry.registerMetric(
    computed('http_requests_success_total', 'Requests answered with a status below 400', 'counter', async () => [{ value: scraped.success }]),
  );
  registry.registerMetric(
    computed('http_requests_failed_total', 'Requests answered with a status of 400 or more', 'counter', async () => [{ value: scraped.failed }]),
  );
  registry.registerMetric(
    computed('http_request_latency_avg_seconds', 'Average request latency', 'gauge', async () => {
      const count = scraped.success + scraped.failed;
      return [{ value: count === 0 ? 0 : scraped.latencySum / count }];
    }),
  );
  registry.registerMetric(
    computed('http_request_duration_seconds', 'Request latency', 'histogram', async () => {
      let cumulative = 0;
      const values = BUCKETS.map((le, i) => {
        cumulative += scraped.buckets[i] ?? 0;
        return { value: cumulative, labels: { le }, metricName: 'http_request_duration_seconds_bucket' };
      });
      const count = scraped.success + scraped.failed;
      return [
        ...values,
        { value: count, labels: { le: '+Inf' }, metricName: 'http_request_duration_seconds_bucket' },
        { value: scraped.latencySum, metricName: 'http_request_duration_seconds_sum' },
        { value: count, metricName: 'http_request_duration_seconds_count' },
      ];
    }),
  );
  registry.registerMetric(computed('ledger_events_appended_total', 'Events appended to chains', 'counter', async () => [{ value: scraped.eventsAppended }]));
  registry.registerMetric(
    computed('ledger_append_commits_total', 'Transactions that committed appended blocks (group commit shares one among several)', 'counter', async () => [
      { value: scraped.commits },
    ]),
  );
  registry.registerMetric(
    computed('lambda_cold_starts_total', 'Function instances started to serve requests (cold starts), across every instance', 'counter', async () => [
      { value: scraped.coldStarts },
    ]),
  );
  registry.registerMetric(
    computed('dynamodb_requests_total', 'Requests sent to DynamoDB by every instance (the metrics flushes included)', 'counter', async () => [
      { value: scraped.dynamoRequests },
    ]),
  );
  registry.registerMetric(
    computed('dynamodb_transact_writes_total', 'TransactWriteItems requests sent by every instance, committed or not', 'counter', async () => [
      { value: scraped.dynamoTransactWrites },
    ]),
  );
  registry.registerMetric(
    computed(
      'gateway_integration_errors_total',
      "Requests whose integration failed at the gateway (the function crashed, timed out or did not start), by function; the client got API Gateway's bare 500 or 503",
      'counter',
      async () => Object.entries(scraped.integrationErrors).map(([fn, value]) => ({ value, labels: { function: fn } })),
    ),
  );
  if (options.witnesses) {
    // Read once per scrape (its three metrics are collected at once) from where the witnessing keeps them.
    let read: { at: number; value: ReturnType<NonNullable<MetricsOptions['witnesses']>> } | undefined;
    const witnesses = () => {
      if (!read || Date.now() - read.at > 1_000) read = { at: Date.now(), value: options.witnesses!() };
      return read.value;
    };
    registry.registerMetric(
      computed('witness_last_cosigned_size', 'The tree size of the last checkpoint each witness cosigned (any chain)', 'gauge', async () =>
        (await witnesses()).map((w) => ({ value: w.lastSize, labels: { witness: w.witness } })),
      ),
    );
    registry.registerMetric(
      computed('witness_cosignatures_total', 'Checkpoints each witness cosigned', 'counter', async () =>
        (await witnesses()).map((w) => ({ value: w.cosigned, labels: { witness: w.witness } })),
      ),
    );
    registry.registerMetric(
      computed(
        'witness_failures_total',
        'Checkpoints sent to each witness that it refused, or that failed (down, slow, a bad cosignature)',
        'counter',
        async () => (await witnesses()).map((w) => ({ value: w.failures, labels: { witness: w.witness } })),
      ),
    );
  }
  registry.registerMetric(
    computed('dynamodb_transact_items_total', 'Items of those TransactWriteItems requests', 'counter', async () => [{ value: scraped.dynamoTransactItems }]),
  );
  registry.registerMetric(
    computed('ledger_append_lease_takes_total', "Chain leases taken by a combining leader (a conditional update of the chain's head)", 'counter', async () => [
      { value: scraped.leaseTakes },
    ]),
  );
  registry.registerMetric(
    computed('ledger_append_pending_reads_total', "A leader's reads of a chain's pending appends (one round of parallel Queries each)", 'counter', async () => [
      { value: scraped.pendingReads },
    ]),
  );
  registry.registerMetric(
    computed(
      'ledger_append_round_writes_total',
      "Writes on a round's serial path besides its commit: a large round's metadata, its records, its segment, the lease given back",
      'counter',
      async () => [{ value: scraped.roundWrites }],
    ),
  );
  registry.registerMetric(
    computed(
      'ledger_append_rewrites_total',
      'Pending appends written again because they landed below the cursor after a leader read past them (a slow write)',
      'counter',
      async () => [{ value: scraped.rewrites }],
    ),
  );
  registry.registerMetric(
    computed(
      'ledger_append_recoveries_total',
      'Rounds whose leader died between its commit and its records, finished by the next lease holder',
      'counter',
      async () => [{ value: scraped.recoveries }],
    ),
  );
  registry.registerMetric(
    computed(
      'ledger_read_cache_hits_total',
      "Immutable items (block records, metadata segments, full tiles, kept pages, fixed-size evidence) served from an instance's memory, by kind",
      'counter',
      async () => byKind(scraped.cacheHits),
    ),
  );
  registry.registerMetric(
    computed(
      'ledger_read_cache_misses_total',
      'Reads of immutable items an instance did not hold and sent to DynamoDB, by kind (a record, tile or kept page looked up; a segment Query; evidence built)',
      'counter',
      async () => byKind(scraped.cacheMisses),
    ),
  );
  if (options.readCache) {
    const readCache = options.readCache;
    registry.registerMetric(
      computed('ledger_read_cache_bytes', 'Bytes held by the read cache of the instance that answered this scrape', 'gauge', async () => [
        { value: readCache().bytes },
      ]),
    );
  }
  registry.registerMetric(
    computed('ledger_append_conflicts_total', 'Appends that lost a race for the chain head and were retried', 'counter', async () => [
      { value: scraped.conflicts },
    ]),
  );

  return {
    /** Counts one answered request. */
    async record(status: number, seconds: number): Promise<void> {
      const bucket = BUCKETS.findIndex((le) => seconds <= le);
      if (status < 400) pending.success += 1;
      else pending.failed += 1;
      pending.latencySum += seconds;
      pending.buckets[bucket < 0 ? BUCKETS.length : bucket]! += 1;
      await flush();
    },

    /** Counts an integration that failed at the gateway; sent to the shared counters at once (rare, and told now). */
    async recordIntegrationError(functionName: string): Promise<void> {
      pending.integrationErrors[functionName] = (pending.integrationErrors[functionName] ?? 0) + 1;
      await flush(true);
    },

    /** The Prometheus text exposition (0.0.4). */
    async render(): Promise<{ contentType: string; body: string }> {
      scraped = await totals();
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
