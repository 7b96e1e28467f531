/**
 * A simulated DynamoDB that keeps DynamoDB's rules, for the deterministic simulation of the append protocol
 * (docs/simulation.md). It answers the wire protocol's operations (JSON 1.0, items as AttributeValues) on
 * the service's own table definitions, and it has no clock or randomness of its own: the caller says when a
 * request arrives, and draws every choice from the run's seed.
 *
 * What it keeps, and the rule each follows (Amazon DynamoDB Developer Guide):
 * - Conditional writes and transactions are atomic. A transaction decides at arrival (every condition, and
 *   no item held by another transaction in flight) and holds its items until it commits `transactionMs`
 *   later: another transaction on them is cancelled with TransactionConflict, a single write refused with
 *   TransactionConflictException ("Transaction conflict handling"). A ClientRequestToken makes a retry of a
 *   transaction that already committed answer as the first did, for 10 minutes ("Idempotency").
 * - A strongly consistent read sees every write acknowledged before it arrived; an eventually consistent one
 *   (and every index query) answers the table as it was at some moment of the last `eventualWindowMs`
 *   ("Read consistency"), drawn per request.
 * - Each partition key serves 1,000 WCU and 3,000 RCU a second ("Partitions and data distribution"): past
 *   that in the last second, the request is refused with ProvisionedThroughputExceededException (not billed,
 *   nothing written), which the SDK retries with backoff.
 * - Billing: a write costs 1 WCU per started KB of the larger of the item before and after, twice inside a
 *   transaction, and a write to each index the item is in; a failed condition is billed; a read 1 RCU per
 *   started 4 KB, half when eventually consistent, twice when transactional.
 * - TTL deletes an item some time after its `ttl` (epoch seconds) has passed: `expire()` deletes those whose
 *   deletion time, drawn per item within `ttlDelayMs`, has come.
 */
import type { AttributeValue, CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { type IndexShape, projected, type TableShape, tableShape, valueSize as sdkValueSize } from '#shared/storage/capacity';
import {
  applyActions,
  bytesOf,
  compareKeys,
  evaluate,
  type Item,
  parseCondition,
  parseProjection,
  parseUpdate,
  project,
  sameValue,
  ValidationException,
} from './expressions.ts';

export interface TableDefinition {
  definition: CreateTableCommandInput;
  ttlAttribute?: string;
}

export interface EngineOptions {
  tables: Record<string, TableDefinition>;
  /** How far back an eventually consistent read may answer from (ms). */
  eventualWindowMs: number;
  /**
   * The share of eventually consistent reads that may lag (the rest answer the table as it is): 1 (every one,
   * the adversarial model the invariants are checked under) unless given. DynamoDB acknowledges a write once two
   * of a partition's three replicas have it and serves an eventually consistent read from any of the three.
   */
  laggingShare?: number;
  /** How long a transaction of `items` holds them between its decision and its commit (ms), drawn per transaction. */
  transactionMs: (items: number) => number;
  /** TTL deletes an expired item within this long after its expiry (ms): [least, most]. */
  ttlDelayMs: readonly [number, number];
  /** The per-partition limits a second. */
  partitionWcu: number;
  partitionRcu: number;
  /** A number in [0, 1), from the run's seed. */
  random: () => number;
}

/** What a request was charged, per partition key (`table|index|pk`). */
export interface Charge {
  partition: string;
  wcu: number;
  rcu: number;
}

export type Outcome =
  | { ok: true; output: Record<string, unknown> }
  | { ok: false; type: string; message: string; extra?: Record<string, unknown>; retryable?: boolean };

/** The answer to a request: now, or (a transaction) once it commits `afterMs` later. */
export type Answer = { outcome: Outcome; charges: Charge[] } | { afterMs: number; commit: () => { outcome: Outcome; charges: Charge[] } };

interface Version {
  at: number;
  item: Item | undefined;
}

interface Stored {
  key: Item;
  versions: Version[];
  /** When TTL deletes it (ms), once drawn. */
  deleteAt?: number;
}

interface Table {
  name: string;
  shape: TableShape;
  ttlAttribute?: string;
  /** Items by partition key, then sort key (each a string of its scalar). */
  partitions: Map<string, Map<string, Stored>>;
}

const scalar = (value: AttributeValue | undefined): string => {
  if (!value) return '';
  if (value.S !== undefined) return `S${value.S}`;
  if (value.N !== undefined) return `N${Number(value.N)}`;
  if (value.B !== undefined) return `B${bytesOf(value.B).toString('base64')}`;
  throw new ValidationException('a key attribute must be a string, a number or a binary');
};
/**
 * An item's size as DynamoDB bills it (shared/storage/capacity.ts's rules), its binaries as they arrive on the wire
 * (base64, measured decoded). Walked in place: the size `sdkItemSize` gives a copy of the item whose base64 strings
 * are decoded (attributes without a value left out, as a JSON copy leaves them), without making that copy (a
 * JSON round trip of every item written was a twentieth of the simulation's CPU).
 */
function itemSize(item: Item): number {
  let size = sizes.get(item);
  if (size === undefined) {
    size = 0;
    for (const name of Object.keys(item)) {
      const value = item[name];
      if (value !== undefined) size += Buffer.byteLength(name, 'utf8') + wireValueSize(value);
    }
    sizes.set(item, size);
  }
  return size;
}
/** One value's size (capacity.ts's `valueSize`), a base64 binary measured decoded, inside lists and maps too. */
function wireValueSize(value: AttributeValue): number {
  const v = value as Record<string, any>;
  if (typeof v.B === 'string') return bytesOf(v.B).byteLength;
  if (v.L === undefined && v.M === undefined) return sdkValueSize(value);
  // (A value of another type first is measured as that type, as valueSize checks them in this order.)
  if (['S', 'N', 'B', 'BOOL', 'NULL', 'SS', 'NS', 'BS'].some((k) => v[k] !== undefined)) return sdkValueSize(value);
  let size = 3;
  if (v.L !== undefined) {
    for (const one of v.L as (AttributeValue | undefined)[]) if (one !== undefined) size += 1 + wireValueSize(one);
    return size;
  }
  const map = v.M as Record<string, AttributeValue | undefined>;
  for (const k of Object.keys(map)) {
    const one = map[k];
    if (one !== undefined) size += 1 + Buffer.byteLength(k, 'utf8') + wireValueSize(one);
  }
  return size;
}
/** Sizes of items already measured: an item is never changed once made (a write stores a new one). */
const sizes = new WeakMap<Item, number>();
const writeUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));
const readUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 4096));
const MAX_ITEM_BYTES = 400 * 1024;
const TOKEN_WINDOW_MS = 10 * 60_000;

function failure(type: string, message: string, extra?: Record<string, unknown>): Outcome {
  return { ok: false, type, message, ...(extra ? { extra } : {}) };
}

/**
 * DynamoDB refuses a request whose ExpressionAttributeValues or ExpressionAttributeNames hold a placeholder
 * none of its expressions uses ("Value provided in ExpressionAttributeValues unused in expressions").
 */
function checkPlaceholders(action: Record<string, any>): void {
  const text = ['ConditionExpression', 'UpdateExpression', 'KeyConditionExpression', 'FilterExpression', 'ProjectionExpression']
    .map((k) => action[k] ?? '')
    .join(' ');
  const used = new Set(text.match(/[:#][A-Za-z0-9_]+/g) ?? []);
  const unusedValues = Object.keys(action.ExpressionAttributeValues ?? {}).filter((k) => !used.has(k));
  if (unusedValues.length)
    throw new ValidationException(`Value provided in ExpressionAttributeValues unused in expressions: keys: {${unusedValues.join(', ')}}`);
  const unusedNames = Object.keys(action.ExpressionAttributeNames ?? {}).filter((k) => !used.has(k));
  if (unusedNames.length) throw new ValidationException(`Value provided in ExpressionAttributeNames unused in expressions: keys: {${unusedNames.join(', ')}}`);
}

export class SimDynamo {
  readonly tables = new Map<string, Table>();
  /** Items held by transactions in flight: `table|pk|sk` → until (ms). */
  private readonly held = new Map<string, number>();
  /** Transactions by ClientRequestToken: what they asked and answered, until the token expires. */
  private readonly tokens = new Map<string, { request: string; until: number; outcome: Outcome }>();
  /** Units consumed per partition in the last second: [at, wcu, rcu][]. */
  private readonly usage = new Map<string, [number, number, number][]>();
  /** Every charge since the start, per partition. */
  readonly totals = new Map<string, { wcu: number; rcu: number }>();
  throttled = 0;

  private readonly options: EngineOptions;
  constructor(options: EngineOptions) {
    this.options = options;
    for (const [name, spec] of Object.entries(options.tables)) {
      this.tables.set(name, { name, shape: tableShape(spec.definition), ttlAttribute: spec.ttlAttribute, partitions: new Map() });
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Storage

  private table(name: unknown): Table {
    const table = this.tables.get(String(name));
    if (!table) throw new NotFound(`Requested resource not found: Table: ${String(name)} not found`);
    return table;
  }

  private keyOf(table: Table, item: Item): Item {
    const key: Item = { [table.shape.partition]: item[table.shape.partition]! };
    if (key[table.shape.partition] === undefined) throw new ValidationException(`One of the required keys was not given a value: ${table.shape.partition}`);
    if (table.shape.sort) {
      if (item[table.shape.sort] === undefined) throw new ValidationException(`One of the required keys was not given a value: ${table.shape.sort}`);
      key[table.shape.sort] = item[table.shape.sort]!;
    }
    return key;
  }

  private ids(table: Table, key: Item): [string, string] {
    const shape = table.shape;
    const extra = Object.keys(key).filter((k) => k !== shape.partition && k !== shape.sort);
    if (extra.length) throw new ValidationException('The provided key element does not match the schema');
    return [scalar(key[shape.partition]), shape.sort ? scalar(key[shape.sort]) : ''];
  }

  private stored(table: Table, key: Item, create = false): Stored | undefined {
    const [pk, sk] = this.ids(table, key);
    let partition = table.partitions.get(pk);
    if (!partition) {
      if (!create) return undefined;
      partition = new Map();
      table.partitions.set(pk, partition);
    }
    let entry = partition.get(sk);
    if (!entry && create) {
      entry = { key, versions: [] };
      partition.set(sk, entry);
    }
    return entry;
  }

  /** The item now (strongly consistent). */
  current(tableName: string, key: Item): Item | undefined {
    return this.stored(this.table(tableName), key)?.versions.at(-1)?.item;
  }

  private asOf(entry: Stored, at: number): Item | undefined {
    for (let i = entry.versions.length - 1; i >= 0; i -= 1) if (entry.versions[i]!.at <= at) return entry.versions[i]!.item;
    return undefined;
  }

  /** Writes an item version at `now`, keeping the versions an eventually consistent read may still answer. */
  private put(table: Table, key: Item, item: Item | undefined, now: number): void {
    if (item && itemSize(item) > MAX_ITEM_BYTES) throw new ValidationException('Item size has exceeded the maximum allowed size');
    const entry = this.stored(table, key, true)!;
    entry.versions.push({ at: now, item });
    entry.deleteAt = undefined;
    const oldest = now - this.options.eventualWindowMs;
    // Keep the newest version older than the window (what a read at its start sees), and all after it.
    while (entry.versions.length > 1 && entry.versions[1]!.at <= oldest) entry.versions.shift();
  }

  /** Every item of a partition (table or index) as of `at` (Infinity: now), in sort key order. */
  private partitionAsOf(table: Table, index: IndexShape | undefined, pk: AttributeValue, at: number): Item[] {
    const items: Item[] = [];
    if (!index) {
      for (const entry of table.partitions.get(scalar(pk))?.values() ?? []) {
        const item = at === Number.POSITIVE_INFINITY ? entry.versions.at(-1)?.item : this.asOf(entry, at);
        if (item) items.push(item);
      }
    } else {
      // An index: a scan of the table as it was (the simulation's tables are small).
      for (const partition of table.partitions.values()) {
        for (const entry of partition.values()) {
          const item = projected(this.asOf(entry, at), table.shape, index);
          if (item && sameValue(item[index.partition]!, pk)) items.push(item);
        }
      }
    }
    const sort = index ? index.sort : table.shape.sort;
    if (sort) items.sort((a, b) => compareKeys(a[sort]!, b[sort]!) || (index ? compareKeys(a[table.shape.sort!]!, b[table.shape.sort!]!) : 0));
    return items;
  }

  /** When an eventually consistent read answers from: now, or (a lagging one) a moment of the last window, drawn. */
  private readMoment(now: number, consistent: boolean): number {
    if (consistent) return Number.POSITIVE_INFINITY;
    const share = this.options.laggingShare ?? 1;
    // (No draw for the share when every read may lag: the invariant runs' seeds make the runs they always made.)
    if (share < 1 && this.options.random() >= share) return Number.POSITIVE_INFINITY;
    return now - this.options.random() * this.options.eventualWindowMs;
  }

  private holdKey(table: Table, key: Item): string {
    return `${table.name}|${this.ids(table, key).join('|')}`;
  }

  private isHeld(table: Table, key: Item, now: number): boolean {
    const until = this.held.get(this.holdKey(table, key));
    return until !== undefined && until > now;
  }

  // -------------------------------------------------------------------------------------------------
  // Capacity

  private writeCharges(table: Table, before: Item | undefined, after: Item | undefined, key: Item, factor: number, applied: boolean): Charge[] {
    const pk = scalar(key[table.shape.partition]);
    const size = Math.max(before ? itemSize(before) : 0, after ? itemSize(after) : 0, itemSize(key));
    const charges: Charge[] = [{ partition: `${table.name}||${pk}`, wcu: factor * writeUnits(size), rcu: 0 }];
    if (!applied) return charges;
    for (const index of table.shape.indexes) {
      const old = projected(before, table.shape, index);
      const now = projected(after, table.shape, index);
      if (old && now && JSON.stringify(old) === JSON.stringify(now)) continue;
      const moved = old && now && !sameValue(old[index.partition]!, now[index.partition]!);
      if (old && (!now || moved))
        charges.push({ partition: `${table.name}|${index.name}|${scalar(old[index.partition])}`, wcu: writeUnits(itemSize(old)), rcu: 0 });
      if (now) charges.push({ partition: `${table.name}|${index.name}|${scalar(now[index.partition])}`, wcu: writeUnits(itemSize(now)), rcu: 0 });
    }
    return charges;
  }

  private readCharge(table: Table, index: string | undefined, pk: AttributeValue, bytes: number, consistent: boolean, factor = 1): Charge {
    return { partition: `${table.name}|${index ?? ''}|${scalar(pk)}`, wcu: 0, rcu: readUnits(bytes) * (consistent ? 1 : 0.5) * factor };
  }

  /** Whether these charges would take a partition past its limit in the last second. */
  private overLimit(charges: Charge[], now: number): boolean {
    const sums = new Map<string, [number, number]>();
    for (const c of charges) {
      const s = sums.get(c.partition) ?? [0, 0];
      sums.set(c.partition, [s[0] + c.wcu, s[1] + c.rcu]);
    }
    for (const [partition, [wcu, rcu]] of sums) {
      let [usedW, usedR] = [0, 0];
      for (const [at, w, r] of this.usage.get(partition) ?? []) {
        if (at > now - 1_000) [usedW, usedR] = [usedW + w, usedR + r];
      }
      if (usedW + wcu > this.options.partitionWcu || usedR + rcu > this.options.partitionRcu) return true;
    }
    return false;
  }

  private consume(charges: Charge[], now: number): void {
    for (const c of charges) {
      // The last second's charges kept, in place.
      const window = this.usage.get(c.partition) ?? [];
      let kept = 0;
      for (const use of window) if (use[0] > now - 1_000) window[kept++] = use;
      window.length = kept;
      window.push([now, c.wcu, c.rcu]);
      this.usage.set(c.partition, window);
      const total = this.totals.get(c.partition) ?? { wcu: 0, rcu: 0 };
      total.wcu += c.wcu;
      total.rcu += c.rcu;
      this.totals.set(c.partition, total);
    }
  }

  /** Bills what a request costs, or refuses it (throttled, not billed) when a partition is over its limit. */
  private billed(charges: Charge[], now: number, outcome: () => Outcome): { outcome: Outcome; charges: Charge[] } {
    if (this.overLimit(charges, now)) {
      this.throttled += 1;
      return {
        outcome: failure('ProvisionedThroughputExceededException', 'The level of configured provisioned throughput for the table was exceeded'),
        charges: [],
      };
    }
    this.consume(charges, now);
    return { outcome: outcome(), charges };
  }

  // -------------------------------------------------------------------------------------------------
  // Operations

  /** Runs one request arriving at `now`. */
  execute(operation: string, input: Record<string, any>, now: number): Answer {
    try {
      switch (operation) {
        case 'GetItem':
          return this.getItem(input, now);
        case 'PutItem':
        case 'UpdateItem':
        case 'DeleteItem':
          return this.writeItem(operation, input, now);
        case 'Query':
          return this.query(input, now);
        case 'BatchGetItem':
          return this.batchGet(input, now);
        case 'BatchWriteItem':
          return this.batchWrite(input, now);
        case 'TransactWriteItems':
          return this.transactWrite(input, now);
        default:
          return { outcome: failure('UnknownOperationException', `the simulation does not serve ${operation}`), charges: [] };
      }
    } catch (error) {
      if (error instanceof ValidationException) return { outcome: failure('ValidationException', error.message), charges: [] };
      if (error instanceof NotFound) return { outcome: failure('ResourceNotFoundException', error.message), charges: [] };
      throw error;
    }
  }

  private getItem(input: Record<string, any>, now: number): Answer {
    const table = this.table(input.TableName);
    const consistent = input.ConsistentRead === true;
    const entry = this.stored(table, input.Key);
    const item = entry ? (consistent ? entry.versions.at(-1)?.item : this.asOf(entry, this.readMoment(now, false))) : undefined;
    const names = input.ProjectionExpression ? parseProjection(input.ProjectionExpression, input.ExpressionAttributeNames) : undefined;
    const charge = this.readCharge(table, undefined, input.Key[table.shape.partition], item ? itemSize(item) : 0, consistent);
    return this.billed([charge], now, () => ({ ok: true, output: item ? { Item: project(item, names) } : {} }));
  }

  /** A single write's condition and effect: the item after it, or the failed condition. */
  private decide(
    table: Table,
    kind: 'Put' | 'Update' | 'Delete' | 'ConditionCheck',
    action: Record<string, any>,
  ): { key: Item; before: Item | undefined; after: Item | undefined; passed: boolean } {
    const key = kind === 'Put' ? this.keyOf(table, action.Item) : action.Key;
    this.ids(table, key);
    checkPlaceholders(action);
    const before = this.stored(table, key)?.versions.at(-1)?.item;
    const values = (action.ExpressionAttributeValues ?? {}) as Item;
    const passed = action.ConditionExpression
      ? evaluate(parseCondition(action.ConditionExpression, action.ExpressionAttributeNames), { item: before, values })
      : true;
    let after: Item | undefined = before;
    if (kind === 'Put') after = action.Item;
    else if (kind === 'Delete') after = undefined;
    else if (kind === 'Update') {
      const updated = applyActions(before ?? key, parseUpdate(action.UpdateExpression ?? '', action.ExpressionAttributeNames), values);
      for (const [name, value] of Object.entries(key as Item)) {
        if (!sameValue(updated[name]!, value)) throw new ValidationException(`Cannot update attribute ${name}. This attribute is part of the key`);
      }
      after = updated;
    }
    return { key, before, after, passed };
  }

  private writeItem(operation: 'PutItem' | 'UpdateItem' | 'DeleteItem', input: Record<string, any>, now: number): Answer {
    const table = this.table(input.TableName);
    const kind = operation === 'PutItem' ? 'Put' : operation === 'UpdateItem' ? 'Update' : 'Delete';
    const { key, before, after, passed } = this.decide(table, kind, input);
    if (this.isHeld(table, key, now)) {
      return { outcome: failure('TransactionConflictException', 'Transaction is ongoing for the item'), charges: [] };
    }
    const charges = this.writeCharges(table, before, after, key, 1, passed);
    return this.billed(charges, now, () => {
      if (!passed) {
        return failure(
          'ConditionalCheckFailedException',
          'The conditional request failed',
          input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && before ? { Item: before } : undefined,
        );
      }
      this.put(table, key, after, now);
      const returned = input.ReturnValues === 'ALL_NEW' ? after : input.ReturnValues === 'ALL_OLD' ? before : undefined;
      return { ok: true, output: returned ? { Attributes: returned } : {} };
    });
  }

  private query(input: Record<string, any>, now: number): Answer {
    const table = this.table(input.TableName);
    const index = input.IndexName ? table.shape.indexes.find((i) => i.name === input.IndexName) : undefined;
    if (input.IndexName && !index) throw new ValidationException(`The table does not have the specified index: ${input.IndexName}`);
    if (index && input.ConsistentRead) throw new ValidationException('Consistent reads are not supported on global secondary indexes');
    const names = input.ExpressionAttributeNames ?? {};
    const values = (input.ExpressionAttributeValues ?? {}) as Item;
    checkPlaceholders(input);
    const keyCondition = parseCondition(input.KeyConditionExpression, names);
    const partitionName = index ? index.partition : table.shape.partition;
    const sortName = index ? index.sort : table.shape.sort;
    const pk = partitionValue(keyCondition, partitionName, values);
    if (!pk) throw new ValidationException('Query condition missed key schema element');
    const consistent = input.ConsistentRead === true;
    let items = this.partitionAsOf(table, index, pk, this.readMoment(now, consistent)).filter((item) => evaluate(keyCondition, { item, values }));
    if (input.ScanIndexForward === false) items.reverse();
    const start = input.ExclusiveStartKey as Item | undefined;
    if (start) {
      const at = items.findIndex((item) => sortName === undefined || sameValue(item[sortName]!, start[sortName]!));
      const startSort = sortName ? start[sortName] : undefined;
      items =
        at >= 0
          ? items.slice(at + 1)
          : items.filter((item) => {
              if (!sortName || !startSort) return true;
              const order = compareKeys(item[sortName]!, startSort);
              return input.ScanIndexForward === false ? order < 0 : order > 0;
            });
    }
    // A page ends at Limit items or 1 MB read (before any filter), with LastEvaluatedKey.
    const page: Item[] = [];
    let bytes = 0;
    for (const item of items) {
      if ((input.Limit !== undefined && page.length >= input.Limit) || bytes >= 1024 * 1024) break;
      page.push(item);
      bytes += itemSize(item);
    }
    const more = page.length < items.length;
    const filter = input.FilterExpression ? parseCondition(input.FilterExpression, names) : undefined;
    const kept = filter ? page.filter((item) => evaluate(filter, { item, values })) : page;
    const projection = input.ProjectionExpression ? parseProjection(input.ProjectionExpression, names) : undefined;
    const last = page.at(-1);
    const lastKey: Item | undefined =
      more && last
        ? Object.fromEntries(
            [table.shape.partition, table.shape.sort, index?.partition, index?.sort]
              .filter((n): n is string => n !== undefined && last[n] !== undefined)
              .map((n) => [n, last[n]!]),
          )
        : undefined;
    const charge = this.readCharge(table, index?.name, pk, bytes, consistent && !index);
    return this.billed([charge], now, () => ({
      ok: true,
      output: {
        Items: kept.map((item) => project(item, projection)),
        Count: kept.length,
        ScannedCount: page.length,
        ...(lastKey ? { LastEvaluatedKey: lastKey } : {}),
      },
    }));
  }

  private batchGet(input: Record<string, any>, now: number): Answer {
    const responses: Record<string, Item[]> = {};
    const charges: Charge[] = [];
    let keys = 0;
    for (const [name, request] of Object.entries(input.RequestItems ?? {}) as [string, any][]) {
      const table = this.table(name);
      const consistent = request.ConsistentRead === true;
      const projection = request.ProjectionExpression ? parseProjection(request.ProjectionExpression, request.ExpressionAttributeNames) : undefined;
      const moment = this.readMoment(now, consistent);
      const seen = new Set<string>();
      for (const key of request.Keys as Item[]) {
        keys += 1;
        const id = this.holdKey(table, key);
        if (seen.has(id)) throw new ValidationException('Provided list of item keys contains duplicates');
        seen.add(id);
        const entry = this.stored(table, key);
        const item = entry ? (consistent ? entry.versions.at(-1)?.item : this.asOf(entry, moment)) : undefined;
        charges.push(this.readCharge(table, undefined, key[table.shape.partition]!, item ? itemSize(item) : 0, consistent));
        if (item) (responses[name] ??= []).push(project(item, projection));
      }
    }
    if (keys > 100) throw new ValidationException('Too many items requested for the BatchGetItem call');
    // Throttled as a whole: DynamoDB would leave keys unprocessed; the caller retries them the same way.
    if (this.overLimit(charges, now)) {
      this.throttled += 1;
      return { outcome: { ok: true, output: { Responses: {}, UnprocessedKeys: input.RequestItems } }, charges: [] };
    }
    this.consume(charges, now);
    return { outcome: { ok: true, output: { Responses: responses, UnprocessedKeys: {} } }, charges };
  }

  private batchWrite(input: Record<string, any>, now: number): Answer {
    const charges: Charge[] = [];
    const writes: { table: Table; key: Item; after: Item | undefined }[] = [];
    for (const [name, requests] of Object.entries(input.RequestItems ?? {}) as [string, any[]][]) {
      const table = this.table(name);
      for (const request of requests) {
        const after = request.PutRequest?.Item as Item | undefined;
        const key = after ? this.keyOf(table, after) : (request.DeleteRequest.Key as Item);
        if (this.isHeld(table, key, now)) {
          return { outcome: failure('TransactionConflictException', 'Transaction is ongoing for the item'), charges: [] };
        }
        const before = this.stored(table, key)?.versions.at(-1)?.item;
        charges.push(...this.writeCharges(table, before, after, key, 1, true));
        writes.push({ table, key, after });
      }
    }
    if (writes.length > 25) throw new ValidationException('Too many items requested for the BatchWriteItem call');
    if (this.overLimit(charges, now)) {
      this.throttled += 1;
      return { outcome: { ok: true, output: { UnprocessedItems: input.RequestItems } }, charges: [] };
    }
    this.consume(charges, now);
    for (const { table, key, after } of writes) this.put(table, key, after, now);
    return { outcome: { ok: true, output: { UnprocessedItems: {} } }, charges };
  }

  private transactWrite(input: Record<string, any>, now: number): Answer {
    const items = (input.TransactItems ?? []) as Record<string, any>[];
    if (items.length === 0 || items.length > 100) throw new ValidationException('TransactItems must have between 1 and 100 items');
    const request = JSON.stringify(items);
    const token = input.ClientRequestToken as string | undefined;
    for (const [t, seen] of this.tokens) if (seen.until <= now) this.tokens.delete(t);
    if (token) {
      const seen = this.tokens.get(token);
      if (seen) {
        if (seen.request !== request)
          return {
            outcome: failure('IdempotentParameterMismatchException', 'The request uses the same client token as a previous, but non-identical request'),
            charges: [],
          };
        return { outcome: seen.outcome, charges: [] };
      }
    }
    const decisions = items.map((entry) => {
      const kind = (['Put', 'Update', 'Delete', 'ConditionCheck'] as const).find((k) => entry[k] !== undefined);
      if (!kind) throw new ValidationException('a transaction item must be a Put, Update, Delete or ConditionCheck');
      const action = entry[kind];
      const table = this.table(action.TableName);
      return { kind, action, table, ...this.decide(table, kind, action) };
    });
    const ids = decisions.map((d) => this.holdKey(d.table, d.key));
    if (new Set(ids).size !== ids.length) {
      const twice = ids.find((id, i) => ids.indexOf(id) !== i);
      throw new ValidationException(`Transaction request cannot include multiple operations on one item (${twice})`);
    }
    const charges = decisions.flatMap((d) =>
      d.kind === 'ConditionCheck'
        ? [
            {
              partition: `${d.table.name}||${scalar(d.key[d.table.shape.partition])}`,
              wcu: 2 * writeUnits(d.before ? itemSize(d.before) : itemSize(d.key)),
              rcu: 0,
            },
          ]
        : this.writeCharges(d.table, d.before, d.after, d.key, 2, d.passed),
    );
    const conflicted = decisions.map((d) => this.isHeld(d.table, d.key, now));
    if (conflicted.some(Boolean) || decisions.some((d) => !d.passed)) {
      const reasons = decisions.map((d, i) =>
        conflicted[i]
          ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }
          : !d.passed
            ? {
                Code: 'ConditionalCheckFailed',
                Message: 'The conditional request failed',
                ...(d.action.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && d.before ? { Item: d.before } : {}),
              }
            : { Code: 'None' },
      );
      const outcome = failure(
        'TransactionCanceledException',
        `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
        {
          CancellationReasons: reasons,
        },
      );
      // A cancelled transaction is billed for what it read; a conflict is not.
      return conflicted.some(Boolean) ? { outcome, charges: [] } : this.billed(charges, now, () => outcome);
    }
    if (this.overLimit(charges, now)) {
      this.throttled += 1;
      return {
        outcome: failure('TransactionCanceledException', 'Transaction cancelled, please refer cancellation reasons for specific reasons [ThrottlingError]', {
          CancellationReasons: decisions.map(() => ({
            Code: 'ThrottlingError',
            Message: 'Throughput exceeds the current capacity for one or more global secondary indexes',
          })),
        }),
        charges: [],
      };
    }
    // Decided: its items are held until it commits.
    const holdMs = this.options.transactionMs(items.length);
    const until = now + holdMs;
    for (const id of ids) this.held.set(id, until);
    this.consume(charges, now);
    return {
      afterMs: holdMs,
      commit: () => {
        for (const d of decisions) if (d.kind !== 'ConditionCheck') this.put(d.table, d.key, d.after, until);
        for (const id of ids) if (this.held.get(id) === until) this.held.delete(id);
        const outcome: Outcome = { ok: true, output: {} };
        if (token) this.tokens.set(token, { request, until: until + TOKEN_WINDOW_MS, outcome });
        return { outcome, charges };
      },
    };
  }

  /** Deletes the items whose TTL has passed and whose drawn deletion time has come. */
  expire(now: number): number {
    let deleted = 0;
    const [least, most] = this.options.ttlDelayMs;
    for (const table of this.tables.values()) {
      if (!table.ttlAttribute) continue;
      for (const partition of table.partitions.values()) {
        for (const entry of partition.values()) {
          const item = entry.versions.at(-1)?.item;
          const ttl = item?.[table.ttlAttribute]?.N;
          if (ttl === undefined) continue;
          entry.deleteAt ??= Number(ttl) * 1000 + least + this.options.random() * (most - least);
          if (entry.deleteAt <= now) {
            this.put(table, entry.key, undefined, now);
            deleted += 1;
          }
        }
      }
    }
    return deleted;
  }
}

class NotFound extends Error {}

/** The partition key's value a key condition names (`pk = :pk`). */
function partitionValue(condition: ReturnType<typeof parseCondition>, name: string, values: Item): AttributeValue | undefined {
  if (condition.kind === 'and') return partitionValue(condition.left, name, values) ?? partitionValue(condition.right, name, values);
  if (condition.kind === 'compare' && condition.op === '=' && condition.a.kind === 'path' && condition.a.name === name && condition.b.kind === 'value') {
    return values[condition.b.ref];
  }
  return undefined;
}
