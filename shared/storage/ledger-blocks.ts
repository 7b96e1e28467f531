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
import { packRun, packSeal, unpackRun, unpackSeal } from '../ledger/block-meta.ts';
import { type LedgerStorage, SEALS_KEPT_SECONDS } from '../ledger/repository.ts';
import type { Block } from '../ledger/types.ts';
import { pause, remainingMs } from '../deadline.ts';
import { translateStorageError } from './errors.ts';
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
}: {
  client: DynamoDBDocumentClient;
  tableName: string;
  /** How a chain's legacy block items are spread (its head's `block_shards`; 1 for the oldest chains). */
  layoutOf: (chainName: string) => Promise<number>;
}): BlockStorage {
  const queryAll = (input: QueryCommandInput) => queryAllPages(client, input);

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

    async readSegments(chainName, fromIndex, limit, consistent) {
      return (await itemsFrom(segmentPk(chainName), fromIndex, limit, consistent)).map((item) => unpackRun(item.run as Uint8Array));
    },

    async getRecords(_chainName, metas, consistent) {
      const found = new Map<number, Block>();
      const items = await batchGetAll(
        client,
        tableName,
        metas.map((m) => ({ pk: recordPk(m.hash), sk: blockSk(m.index) })),
        { expression: BLOCK_BODY, consistent },
      );
      for (const item of items) {
        const block = blockFromItem(item);
        found.set(block.index, block);
      }
      return found;
    },

    async findRecord(hash) {
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
      return item ? blockFromItem(item) : undefined;
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
