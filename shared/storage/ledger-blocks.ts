/**
 * Where block bodies and their metadata live (docs/appending.md, "Storage"): records (one item per block,
 * keyed by its hash), segments of packed metadata (keyed by their last index), the metadata of a large
 * round until its segment is written, and the block items of earlier versions. Part of the LedgerStorage
 * port; shared/storage/ledger-repository.ts composes it with heads, commits and pending appends.
 */
import {
  BatchWriteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { type MetaRun, packRun, packSeal, unpackRun, unpackSeal } from '../ledger/block-meta.ts';
import { type LedgerStorage, SEALS_KEPT_SECONDS } from '../ledger/repository.ts';
import type { Block } from '../ledger/types.ts';
import { pause, remainingMs } from '../deadline.ts';
import { translateStorageError } from './errors.ts';
import type { ReadCache } from './read-cache.ts';
import { BLOCK_BODY, blockFromItem, recordItem, segmentItems, type Item } from './ledger-items.ts';
import { batchGetAll, queryAll as queryAllPages, send } from './requests.ts';
import { BLOCK_RUN, LEDGER_INDEXES, blockPk, blockSk, chainPk, indexSk, isBlockPkOf, recordPk, roundPk, sealPk, segmentPk } from './keys.ts';

export type BlockStorage = Pick<
  LedgerStorage,
  | 'putRound'
  | 'getRound'
  | 'readSegments'
  | 'writeRound'
  | 'readSeals'
  | 'readNewestSegments'
  | 'getRecords'
  | 'findRecord'
  | 'getLegacyBlocks'
  | 'findLegacyBlock'
  | 'readLegacyTreeData'
  | 'listLegacyHashes'
  | 'storeTreeNodes'
>;

/** BatchWriteItem takes 25 items a request; the requests of one round's records go at once (one wave). */
const WRITE_BATCH = 25;
const WRITE_PARALLEL = 16;

export function createBlockStorage({
  client,
  tableName,
  layoutOf,
  cache,
}: {
  client: DynamoDBDocumentClient;
  tableName: string;
  /** How a chain's legacy block items are spread (its head's `block_shards`; 1 for the oldest chains). */
  layoutOf: (chainName: string) => Promise<number>;
  /** Where written records and segments are kept between requests (they never change); none: every read goes to DynamoDB. */
  cache?: ReadCache | undefined;
}): BlockStorage {
  const queryAll = (input: QueryCommandInput) => queryAllPages(client, input);
  const segments = keptSegments(cache);
  const records = keptRecords(cache);

  /**
   * Up to `limit` items of a partition keyed by index (segments, seals) whose last index is `fromIndex` or above,
   * ascending: the first of them, or with `newest` the last.
   */
  async function itemsFrom(pk: string, fromIndex: number, limit: number, consistent: boolean, newest = false): Promise<Item[]> {
    const out = await send(() =>
      client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk AND sk >= :from',
          ExpressionAttributeValues: { ':pk': pk, ':from': indexSk(fromIndex) },
          ConsistentRead: consistent,
          Limit: limit,
          ...(newest ? { ScanIndexForward: false } : {}),
        }),
      ),
    );
    const items = (out.Items ?? []) as Item[];
    return newest ? items.reverse() : items;
  }

  /** Puts items 25 a request, a few requests at once; items DynamoDB leaves unprocessed are sent again, with backoff. */
  async function putAll(items: Item[]): Promise<void> {
    const batches: Item[][] = [];
    for (let i = 0; i < items.length; i += WRITE_BATCH) batches.push(items.slice(i, i + WRITE_BATCH));
    const putBatch = async (batch: Item[]) => {
      let requests = batch.map((Item) => ({ PutRequest: { Item } }));
      for (let attempt = 0; requests.length > 0; attempt += 1) {
        const out = await send(() => client.send(new BatchWriteCommand({ RequestItems: { [tableName]: requests } })));
        requests = (out.UnprocessedItems?.[tableName] ?? []) as typeof requests;
        if (requests.length === 0) break;
        if (attempt >= 8 || remainingMs() < 200 * 2 ** attempt) {
          throw translateStorageError(Object.assign(new Error('BatchWrite left items unprocessed'), { name: 'ThrottlingException' }));
        }
        await pause(20 * 2 ** attempt, 'DynamoDB (items left unprocessed)');
      }
    };
    for (let i = 0; i < batches.length; i += WRITE_PARALLEL) await Promise.all(batches.slice(i, i + WRITE_PARALLEL).map(putBatch));
  }

  return {
    async putRound(chainName, id, run, expiresAt) {
      await send(() => client.send(new PutCommand({ TableName: tableName, Item: { pk: roundPk(chainName), sk: id, run: packRun(run), ttl: expiresAt } })));
    },

    async getRound(chainName, id) {
      const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: { pk: roundPk(chainName), sk: id }, ConsistentRead: true })));
      return out.Item?.run instanceof Uint8Array ? unpackRun(out.Item.run) : undefined;
    },

    async writeRound(chainName, { records, segment, seals }) {
      const ttl = Math.floor(Date.now() / 1000) + SEALS_KEPT_SECONDS;
      const last = segment.blocks.at(-1)!.index;
      await putAll([
        ...records.map(recordItem),
        ...segmentItems(chainName, segment),
        ...[...(seals ?? [])].map(([shard, entries]) => ({ pk: sealPk(chainName, shard), sk: indexSk(last), seal: packSeal(entries), ttl })),
      ]);
    },

    async readSeals(chainName, shard, fromIndex, limit, options = {}) {
      return (await itemsFrom(sealPk(chainName, shard), fromIndex, limit, options.consistent === true, options.oldest !== true)).map((item) => ({
        last: Number(item.sk),
        entries: unpackSeal(item.seal as Uint8Array),
      }));
    },

    async readNewestSegments(chainName, fromIndex, limit) {
      return (await itemsFrom(segmentPk(chainName), fromIndex, limit, false, true)).map((item) => unpackRun(item.run as Uint8Array));
    },

    async readSegments(chainName, fromIndex, limit, consistent, through = Number.POSITIVE_INFINITY) {
      // The kept segments that follow on from `fromIndex` (up to the one holding `through`), then the rest from
      // DynamoDB, as one Query would answer.
      const runs = segments.from(chainName, fromIndex, limit, through);
      const next = runs.length > 0 ? runs.at(-1)!.blocks.at(-1)!.index + 1 : fromIndex;
      if (runs.length < limit && next <= through) {
        segments.missed();
        for (const item of await itemsFrom(segmentPk(chainName), next, limit - runs.length, consistent)) {
          runs.push(segments.keep(chainName, item.run as Uint8Array));
        }
      }
      return runs;
    },

    async getRecords(_chainName, metas, consistent) {
      const found = new Map<number, Block>();
      const wanted = metas.filter((m) => {
        const block = records.get(m.hash);
        if (block) found.set(m.index, block);
        return !block;
      });
      if (wanted.length === 0) return found;
      const items = await batchGetAll(
        client,
        tableName,
        wanted.map((m) => ({ pk: recordPk(m.hash), sk: blockSk(m.index) })),
        { expression: BLOCK_BODY, consistent },
      );
      for (const item of items) {
        const block = records.keep(item);
        found.set(block.index, block);
      }
      return found;
    },

    async findRecord(hash) {
      const kept = records.get(hash);
      if (kept) return kept;
      const out = await send(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': recordPk(hash) },
            ProjectionExpression: BLOCK_BODY,
            Limit: 1,
          }),
        ),
      );
      const item = out.Items?.[0];
      return item ? records.keep(item) : undefined;
    },

    async getLegacyBlocks(chainName, from, to, descending, consistent) {
      if (to < from) return [];
      const shards = await layoutOf(chainName);
      if (shards > 1) {
        // One Query per run of consecutive blocks the range touches (a page of 100: one or two), at once.
        const runs: [number, number][] = [];
        for (let start = from; start <= to; start = (Math.floor(start / BLOCK_RUN) + 1) * BLOCK_RUN) {
          runs.push([start, Math.min(to, (Math.floor(start / BLOCK_RUN) + 1) * BLOCK_RUN - 1)]);
        }
        const pages = await Promise.all(
          runs.map(([a, b]) =>
            queryAll({
              TableName: tableName,
              KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
              ExpressionAttributeValues: { ':pk': blockPk(chainName, a, shards), ':from': blockSk(a), ':to': blockSk(b) },
              ProjectionExpression: BLOCK_BODY,
              ConsistentRead: consistent,
            }),
          ),
        );
        const blocks = pages.flat().map(blockFromItem);
        return descending ? blocks.reverse() : blocks;
      }
      const items = await queryAll({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': chainPk(chainName), ':from': blockSk(from), ':to': blockSk(to) },
        ProjectionExpression: BLOCK_BODY,
        ScanIndexForward: !descending,
        ConsistentRead: consistent,
      });
      return items.map(blockFromItem);
    },

    async findLegacyBlock(chainName, hash) {
      const out = await send(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            IndexName: LEDGER_INDEXES.byHash,
            KeyConditionExpression: 'gsi_hash = :h',
            ExpressionAttributeValues: { ':h': hash },
          }),
        ),
      );
      const onChain = (out.Items ?? []).find((item) => isBlockPkOf(String(item.pk), chainName));
      if (!onChain) return undefined;
      const block = await send(() => client.send(new GetCommand({ TableName: tableName, Key: { pk: onChain.pk, sk: onChain.sk } })));
      return block.Item ? blockFromItem(block.Item) : undefined;
    },

    async readLegacyTreeData(chainName, indices, consistent) {
      const shards = await layoutOf(chainName);
      const found = new Map<number, { hash: string; treeNodes: string[] }>();
      const keys = [...new Set(indices)].map((index) => ({ pk: blockPk(chainName, index, shards), sk: blockSk(index) }));
      const items = await batchGetAll(client, tableName, keys, { expression: '#i, #h, tree_nodes', names: { '#i': 'index', '#h': 'hash' }, consistent });
      for (const item of items) {
        found.set(Number(item.index), { hash: String(item.hash), treeNodes: Array.isArray(item.tree_nodes) ? item.tree_nodes.map(String) : [] });
      }
      return found;
    },

    async listLegacyHashes(chainName, toIndex) {
      const shards = await layoutOf(chainName);
      // Each partition of the chain in index order, read at once, merged by index.
      const partitions = await Promise.all(
        Array.from({ length: shards }, (_, shard) =>
          queryAll({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
            ExpressionAttributeValues: {
              ':pk': shards > 1 ? `${chainPk(chainName)}#${shard}` : chainPk(chainName),
              ':from': blockSk(0),
              ':to': blockSk(toIndex),
            },
            ProjectionExpression: '#hash, #index',
            ExpressionAttributeNames: { '#hash': 'hash', '#index': 'index' },
            ConsistentRead: true,
          }),
        ),
      );
      return partitions
        .flat()
        .sort((a, b) => Number(a.index) - Number(b.index))
        .map((item) => String(item.hash));
    },

    async storeTreeNodes(chainName, entries) {
      const shards = await layoutOf(chainName);
      const pending = entries.filter((e) => e.treeNodes.length > 0);
      for (let i = 0; i < pending.length; i += 16) {
        await Promise.all(
          pending.slice(i, i + 16).map((entry) =>
            send(() =>
              client.send(
                new UpdateCommand({
                  TableName: tableName,
                  Key: { pk: blockPk(chainName, entry.index, shards), sk: blockSk(entry.index) },
                  UpdateExpression: 'SET tree_nodes = :nodes',
                  ConditionExpression: 'attribute_exists(pk)',
                  ExpressionAttributeValues: { ':nodes': entry.treeNodes },
                }),
              ),
            ),
          ),
        );
      }
    },
  };
}

/**
 * Written block records, kept as stored (their canonical JSON, erasable details still sealed) and parsed
 * again at each hit: a caller gets its own block to change, and the cache holds one string per block.
 */
function keptRecords(cache: ReadCache | undefined) {
  return {
    get(hash: string): Block | undefined {
      const json = cache?.lookup<string>('record', hash);
      return json === undefined ? undefined : blockFromItem({ block_json: json });
    },
    keep(item: Item): Block {
      const block = blockFromItem(item);
      const json = String(item.block_json);
      cache?.set('record', block.hash, json, Buffer.byteLength(json));
      return block;
    },
  };
}

/** Bytes of heap an unpacked segment takes per packed byte: 5.4 measured (64-character strings for 32-byte hashes, an object a block), rounded up. */
const UNPACKED_FACTOR = 6;

/**
 * Written segments, kept unpacked and frozen (a proof reads a dozen segments: unpacking each at every read was
 * most of its time), and for each chain the last indices of those kept (ascending), to find the one that holds
 * an index. A segment's blocks have one history: what it says never changes, and no reader may change it.
 */
function keptSegments(cache: ReadCache | undefined) {
  const lasts = new Map<string, number[]>();
  const key = (chainName: string, last: number) => `${chainName}|${last}`;
  /** Where `last` is, or would go, in the ascending list. */
  const position = (list: number[], last: number) => {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid]! < last) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  cache?.onEvict('segment', (id) => {
    const cut = id.lastIndexOf('|');
    const list = lasts.get(id.slice(0, cut));
    if (!list) return;
    const at = position(list, Number(id.slice(cut + 1)));
    if (list[at] === Number(id.slice(cut + 1))) list.splice(at, 1);
  });
  return {
    /** Kept segments from the one holding `fromIndex` on, while each follows the last: at most `limit`, none past `through`. */
    from(chainName: string, fromIndex: number, limit: number, through: number): MetaRun[] {
      const list = cache ? lasts.get(chainName) : undefined;
      const runs: MetaRun[] = [];
      let next = fromIndex;
      for (let at = list ? position(list, next) : 0; list && at < list.length && runs.length < limit && next <= through; at += 1) {
        const run = cache!.get<MetaRun>('segment', key(chainName, list[at]!));
        if (!run) break;
        if (run.blocks[0]!.index > next) break;
        runs.push(run);
        next = run.blocks.at(-1)!.index + 1;
      }
      if (runs.length > 0) cache!.hit('segment', runs.length);
      return runs;
    },
    missed() {
      cache?.miss('segment');
    },
    keep(chainName: string, packed: Uint8Array): MetaRun {
      const run = unpackRun(packed);
      if (!cache || run.blocks.length === 0) return run;
      const last = run.blocks.at(-1)!.index;
      for (const block of run.blocks) {
        Object.freeze(Object.freeze(block).nodes);
        if (block.ref) Object.freeze(block.ref);
      }
      Object.freeze(Object.freeze(run).blocks);
      cache.set('segment', key(chainName, last), run, packed.byteLength * UNPACKED_FACTOR);
      let list = lasts.get(chainName);
      if (!list) lasts.set(chainName, (list = []));
      const at = position(list, last);
      if (list[at] !== last) list.splice(at, 0, last);
      return run;
    },
  };
}
