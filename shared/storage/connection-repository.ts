/** WebSocket connections and their subscriptions in the connections table (layout in keys.ts). */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { translateStorageError } from './errors.ts';
import type { Role } from '../access/policy.ts';
import type { ConnectionIdentity, ConnectionStore } from '../realtime/realtime.ts';
import { CONNECTIONS_INDEXES, CONNECTION_META_SK, connectionPk, keyConnectionsPk, subscriptionSk } from './keys.ts';
import { partitionKeys, queryAll, send } from './requests.ts';

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
      // The connection and, for a key, its entry in the key's list: two independent writes, at once.
      const items = [
        { pk: connectionPk(connectionId), sk: CONNECTION_META_SK, ...meta, ttl: expiresAt },
        ...(meta.key_id !== null ? [{ pk: keyConnectionsPk(meta.key_id), sk: connectionId, ttl: expiresAt }] : []),
      ];
      await Promise.all(items.map((item) => send(() => client.send(new PutCommand({ TableName: tableName, Item: item })))));
    },
    async identity(connectionId) {
      const out = await send(() =>
        client.send(new GetCommand({ TableName: tableName, Key: { pk: connectionPk(connectionId), sk: CONNECTION_META_SK }, ConsistentRead: true })),
      );
      if (!out.Item) return undefined;
      return { ...identityOf(out.Item), ...(typeof out.Item.rate_key === 'string' ? { rate_key: out.Item.rate_key } : {}) };
    },
    async keyConnections(keyId, nowSeconds, atMost) {
      // TTL deletes lag: a connection past its lifetime is left out here; one closed is deleted at $disconnect.
      const out = await send(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk',
            FilterExpression: '#ttl > :now',
            ExpressionAttributeNames: { '#ttl': 'ttl' },
            ExpressionAttributeValues: { ':pk': keyConnectionsPk(keyId), ':now': nowSeconds },
            Select: 'COUNT',
            Limit: atMost + 50,
            ConsistentRead: true,
          }),
        ),
      );
      return out.Count ?? 0;
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
      // Its key (for the key's list of open connections) and its items, read at once; then every item deleted at once.
      const [meta, items] = await Promise.all([
        send(() =>
          client.send(new GetCommand({ TableName: tableName, Key: { pk: connectionPk(connectionId), sk: CONNECTION_META_SK }, ConsistentRead: true })),
        ),
        partitionKeys(client, tableName, connectionPk(connectionId)),
      ]);
      const keyId = meta.Item?.key_id;
      const keys = [...items, ...(typeof keyId === 'string' ? [{ pk: keyConnectionsPk(keyId), sk: connectionId }] : [])];
      await Promise.all(keys.map((key) => send(() => client.send(new DeleteCommand({ TableName: tableName, Key: { pk: key.pk, sk: key.sk } })))));
    },
    async subscriptions(connectionId, filter) {
      const out = await send(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sub)',
            ExpressionAttributeValues: { ':pk': connectionPk(connectionId), ':sub': subscriptionSk('') },
            ProjectionExpression: 'sk',
            ConsistentRead: true,
          }),
        ),
      );
      const keys = (out.Items ?? []).map((item) => String(item.sk));
      return { count: keys.length, has: keys.includes(subscriptionSk(filter)) };
    },
    async takeMessage(connectionId, second, perSecond) {
      const key = { pk: connectionPk(connectionId), sk: CONNECTION_META_SK };
      const attempt = async (input: ConstructorParameters<typeof UpdateCommand>[0]): Promise<'ok' | 'refused' | 'unknown'> => {
        try {
          await client.send(new UpdateCommand({ ...input, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }));
          return 'ok';
        } catch (error) {
          if (error instanceof ConditionalCheckFailedException) return error.Item ? 'refused' : 'unknown';
          throw translateStorageError(error);
        }
      };
      // Counted in the window if it is this second (or a later one: a message handled after one that arrived later,
      // as two instances may on AWS, counts against the newer window rather than being refused) and not full; else a
      // new window.
      const added = await attempt({
        TableName: tableName,
        Key: key,
        UpdateExpression: 'ADD msg_count :one',
        ConditionExpression: 'msg_window >= :w AND msg_count < :max',
        ExpressionAttributeValues: { ':one': 1, ':w': second, ':max': perSecond },
      });
      if (added !== 'refused') return true; // counted, or not a recorded connection (the route says so)
      const opened = await attempt({
        TableName: tableName,
        Key: key,
        UpdateExpression: 'SET msg_window = :w, msg_count = :one',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(msg_window) OR msg_window < :w)',
        ExpressionAttributeValues: { ':one': 1, ':w': second },
      });
      return opened !== 'refused';
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
