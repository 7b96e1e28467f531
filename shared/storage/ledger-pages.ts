/**
 * Kept pages (docs/appending.md, "Storage"): a full page of 100 written blocks, stored once as one item the
 * first time it is read, and read back with one GetItem. An auditor walking a chain by pages reads each page as
 * 100 records (a BatchGetItem of 100 keys: 50 read units on AWS for blocks under 4 KB); a kept page is their
 * canonical JSON compressed (a block's hash is the next one's previous_hash, and fields repeat), 15–45 % of
 * their size: 1–5 read units, for 7–38 write units once (bench/probes/page-size.ts).
 *
 * The blocks are kept exactly as stored: an erasable event's details stay sealed in the item and are opened
 * with its subject's key at every read, so an erasure shows at once. A page of blocks never changes once
 * written, so a kept page is never stale. With a cache, a page read or written once is served from memory
 * after (kept compressed: the cache's bound counts the bytes it really holds), in place of its blocks' records.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { canonicalJson, inContractOrder } from '../ledger/hashing.ts';
import type { LedgerStorage } from '../ledger/repository.ts';
import type { Block } from '../ledger/types.ts';
import { keptItems } from './kept-items.ts';
import { pagePk, indexSk } from './keys.ts';
import type { ReadCache } from './read-cache.ts';

/**
 * DynamoDB's item limit is 400 KB, names and keys included: a page whose blocks compress to more (large
 * details held on the chain) is not kept, and is read from its records every time.
 */
export const MAX_KEPT_PAGE_BYTES = 380_000;

export type PageStorage = Pick<LedgerStorage, 'getPage' | 'putPage'>;

export function createPageStorage({
  client,
  tableName,
  cache,
}: {
  client: DynamoDBDocumentClient;
  tableName: string;
  cache?: ReadCache | undefined;
}): PageStorage {
  const key = (chainName: string, first: number) => ({ pk: pagePk(chainName, first), sk: indexSk(first) });
  /** A page's name in the cache and among those too large. */
  const id = (chainName: string, first: number) => `${chainName}|${first}`;
  const items = keptItems({ client, tableName, cache, kind: 'page', attribute: 'blocks' });
  /** Pages this instance found too large to keep: not looked up, nor packed again at every read. */
  const tooLarge = new Set<string>();
  return {
    async getPage(chainName, first) {
      if (tooLarge.has(id(chainName, first))) return undefined;
      const packed = await items.get(key(chainName, first), id(chainName, first));
      return packed && unpackPage(packed);
    },

    async putPage(chainName, first, blocks) {
      const packed = packPage(blocks);
      if (packed.byteLength > MAX_KEPT_PAGE_BYTES) {
        if (tooLarge.size >= 10_000) tooLarge.clear();
        tooLarge.add(id(chainName, first));
        return false;
      }
      await items.put(key(chainName, first), id(chainName, first), packed, { count: blocks.length });
      // Its blocks' records, read to make it, go: the page holds the same blocks in 15–45 % of their bytes, and
      // with both kept, an audit's records push out of the cache the pages a second audit comes back for. A block
      // read alone after this reads its record again (one GetItem, half a read unit).
      for (const block of blocks) cache?.forget('record', block.hash);
      return true;
    },
  };
}

/** The blocks' canonical JSON (as their records hold it), as one array, compressed. */
export function packPage(blocks: readonly Block[]): Buffer {
  return deflateRawSync(`[${blocks.map((b) => canonicalJson(b)).join(',')}]`);
}

export function unpackPage(packed: Uint8Array): Block[] {
  return (JSON.parse(inflateRawSync(packed).toString('utf8')) as Block[]).map(inContractOrder);
}
