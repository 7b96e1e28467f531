/**
 * What every repository does around a DynamoDB call: translate failures into domain errors, and follow
 * a query's pages to the end.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  GetCommand,
  type DeleteCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  type UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type ScanCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { checkDeadline, pause } from '../deadline.ts';
import { forgetNeverApplied, translateStorageError, wasNeverApplied } from './errors.ts';

/**
 * How often a single-item write refused because a transaction holds its item is sent again. DynamoDB refuses
 * a PutItem, UpdateItem or DeleteItem on an item an ongoing TransactWriteItems includes with
 * TransactionConflictException ("Transaction conflict handling"); the write was not applied, the transaction
 * ends within milliseconds, and the SDK does not retry it. Found by the deterministic simulation (a lease
 * taken while a direct commit's transaction held the head answered 500).
 */
const CONFLICT_RETRIES = 4;

/** Runs a write, sending it again (deadline-aware, with jitter) while an ongoing transaction holds its item. */
export async function retryConflicts<T>(run: () => Promise<T>): Promise<T> {
  // Whether an earlier request of this write may have been applied (its last attempt was refused, an earlier one may have landed).
  let uncertain = false;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await run();
    } catch (error) {
      if (uncertain) forgetNeverApplied(error);
      if (!(error instanceof Error) || error.name !== 'TransactionConflictException' || attempt >= CONFLICT_RETRIES) throw error;
      uncertain ||= !wasNeverApplied(error);
      await pause(5 * 2 ** attempt + Math.random() * 10, 'DynamoDB (an item held by a transaction)');
    }
  }
}

/** DynamoDB's largest key values, in UTF-8 bytes: a partition key's 2,048, a sort key's 1,024. */
export const MAX_PARTITION_KEY_BYTES = 2048;
export const MAX_SORT_KEY_BYTES = 1024;

/**
 * Whether an item could be stored under these key values at all. One that could not is not there: a read of it
 * answers nothing without asking DynamoDB, which refuses such a key (a ValidationException, else a 500 for what
 * is a name too long to exist, as an id taken from a path).
 */
export function keyCanExist(pk: string, sk?: string): boolean {
  const fits = (value: string, max: number) => value.length > 0 && Buffer.byteLength(value) <= max;
  return fits(pk, MAX_PARTITION_KEY_BYTES) && (sk === undefined || fits(sk, MAX_SORT_KEY_BYTES));
}

/** Runs a DynamoDB call; an unreachable or throttled DynamoDB becomes a 503 domain error. */
export async function send<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await retryConflicts(run);
  } catch (error) {
    throw translateStorageError(error);
  }
}

/** Runs a query to the end, following LastEvaluatedKey. */
export async function queryAll(client: DynamoDBDocumentClient, input: QueryCommandInput): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    checkDeadline('DynamoDB (a query of many pages)');
    const page = await send(() => client.send(new QueryCommand({ ...input, ExclusiveStartKey: startKey })));
    items.push(...((page.Items ?? []) as Record<string, unknown>[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/**
 * A scan's items, a page at a time, for work that acts on each page before it reads the next (a migration's writes):
 * the table is never held in memory whole.
 */
export async function* scanPages(client: DynamoDBDocumentClient, input: ScanCommandInput): AsyncGenerator<Record<string, unknown>[]> {
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await send(() => client.send(new ScanCommand({ ...input, ExclusiveStartKey: startKey })));
    yield (page.Items ?? []) as Record<string, unknown>[];
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

/** The attributes a batch read asks for (all when absent). */
export interface BatchProjection {
  expression: string;
  names?: Record<string, string>;
  /** Strongly consistent reads (twice the read units): items written a moment ago are seen. */
  consistent?: boolean;
}

/**
 * Items of one table by exact key: a lone key by GetItem, more 100 a BatchGetItem, unprocessed keys retried with backoff (DynamoDB leaves
 * some when a partition is throttled); in no particular order. Keys still unprocessed after 8 tries (about
 * 5 s of backoff), or when the next backoff would pass the invocation's deadline, are a 503, never a
 * silently shorter answer.
 */
export async function batchGetAll(
  client: DynamoDBDocumentClient,
  tableName: string,
  keys: Record<string, unknown>[],
  projection?: BatchProjection,
): Promise<Record<string, unknown>[]> {
  const projected = {
    ...(projection ? { ProjectionExpression: projection.expression, ...(projection.names ? { ExpressionAttributeNames: projection.names } : {}) } : {}),
    ...(projection?.consistent ? { ConsistentRead: true } : {}),
  };
  if (keys.length === 1) {
    // One key is a GetItem: the same read units, and less work for DynamoDB and the SDK than a batch of one.
    const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: keys[0], ...projected })));
    return out.Item ? [out.Item as Record<string, unknown>] : [];
  }
  const found: Record<string, unknown>[] = [];
  for (let i = 0; i < keys.length; i += 100) {
    let batch = keys.slice(i, i + 100);
    for (let attempt = 0; batch.length > 0; attempt += 1) {
      const out = await send(() => client.send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: batch, ...projected } } })));
      found.push(...((out.Responses?.[tableName] ?? []) as Record<string, unknown>[]));
      batch = (out.UnprocessedKeys?.[tableName]?.Keys ?? []) as Record<string, unknown>[];
      if (batch.length && attempt < 8) await pause(20 * 2 ** attempt, 'DynamoDB (keys left unprocessed)');
      else if (batch.length) throw translateStorageError(Object.assign(new Error('BatchGet left keys unprocessed'), { name: 'ThrottlingException' }));
    }
  }
  return found;
}

/**
 * Sends one conditional write (a Put, Update or Delete with a ConditionExpression): false when its
 * condition failed and nothing was written; any other failure is the storage error it is.
 */
export async function writeIf(client: DynamoDBDocumentClient, command: PutCommand | UpdateCommand | DeleteCommand): Promise<boolean> {
  try {
    await retryConflicts(() => client.send(command as PutCommand));
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw translateStorageError(error);
  }
}

/** Puts an item unless one with its key exists; false when it did (nothing is overwritten). */
export function putIfAbsent(client: DynamoDBDocumentClient, tableName: string, item: Record<string, unknown>): Promise<boolean> {
  return writeIf(client, new PutCommand({ TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
}

/**
 * Puts an item unless one with its key exists, knowing its own write: the item carries a token of this call
 * (`put_token`), and an item already there with that token is ours (an earlier attempt of this request landed,
 * its answer was lost, the SDK sent it again, and the condition refused that). False only when another
 * request's item is there. Without it, a writer put its pending append a second time under another key, and
 * both were sealed (found by the deterministic simulation). Not for items whose sameness is the point (a
 * nonce): there, an identical item from another request must be refused, as putIfAbsent does.
 */
export async function putOnce(client: DynamoDBDocumentClient, tableName: string, item: Record<string, unknown>): Promise<boolean> {
  const token = randomBytes(9).toString('base64url');
  try {
    await retryConflicts(() =>
      client.send(
        new PutCommand({
          TableName: tableName,
          Item: { ...item, put_token: token },
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return error.Item?.put_token?.S === token;
    throw translateStorageError(error);
  }
}

/** The keys of every item in one partition (to delete them), read page by page. */
export async function partitionKeys(client: DynamoDBDocumentClient, tableName: string, pk: string): Promise<{ pk: string; sk: string }[]> {
  const items = await queryAll(client, {
    TableName: tableName,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ProjectionExpression: 'pk, sk',
  });
  return items.map((item) => ({ pk: String(item.pk), sk: String(item.sk) }));
}
