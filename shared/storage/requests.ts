/**
 * What every repository does around a DynamoDB call: translate failures into domain errors, and follow
 * a query's pages to the end.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand, type DynamoDBDocumentClient, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { translateStorageError } from './errors.ts';

/** Runs a DynamoDB call; an unreachable or throttled DynamoDB becomes a 503 domain error. */
export async function send<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw translateStorageError(error);
  }
}

/** Runs a query to the end, following LastEvaluatedKey. */
export async function queryAll(client: DynamoDBDocumentClient, input: QueryCommandInput): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await send(() => client.send(new QueryCommand({ ...input, ExclusiveStartKey: startKey })));
    items.push(...((page.Items ?? []) as Record<string, unknown>[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** Puts an item unless one with its key exists; false when it did (nothing is overwritten). */
export async function putIfAbsent(client: DynamoDBDocumentClient, tableName: string, item: Record<string, unknown>): Promise<boolean> {
  try {
    await client.send(new PutCommand({ TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw translateStorageError(error);
  }
}
