/**
 * The record that admits contract runs (shared/business/contract-admission.ts), in the registry table: one item,
 * replaced only on its version. Sized and priced in docs/business.md ("Contract runs at once").
 */
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RunSlotStore, RunSlotsState } from '../business/contract-admission.ts';
import { CONTRACT_RUN_SLOTS_KEY } from './keys.ts';
import { send, writeIf } from './requests.ts';

export function createRunSlotStore({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): RunSlotStore {
  return {
    async read(): Promise<RunSlotsState> {
      const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: CONTRACT_RUN_SLOTS_KEY, ConsistentRead: true })));
      const item = out.Item as { runs?: Record<string, number>; waits?: Record<string, number>; v?: number } | undefined;
      return { runs: item?.runs ?? {}, waits: item?.waits ?? {}, version: item?.v ?? 0 };
    },
    replace(next, expected) {
      return writeIf(
        client,
        new PutCommand({
          TableName: tableName,
          Item: { ...CONTRACT_RUN_SLOTS_KEY, runs: next.runs, waits: next.waits, v: expected + 1 },
          // Version 0 is the record not written yet.
          ConditionExpression: expected === 0 ? 'attribute_not_exists(pk)' : 'v = :v',
          ...(expected === 0 ? {} : { ExpressionAttributeValues: { ':v': expected } }),
        }),
      );
    },
    async leave(id) {
      await writeIf(
        client,
        new UpdateCommand({
          TableName: tableName,
          Key: CONTRACT_RUN_SLOTS_KEY,
          UpdateExpression: 'REMOVE runs.#id, waits.#id ADD v :one',
          // Only where the record is: a leave never creates it (nor a record with no maps, which a later REMOVE would fail on).
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#id': id },
          ExpressionAttributeValues: { ':one': 1 },
        }),
      );
    },
  };
}
