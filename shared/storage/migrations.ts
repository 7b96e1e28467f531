/**
 * Migrations of tables written by earlier versions, each idempotent and cheap when there is nothing to do,
 * run by the local launcher at every start and by `npm run migrate` against any DynamoDB.
 *
 * chain-list: earlier heads carried the keys of a `chains` GSI, so every append of every chain wrote one
 * GSI partition (`CHAINS`): a ceiling of about 1,000 appends a second for the whole service on AWS. Now
 * the list is a `CHAINS` partition of the table itself, written once per chain. This migration writes
 * the list entries of the chains it finds in the old index and removes the index keys from their heads,
 * after which nothing lands in that index (it can then be deleted).
 */
import { DescribeTableCommand, ResourceNotFoundException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand, ScanCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CHAINS_PARTITION, HEAD_SK, LEDGER_INDEXES, chainPk } from './keys.ts';
import { send } from './requests.ts';
import { takeSubChainBase } from './sub-chain-count.ts';

export interface MigrationReport {
  name: string;
  /** Items moved; 0 when the table had nothing to migrate. */
  migrated: number;
}

/** Moves chains from the old `chains` GSI to the chain list. */
export async function migrateChainList(
  admin: DynamoDBClient,
  client: DynamoDBDocumentClient,
  tableName: string,
  scanWithoutIndex = false,
): Promise<MigrationReport> {
  let indexes: string[] = [];
  try {
    const described = await send(() => admin.send(new DescribeTableCommand({ TableName: tableName })));
    indexes = (described.Table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName ?? '');
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return { name: 'chain-list', migrated: 0 };
    throw error;
  }
  const viaIndex = indexes.includes(LEDGER_INDEXES.chains);
  // Without the index (a deploy may have dropped it first), the heads still carry its keys: scan for them.
  // A scan reads the whole table once; after the migration there is nothing left to find, and the launcher
  // only scans when an earlier layout is possible (a table that still has the index).
  if (!viaIndex && !scanWithoutIndex) return { name: 'chain-list', migrated: 0 };
  let migrated = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await send(() =>
      client.send(
        viaIndex
          ? new QueryCommand({
              TableName: tableName,
              IndexName: LEDGER_INDEXES.chains,
              KeyConditionExpression: 'gsi_chains_pk = :p',
              ExpressionAttributeValues: { ':p': CHAINS_PARTITION },
              ExclusiveStartKey: startKey,
            })
          : new ScanCommand({
              TableName: tableName,
              FilterExpression: 'sk = :head AND attribute_exists(gsi_chains_pk)',
              ExpressionAttributeValues: { ':head': HEAD_SK },
              ExclusiveStartKey: startKey,
            }),
      ),
    );
    for (const head of page.Items ?? []) {
      await send(() =>
        client.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: tableName,
                  Item: { pk: CHAINS_PARTITION, sk: head.gsi_chains_sk, chain_name: head.chain_name, kind: head.kind, created_at: head.created_at },
                },
              },
              {
                Update: {
                  TableName: tableName,
                  Key: { pk: chainPk(String(head.chain_name)), sk: HEAD_SK },
                  UpdateExpression: 'REMOVE gsi_chains_pk, gsi_chains_sk',
                },
              },
            ],
          }),
        ),
      );
      migrated += 1;
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return { name: 'chain-list', migrated };
}

/** Every migration, in order. `thorough`: also scan for what an index that is gone would have found (npm run migrate). */
export async function migrateLedgerTable(
  admin: DynamoDBClient,
  client: DynamoDBDocumentClient,
  tableName: string,
  thorough = false,
): Promise<MigrationReport[]> {
  const chainList = await migrateChainList(admin, client, tableName, thorough);
  // After the chain list: BASE counts its items.
  return [chainList, await migrateSubChainCount(client, tableName)];
}

/**
 * sub-chain-count: the Sub-Chains created before the count was kept are counted once (shared/storage/sub-chain-count.ts),
 * so that the Main Chain's `registered_sub_chains` is read from a few items, not the whole chain list; its report is the
 * number of them. One read when done; the count of a table the launcher never started (a deployed one) is also taken by its first read of the
 * statistics, or by `npm run migrate -- --aws` when its list is past a request's read allowance.
 */
export async function migrateSubChainCount(client: DynamoDBDocumentClient, tableName: string): Promise<MigrationReport> {
  try {
    return { name: 'sub-chain-count', migrated: await takeSubChainBase(client, tableName) };
  } catch (error) {
    if (error instanceof ResourceNotFoundException || (error as Error).name === 'ResourceNotFoundException') return { name: 'sub-chain-count', migrated: 0 };
    throw error;
  }
}
