/**
 * Prices DynamoDB requests the way DynamoDB bills them, per partition key of the table and of each
 * global secondary index. DynamoDB Local enforces no limit and its ConsumedCapacity for transactions is
 * not AWS's, so the capacity model of `npm run bench` prices the real requests here instead.
 *
 * The rules (Amazon DynamoDB Developer Guide, "read and write operations", "transactions", "GSI"):
 * - an item's size is the UTF-8 length of its attribute names and values (a number: 1 byte per two
 *   significant digits, plus 1; a list or map: 3 bytes, plus 1 per element; a boolean or null: 1);
 * - a write costs 1 WCU per started KB of the larger of the item before and after; a delete the item's
 *   size; a write inside TransactWriteItems (a ConditionCheck too) costs twice that;
 * - a conditional write whose condition fails, and a cancelled transaction, are still billed;
 * - every GSI the item is in, before or after, costs a standard write of its projected size (nothing when
 *   the write leaves its projection unchanged; two when it moves the item to another index key);
 * - a read costs 1 RCU per started 4 KB (a query: of all the items it read together), half of that when
 *   eventually consistent (always on a GSI), twice when transactional; a missed item still costs the
 *   minimum; a projection does not make a read cheaper.
 *
 * The size of an item before an update is known when this process saw the item before (written, or
 * read whole); otherwise the update is priced from what it writes, which undercounts. The model reports
 * how many writes it had to price that way.
 */
import type { AttributeValue, CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

type Item = Record<string, AttributeValue>;

export interface IndexShape {
  name: string;
  partition: string;
  sort?: string;
  /** ALL, KEYS_ONLY, or the non-key attributes of an INCLUDE projection. */
  projection: 'ALL' | 'KEYS_ONLY' | readonly string[];
}

export interface TableShape {
  partition: string;
  sort?: string;
  indexes: IndexShape[];
}

/** The key schema and indexes of a table, from the CreateTable input the stack uses. */
export function tableShape(definition: CreateTableCommandInput): TableShape {
  const keyOf = (schema: { AttributeName?: string; KeyType?: string }[] | undefined, type: 'HASH' | 'RANGE') =>
    schema?.find((k) => k.KeyType === type)?.AttributeName;
  return {
    partition: keyOf(definition.KeySchema, 'HASH')!,
    sort: keyOf(definition.KeySchema, 'RANGE'),
    indexes: (definition.GlobalSecondaryIndexes ?? []).map((index) => ({
      name: index.IndexName!,
      partition: keyOf(index.KeySchema, 'HASH')!,
      sort: keyOf(index.KeySchema, 'RANGE'),
      projection: index.Projection?.ProjectionType === 'INCLUDE' ? (index.Projection.NonKeyAttributes ?? []) : (index.Projection?.ProjectionType ?? 'ALL'),
    })),
  };
}

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

function numberSize(n: string): number {
  const digits = n
    .replace(/^-/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1 + (n.startsWith('-') ? 1 : 0);
}

/** The size DynamoDB counts for one value (without its attribute name). */
export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((n, s) => n + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((n, s) => n + numberSize(s), 0);
  if (value.BS !== undefined) return value.BS.reduce((n, b) => n + b.byteLength, 0);
  if (value.L !== undefined) return 3 + value.L.reduce((n, v) => n + 1 + valueSize(v), 0);
  if (value.M !== undefined) return 3 + Object.entries(value.M).reduce((n, [k, v]) => n + 1 + utf8(k) + valueSize(v), 0);
  return 0;
}

export function itemSize(item: Item): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += utf8(name) + valueSize(value);
  return size;
}

const writeUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));
const readUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 4096));

/** One charge: the units a request cost one partition of a table or of one of its indexes. */
export interface Charge {
  table: string;
  index?: string;
  pk: string;
  wcu: number;
  rcu: number;
  /** Write units of a write whose condition failed (billed; nothing written). */
  failed?: number;
}

/** Totals per partition, keyed `table|index|pk` (index empty for the table itself); `failed` as in Charge. */
export type CapacityTotals = Record<string, { wcu: number; rcu: number; failed?: number }>;

export function partitionKeyOf(charge: Pick<Charge, 'table' | 'index' | 'pk'>): string {
  return `${charge.table}|${charge.index ?? ''}|${charge.pk}`;
}

const scalar = (value: AttributeValue | undefined): string =>
  value === undefined ? '' : (value.S ?? value.N ?? (value.B ? Buffer.from(value.B).toString('base64') : JSON.stringify(value)));

/** Splits at top-level commas (not inside parentheses). */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === '(') depth += 1;
    else if (text[i] === ')') depth -= 1;
    else if (text[i] === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter(Boolean);
}

interface UpdateInput {
  UpdateExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Item;
}

/**
 * The item after an update expression, as far as sizes go: SET of a value or of `a + :n` / `a - :n`,
 * `if_not_exists(a, :v)`, `list_append(a, :v)`; REMOVE; ADD to numbers and sets; DELETE from sets. Nested
 * paths change their top-level attribute by the size of the value they set.
 */
export function applyUpdate(before: Item, input: UpdateInput): Item {
  const after: Item = { ...before };
  const expression = input.UpdateExpression ?? '';
  const names = input.ExpressionAttributeNames ?? {};
  const values = input.ExpressionAttributeValues ?? {};
  const nameOf = (path: string) => {
    const top = path.split(/[.[]/)[0]!.trim();
    return names[top] ?? top;
  };
  const operand = (text: string): AttributeValue | undefined => {
    const t = text.trim();
    if (t.startsWith(':')) return values[t];
    const call = /^(if_not_exists|list_append)\s*\((.*)\)$/s.exec(t);
    if (call) {
      const [a, b] = splitTop(call[2]!).map(operand);
      if (call[1] === 'if_not_exists') return a ?? b;
      return { L: [...(a?.L ?? []), ...(b?.L ?? [])] };
    }
    return after[nameOf(t)];
  };
  const sections = expression.split(/\b(SET|REMOVE|ADD|DELETE)\b/i).map((s) => s.trim());
  for (let i = 1; i < sections.length; i += 2) {
    const verb = sections[i]!.toUpperCase();
    for (const clause of splitTop(sections[i + 1] ?? '')) {
      if (verb === 'REMOVE') {
        if (!/[.[]/.test(clause)) delete after[nameOf(clause)];
        continue;
      }
      if (verb === 'SET') {
        const eq = clause.indexOf('=');
        const path = clause.slice(0, eq).trim();
        const rhs = clause.slice(eq + 1).trim();
        const arithmetic = /^(.+?)\s*([+-])\s*(.+)$/s.exec(rhs);
        let value: AttributeValue | undefined;
        if (arithmetic && !rhs.startsWith('if_not_exists') && !rhs.startsWith('list_append')) {
          const a = operand(arithmetic[1]!);
          const b = operand(arithmetic[3]!);
          const sum = Number(a?.N ?? 0) + (arithmetic[2] === '-' ? -1 : 1) * Number(b?.N ?? 0);
          value = { N: String(sum) };
        } else value = operand(rhs);
        if (value === undefined) continue;
        if (/[.[]/.test(path)) {
          // A nested path: the top-level attribute grows by what is set (an upper bound).
          const top = nameOf(path);
          after[top] = { M: { ...(after[top]?.M ?? {}), [path]: value } };
        } else after[nameOf(path)] = value;
        continue;
      }
      const [path, valueRef] = clause.split(/\s+/);
      const name = nameOf(path!);
      const value = values[valueRef ?? ''];
      if (!value) continue;
      const current = after[name];
      if (verb === 'ADD') {
        if (value.N !== undefined) after[name] = { N: String(Number(current?.N ?? 0) + Number(value.N)) };
        else if (value.SS) after[name] = { SS: [...new Set([...(current?.SS ?? []), ...value.SS])] };
        else if (value.NS) after[name] = { NS: [...new Set([...(current?.NS ?? []), ...value.NS])] };
        else after[name] = value;
      } else if (current?.SS && value.SS) after[name] = { SS: current.SS.filter((s) => !value.SS!.includes(s)) };
    }
  }
  return after;
}

/** The part of an item an index holds, or undefined when the item is not in the index. */
export function projected(item: Item | undefined, table: TableShape, index: IndexShape): Item | undefined {
  if (!item || item[index.partition] === undefined || (index.sort !== undefined && item[index.sort] === undefined)) return undefined;
  if (index.projection === 'ALL') return item;
  const keep = new Set([table.partition, table.sort, index.partition, index.sort].filter((k): k is string => k !== undefined));
  if (index.projection !== 'KEYS_ONLY') for (const name of index.projection) keep.add(name);
  return Object.fromEntries(Object.entries(item).filter(([name]) => keep.has(name)));
}

const sameValue = (a: AttributeValue | undefined, b: AttributeValue | undefined) => JSON.stringify(a) === JSON.stringify(b);
const sameItem = (a: Item, b: Item) => Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => sameValue(v, b[k]));

/**
 * Prices requests and keeps the totals per partition. It remembers the last image of each item it saw
 * (bounded), to know an item's size before a write replaces or updates it.
 */
export class CapacityMeter {
  readonly totals: CapacityTotals = {};
  /** The partitions whose totals changed since the report last took them (`takeChanged`). */
  private readonly changed = new Set<string>();
  /** Updates priced without the item's earlier image (an item this process had not seen whole). */
  unknownBefore = 0;
  private readonly images = new Map<string, Item>();

  private readonly shapes: Record<string, TableShape>;
  private readonly maxImages: number;
  constructor(shapes: Record<string, TableShape>, maxImages = 50_000) {
    this.shapes = shapes;
    this.maxImages = maxImages;
  }

  /** The totals of the partitions that changed since the last call (each as it stands now), and forgets them. */
  takeChanged(): CapacityTotals {
    const changed: CapacityTotals = {};
    for (const key of this.changed) changed[key] = { ...this.totals[key]! };
    this.changed.clear();
    return changed;
  }

  private imageKey(table: string, item: Item): string | undefined {
    const shape = this.shapes[table];
    if (!shape) return undefined;
    return `${table}|${scalar(item[shape.partition])}|${shape.sort ? scalar(item[shape.sort]) : ''}`;
  }

  private remember(table: string, item: Item | undefined, key?: Item): void {
    const id = this.imageKey(table, item ?? key ?? {});
    if (!id) return;
    this.images.delete(id);
    if (item) {
      this.images.set(id, item);
      if (this.images.size > this.maxImages) this.images.delete(this.images.keys().next().value!);
    }
  }

  private before(table: string, key: Item): Item | undefined {
    const id = this.imageKey(table, key);
    return id ? this.images.get(id) : undefined;
  }

  private add(charges: Charge[]): void {
    for (const charge of charges) {
      const key = partitionKeyOf(charge);
      const total = (this.totals[key] ??= { wcu: 0, rcu: 0 });
      this.changed.add(key);
      total.wcu += charge.wcu;
      total.rcu += charge.rcu;
      if (charge.failed) total.failed = (total.failed ?? 0) + charge.failed;
    }
  }

  /** A write of one item: the table's charge and each index's. `after` undefined for a delete. */
  private write(table: string, key: Item, after: Item | undefined, factor: number, applied: boolean): Charge[] {
    const shape = this.shapes[table];
    if (!shape) return [];
    const before = this.before(table, key);
    const pk = scalar(key[shape.partition]);
    const size = Math.max(before ? itemSize(before) : 0, after ? itemSize(after) : 0, itemSize(key));
    const units = factor * writeUnits(size);
    const charges: Charge[] = [{ table, pk, wcu: units, rcu: 0, ...(applied ? {} : { failed: units }) }];
    if (!applied) return charges;
    for (const index of shape.indexes) {
      const old = projected(before, shape, index);
      const now = projected(after, shape, index);
      if (old && now && sameItem(old, now)) continue;
      const moved = old && now && (!sameValue(old[index.partition], now[index.partition]) || (index.sort && !sameValue(old[index.sort], now[index.sort])));
      if (old && (!now || moved)) charges.push({ table, index: index.name, pk: scalar(old[index.partition]), wcu: writeUnits(itemSize(old)), rcu: 0 });
      if (now) charges.push({ table, index: index.name, pk: scalar(now[index.partition]), wcu: writeUnits(itemSize(now)), rcu: 0 });
    }
    this.remember(table, after, key);
    return charges;
  }

  private keyOf(table: string, item: Item): Item {
    const shape = this.shapes[table];
    if (!shape) return item;
    const key: Item = { [shape.partition]: item[shape.partition]! };
    if (shape.sort) key[shape.sort] = item[shape.sort]!;
    return key;
  }

  private writeAction(
    action: { TableName?: string; Item?: Item; Key?: Item } & UpdateInput,
    kind: 'put' | 'update' | 'delete' | 'check',
    factor: number,
    applied: boolean,
  ): Charge[] {
    const table = action.TableName ?? '';
    const key = action.Key ?? this.keyOf(table, action.Item ?? {});
    if (kind === 'check') {
      const shape = this.shapes[table];
      const before = this.before(table, key);
      return shape ? [{ table, pk: scalar(key[shape.partition]), wcu: factor * writeUnits(before ? itemSize(before) : itemSize(key)), rcu: 0 }] : [];
    }
    if (kind === 'delete') return this.write(table, key, undefined, factor, applied);
    if (kind === 'put') return this.write(table, key, action.Item ?? key, factor, applied);
    const before = this.before(table, key);
    if (!before) this.unknownBefore += 1;
    const after = applyUpdate(before ?? key, action);
    return this.write(table, key, after, factor, applied);
  }

  private read(table: string, index: string | undefined, pk: string, bytes: number, consistent: boolean, factor = 1): Charge {
    return { table, ...(index ? { index } : {}), pk, wcu: 0, rcu: readUnits(bytes) * (consistent ? 1 : 0.5) * factor };
  }

  /** The full size of an item read (a projection does not lower the price): its known image when larger. */
  private readSize(table: string, item: Item): number {
    const known = this.before(table, this.keyOf(table, item));
    return Math.max(itemSize(item), known ? itemSize(known) : 0);
  }

  private queryPartition(input: QueryLike): string {
    const shape = this.shapes[input.TableName ?? ''];
    if (!shape) return '?';
    const attribute = input.IndexName ? shape.indexes.find((i) => i.name === input.IndexName)?.partition : shape.partition;
    const names = input.ExpressionAttributeNames ?? {};
    for (const match of (input.KeyConditionExpression ?? '').matchAll(/([#\w]+)\s*=\s*(:\w+)/g)) {
      if ((names[match[1]!] ?? match[1]) === attribute) return scalar(input.ExpressionAttributeValues?.[match[2]!]);
    }
    return '?';
  }

  /**
   * Prices one request from its input (marshalled) and output (marshalled; undefined when it failed).
   * `outcome` is 'ok', 'condition-failed' (billed, nothing written) or 'not-billed' (throttled, unreachable).
   */
  price(
    command: string,
    input: Record<string, unknown>,
    output: Record<string, unknown> | undefined,
    outcome: 'ok' | 'condition-failed' | 'not-billed',
  ): Charge[] {
    if (outcome === 'not-billed') return [];
    const applied = outcome === 'ok';
    const charges: Charge[] = [];
    const i = input as Record<string, any>;
    const o = (output ?? {}) as Record<string, any>;
    switch (command) {
      case 'PutItemCommand':
        charges.push(...this.writeAction(i, 'put', 1, applied));
        break;
      case 'UpdateItemCommand':
        charges.push(...this.writeAction(i, 'update', 1, applied));
        break;
      case 'DeleteItemCommand':
        charges.push(...this.writeAction(i, 'delete', 1, applied));
        break;
      case 'BatchWriteItemCommand':
        for (const [table, requests] of Object.entries((i.RequestItems ?? {}) as Record<string, any[]>)) {
          for (const r of requests) {
            if (r.PutRequest) charges.push(...this.writeAction({ TableName: table, Item: r.PutRequest.Item }, 'put', 1, applied));
            if (r.DeleteRequest) charges.push(...this.writeAction({ TableName: table, Key: r.DeleteRequest.Key }, 'delete', 1, applied));
          }
        }
        break;
      case 'TransactWriteItemsCommand':
        for (const item of (i.TransactItems ?? []) as any[]) {
          if (item.Put) charges.push(...this.writeAction(item.Put, 'put', 2, applied));
          if (item.Update) charges.push(...this.writeAction(item.Update, 'update', 2, applied));
          if (item.Delete) charges.push(...this.writeAction(item.Delete, 'delete', 2, applied));
          if (item.ConditionCheck) charges.push(...this.writeAction(item.ConditionCheck, 'check', 2, applied));
        }
        break;
      case 'GetItemCommand': {
        const table = i.TableName as string;
        const shape = this.shapes[table];
        if (!shape) break;
        const item = o.Item as Item | undefined;
        charges.push(this.read(table, undefined, scalar(i.Key[shape.partition]), item ? this.readSize(table, item) : 0, i.ConsistentRead === true));
        if (item && !i.ProjectionExpression) this.remember(table, item);
        break;
      }
      case 'BatchGetItemCommand':
        for (const [table, request] of Object.entries((i.RequestItems ?? {}) as Record<string, any>)) {
          const shape = this.shapes[table];
          if (!shape) continue;
          const found = new Map<string, Item>(((o.Responses?.[table] ?? []) as Item[]).map((item) => [this.imageKey(table, item)!, item]));
          for (const key of request.Keys as Item[]) {
            const item = found.get(this.imageKey(table, key)!);
            charges.push(this.read(table, undefined, scalar(key[shape.partition]), item ? this.readSize(table, item) : 0, request.ConsistentRead === true));
            if (item && !request.ProjectionExpression) this.remember(table, item);
          }
        }
        break;
      case 'TransactGetItemsCommand':
        for (const [n, entry] of ((i.TransactItems ?? []) as any[]).entries()) {
          const get = entry.Get;
          const shape = this.shapes[get?.TableName ?? ''];
          if (!shape) continue;
          const item = o.Responses?.[n]?.Item as Item | undefined;
          charges.push(this.read(get.TableName, undefined, scalar(get.Key[shape.partition]), item ? this.readSize(get.TableName, item) : 0, true, 2));
        }
        break;
      case 'QueryCommand': {
        const table = i.TableName as string;
        if (!this.shapes[table]) break;
        const items = (o.Items ?? []) as Item[];
        const bytes = items.reduce((n, item) => n + (i.IndexName ? itemSize(item) : this.readSize(table, item)), 0);
        charges.push(this.read(table, i.IndexName, this.queryPartition(i), bytes, i.IndexName ? false : i.ConsistentRead === true));
        if (!i.ProjectionExpression && !i.IndexName) for (const item of items) this.remember(table, item);
        break;
      }
      case 'ScanCommand': {
        const table = i.TableName as string;
        if (!this.shapes[table]) break;
        const bytes = ((o.Items ?? []) as Item[]).reduce((n, item) => n + itemSize(item), 0);
        charges.push(this.read(table, i.IndexName, '(scan)', bytes, i.ConsistentRead === true));
        break;
      }
      default:
        break; // table administration and other control-plane calls are not billed per request
    }
    this.add(charges);
    return charges;
  }
}

interface QueryLike {
  TableName?: string;
  IndexName?: string;
  KeyConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Item;
}
