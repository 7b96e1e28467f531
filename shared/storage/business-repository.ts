/** The business domain's records in the registry table (layout in keys.ts). */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { BusinessRepository, ChannelRecord, ContractOwner, ContractVersionRecord, OrganizationRecord, PrivateDataRecord } from '../business/repository.ts';
import { firstRefusal, Transaction, TRANSACTION_ITEMS_MAX } from './transactions.ts';
import {
  CHANNELS_PARTITION,
  COLLECTION_SK_PREFIX,
  COLLECTIONS_COUNT_SK,
  CONTRACT_OWNER_SK,
  CONTRACT_VERSION_SK_PREFIX,
  MEMBER_SK_PREFIX,
  REMOVED_SK_PREFIX,
  ORG_KEYS_PARTITION,
  ORGS_PARTITION,
  channelPk,
  orgChannelItem,
  orgChannelsPk,
  contractPk,
  contractSourceSk,
  contractVersionSk,
  privateDataPk,
} from './keys.ts';
import { keyCanExist, partitionKeys, putIfAbsent, queryAll, send, writeIf } from './requests.ts';

/** The owner as stored: `org#<id>` or `admins`. */
function ownerToken(owner: ContractOwner): string {
  return 'org_id' in owner ? `org#${owner.org_id}` : 'admins';
}

function ownerFromToken(token: string): ContractOwner {
  return token.startsWith('org#') ? { org_id: token.slice(4) } : { admins: true };
}

type Item = Record<string, unknown>;

/** Strips the key attributes from an item, leaving the record. */
function record<T>(item: Item): T {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as T;
}

/** The condition of a write that creates its item: no item has its key yet. */
const NOT_THERE = 'attribute_not_exists(pk)';

export function createBusinessRepository({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): BusinessRepository {
  /** Puts an item unless one with its key exists; false when it did. */
  const putNew = (item: Record<string, unknown>) => putIfAbsent(client, tableName, item);

  async function get<T>(pk: string, sk: string): Promise<T | undefined> {
    if (!keyCanExist(pk, sk)) return undefined;
    const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: { pk, sk }, ConsistentRead: true })));
    return out.Item ? record<T>(out.Item) : undefined;
  }

  async function partition<T>(pk: string): Promise<T[]> {
    const items = await queryAll(client, { TableName: tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } });
    return items.map((item) => record<T>(item));
  }

  /** Sends a transaction: false when one of its conditions failed and nothing was written. */
  const writeAllIf = async (transaction: Transaction<unknown>): Promise<boolean> => (await firstRefusal(client, transaction)) === undefined;

  return {
    async putOrganization(org) {
      const transaction = new Transaction<'exists' | 'key_taken'>().add(
        { Put: { TableName: tableName, Item: { pk: ORGS_PARTITION, sk: org.org_id, ...org }, ConditionExpression: NOT_THERE } },
        'exists',
      );
      if (org.public_key !== null)
        transaction.add(
          { Put: { TableName: tableName, Item: { pk: ORG_KEYS_PARTITION, sk: org.public_key, org_id: org.org_id }, ConditionExpression: NOT_THERE } },
          'key_taken',
        );
      return (await firstRefusal(client, transaction)) ?? 'created';
    },
    getOrganization: (orgId) => get<OrganizationRecord>(ORGS_PARTITION, orgId),
    listOrganizations: () => partition<OrganizationRecord>(ORGS_PARTITION),

    async putChannel(channel, firstMember) {
      if (!firstMember) return putNew({ pk: CHANNELS_PARTITION, sk: channel.channel_id, ...channel });
      const transaction = new Transaction<'exists'>()
        .add({ Put: { TableName: tableName, Item: { pk: CHANNELS_PARTITION, sk: channel.channel_id, ...channel }, ConditionExpression: NOT_THERE } }, 'exists')
        .add(
          {
            Put: {
              TableName: tableName,
              Item: { pk: channelPk(channel.channel_id), sk: `${MEMBER_SK_PREFIX}${firstMember.org_id}`, ...firstMember },
              ConditionExpression: NOT_THERE,
            },
          },
          'exists',
        )
        .add({ Put: { TableName: tableName, Item: orgChannelItem(firstMember.org_id, channel.channel_id) } });
      return writeAllIf(transaction);
    },
    async deleteChannel(channelId) {
      const members = await partitionKeys(client, tableName, channelPk(channelId));
      const listed = members
        .filter((key) => key.sk.startsWith(MEMBER_SK_PREFIX))
        .map((key) => ({ pk: orgChannelsPk(key.sk.slice(MEMBER_SK_PREFIX.length)), sk: channelId }));
      // In one transaction (a channel being rolled back holds its founder, or a few members): a failure part way had
      // left the channel's record without its members, or members (and their organizations' lists) of no channel,
      // which a channel created again under the name would have inherited. The record goes in the last chunk.
      const keys = [...listed, ...members, { pk: CHANNELS_PARTITION, sk: channelId }];
      for (let at = 0; at < keys.length; at += TRANSACTION_ITEMS_MAX) {
        const transaction = new Transaction<unknown>();
        for (const key of keys.slice(at, at + TRANSACTION_ITEMS_MAX)) transaction.add({ Delete: { TableName: tableName, Key: { pk: key.pk, sk: key.sk } } });
        await firstRefusal(client, transaction);
      }
    },
    getChannel: (channelId) => get<ChannelRecord>(CHANNELS_PARTITION, channelId),
    async getChannelDetails(channelId) {
      if (!keyCanExist(channelPk(channelId))) return { organizations: [], collections: [] };
      const items = await queryAll(client, {
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': channelPk(channelId) },
        ConsistentRead: true,
      });
      const named = (prefix: string) =>
        items
          .map((i) => String(i.sk))
          .filter((sk) => sk.startsWith(prefix))
          .map((sk) => sk.slice(prefix.length))
          .sort();
      return { organizations: named(MEMBER_SK_PREFIX), collections: named(COLLECTION_SK_PREFIX) };
    },
    async getChannelMembers(channelId) {
      if (!keyCanExist(channelPk(channelId))) return [];
      const items = await queryAll(client, {
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :member)',
        ExpressionAttributeValues: { ':pk': channelPk(channelId), ':member': MEMBER_SK_PREFIX },
        ProjectionExpression: 'sk',
        ConsistentRead: true,
      });
      return items.map((i) => String(i.sk).slice(MEMBER_SK_PREFIX.length)).sort();
    },
    // The member and the mark an admin's removal leaves are written together, so that a member's add never lands
    // between them: a member had added back at once an organization an admin had just taken out (red team).
    async addMember(channelId, orgId, at, lift) {
      const key = { pk: channelPk(channelId), sk: `${MEMBER_SK_PREFIX}${orgId}` };
      const mark = { pk: channelPk(channelId), sk: `${REMOVED_SK_PREFIX}${orgId}` };
      const transaction = new Transaction<'member' | 'removed'>()
        .add({ Put: { TableName: tableName, Item: { ...key, org_id: orgId, joined_at: at }, ConditionExpression: NOT_THERE } }, 'member')
        .add(
          lift ? { Delete: { TableName: tableName, Key: mark } } : { ConditionCheck: { TableName: tableName, Key: mark, ConditionExpression: NOT_THERE } },
          'removed',
        )
        .add({ Put: { TableName: tableName, Item: orgChannelItem(orgId, channelId) } });
      // A member already is the first refusal, then a removal's mark.
      return (await firstRefusal(client, transaction)) ?? 'added';
    },
    async removeMember(channelId, orgId, at) {
      if (!keyCanExist(channelPk(channelId), `${MEMBER_SK_PREFIX}${orgId}`)) return false;
      const transaction = new Transaction<'absent'>()
        .add(
          {
            Delete: { TableName: tableName, Key: { pk: channelPk(channelId), sk: `${MEMBER_SK_PREFIX}${orgId}` }, ConditionExpression: 'attribute_exists(pk)' },
          },
          'absent',
        )
        .add({ Put: { TableName: tableName, Item: { pk: channelPk(channelId), sk: `${REMOVED_SK_PREFIX}${orgId}`, org_id: orgId, removed_at: at } } })
        .add({ Delete: { TableName: tableName, Key: { pk: orgChannelsPk(orgId), sk: channelId } } });
      return writeAllIf(transaction);
    },
    async listChannelIds(orgId, atMost) {
      const pk = orgId === null ? CHANNELS_PARTITION : orgChannelsPk(orgId);
      if (!keyCanExist(pk)) return [];
      const out = await send(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': pk },
            ProjectionExpression: 'sk',
            ConsistentRead: true,
            Limit: atMost + 1,
          }),
        ),
      );
      return (out.Items ?? []).map((item) => String(item.sk));
    },
    async putCollection(channelId, collection, at, { seen, max }) {
      const transaction = new Transaction<'exists' | 'full'>()
        .add(
          {
            Put: {
              TableName: tableName,
              Item: { pk: channelPk(channelId), sk: `${COLLECTION_SK_PREFIX}${collection}`, collection, created_at: at },
              ConditionExpression: NOT_THERE,
            },
          },
          'exists',
        )
        .add(
          {
            // A channel with no count yet (its collections predate it) starts from the count its caller read.
            Update: {
              TableName: tableName,
              Key: { pk: channelPk(channelId), sk: COLLECTIONS_COUNT_SK },
              UpdateExpression: 'SET #n = if_not_exists(#n, :seen) + :one',
              ConditionExpression: seen < max ? 'attribute_not_exists(#n) OR #n < :max' : '#n < :max',
              ExpressionAttributeNames: { '#n': 'n' },
              ExpressionAttributeValues: { ':seen': seen, ':one': 1, ':max': max },
            },
          },
          'full',
        );
      return (await firstRefusal(client, transaction)) ?? 'created';
    },

    async putPrivateData(data) {
      const later = data.block_index === undefined ? undefined : { ':index': data.block_index };
      const stored = await writeIf(
        client,
        new PutCommand({
          TableName: tableName,
          Item: { pk: privateDataPk(data.channel, data.collection), sk: data.key, ...data },
          ...(later ? { ConditionExpression: 'attribute_not_exists(block_index) OR block_index < :index', ExpressionAttributeValues: later } : {}),
        }),
      );
      return stored ? 'stored' : 'superseded';
    },
    getPrivateData: (channel, collection, key) => get<PrivateDataRecord>(privateDataPk(channel, collection), key),
    async deletePrivateData(channel, collection, key, subjectId) {
      // Only the subject's: a later write of the key (another subject's, or none) is kept.
      await writeIf(
        client,
        new DeleteCommand({
          TableName: tableName,
          Key: { pk: privateDataPk(channel, collection), sk: key },
          ConditionExpression: 'subject_id = :subject',
          ExpressionAttributeValues: { ':subject': subjectId },
        }),
      );
    },

    async publishContractVersion(version, owner) {
      const token = ownerToken(owner);
      const transaction = new Transaction<'owned_by_another' | 'version_exists'>()
        .add(
          {
            // Claims the id, or checks it is already ours (rewriting the same owner changes nothing).
            Put: {
              TableName: tableName,
              Item: { pk: contractPk(version.contract_id), sk: CONTRACT_OWNER_SK, owner: token },
              ConditionExpression: `${NOT_THERE} OR #owner = :owner`,
              ExpressionAttributeNames: { '#owner': 'owner' },
              ExpressionAttributeValues: { ':owner': token },
            },
          },
          'owned_by_another',
        )
        .add(
          {
            Put: {
              TableName: tableName,
              // An inline source goes in an item of its own: a version item is read whenever the contract is read or
              // run, its source only when that version runs (20 versions of 200 KB had cost every read 975 read units).
              Item: {
                pk: contractPk(version.contract_id),
                sk: contractVersionSk(version.version),
                ...version,
                ...(version.implementation !== null ? { implementation: null, source_kept: true } : {}),
              },
              ConditionExpression: NOT_THERE,
            },
          },
          'version_exists',
        );
      if (version.implementation !== null) {
        transaction.add(
          {
            Put: {
              TableName: tableName,
              Item: { pk: contractPk(version.contract_id), sk: contractSourceSk(version.version), source: version.implementation },
              ConditionExpression: NOT_THERE,
            },
          },
          'version_exists',
        );
      }
      // Owned by another wins over an existing version: the first failed condition, in item order.
      return (await firstRefusal(client, transaction)) ?? 'created';
    },
    async getContractOwner(contractId) {
      const item = await get<{ owner: string }>(contractPk(contractId), CONTRACT_OWNER_SK);
      return item ? ownerFromToken(item.owner) : undefined;
    },
    async getContractSource(contractId, version) {
      return (await get<{ source: string }>(contractPk(contractId), contractSourceSk(version)))?.source;
    },
    async listContractVersions(contractId) {
      const items = await queryAll(client, {
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :versions)',
        ExpressionAttributeValues: { ':pk': contractPk(contractId), ':versions': CONTRACT_VERSION_SK_PREFIX },
        ConsistentRead: true,
      });
      return items.map((item) => record<ContractVersionRecord>(item));
    },
  };
}
