/**
 * Full C2SP tiles in the ledger table (layout in keys.ts): one item per tile, written once, never
 * updated. A tile is 8,192 bytes (hash tile) or 8,704 (entry bundle of 32-byte leaves): 9 write units
 * once, then 1–1.5 read units per eventually consistent read (an immutable item needs no strong read).
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TileStore } from '../tlog/tlog.ts';
import { parseTilePath } from '../tlog/tiles.ts';
import { tilePk } from './keys.ts';
import { send } from './requests.ts';

export function createTileRepository({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): TileStore {
  const key = (chainName: string, path: string) => ({ pk: tilePk(chainName, parseTilePath(path.slice('tile/'.length)).index), sk: path });
  return {
    async get(chainName, path) {
      const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: key(chainName, path) })));
      const bytes = out.Item?.bytes as Uint8Array | undefined;
      return bytes ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : undefined;
    },
    async put(chainName, path, bytes) {
      await send(() => client.send(new PutCommand({ TableName: tableName, Item: { ...key(chainName, path), bytes } })));
    },
  };
}
