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
import { GetCommand, PutCommand, QueryCommand, ScanCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { NONCE_KEY_SIGNER } from '../admin/repository.ts';
import { CHANNEL_CHAIN_PREFIX, entityScopeOf } from '../ledger/names.ts';
import {
  CHAINS_PARTITION,
  CHANNELS_PARTITION,
  HEAD_SK,
  LEDGER_INDEXES,
  MEMBER_SK_PREFIX,
  chainPk,
  channelPk,
  entityIndexPk,
  entityPk,
  migrationKey,
  noncePk,
  orgChannelItem,
} from './keys.ts';
import { putIfAbsent, queryAll, scanPages, send, writeIf } from './requests.ts';
import { createBusinessRepository } from './business-repository.ts';
import { firstRefusal, Transaction } from './transactions.ts';
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

/** Every migration of the ledger table, in order. `thorough`: also scan for what an index that is gone would have found (npm run migrate). */
export async function migrateLedgerTable(
  admin: DynamoDBClient,
  client: DynamoDBDocumentClient,
  tableName: string,
  thorough = false,
): Promise<MigrationReport[]> {
  const chainList = await migrateChainList(admin, client, tableName, thorough);
  // After the chain list: BASE counts its items.
  return [chainList, await migrateSubChainCount(client, tableName), await migrateScopedEntityIndex(client, tableName)];
}

/** Every migration of the ledger and registry tables (the launcher at each start, `npm run migrate`). */
export async function migrateTables(
  admin: DynamoDBClient,
  client: DynamoDBDocumentClient,
  tables: { ledger: string; registry: string },
  thorough = false,
): Promise<MigrationReport[]> {
  return [
    ...(await migrateLedgerTable(admin, client, tables.ledger, thorough)),
    await migrateOrgChannels(client, tables.registry),
    await migrateNoncesKept(client, tables.registry),
  ];
}

/**
 * nonces-kept: a secure event's nonce is kept for good (shared/admin/repository.ts). Those written before 2026-12-07
 * expired (their `ttl`), after which the same signed body was appended again; and those written before 2026-12-06 are
 * in the organization's partition (NONCE#<org id>), which no check reads now (red team, 2026-12-07). Each used nonce
 * loses its `ttl`, and one of the older layout is written again under its organization's signing key, as checks read
 * it. One scan of the registry, once: done, it is recorded there.
 */
export async function migrateNoncesKept(client: DynamoDBDocumentClient, tableName: string): Promise<MigrationReport> {
  const name = 'nonces-kept';
  if (await doneOnce(client, tableName, name)) return { name, migrated: 0 };
  const registry = createBusinessRepository({ client, tableName });
  const keyOf = new Map<string, Promise<string | null | undefined>>();
  const signingKey = (orgId: string) => {
    if (!keyOf.has(orgId))
      keyOf.set(
        orgId,
        registry.getOrganization(orgId).then((org) => org?.public_key),
      );
    return keyOf.get(orgId)!;
  };
  let migrated = 0;
  const pages = scanPages(client, {
    TableName: tableName,
    FilterExpression: 'begins_with(pk, :nonce)',
    ProjectionExpression: 'pk, sk, #ttl',
    ExpressionAttributeNames: { '#ttl': 'ttl' },
    ExpressionAttributeValues: { ':nonce': noncePk('') },
  });
  for await (const items of pages) {
    for (const item of items) {
      const signer = String(item.pk).slice(noncePk('').length);
      let changed = false;
      if (!signer.startsWith(NONCE_KEY_SIGNER)) {
        const publicKey = await signingKey(signer);
        if (publicKey) changed = await putIfAbsent(client, tableName, { pk: noncePk(`${NONCE_KEY_SIGNER}${publicKey}`), sk: item.sk });
      }
      if (item.ttl !== undefined) {
        // Only while it is there: a nonce given back meanwhile (its event could not be appended) stays given back.
        const kept = await writeIf(
          client,
          new UpdateCommand({
            TableName: tableName,
            Key: { pk: item.pk, sk: item.sk },
            UpdateExpression: 'REMOVE #ttl',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: { '#ttl': 'ttl' },
          }),
        );
        changed ||= kept;
      }
      if (changed) migrated += 1;
    }
  }
  await markDone(client, tableName, name);
  return { name, migrated };
}

/** Whether a once-only migration is recorded as done in its table (a missing table: nothing to migrate). */
async function doneOnce(client: DynamoDBDocumentClient, tableName: string, name: string): Promise<boolean> {
  try {
    const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: migrationKey(name), ConsistentRead: true })));
    return out.Item !== undefined;
  } catch (error) {
    if (isMissingTable(error)) return true;
    throw error;
  }
}

const markDone = (client: DynamoDBDocumentClient, tableName: string, name: string) =>
  send(() => client.send(new PutCommand({ TableName: tableName, Item: { ...migrationKey(name), done_at: new Date().toISOString() } })));

/** A table that does not exist (an earlier version's deployment without it): nothing to migrate there. */
function isMissingTable(error: unknown): boolean {
  return error instanceof ResourceNotFoundException || (error as Error).name === 'ResourceNotFoundException';
}

/**
 * scoped-entity-index: the entity index entries of channels' chains, written by earlier versions in the one partition
 * an entity has for every chain (ENTITY#<id>), are moved to the channel's own (ENTITY@<channel chain>#<id>), where
 * only the traces of callers who read that channel look (shared/storage/keys.ts, entityIndexPk). Block items and
 * records alike; each moved on the condition that it is still where it was. One scan of the table, once: done, it is
 * recorded in the table and a start reads one item.
 */
export async function migrateScopedEntityIndex(client: DynamoDBDocumentClient, tableName: string): Promise<MigrationReport> {
  const name = 'scoped-entity-index';
  if (await doneOnce(client, tableName, name)) return { name, migrated: 0 };
  let migrated = 0;
  const pages = scanPages(client, {
    TableName: tableName,
    FilterExpression: 'begins_with(gsi_entity_pk, :unscoped) AND begins_with(chain_name, :channel)',
    ExpressionAttributeValues: { ':unscoped': entityPk(''), ':channel': CHANNEL_CHAIN_PREFIX },
    ProjectionExpression: 'pk, sk, gsi_entity_pk, chain_name',
  });
  for await (const items of pages) {
    for (const item of items) {
      const entityId = String(item.gsi_entity_pk).slice(entityPk('').length);
      const scope = entityScopeOf(String(item.chain_name));
      if (scope === null) continue;
      const moved = await writeIf(
        client,
        new UpdateCommand({
          TableName: tableName,
          Key: { pk: item.pk, sk: item.sk },
          UpdateExpression: 'SET gsi_entity_pk = :scoped',
          ConditionExpression: 'gsi_entity_pk = :was',
          ExpressionAttributeValues: { ':scoped': entityIndexPk(entityId, scope), ':was': item.gsi_entity_pk },
        }),
      );
      if (moved) migrated += 1;
    }
  }
  await markDone(client, tableName, name);
  return { name, migrated };
}

/**
 * org-channels: the list of an organization's channels (shared/storage/keys.ts, orgChannelsPk), which a trace reads to
 * know the channels' indexes it may read, is written for the members of channels made by earlier versions, each on
 * the condition that the member item is still there. Once, recorded as done in the registry.
 */
export async function migrateOrgChannels(client: DynamoDBDocumentClient, tableName: string): Promise<MigrationReport> {
  const name = 'org-channels';
  if (await doneOnce(client, tableName, name)) return { name, migrated: 0 };
  let migrated = 0;
  const channels = await queryAll(client, {
    TableName: tableName,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': CHANNELS_PARTITION },
    ProjectionExpression: 'sk',
    ConsistentRead: true,
  });
  const registry = createBusinessRepository({ client, tableName });
  for (const channel of channels) {
    const channelId = String(channel.sk);
    for (const orgId of await registry.getChannelMembers(channelId)) {
      const memberKey = { pk: channelPk(channelId), sk: `${MEMBER_SK_PREFIX}${orgId}` };
      const transaction = new Transaction<'left'>()
        .add({ ConditionCheck: { TableName: tableName, Key: memberKey, ConditionExpression: 'attribute_exists(pk)' } }, 'left')
        .add({ Put: { TableName: tableName, Item: orgChannelItem(orgId, channelId) } });
      if ((await firstRefusal(client, transaction)) === undefined) migrated += 1;
    }
  }
  await markDone(client, tableName, name);
  return { name, migrated };
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
    if (isMissingTable(error)) return { name: 'sub-chain-count', migrated: 0 };
    throw error;
  }
}
