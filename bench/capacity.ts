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
  one_chain: { events_per_s: number; bound_by: string };
  /** Per entity id: the by-entity index partition of one entity. */
  one_entity_events_per_s: number | null;
  service: { chains: number; events_per_s: number; bound_by: string }[];
  table_quota_events_per_s: number;
}

/** Turns one scenario's priced requests into the model: units per event, the busiest partition, ceilings. */
export function capacityModel(delta: CapacityTotals, events: number, commits: number, unknownBefore: number, settings: ModelSettings): CapacityModel {
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
  const oneChain = chainBound?.ceiling_events_per_s ?? Infinity;
  return {
    events,
    commits,
    wcu_per_event: round(wcu / e, 2),
    rcu_per_event: round(rcu / e, 2),
    ledger_table_wcu_per_event: round(ledgerWcu / e, 2),
    writes_priced_without_earlier_image: unknownBefore,
    busiest_partition: { key: busiest.key, wcu_per_event: round(busiest.wcu / e, 3), rcu_per_event: round(busiest.rcu / e, 3) },
    classes: figures,
    one_chain: { events_per_s: oneChain, bound_by: chainBound?.name ?? '-' },
    one_entity_events_per_s: lowest('entity')?.ceiling_events_per_s ?? null,
    service: [1, 100, 10_000].map((chains) => {
      const byChains = chains * oneChain;
      const byService = serviceBound?.ceiling_events_per_s ?? Infinity;
      return byChains <= byService
        ? { chains, events_per_s: byChains, bound_by: `${chains} × one chain (${chainBound?.name ?? '-'})` }
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
    `  one chain: ${n(model.one_chain.events_per_s)} events/s (bound by ${model.one_chain.bound_by}); one entity id: ${model.one_entity_events_per_s === null ? '-' : n(model.one_entity_events_per_s)} events/s`,
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
