/**
 * Full C2SP tiles in the ledger table (layout in keys.ts): one item per tile, written once, never
 * updated. A tile is 8,192 bytes (hash tile) or 8,704 (entry bundle of 32-byte leaves): 9 write units
 * once, then 1–1.5 read units per eventually consistent read (an immutable item needs no strong read).
 * With a cache, a tile read or written once is served from memory after (it never changes).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TileStore } from '../tlog/tlog.ts';
import { parseTilePath } from '../tlog/tiles.ts';
import { keptItems } from './kept-items.ts';
import { tilePk } from './keys.ts';
import type { ReadCache } from './read-cache.ts';

export function createTileRepository({
  client,
  tableName,
  cache,
}: {
  client: DynamoDBDocumentClient;
  tableName: string;
  cache?: ReadCache | undefined;
}): TileStore {
  const items = keptItems({ client, tableName, cache, kind: 'tile', attribute: 'bytes' });
  const key = (chainName: string, path: string) => ({ pk: tilePk(chainName, parseTilePath(path.slice('tile/'.length)).index), sk: path });
  return {
    get: (chainName, path) => items.get(key(chainName, path), `${chainName}|${path}`),
    put: (chainName, path, bytes) => items.put(key(chainName, path), `${chainName}|${path}`, bytes),
  };
}
