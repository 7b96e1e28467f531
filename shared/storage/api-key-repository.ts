/**
 * API keys in the registry table. Two items per key, written and deleted together:
 *   APIKEY#<sha256 of the key> / APIKEY   → the lookup on every request (one GetItem)
 *   APIKEYS / <key id>                     → listing and revoking by id; holds the hash, never the key
 */
import { GetCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord, ApiKeyRepository } from '../admin/api-keys.ts';
import { queryAll, send } from './requests.ts';
import { API_KEYS_PARTITION, API_KEY_SK, apiKeyListSk, apiKeyPk } from './keys.ts';

function recordFromItem(item: Record<string, unknown>): ApiKeyRecord {
  return {
    key_id: String(item.key_id),
    role: item.role as ApiKeyRecord['role'],
    org_id: item.org_id === undefined || item.org_id === null ? null : String(item.org_id),
    created_at: String(item.created_at),
  };
}

export function createApiKeyRepository({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): ApiKeyRepository {
  async function listingItem(keyId: string) {
    const out = await send(() =>
      client.send(new GetCommand({ TableName: tableName, Key: { pk: API_KEYS_PARTITION, sk: apiKeyListSk(keyId) }, ConsistentRead: true })),
    );
    return out.Item;
  }

  return {
    async put(record, keyHash) {
      const attributes = { key_id: record.key_id, role: record.role, org_id: record.org_id, created_at: record.created_at };
      await send(() =>
        client.send(
          new TransactWriteCommand({
            TransactItems: [
              { Put: { TableName: tableName, Item: { pk: apiKeyPk(keyHash), sk: API_KEY_SK, ...attributes } } },
              { Put: { TableName: tableName, Item: { pk: API_KEYS_PARTITION, sk: apiKeyListSk(record.key_id), key_hash: keyHash, ...attributes } } },
            ],
          }),
        ),
      );
    },

    async findByHash(keyHash, { consistent = false } = {}) {
      const out = await send(() =>
        client.send(new GetCommand({ TableName: tableName, Key: { pk: apiKeyPk(keyHash), sk: API_KEY_SK }, ...(consistent ? { ConsistentRead: true } : {}) })),
      );
      return out.Item ? recordFromItem(out.Item) : undefined;
    },

    async list() {
      const items = await queryAll(client, {
        TableName: tableName,
        KeyConditionExpression: 'pk = :p',
        ExpressionAttributeValues: { ':p': API_KEYS_PARTITION },
      });
      return items.map(recordFromItem).sort((a, b) => a.created_at.localeCompare(b.created_at));
    },

    async hashOf(keyId) {
      const item = await listingItem(keyId);
      return item ? String(item.key_hash) : undefined;
    },

    async revoke(keyId) {
      const item = await listingItem(keyId);
      if (!item) return false;
      await send(() =>
        client.send(
          new TransactWriteCommand({
            TransactItems: [
              { Delete: { TableName: tableName, Key: { pk: apiKeyPk(String(item.key_hash)), sk: API_KEY_SK } } },
              { Delete: { TableName: tableName, Key: { pk: API_KEYS_PARTITION, sk: apiKeyListSk(keyId) } } },
            ],
          }),
        ),
      );
      return true;
    },
  };
}
