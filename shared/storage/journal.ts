/**
 * A local journal of acknowledged writes, for DynamoDB Local only.
 *
 * DynamoDB Local answers a write a moment before its SQLite file holds it: killed right after (the whole
 * local stack SIGKILLed, a laptop's power cut), it comes back without its last writes, acknowledged or not
 * (measured: the last transaction lost in 3 of 4 runs with one writer; none lost when the kill came 200 ms
 * later). AWS's DynamoDB is durable when it answers, so the cloud needs none of this. Locally, every
 * successful transaction, and every single-item or batch write to the ledger table (an append's body is a
 * pending item, its commit an update of the head, its records a batch), is appended to a journal file and
 * fsync'd before the service sees the answer; the launcher replays the journal at start, oldest first, and
 * then clears it: a transaction only if it is not in the table (probing one item it creates), a single
 * write with its own condition (one that landed fails it: a conditional write is never applied twice; the
 * unconditional ones write the same item again), a batch again (its puts are of whole items).
 */
import { closeSync, existsSync, fstatSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import {
  BatchWriteItemCommand,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { journalDynamoWrites, type JournaledWrite } from './client.ts';

/** A journal file is set aside at this size (one older file is kept; DynamoDB Local's lag is milliseconds). */
const ROTATE_BYTES = 8 * 1024 * 1024;

/** A journaled write; `items` alone: a transaction journaled by an earlier version. */
interface Entry {
  t: number;
  items?: TransactWriteItem[];
  command?: JournaledWrite['command'];
  input?: Record<string, unknown>;
}

/** The journal files this process writes: not replayed (they hold this run's writes), not cleared. */
const ownFiles = new Set<string>();

/**
 * An unconditional ADD (a witness's cosignature count): applied again it would count twice, and a count
 * is a statistic, not acknowledged ledger data; it is not journaled.
 */
function isCounter(write: JournaledWrite): boolean {
  return write.command === 'UpdateItemCommand' && /\bADD\s/.test(String(write.input.UpdateExpression ?? '')) && !write.input.ConditionExpression;
}

/** The table a single-item or batch write goes to. */
function tablesOf(write: JournaledWrite): string[] {
  if (write.command === 'BatchWriteItemCommand') return Object.keys((write.input.RequestItems as Record<string, unknown>) ?? {});
  return [String(write.input.TableName ?? '')];
}

/**
 * Journals every transaction this process commits, and every other write it makes to `ledgerTable`, in `dir`
 * (one file per process or worker thread). Times are taken when the answer arrives, to the microsecond, so
 * that writes one after the other (across instances too) replay in that order.
 */
export function journalWrites(dir: string, ledgerTable: string): () => void {
  mkdirSync(dir, { recursive: true });
  // Named for this start too: the launcher journals (its own functions' writes, and the replay's) while it
  // replays, and a replay reads and clears only the files of earlier runs.
  const file = join(dir, `journal-${process.pid}-${threadId}-${Date.now()}.jsonl`);
  ownFiles.add(file);
  ownFiles.add(file.replace(/\.jsonl$/, '.old.jsonl'));
  let fd = openSync(file, 'a');
  let size = fstatSync(fd).size;
  journalDynamoWrites((write) => {
    if (write.command !== 'TransactWriteItemsCommand' && !tablesOf(write).includes(ledgerTable)) return;
    if (isCounter(write)) return;
    const entry: Entry = { t: performance.timeOrigin + performance.now(), command: write.command, input: write.input };
    const line = `${JSON.stringify(entry, binaryAsBase64)}\n`;
    size += writeSync(fd, line);
    fsyncSync(fd);
    if (size > ROTATE_BYTES) {
      closeSync(fd);
      renameSync(file, file.replace(/\.jsonl$/, '.old.jsonl'));
      fd = openSync(file, 'a');
      size = 0;
    }
  });
  // Stops journaling; the file stays, for the next start to replay.
  return () => {
    journalDynamoWrites(undefined);
    closeSync(fd);
    ownFiles.delete(file);
    ownFiles.delete(file.replace(/\.jsonl$/, '.old.jsonl'));
  };
}

/** Binary values (a Buffer reaches the replacer already as {type: 'Buffer', data}) as base64, to be revived. */
function binaryAsBase64(_: string, v: unknown): unknown {
  if (v instanceof Uint8Array) return { $b: Buffer.from(v).toString('base64') };
  if (v && typeof v === 'object' && (v as { type?: unknown }).type === 'Buffer' && Array.isArray((v as { data?: unknown }).data)) {
    return { $b: Buffer.from((v as { data: number[] }).data).toString('base64') };
  }
  return v;
}

const revive = (_: string, v: unknown) => (v && typeof v === 'object' && '$b' in v ? Buffer.from(String((v as { $b: string }).$b), 'base64') : v);

/** The entries of every journal file in `dir`, oldest first; a line cut short by the kill is skipped. */
function readEntries(dir: string): { entries: Entry[]; files: string[] } {
  if (!existsSync(dir)) return { entries: [], files: [] };
  const files = readdirSync(dir)
    .filter((f) => f.startsWith('journal-') && f.endsWith('.jsonl'))
    .map((f) => join(dir, f))
    .filter((f) => !ownFiles.has(f));
  const entries: Entry[] = [];
  for (const file of files) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      try {
        entries.push(JSON.parse(line, revive) as Entry);
      } catch {
        // the last line of a file whose write was cut short: its transaction was never acknowledged
      }
    }
  }
  return { entries: entries.sort((a, b) => a.t - b.t), files };
}

/** An item the transaction creates, to tell whether it is in the table: a Put made only if absent, else any Put. */
function probeOf(items: TransactWriteItem[]): { TableName: string; Key: Record<string, AttributeValue> } | undefined {
  const puts = items.map((i) => i.Put).filter((p): p is NonNullable<TransactWriteItem['Put']> => p !== undefined);
  const put = puts.find((p) => /attribute_not_exists/.test(p.ConditionExpression ?? '')) ?? puts[0];
  if (!put?.Item || !put.TableName) return undefined;
  const key: Record<string, AttributeValue> = {};
  for (const name of ['pk', 'sk']) if (put.Item[name]) key[name] = put.Item[name]!;
  return Object.keys(key).length ? { TableName: put.TableName, Key: key } : undefined;
}

export interface ReplayReport {
  entries: number;
  /** Writes applied again: the transactions below, and every single-item or batch write whose condition held. */
  replayed: number;
  /** Journaled transactions the table lacked (their item missing): acknowledged writes it had lost, restored. */
  restored: number;
  /** Journaled transactions that were missing and could not be applied again (their conditions failed). */
  failed: number;
}

/** Applies again, oldest first, what of the journal the table lacks; then clears the journal. */
export async function replayJournal(dir: string, client: DynamoDBClient): Promise<ReplayReport> {
  const { entries, files } = readEntries(dir);
  const report: ReplayReport = { entries: entries.length, replayed: 0, restored: 0, failed: 0 };
  for (const entry of entries) {
    const items = entry.items ?? (entry.command === 'TransactWriteItemsCommand' ? (entry.input?.TransactItems as TransactWriteItem[]) : undefined);
    if (items) {
      const probe = probeOf(items);
      if (!probe) continue;
      const found = await client.send(new GetItemCommand({ ...probe, ConsistentRead: true, ProjectionExpression: 'pk' }));
      if (found.Item) continue;
      try {
        await client.send(new TransactWriteItemsCommand({ TransactItems: items }));
        report.replayed += 1;
        report.restored += 1;
      } catch {
        report.failed += 1;
      }
      continue;
    }
    if (!entry.input) continue;
    try {
      // One of four command types; send() is typed per command, so the union is passed as such.
      await client.send(singleWrite(entry.command!, entry.input) as never);
      report.replayed += 1;
    } catch (error) {
      // Landed before the stop: its condition says so now.
      if (!(error instanceof ConditionalCheckFailedException)) report.failed += 1;
    }
  }
  for (const file of files) unlinkSync(file);
  return report;
}

/** The command a journaled single-item or batch write is sent again as (its return options dropped). */
function singleWrite(command: NonNullable<Entry['command']>, input: Record<string, unknown>) {
  const { ReturnValues: _r, ReturnValuesOnConditionCheckFailure: _f, ReturnConsumedCapacity: _c, ...rest } = input;
  switch (command) {
    case 'PutItemCommand':
      return new PutItemCommand(rest as never);
    case 'UpdateItemCommand':
      return new UpdateItemCommand(rest as never);
    case 'DeleteItemCommand':
      return new DeleteItemCommand(rest as never);
    default:
      return new BatchWriteItemCommand(rest as never);
  }
}
