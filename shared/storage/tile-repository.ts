/**
 * Full C2SP tiles in the ledger table (layout in keys.ts): one item per tile, written once, never
 * updated. A tile is 8,192 bytes (hash tile) or 8,704 (entry bundle of 32-byte leaves): 9 write units
 * once, then 1–1.5 read units per eventually consistent read (an immutable item needs no strong read).
 * With a cache, a tile read or written once is served from memory after (it never changes).
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TileStore } from '../tlog/tlog.ts';
import { parseTilePath } from '../tlog/tiles.ts';
import { tilePk } from './keys.ts';
import type { ReadCache } from './read-cache.ts';
import { send } from './requests.ts';

export function createTileRepository({
  client,
  tableName,
  cache,
}: {
  client: DynamoDBDocumentClient;
  tableName: string;
  cache?: ReadCache | undefined;
}): TileStore {
  const key = (chainName: string, path: string) => ({ pk: tilePk(chainName, parseTilePath(path.slice('tile/'.length)).index), sk: path });
  const keep = (chainName: string, path: string, bytes: Buffer) => cache?.set('tile', `${chainName}|${path}`, bytes, bytes.byteLength);
  return {
    async get(chainName, path) {
      const kept = cache?.lookup<Buffer>('tile', `${chainName}|${path}`);
      if (kept) return kept;
      const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: key(chainName, path) })));
      const bytes = out.Item?.bytes as Uint8Array | undefined;
      if (!bytes) return undefined;
      // A copy: the SDK's bytes may be a view into a larger response buffer, which the cache would keep whole.
      const tile = Buffer.from(bytes);
      keep(chainName, path, tile);
      return tile;
    },
    async put(chainName, path, bytes) {
      await send(() => client.send(new PutCommand({ TableName: tableName, Item: { ...key(chainName, path), bytes } })));
      keep(chainName, path, Buffer.from(bytes));
    },
  };
}
