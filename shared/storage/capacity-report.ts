/**
 * Writes what this process's DynamoDB requests cost, per partition, to a file the bench reads
 * (SVC_CAPACITY_REPORT_DIR; unset everywhere but in `npm run bench`). One file per process or worker
 * thread (a local Lambda instance). At most five times a second while requests come in, a line is appended with
 * the totals of the partitions that changed since the last line, so the totals survive an instance that is
 * stopped without warning, and a report costs what changed, not what the process ever touched. (Rewriting
 * every total each time, tens of thousands of partitions by the bench's read scenarios, a record's each,
 * took about 14 % of a core, busy or idle: bench/probes/meter-cost.ts.)
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { CapacityMeter, tableShape, type CapacityTotals } from './capacity.ts';
import { meterDynamoRequests } from './client.ts';

/** A line of the file: each partition's totals as they stood then (a later line's replace an earlier's). */
export interface CapacityReport {
  totals: CapacityTotals;
  unknownBefore: number;
}

const REPORT_SUFFIX = '.jsonl';
/** How often a process appends what changed: the bench waits this long, and a little more, for the counts of a scenario. */
export const REPORT_EVERY_MS = 200;

export function reportCapacity(dir: string, tables: CreateTableCommandInput[]): { meter: CapacityMeter; write: () => void } {
  mkdirSync(dir, { recursive: true });
  const meter = new CapacityMeter(Object.fromEntries(tables.map((t) => [t.TableName!, tableShape(t)])));
  meterDynamoRequests(meter);
  const file = join(dir, `capacity-${process.pid}-${threadId}${REPORT_SUFFIX}`);
  let unknownWritten = -1;
  const write = () => {
    const totals = meter.takeChanged();
    if (Object.keys(totals).length === 0 && meter.unknownBefore === unknownWritten) return;
    appendFileSync(file, `${JSON.stringify({ totals, unknownBefore: meter.unknownBefore } satisfies CapacityReport)}\n`);
    unknownWritten = meter.unknownBefore;
  };
  setInterval(write, REPORT_EVERY_MS).unref();
  process.on('exit', write);
  return { meter, write };
}

/** Every process's totals in `dir`, added up: the last line of a file has the newest of what it names. */
export function readCapacity(dir: string): CapacityReport {
  const totals: CapacityTotals = {};
  let unknownBefore = 0;
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(REPORT_SUFFIX));
  } catch {
    return { totals, unknownBefore };
  }
  for (const file of files) {
    const latest: CapacityTotals = {};
    let unknown = 0;
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      let report: CapacityReport;
      try {
        report = JSON.parse(line) as CapacityReport;
      } catch {
        continue; // an empty line, or one being written when the process stopped
      }
      Object.assign(latest, report.totals);
      unknown = report.unknownBefore;
    }
    unknownBefore += unknown;
    for (const [key, units] of Object.entries(latest)) {
      const total = (totals[key] ??= { wcu: 0, rcu: 0, failed: 0 });
      total.wcu += units.wcu;
      total.rcu += units.rcu;
      total.failed! += units.failed ?? 0;
    }
  }
  return { totals, unknownBefore };
}
