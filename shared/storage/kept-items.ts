/**
 * Items written once and never changed, each holding its bytes in one binary attribute (`bytes` of a full tile,
 * `blocks` of a kept page of blocks): read through the instance's read cache, so that an item read or written once by an instance costs it
 * no DynamoDB request again. Nothing here is ever stale: what such an item holds never changes.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CacheKind, ReadCache } from './read-cache.ts';
import { send } from './requests.ts';

type Key = { pk: string; sk: string };

export function keptItems({
  client,
  tableName,
  cache,
  kind,
  attribute,
}: {
  client: DynamoDBDocumentClient;
  tableName: string;
  cache?: ReadCache | undefined;
  kind: CacheKind;
  /** The attribute that holds the bytes. */
  attribute: string;
}) {
  const keep = (id: string, bytes: Buffer) => cache?.set(kind, id, bytes, bytes.byteLength);
  return {
    /** The item's bytes (`id` names it in the cache), or undefined when there is no such item. */
    async get(key: Key, id: string): Promise<Buffer | undefined> {
      const kept = cache?.lookup<Buffer>(kind, id);
      if (kept) return kept;
      const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: key })));
      const bytes = out.Item?.[attribute] as Uint8Array | undefined;
      if (!bytes) return undefined;
      // A copy: the SDK's bytes may be a view into a larger response buffer, which the cache would keep whole.
      const copy = Buffer.from(bytes);
      keep(id, copy);
      return copy;
    },
    /** Writes the item: its key, its bytes, and any other attributes. */
    async put(key: Key, id: string, bytes: Uint8Array, attributes: Record<string, unknown> = {}): Promise<void> {
      await send(() => client.send(new PutCommand({ TableName: tableName, Item: { ...attributes, ...key, [attribute]: bytes } })));
      keep(id, Buffer.from(bytes));
    },
  };
}
