/**
 * The capacity model of `npm run bench`: what a scenario's DynamoDB requests cost per partition (priced
 * by shared/storage/capacity.ts inside every instance, from the real requests), turned into units per
 * event and into the throughput at which the busiest partition reaches DynamoDB's per-partition limits
 * (1,000 WCU/s, 3,000 RCU/s). DynamoDB Local enforces none of them; this is how the key design is priced.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CapacityReport } from '#shared/storage/capacity-report';
import type { CapacityTotals } from '#shared/storage/capacity';
import { round } from './resources.ts';

export const PARTITION_WCU = 1_000;
export const PARTITION_RCU = 3_000;
/** An on-demand table's default throughput quota per table (raisable through Service Quotas). */
export const TABLE_QUOTA_WCU = 40_000;

/**
 * What a request takes on AWS, for the latency bound: conservative figures, not measurements (DynamoDB's own
 * promise is "single-digit millisecond" latency per request; a transaction is two-phase, its latency growing
 * with its items: docs/capacity.md, "The latency bound", gives the reasoning and a public comparison).
 */
export const AWS_LATENCY_MS = { singleItem: 5, transactionFew: 15, transactionHundred: 25 } as const;

/** A TransactWriteItems of `items` items: 15 ms for a few, rising linearly to 25 ms at DynamoDB's limit of 100. */
export function transactionMs(items: number): number {
  const { transactionFew, transactionHundred } = AWS_LATENCY_MS;
  return transactionFew + ((transactionHundred - transactionFew) * Math.min(99, Math.max(0, items - 1))) / 99;
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
}

/** One chain's commits are serial: each is conditional on the head the one before left. */
export interface LatencyBound {
  per_commit: { transactions: number; items_per_transaction: number; lease_takes: number; pending_reads: number; events: number };
  /** A commit's serial path on AWS, at the measured mix, and what it gives. */
  measured: { round_ms: number; rounds_per_s: number; events_per_s: number };
  /** The same with every commit full (SVC_APPEND_BATCH_MAX events), as at the ceiling. */
  full: { events_per_commit: number; items_per_transaction: number; round_ms: number; rounds_per_s: number; events_per_s: number };
  /** A follower's append at full speed: its pending write, a round it waits for, its own round, its receipt read. */
  p99_append_ms: number;
}

export function latencyBound(counts: SerialCounts, batchMax: number): LatencyBound {
  const commits = Math.max(1, counts.commits);
  const perCommit = {
    transactions: counts.transactWrites / commits,
    items_per_transaction: counts.transactItems / Math.max(1, counts.transactWrites),
    lease_takes: counts.leaseTakes / commits,
    pending_reads: counts.pendingReads / commits,
    events: counts.events / commits,
  };
  const single = AWS_LATENCY_MS.singleItem;
  const roundMs = (items: number) => perCommit.transactions * transactionMs(items) + (perCommit.lease_takes + perCommit.pending_reads) * single;
  const measuredRound = roundMs(perCommit.items_per_transaction);
  // A full commit: the head, and each event's items as measured (its block, its pending append's delete, its receipt…).
  const itemsPerEvent = Math.max(0, counts.transactItems - counts.transactWrites) / Math.max(1, counts.events);
  const fullItems = Math.min(100, 1 + itemsPerEvent * batchMax);
  const fullRound = roundMs(fullItems);
  return {
    per_commit: Object.fromEntries(Object.entries(perCommit).map(([k, v]) => [k, round(v, 2)])) as LatencyBound['per_commit'],
    measured: {
      round_ms: round(measuredRound, 1),
      rounds_per_s: round(1000 / measuredRound, 1),
      events_per_s: Math.round((1000 / measuredRound) * perCommit.events),
    },
    full: {
      events_per_commit: batchMax,
      items_per_transaction: round(fullItems, 1),
      round_ms: round(fullRound, 1),
      rounds_per_s: round(1000 / fullRound, 1),
      events_per_s: Math.round((1000 / fullRound) * batchMax),
    },
    p99_append_ms: Math.round(2 * single + 2 * fullRound),
  };
}

/** The sum of every instance's report in `dir`. */
export function readCapacity(dir: string): { totals: CapacityTotals; unknownBefore: number } {
  const totals: CapacityTotals = {};
  let unknownBefore = 0;
  if (!existsSync(dir)) return { totals, unknownBefore };
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    let report: CapacityReport;
    try {
      report = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CapacityReport;
    } catch {
      continue; // a file being replaced; the next read has it
    }
    unknownBefore += report.unknownBefore;
    for (const [key, units] of Object.entries(report.totals)) {
      const total = (totals[key] ??= { wcu: 0, rcu: 0, failed: 0 });
      total.wcu += units.wcu;
      total.rcu += units.rcu;
      total.failed! += units.failed ?? 0;
    }
  }
  return { totals, unknownBefore };
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

/** How a class of partitions grows with the service. */
type Scope = 'chain' | 'entity' | 'writer' | 'client' | 'spread' | 'service';

interface ClassDef {
  name: string;
  scope: Scope;
  /** Partitions one chain (or the service, for service scope) spreads this class's load over at full speed. */
  partitions: number;
  /**
   * Its successful writes are paid per combining commit rather than per event (at the ceiling every
   * commit is full); its refused writes (a lease already taken) stay per event.
   */
  perCommit?: boolean;
  match: (table: string, index: string, pk: string) => boolean;
}

export interface ModelSettings {
  tables: { ledger: string; registry: string; rateLimits: string; connections: string };
  blockShards: number;
  pendingShards: number;
  metricsShards: number;
  batchMax: number;
}

function classes(s: ModelSettings): ClassDef[] {
  const ledger = (table: string, index: string) => table === s.tables.ledger && index === '';
  return [
    { name: 'chain head', scope: 'chain', partitions: 1, perCommit: true, match: (t, i, pk) => ledger(t, i) && /^CHAIN#[^#]+$/.test(pk) },
    { name: 'chain blocks', scope: 'chain', partitions: s.blockShards, match: (t, i, pk) => ledger(t, i) && /^CHAIN#[^#]+#\d+$/.test(pk) },
    { name: 'pending appends', scope: 'chain', partitions: s.pendingShards, match: (t, i, pk) => ledger(t, i) && pk.startsWith('PENDING#') },
    { name: 'receipts (one partition per instance)', scope: 'writer', partitions: 1, match: (t, i, pk) => ledger(t, i) && pk.startsWith('RECEIPT#') },
    { name: 'chain list', scope: 'service', partitions: 1, match: (t, i, pk) => ledger(t, i) && pk === 'CHAINS' },
    { name: 'by-hash index', scope: 'spread', partitions: 1, match: (t, i) => t === s.tables.ledger && i === 'by-hash' },
    { name: 'by-entity index (one partition per entity)', scope: 'entity', partitions: 1, match: (t, i) => t === s.tables.ledger && i === 'by-entity' },
    { name: 'metrics counters', scope: 'service', partitions: s.metricsShards, match: (t, _i, pk) => t === s.tables.registry && pk.startsWith('METRICS') },
    { name: 'rate-limit windows (one per client)', scope: 'client', partitions: 1, match: (t) => t === s.tables.rateLimits },
    { name: 'other', scope: 'service', partitions: 1, match: () => true },
  ];
}

export interface ClassFigure {
  name: string;
  scope: Scope;
  partitions_seen: number;
  partitions_at_speed: number;
  wcu_per_event: number;
  rcu_per_event: number;
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
      // Per event at full speed: the head's cost is per commit, and at the ceiling each commit is full.
      const wPerEvent = d.perCommit ? (c.wcu - c.failed) / Math.max(1, commits) / settings.batchMax + c.failed / e : c.wcu / e;
      const rPerEvent = d.perCommit ? c.rcu / Math.max(1, commits) / settings.batchMax : c.rcu / e;
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
        ...(d.perCommit ? { wcu_per_commit: round((c.wcu - c.failed) / Math.max(1, commits), 2), refused_wcu_per_event: round(c.failed / e, 3) } : {}),
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
  const latency = serial ? latencyBound(serial, settings.batchMax) : undefined;
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
    `  ${'class'.padEnd(44)} ${'WCU/event'.padStart(9)} ${'RCU/event'.padStart(9)} ${'parts'.padStart(5)}  ceiling events/s`,
    ...model.classes.map(
      (c) =>
        `  ${c.name.padEnd(44)} ${String(c.wcu_per_event).padStart(9)} ${String(c.rcu_per_event).padStart(9)} ${String(c.partitions_at_speed).padStart(5)}  ${c.ceiling_events_per_s === null ? `(${c.scope})` : n(c.ceiling_events_per_s)}${c.wcu_per_commit !== undefined ? `  (${c.wcu_per_commit} WCU per commit of ${settingsNote.batchMax} events, + ${c.refused_wcu_per_event} per event refused)` : ''}`,
    ),
    ...(model.latency
      ? [
          `  serial path per commit (measured): ${model.latency.per_commit.transactions} transactions of ${model.latency.per_commit.items_per_transaction} items, ${model.latency.per_commit.lease_takes} lease takes, ${model.latency.per_commit.pending_reads} pending reads, ${model.latency.per_commit.events} events`,
          `  latency bound at AWS latencies (${AWS_LATENCY_MS.singleItem} ms a request, ${AWS_LATENCY_MS.transactionFew}–${AWS_LATENCY_MS.transactionHundred} ms a transaction): measured mix ${model.latency.measured.round_ms} ms a commit = ${n(model.latency.measured.events_per_s)} events/s; full commits (${model.latency.full.events_per_commit} events, ${model.latency.full.items_per_transaction} items) ${model.latency.full.round_ms} ms = ${model.latency.full.rounds_per_s} commits/s = ${n(model.latency.full.events_per_s)} events/s; p99 append ≈ ${model.latency.p99_append_ms} ms`,
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
