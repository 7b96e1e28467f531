/**
 * The capacity model of `npm run bench`: what a scenario's DynamoDB requests cost per partition (priced
 * by shared/storage/capacity.ts inside every instance, from the real requests), turned into units per
 * event and into the throughput at which the busiest partition reaches DynamoDB's per-partition limits
 * (1,000 WCU/s, 3,000 RCU/s). DynamoDB Local enforces none of them; this is how the key design is priced.
 */
import { SEGMENT_MAX_BYTES } from '#shared/ledger/block-meta';
import type { CapacityTotals } from '#shared/storage/capacity';
import { REPORT_EVERY_MS } from '#shared/storage/capacity-report';
import { round } from './resources.ts';

/** Every process's totals in a report directory (written by shared/storage/capacity-report.ts). */
export { readCapacity, REPORT_EVERY_MS } from '#shared/storage/capacity-report';

/** Until every process's capacity report (written every REPORT_EVERY_MS, 200 ms) has what it priced: two of those and a margin. */
export const settleReports = () => new Promise((resolve) => setTimeout(resolve, 2 * REPORT_EVERY_MS + 100));

export const PARTITION_WCU = 1_000;
export const PARTITION_RCU = 3_000;
/** An on-demand table's default throughput quota per table (raisable through Service Quotas). */
export const TABLE_QUOTA_WCU = 40_000;

/**
 * What a request takes on AWS, for the latency bound: Alex DeBrie's measurements from Lambda in the table's
 * region (p50 of 400 calls each; dynamodb-performance-testing): PutItem 7.55 ms (p99 16.2), BatchWriteItem
 * of 25 items 10.2 ms (p90 16), TransactWriteItems of 5 items 25.3 ms and of 25 items 32.1 ms. A conditional
 * update, a GetItem and a Query are priced as a PutItem; a wave of BatchWriteItems sent at once at the p90
 * of one. docs/capacity.md, "The latency bound", gives the sources.
 */
export const AWS_LATENCY_MS = {
  request: 8,
  requestP99: 16,
  batchWave: 16,
  transactionFew: 25,
  transactionMany: 32,
} as const;

/** A TransactWriteItems of `items` items: 25 ms up to 5, rising as measured to 32 ms at 25, and on at that slope. */
export function transactionMs(items: number): number {
  const { transactionFew, transactionMany } = AWS_LATENCY_MS;
  return transactionFew + ((transactionMany - transactionFew) * Math.max(0, items - 5)) / 20;
}

/** The requests of one scenario on a chain's serial path, from the service's own counters (/metrics). */
export interface SerialCounts {
  events: number;
  commits: number;
  /** TransactWriteItems requests (committed or not) and their items. */
  transactWrites: number;
  transactItems: number;
  /** Leases taken, and leaders' reads of pending appends (one round of parallel Queries each). */
  leaseTakes: number;
  pendingReads: number;
  /** Writes besides the commits: round items, records waves, releases. */
  roundWrites: number;
}

/** One chain's commits are serial: each is conditional on the head the one before left. */
export interface LatencyBound {
  per_commit: { transactions: number; lease_takes: number; pending_reads: number; round_writes: number; events: number };
  /** A round's serial path on AWS with the measured mix of requests per commit. */
  measured: { round_ms: number; events_per_s: number };
  /**
   * A full round (SVC_APPEND_BATCH_MAX events) under continuous load: its commit, then its records' wave,
   * which the next round's read and metadata item overlap; a lease take and a release once per lead (a
   * leader goes on for SVC_APPEND_MAX_LEAD_MS while appends wait).
   */
  full: { events_per_round: number; rounds_per_lead: number; round_ms: number; rounds_per_s: number; events_per_s: number };
  /** A writer's append at full speed: its pending write (p99), up to a round it waits out, its own round, a look's interval, the look (p99). */
  p99_append_ms: number;
}

export function latencyBound(counts: SerialCounts, batchMax: number, maxLeadMs: number): LatencyBound {
  const commits = Math.max(1, counts.commits);
  const { request, requestP99, batchWave } = AWS_LATENCY_MS;
  const perCommit = {
    transactions: counts.transactWrites / commits,
    lease_takes: counts.leaseTakes / commits,
    pending_reads: counts.pendingReads / commits,
    round_writes: counts.roundWrites / commits,
    events: counts.events / commits,
  };
  const itemsPerTransaction = counts.transactItems / Math.max(1, counts.transactWrites);
  // Measured mix, not pipelined: every request of a commit in turn (a direct commit is one transaction).
  const measuredRound =
    Math.min(1, perCommit.transactions) * transactionMs(itemsPerTransaction) +
    Math.max(0, 1 - perCommit.transactions) * request +
    (perCommit.lease_takes + perCommit.pending_reads + perCommit.round_writes) * request;
  // Full, pipelined: the commit, then the wave that the next read and metadata item overlap.
  const pipelined = request + Math.max(batchWave, 2 * request);
  const roundsPerLead = Math.max(1, Math.floor(maxLeadMs / pipelined));
  const fullRound = pipelined + (2 * request) / roundsPerLead;
  const r1 = (x: number) => Math.round(x * 10) / 10;
  return {
    per_commit: Object.fromEntries(Object.entries(perCommit).map(([k, v]) => [k, round(v, 2)])) as LatencyBound['per_commit'],
    measured: { round_ms: r1(measuredRound), events_per_s: Math.round((1000 / measuredRound) * perCommit.events) },
    full: {
      events_per_round: batchMax,
      rounds_per_lead: roundsPerLead,
      round_ms: r1(fullRound),
      rounds_per_s: r1(1000 / fullRound),
      events_per_s: Math.round((1000 / fullRound) * batchMax),
    },
    p99_append_ms: Math.round(requestP99 + 2 * fullRound + fullRound / 4 + requestP99),
  };
}

/**
 * What a full round writes besides its events' own items, sized for `events` (the packed metadata of
 * shared/ledger/block-meta.ts: 41 bytes and about 84 a block; a seal 3 bytes and 90 a block): its segment,
 * its round item (the metadata too large for the head), and one seal per pending shard (write units per
 * round); and what the leader reads of the pending shards (read units per round).
 */
export function roundWriteUnits(events: number, shards: number): { segment: number; round: number; seals: number; pendingReads: number } {
  const packed = 41 + 84 * events;
  const perShard = Math.ceil(events / shards);
  return {
    // Segments of under 4 KB each (splitRun): 4 WCU each when full.
    segment: Math.floor(packed / SEGMENT_MAX_BYTES) * 4 + Math.ceil((packed % SEGMENT_MAX_BYTES) / 1024),
    round: Math.ceil(packed / 1024),
    seals: Math.min(shards, events) * Math.ceil((3 + 90 * perShard) / 1024),
    // A leader reads every pending shard once a round, strongly consistent: 1 RCU per 4 KB (a pending append is under 1 KB).
    pendingReads: shards * Math.ceil((perShard * 1024) / 4096),
  };
}

export function capacityDelta(after: CapacityTotals, before: CapacityTotals): CapacityTotals {
  const delta: CapacityTotals = {};
  for (const [key, units] of Object.entries(after)) {
    const wcu = units.wcu - (before[key]?.wcu ?? 0);
    const rcu = units.rcu - (before[key]?.rcu ?? 0);
    const failed = (units.failed ?? 0) - (before[key]?.failed ?? 0);
    if (wcu > 0 || rcu > 0) delta[key] = { wcu, rcu, failed };
  }
  return delta;
}

/** Records per invocation of the stream's consumer (the event source mapping's batch size, infra/cdk). */
const STREAM_BATCH = 100;

/** How a class of partitions grows with the service. */
type Scope = 'chain' | 'entity' | 'writer' | 'client' | 'spread' | 'service';

interface ClassDef {
  name: string;
  scope: Scope;
  /** Partitions one chain (or the service, for service scope) spreads this class's load over at full speed. */
  partitions: number;
  /**
   * Its writes are paid per round rather than per event, and at full speed every round is full
   * (SVC_APPEND_BATCH_MAX events): `head`, as measured per commit (its refused writes, a lease already
   * taken, stay per event); `segment`, `round` or `seals`, sized for a full round (roundWriteUnits).
   */
  perRound?: 'head' | 'segment' | 'round' | 'seals' | 'broadcast' | 'pending';
  match: (table: string, index: string, pk: string) => boolean;
}

export interface ModelSettings {
  tables: { ledger: string; registry: string; rateLimits: string; connections: string };
  blockShards: number;
  pendingShards: number;
  metricsShards: number;
  batchMax: number;
  maxLeadMs: number;
}

function classes(s: ModelSettings): ClassDef[] {
  const ledger = (table: string, index: string) => table === s.tables.ledger && index === '';
  return [
    { name: 'chain head', scope: 'chain', partitions: 1, perRound: 'head', match: (t, i, pk) => ledger(t, i) && /^CHAIN#[^#]+$/.test(pk) },
    { name: 'block records (by hash)', scope: 'spread', partitions: 1, match: (t, i, pk) => ledger(t, i) && pk.startsWith('HASH#') },
    { name: 'metadata segments', scope: 'chain', partitions: 1, perRound: 'segment', match: (t, i, pk) => ledger(t, i) && pk.startsWith('SEG#') },
    { name: 'round items (large rounds)', scope: 'chain', partitions: 1, perRound: 'round', match: (t, i, pk) => ledger(t, i) && pk.startsWith('ROUND#') },
    {
      name: 'seals (one per pending shard)',
      scope: 'chain',
      partitions: s.pendingShards,
      perRound: 'seals',
      match: (t, i, pk) => ledger(t, i) && pk.startsWith('SEAL#'),
    },
    {
      name: 'pending appends',
      scope: 'chain',
      partitions: s.pendingShards,
      perRound: 'pending',
      match: (t, i, pk) => ledger(t, i) && pk.startsWith('PENDING#'),
    },
    { name: 'refusals', scope: 'chain', partitions: 1, match: (t, i, pk) => ledger(t, i) && pk.startsWith('REFUSED#') },
    { name: 'legacy block items', scope: 'chain', partitions: s.blockShards, match: (t, i, pk) => ledger(t, i) && /^CHAIN#[^#]+#\d+$/.test(pk) },
    { name: 'chain list', scope: 'service', partitions: 1, match: (t, i, pk) => ledger(t, i) && pk === 'CHAINS' },
    { name: 'by-hash index (legacy blocks)', scope: 'spread', partitions: 1, match: (t, i) => t === s.tables.ledger && i === 'by-hash' },
    { name: 'by-entity index (one partition per entity)', scope: 'entity', partitions: 1, match: (t, i) => t === s.tables.ledger && i === 'by-entity' },
    { name: 'metrics counters', scope: 'service', partitions: s.metricsShards, match: (t, _i, pk) => t === s.tables.registry && pk.startsWith('METRICS') },
    {
      // The broadcaster's look-ups of who subscribed (a chain, `*`, an event type) for each batch of the stream:
      // `*` is one partition for the whole service.
      name: 'subscriber look-ups (per stream batch)',
      scope: 'service',
      partitions: 1,
      perRound: 'broadcast',
      match: (t, i) => t === s.tables.connections && i === 'by-filter',
    },
    { name: 'rate-limit windows (one per client)', scope: 'client', partitions: 1, match: (t) => t === s.tables.rateLimits },
    { name: 'other', scope: 'service', partitions: 1, match: () => true },
  ];
}

export interface ClassFigure {
  name: string;
  scope: Scope;
  partitions_seen: number;
  partitions_at_speed: number;
  /** As measured in the scenario. */
  wcu_per_event: number;
  rcu_per_event: number;
  /** Per event at full speed (every round full), what the ceiling is computed from. */
  full_wcu_per_event: number;
  /** For the head: what one commit costs it, and what refused lease attempts cost it per event. */
  wcu_per_commit?: number;
  refused_wcu_per_event?: number;
  /** Events/s at which this class's busiest partition reaches its limit (null: does not bind that scope). */
  ceiling_events_per_s: number | null;
}

export interface CapacityModel {
  events: number;
  commits: number;
  wcu_per_event: number;
  rcu_per_event: number;
  ledger_table_wcu_per_event: number;
  writes_priced_without_earlier_image: number;
  busiest_partition: { key: string; wcu_per_event: number; rcu_per_event: number };
  classes: ClassFigure[];
  /** The lower of the write-unit bound and the latency bound (when the scenario's serial counts were given). */
  one_chain: { events_per_s: number; bound_by: string; write_unit_bound: number; latency_bound?: number };
  latency?: LatencyBound;
  /** Per entity id: the by-entity index partition of one entity. */
  one_entity_events_per_s: number | null;
  service: { chains: number; events_per_s: number; bound_by: string }[];
  table_quota_events_per_s: number;
}

/** Turns one scenario's priced requests into the model: units per event, the busiest partition, ceilings. */
export function capacityModel(
  delta: CapacityTotals,
  events: number,
  commits: number,
  unknownBefore: number,
  settings: ModelSettings,
  serial?: SerialCounts,
): CapacityModel {
  const defs = classes(settings);
  const full = roundWriteUnits(settings.batchMax, settings.pendingShards);
  const perClass = new Map<string, { wcu: number; rcu: number; failed: number; partitions: Map<string, { wcu: number; rcu: number }> }>();
  let wcu = 0;
  let rcu = 0;
  let ledgerWcu = 0;
  let busiest = { key: '-', wcu: 0, rcu: 0 };
  for (const [key, units] of Object.entries(delta)) {
    const [table = '', index = '', ...rest] = key.split('|');
    const pk = rest.join('|');
    const def = defs.find((d) => d.match(table, index, pk))!;
    const c = perClass.get(def.name) ?? { wcu: 0, rcu: 0, failed: 0, partitions: new Map() };
    c.wcu += units.wcu;
    c.rcu += units.rcu;
    c.failed += units.failed ?? 0;
    c.partitions.set(key, units);
    perClass.set(def.name, c);
    wcu += units.wcu;
    rcu += units.rcu;
    if (table === settings.tables.ledger && index === '') ledgerWcu += units.wcu;
    if (units.wcu > busiest.wcu) busiest = { key, wcu: units.wcu, rcu: units.rcu };
  }
  const e = Math.max(1, events);
  const figures: ClassFigure[] = defs
    .filter((d) => perClass.has(d.name))
    .map((d) => {
      const c = perClass.get(d.name)!;
      // Per event at full speed: per-round writes spread over a full round's events; reads as measured.
      const wPerEvent =
        d.perRound === 'head'
          ? (c.wcu - c.failed) / Math.max(1, commits) / settings.batchMax + c.failed / e
          : d.perRound === 'segment' || d.perRound === 'round' || d.perRound === 'seals'
            ? full[d.perRound] / settings.batchMax
            : c.wcu / e;
      // Reads as measured, but those made once a round: a leader's read of every pending shard (sized for a
      // full round), and a stream batch's look-ups (a round's records come in one batch here, in batches of
      // 100 records, the event source mapping's, at full speed).
      const rPerEvent =
        d.perRound === 'broadcast'
          ? ((c.rcu / Math.max(1, commits)) * Math.ceil(settings.batchMax / STREAM_BATCH)) / settings.batchMax
          : d.perRound === 'pending'
            ? full.pendingReads / settings.batchMax
            : c.rcu / e;
      const bound =
        d.scope === 'chain' || d.scope === 'service' || d.scope === 'entity'
          ? Math.min(
              wPerEvent > 0 ? (PARTITION_WCU * d.partitions) / wPerEvent : Infinity,
              rPerEvent > 0 ? (PARTITION_RCU * d.partitions) / rPerEvent : Infinity,
            )
          : Infinity;
      return {
        name: d.name,
        scope: d.scope,
        partitions_seen: c.partitions.size,
        partitions_at_speed: d.partitions,
        wcu_per_event: round(c.wcu / e, 3),
        rcu_per_event: round(c.rcu / e, 3),
        full_wcu_per_event: round(wPerEvent, 3),
        ...(d.perRound === 'head'
          ? { wcu_per_commit: round((c.wcu - c.failed) / Math.max(1, commits), 2), refused_wcu_per_event: round(c.failed / e, 3) }
          : {}),
        ceiling_events_per_s: Number.isFinite(bound) ? Math.round(bound) : null,
      };
    });
  const lowest = (scope: Scope) =>
    figures
      .filter((f) => f.scope === scope && f.ceiling_events_per_s !== null)
      .reduce<ClassFigure | undefined>((m, f) => (!m || f.ceiling_events_per_s! < m.ceiling_events_per_s! ? f : m), undefined);
  const chainBound = lowest('chain');
  const serviceBound = lowest('service');
  const tableQuota = Math.round(TABLE_QUOTA_WCU / Math.max(1e-9, ledgerWcu / e));
  const writeUnitBound = chainBound?.ceiling_events_per_s ?? Infinity;
  const latency = serial ? latencyBound(serial, settings.batchMax, settings.maxLeadMs) : undefined;
  const latencyLimits = latency !== undefined && latency.full.events_per_s < writeUnitBound;
  const oneChain = latencyLimits ? latency.full.events_per_s : writeUnitBound;
  const oneChainBy = latencyLimits ? 'commit latency (serial commits)' : (chainBound?.name ?? '-');
  return {
    events,
    commits,
    wcu_per_event: round(wcu / e, 2),
    rcu_per_event: round(rcu / e, 2),
    ledger_table_wcu_per_event: round(ledgerWcu / e, 2),
    writes_priced_without_earlier_image: unknownBefore,
    busiest_partition: { key: busiest.key, wcu_per_event: round(busiest.wcu / e, 3), rcu_per_event: round(busiest.rcu / e, 3) },
    classes: figures,
    one_chain: {
      events_per_s: oneChain,
      bound_by: oneChainBy,
      write_unit_bound: writeUnitBound,
      ...(latency ? { latency_bound: latency.full.events_per_s } : {}),
    },
    ...(latency ? { latency } : {}),
    one_entity_events_per_s: lowest('entity')?.ceiling_events_per_s ?? null,
    service: [1, 100, 10_000].map((chains) => {
      const byChains = chains * oneChain;
      const byService = serviceBound?.ceiling_events_per_s ?? Infinity;
      return byChains <= byService
        ? { chains, events_per_s: byChains, bound_by: `${chains} × one chain (${oneChainBy})` }
        : { chains, events_per_s: byService, bound_by: serviceBound!.name };
    }),
    table_quota_events_per_s: tableQuota,
  };
}

const n = (x: number) => x.toLocaleString('en-US');

/** The model as text: the README's "How it scales on AWS" figures. */
export function formatModel(model: CapacityModel, scenario: string, settingsNote: Pick<ModelSettings, 'batchMax'>): string {
  const lines = [
    `Capacity model (${scenario}: ${n(model.events)} events, ${n(model.commits)} commits)`,
    `  per event: ${model.wcu_per_event} WCU, ${model.rcu_per_event} RCU (ledger table ${model.ledger_table_wcu_per_event} WCU); busiest partition ${model.busiest_partition.key} ${model.busiest_partition.wcu_per_event} WCU/event`,
    `  ${'class'.padEnd(44)} ${'WCU/event'.padStart(9)} ${'RCU/event'.padStart(9)} ${'at speed'.padStart(9)} ${'parts'.padStart(5)}  ceiling events/s`,
    ...model.classes.map(
      (c) =>
        `  ${c.name.padEnd(44)} ${String(c.wcu_per_event).padStart(9)} ${String(c.rcu_per_event).padStart(9)} ${String(c.full_wcu_per_event).padStart(9)} ${String(c.partitions_at_speed).padStart(5)}  ${c.ceiling_events_per_s === null ? `(${c.scope})` : n(c.ceiling_events_per_s)}${c.wcu_per_commit !== undefined ? `  (${c.wcu_per_commit} WCU per commit; rounds of ${settingsNote.batchMax} events at speed; + ${c.refused_wcu_per_event} per event refused)` : ''}`,
    ),
    ...(model.latency
      ? [
          `  serial path per commit (measured): ${model.latency.per_commit.transactions} transactions, ${model.latency.per_commit.lease_takes} lease takes, ${model.latency.per_commit.pending_reads} pending reads, ${model.latency.per_commit.round_writes} other writes, ${model.latency.per_commit.events} events: ${model.latency.measured.round_ms} ms at AWS latencies`,
          `  latency bound (${AWS_LATENCY_MS.request} ms a request, ${AWS_LATENCY_MS.batchWave} ms a wave of batch writes, ${AWS_LATENCY_MS.transactionFew}–${AWS_LATENCY_MS.transactionMany} ms a transaction): full rounds of ${model.latency.full.events_per_round} events, ${model.latency.full.rounds_per_lead} per lead, ${model.latency.full.round_ms} ms = ${model.latency.full.rounds_per_s} rounds/s = ${n(model.latency.full.events_per_s)} events/s; p99 append ≈ ${model.latency.p99_append_ms} ms`,
        ]
      : []),
    `  one chain: ${n(model.one_chain.events_per_s)} events/s (bound by ${model.one_chain.bound_by}; write units ${n(model.one_chain.write_unit_bound)}${model.one_chain.latency_bound !== undefined ? `, latency ${n(model.one_chain.latency_bound)}` : ''}); one entity id: ${model.one_entity_events_per_s === null ? '-' : n(model.one_entity_events_per_s)} events/s`,
    ...model.service.map((s) => `  service, ${n(s.chains)} chain(s): ${n(s.events_per_s)} events/s (bound by ${s.bound_by})`),
    `  the ledger table's default quota (${n(TABLE_QUOTA_WCU)} WCU/s, raisable): ${n(model.table_quota_events_per_s)} events/s`,
    ...(model.writes_priced_without_earlier_image
      ? [
          `  (${model.writes_priced_without_earlier_image} updates priced without the item's earlier image: items this instance had not read whole; a lower bound)`,
        ]
      : []),
  ];
  return lines.join('\n');
}
