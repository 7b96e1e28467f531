/**
 * The kept count of Sub-Chains, the Main Chain's `registered_sub_chains` (keys.ts, SUB_CHAIN_COUNT_PK).
 *
 * Counting the chain list at each request read every Sub-Chain's list item, and past a request's read allowance
 * (SVC_MAX_READ_ITEMS, 10,000 by default) the Main Chain's statistics answered 422. The count is now kept: each
 * creation adds to one of a few shards in the transaction that creates the chain, so the count is exact (a creation
 * that fails adds nothing; a retried transaction is idempotent by its token) and a burst of creations is spread over
 * several items. The Sub-Chains created before the count was kept are counted once into BASE: the list items that
 * lack the `counted` mark, a set no later creation adds to, so that two instances taking it at once write the same
 * number, and the first write wins.
 *
 * A read of the count is one query of at most SUB_CHAIN_COUNT_SHARDS + 1 small items (one read unit, strongly
 * consistent). Until BASE exists (a table no start or `npm run migrate` has seen yet) a read counts the list as
 * before, and takes BASE on the way when the list fits the request's allowance.
 */
import { createHash } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CHAINS_PARTITION, SUB_CHAIN_COUNT_BASE_SK, SUB_CHAIN_COUNT_PK, SUB_CHAIN_COUNT_SHARDS, SUB_CHAINS_SK_PREFIX } from './keys.ts';
import { retryConflicts, send } from './requests.ts';
import { translateStorageError } from './errors.ts';

/**
 * The Update a creation of `created` Sub-Chains adds to its transaction: one shard, chosen by the first chain's name
 * (names are unique, so creations spread over the shards; no random draw, so that a simulated run replays exactly).
 */
export function addToSubChainCount(tableName: string, created: number, firstName: string) {
  const shard = createHash('sha256').update(firstName).digest()[0]! % SUB_CHAIN_COUNT_SHARDS;
  return {
    Update: {
      TableName: tableName,
      Key: { pk: SUB_CHAIN_COUNT_PK, sk: String(shard) },
      UpdateExpression: 'ADD n :n',
      ExpressionAttributeValues: { ':n': created },
    },
  };
}

/** The kept count: BASE (undefined until taken) and the shards' sum. */
async function readKept(client: DynamoDBDocumentClient, tableName: string): Promise<{ base: number | undefined; added: number }> {
  const out = await send(() =>
    client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :p',
        ExpressionAttributeValues: { ':p': SUB_CHAIN_COUNT_PK },
        ConsistentRead: true,
      }),
    ),
  );
  let base: number | undefined;
  let added = 0;
  for (const item of out.Items ?? []) {
    if (item.sk === SUB_CHAIN_COUNT_BASE_SK) base = Number(item.n ?? 0);
    else added += Number(item.n ?? 0);
  }
  return { base, added };
}

/**
 * Counts the chain list once (every Sub-Chain's list item; those without the `counted` mark apart) and writes BASE
 * unless it exists. Answers the list's total at the time of reading.
 */
async function takeBase(client: DynamoDBDocumentClient, tableName: string): Promise<{ total: number; uncounted: number; written: boolean }> {
  let total = 0;
  let uncounted = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await send(() =>
      client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :p AND begins_with(sk, :sub)',
          FilterExpression: 'attribute_not_exists(counted)',
          ExpressionAttributeValues: { ':p': CHAINS_PARTITION, ':sub': SUB_CHAINS_SK_PREFIX },
          Select: 'COUNT',
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      ),
    );
    total += page.ScannedCount ?? 0;
    uncounted += page.Count ?? 0;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  let written = true;
  try {
    await retryConflicts(() =>
      client.send(
        new PutCommand({
          TableName: tableName,
          Item: { pk: SUB_CHAIN_COUNT_PK, sk: SUB_CHAIN_COUNT_BASE_SK, n: uncounted, taken_at: Date.now() },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw translateStorageError(error);
    written = false;
  }
  return { total, uncounted, written };
}

/** The number of Sub-Chains: the kept count, or (before BASE is taken) the list's, taking BASE. */
export async function countSubChains(client: DynamoDBDocumentClient, tableName: string): Promise<number> {
  const kept = await readKept(client, tableName);
  if (kept.base !== undefined) return kept.base + kept.added;
  return (await takeBase(client, tableName)).total;
}

/**
 * The migration: takes BASE when it is missing, answering the Sub-Chains it counted into it (0 for a table with none
 * of an earlier version: a first start says nothing); once taken, nothing to do (one read).
 */
export async function takeSubChainBase(client: DynamoDBDocumentClient, tableName: string): Promise<number> {
  if ((await readKept(client, tableName)).base !== undefined) return 0;
  const taken = await takeBase(client, tableName);
  return taken.written ? taken.uncounted : 0;
}
