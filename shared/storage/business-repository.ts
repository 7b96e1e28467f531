/** The business domain's records in the registry table (layout in keys.ts). */
import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type {
  BusinessRepository,
  ChannelRecord,
  ContractVersionRecord,
  OrganizationRecord,
  PrivateDataRecord,
} from '../business/repository.ts';
import {
  CHANNELS_PARTITION,
  COLLECTION_SK_PREFIX,
  MEMBER_SK_PREFIX,
  ORGS_PARTITION,
  channelPk,
  contractPk,
  contractVersionSk,
  privateDataPk,
} from './keys.ts';
import { putIfAbsent, queryAll, send } from './requests.ts';

type Item = Record<string, unknown>;

/** Strips the key attributes from an item, leaving the record. */
function record<T>(item: Item): T {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as T;
}

export function createBusinessRepository({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): BusinessRepository {
  /** Puts an item unless one with its key exists; false when it did. */
  const putNew = (item: Record<string, unknown>) => putIfAbsent(client, tableName, item);


  async function get<T>(pk: string, sk: string): Promise<T | undefined> {
    const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: { pk, sk }, ConsistentRead: true })));
    return out.Item ? record<T>(out.Item) : undefined;
  }

  async function partition<T>(pk: string): Promise<T[]> {
    const items = await queryAll(client, { TableName: tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } });
    return items.map((item) => record<T>(item));
  }

  return {
    putOrganization: (org) => putNew({ pk: ORGS_PARTITION, sk: org.org_id, ...org }),
    getOrganization: (orgId) => get<OrganizationRecord>(ORGS_PARTITION, orgId),
    listOrganizations: () => partition<OrganizationRecord>(ORGS_PARTITION),

    putChannel: (channel) => putNew({ pk: CHANNELS_PARTITION, sk: channel.channel_id, ...channel }),
    async deleteChannel(channelId) {
      await send(() => client.send(new DeleteCommand({ TableName: tableName, Key: { pk: CHANNELS_PARTITION, sk: channelId } })));
    },
    getChannel: (channelId) => get<ChannelRecord>(CHANNELS_PARTITION, channelId),
    async getChannelDetails(channelId) {
      const items = await queryAll(client, {
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': channelPk(channelId) },
        ConsistentRead: true,
      });
      const named = (prefix: string) =>
        items.map((i) => String(i.sk)).filter((sk) => sk.startsWith(prefix)).map((sk) => sk.slice(prefix.length)).sort();
      return { organizations: named(MEMBER_SK_PREFIX), collections: named(COLLECTION_SK_PREFIX) };
    },
    addMember: (channelId, orgId, at) => putNew({ pk: channelPk(channelId), sk: `${MEMBER_SK_PREFIX}${orgId}`, org_id: orgId, joined_at: at }),
    putCollection: (channelId, collection, at) =>
      putNew({ pk: channelPk(channelId), sk: `${COLLECTION_SK_PREFIX}${collection}`, collection, created_at: at }),

    async putPrivateData(data) {
      await send(() =>
        client.send(new PutCommand({ TableName: tableName, Item: { pk: privateDataPk(data.channel, data.collection), sk: data.key, ...data } })),
      );
    },
    getPrivateData: (channel, collection, key) => get<PrivateDataRecord>(privateDataPk(channel, collection), key),

    putContractVersion: (version) => putNew({ pk: contractPk(version.contract_id), sk: contractVersionSk(version.version), ...version }),
    listContractVersions: (contractId) => partition<ContractVersionRecord>(contractPk(contractId)),
  };
}
