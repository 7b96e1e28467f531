/** WebSocket connections and their subscriptions in the connections table (layout in keys.ts). */
import { DeleteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ConnectionStore } from '../realtime/realtime.ts';
import { CONNECTIONS_INDEXES, CONNECTION_META_SK, connectionPk, subscriptionSk } from './keys.ts';
import { queryAll, send } from './requests.ts';

export function createConnectionStore({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): ConnectionStore {
  return {
    async connect(connectionId, meta, expiresAt) {
      await send(() =>
        client.send(new PutCommand({ TableName: tableName, Item: { pk: connectionPk(connectionId), sk: CONNECTION_META_SK, ...meta, ttl: expiresAt } })),
      );
    },
    async subscribe(connectionId, filter, expiresAt) {
      await send(() =>
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: { pk: connectionPk(connectionId), sk: subscriptionSk(filter), gsi_filter_pk: filter, gsi_filter_sk: connectionId, ttl: expiresAt },
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
      return items.map((item) => String(item.gsi_filter_sk));
    },
  };
}
