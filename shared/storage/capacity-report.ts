/**
 * Writes what this process's DynamoDB requests cost, per partition, to a file the bench reads
 * (SVC_CAPACITY_REPORT_DIR; unset everywhere but in `npm run bench`). One file per process or worker
 * thread (a local Lambda instance), rewritten at most twice a second while requests come in, so the
 * totals survive an instance that is stopped without warning.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { CapacityMeter, tableShape, type CapacityTotals } from './capacity.ts';
import { meterDynamoRequests } from './client.ts';

/** The file's content. */
export interface CapacityReport {
  totals: CapacityTotals;
  unknownBefore: number;
}

export function reportCapacity(dir: string, tables: CreateTableCommandInput[]): CapacityMeter {
  mkdirSync(dir, { recursive: true });
  const meter = new CapacityMeter(Object.fromEntries(tables.map((t) => [t.TableName!, tableShape(t)])));
  meterDynamoRequests(meter);
  const file = join(dir, `capacity-${process.pid}-${threadId}.json`);
  let written = '';
  const write = () => {
    const text = JSON.stringify({ totals: meter.totals, unknownBefore: meter.unknownBefore } satisfies CapacityReport);
    if (text === written) return;
    writeFileSync(`${file}.tmp`, text);
    renameSync(`${file}.tmp`, file);
    written = text;
  };
  setInterval(write, 500).unref();
  process.on('exit', write);
  return meter;
}
