/** WebSocket connections and their subscriptions in the connections table (layout in keys.ts). */
import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Role } from '../admin/api-keys.ts';
import type { ConnectionIdentity, ConnectionStore } from '../realtime/realtime.ts';
import { CONNECTIONS_INDEXES, CONNECTION_META_SK, connectionPk, subscriptionSk } from './keys.ts';
import { queryAll, send } from './requests.ts';

/** The identity fields of a stored item (connections stored before org_id was kept have none: null). */
function identityOf(item: Record<string, unknown>): ConnectionIdentity {
  return {
    key_id: typeof item.key_id === 'string' ? item.key_id : null,
    role: typeof item.role === 'string' ? (item.role as Role) : null,
    org_id: typeof item.org_id === 'string' ? item.org_id : null,
  };
}

export function createConnectionStore({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): ConnectionStore {
  return {
    async connect(connectionId, meta, expiresAt) {
      await send(() =>
        client.send(new PutCommand({ TableName: tableName, Item: { pk: connectionPk(connectionId), sk: CONNECTION_META_SK, ...meta, ttl: expiresAt } })),
      );
    },
    async identity(connectionId) {
      const out = await send(() =>
        client.send(new GetCommand({ TableName: tableName, Key: { pk: connectionPk(connectionId), sk: CONNECTION_META_SK }, ConsistentRead: true })),
      );
      return out.Item ? identityOf(out.Item) : undefined;
    },
    async subscribe(connectionId, filter, identity, expiresAt) {
      await send(() =>
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: {
              pk: connectionPk(connectionId),
              sk: subscriptionSk(filter),
              gsi_filter_pk: filter,
              gsi_filter_sk: connectionId,
              ...identity,
              ttl: expiresAt,
            },
          }),
        ),
      );
    },
    async unsubscribe(connectionId, filter) {
      await send(() => client.send(new DeleteCommand({ TableName: tableName, Key: { pk: connectionPk(connectionId), sk: subscriptionSk(filter) } })));
    },
    async disconnect(connectionId) {
      const items = await queryAll(client, {
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': connectionPk(connectionId) },
        ProjectionExpression: 'pk, sk',
      });
      await Promise.all(items.map((item) => send(() => client.send(new DeleteCommand({ TableName: tableName, Key: { pk: item.pk, sk: item.sk } })))));
    },
    async subscribers(filter) {
      const items = await queryAll(client, {
        TableName: tableName,
        IndexName: CONNECTIONS_INDEXES.byFilter,
        KeyConditionExpression: 'gsi_filter_pk = :f',
        ExpressionAttributeValues: { ':f': filter },
      });
      return items.map((item) => ({ connection_id: String(item.gsi_filter_sk), ...identityOf(item) }));
    },
  };
}
