/**
 * The domain's LedgerRepository port in DynamoDB: chain heads, commits, leases and blocks here; pending
 * appends, receipts and Idempotency-Key records in ledger-combining.ts; the item shapes in ledger-items.ts.
 * Stateless; the client and table name are injected (ElectroDB's `createXRepository({ client, table })` shape).
 *
 * A block is stored with its exact canonical JSON (`block_json`): what was hashed is what is read
 * back, byte for byte, whatever DynamoDB does to numbers, empty maps or deep nesting.
 */
import { ConditionalCheckFailedException, type AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { BlockTreeData, LedgerRepository } from '../ledger/repository.ts';
import type { ChainHead } from '../ledger/types.ts';
import { translateStorageError } from './errors.ts';
import { Transaction } from './transactions.ts';
import { createCombiningRecords } from './ledger-combining.ts';
import { BLOCK_BODY, blockFromItem, blockItem, chainListItem, headFromItem, headItem, type Item, packFrontier, receiptItem } from './ledger-items.ts';
import { batchGetAll, queryAll as queryAllPages, send, writeIf, type BatchProjection } from './requests.ts';
import {
  BLOCK_RUN,
  BLOCK_SHARDS,
  CHAINS_PARTITION,
  HEAD_SK,
  LEDGER_INDEXES,
  IDEMPOTENCY_SK,
  idempotencyPk,
  SUB_CHAINS_SK_PREFIX,
  blockPk,
  blockSk,
  chainPk,
  entityPk,
  isBlockPkOf,
  pendingPk,
} from './keys.ts';

export interface LedgerRepositoryOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
}

const conditions = {
  itemDoesNotExist: 'attribute_not_exists(pk)',
  headIsAt: 'head_index = :expected',
  turnIsFree: 'attribute_not_exists(turn_holder) OR turn_holder = :writer OR turn_expires_ms < :now',
  proofIsNewer: 'attribute_not_exists(last_proof_head_index) OR last_proof_head_index < :proven',
} as const;

export function createLedgerRepository({ client, tableName }: LedgerRepositoryOptions): LedgerRepository {
  const queryAll = (input: QueryCommandInput) => queryAllPages(client, input);

  /**
   * How each chain's blocks are spread (its head's `block_shards`; 1 for chains of earlier versions). It
   * never changes for a chain, so it is learnt from any head read and kept: block reads then need no head.
   */
  const layouts = new Map<string, number>();
  const noted = (item: Item): ChainHead => {
    const head = headFromItem(item);
    if (layouts.size > 10_000) layouts.clear();
    layouts.set(head.chainName, Number(item.block_shards ?? 1));
    return head;
  };
  async function layoutOf(chainName: string): Promise<number> {
    const known = layouts.get(chainName);
    if (known !== undefined) return known;
    await repository.getHead(chainName);
    return layouts.get(chainName) ?? BLOCK_SHARDS;
  }

  /** A conditional update of a chain's head; false when its condition failed. */
  const updateHeadIf = (chainName: string, update: Omit<UpdateCommandInput, 'TableName' | 'Key'>) =>
    writeIf(client, new UpdateCommand({ TableName: tableName, Key: { pk: chainPk(chainName), sk: HEAD_SK }, ...update }));

  const batchGet = (keys: Record<string, unknown>[], projection?: BatchProjection) => batchGetAll(client, tableName, keys, projection) as Promise<Item[]>;

  const repository: LedgerRepository = {
    ...createCombiningRecords({ client, tableName }),

    async getHead(chainName) {
      const out = await send(() =>
        client.send(
          new GetCommand({
            TableName: tableName,
            Key: { pk: chainPk(chainName), sk: HEAD_SK },
            ConsistentRead: true,
          }),
        ),
      );
      return out.Item ? noted(out.Item) : undefined;
    },

    async listHeads() {
      // The list (Main Chain first, then Sub-Chains by name), then the heads themselves, 100 per request.
      const listed = await queryAll({
        TableName: tableName,
        KeyConditionExpression: 'pk = :p',
        ExpressionAttributeValues: { ':p': CHAINS_PARTITION },
        ProjectionExpression: 'chain_name',
      });
      const names = listed.map((item) => String(item.chain_name));
      const heads = new Map<string, ChainHead>();
      for (const item of await batchGet(names.map((name) => ({ pk: chainPk(name), sk: HEAD_SK })))) heads.set(String(item.chain_name), noted(item));
      return names.flatMap((name) => (heads.has(name) ? [heads.get(name)!] : []));
    },

    async countSubChains() {
      let count = 0;
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await send(() =>
          client.send(
            new QueryCommand({
              TableName: tableName,
              KeyConditionExpression: 'pk = :p AND begins_with(sk, :sub)',
              ExpressionAttributeValues: { ':p': CHAINS_PARTITION, ':sub': SUB_CHAINS_SK_PREFIX },
              Select: 'COUNT',
              ExclusiveStartKey: startKey,
            }),
          ),
        );
        count += page.Count ?? 0;
        startKey = page.LastEvaluatedKey;
      } while (startKey);
      return count;
    },

    async createChains(chains) {
      // A new chain's blocks are spread over BLOCK_SHARDS partitions; its head says so.
      // A failed condition on a head means that chain exists (its genesis block then exists too).
      const transaction = new Transaction<{ exists: string } | undefined>();
      for (const { head, genesis } of chains) {
        transaction
          .add(
            { Put: { TableName: tableName, Item: { ...headItem(head), block_shards: BLOCK_SHARDS }, ConditionExpression: conditions.itemDoesNotExist } },
            { exists: head.chainName },
          )
          .add({ Put: { TableName: tableName, Item: blockItem(genesis, BLOCK_SHARDS), ConditionExpression: conditions.itemDoesNotExist } })
          .add({ Put: { TableName: tableName, Item: chainListItem(head) } });
      }
      try {
        await client.send(new TransactWriteCommand({ TransactItems: transaction.items }));
        for (const { head } of chains) layouts.set(head.chainName, BLOCK_SHARDS);
        return { status: 'created' };
      } catch (error) {
        const existing = (transaction.cancellation(error)?.failed ?? []).flatMap(({ meaning }) => (meaning ? [meaning.exists] : []));
        if (existing.length > 0) return { status: 'exists', chainNames: existing };
        throw translateStorageError(error);
      }
    },

    async commitBlocks(commit) {
      const { chainName, expectedHeadIndex, blocks } = commit;
      const last = blocks[blocks.length - 1];
      if (!last) return { status: 'committed' };
      const shards = await layoutOf(chainName);
      const events = blocks.reduce((n, b) => n + b.events.length, 0);
      const proofRecords = commit.proofRecords ?? [];
      const seals = commit.seals ?? [];
      const completions = commit.completions ?? [];
      // The combining lease: renewed while the writer goes on combining, else given back with this commit.
      const keepLease = commit.lease !== undefined && 'untilMs' in commit.lease;
      const leaseUpdate = keepLease ? ', turn_holder = :writer, turn_expires_ms = :until' : ' REMOVE turn_holder, turn_expires_ms';
      const shardsUpdate = commit.pendingShards !== undefined ? ', pending_shards = :shards' : '';
      type Meaning =
        | { kind: 'head' }
        | { kind: 'block' }
        | { kind: 'proof'; blockPosition: number }
        | { kind: 'seal'; sealPosition: number }
        | { kind: 'completion'; blockPosition: number };
      const transaction = new Transaction<Meaning>().add(
        {
          Update: {
            TableName: tableName,
            Key: { pk: chainPk(chainName), sk: HEAD_SK },
            // Only on the head the blocks were built on, and only by the lease holder (or with no live lease).
            UpdateExpression: `SET head_index = :index, head_hash = :hash, frontier = :frontier, event_count = event_count + :events, proof_count = proof_count + :proofs${shardsUpdate}${leaseUpdate}`,
            ConditionExpression: `${conditions.headIsAt} AND (${conditions.turnIsFree})`,
            ExpressionAttributeValues: {
              ':index': last.index,
              ':hash': last.hash,
              ':events': events,
              ':proofs': proofRecords.length,
              ':expected': expectedHeadIndex,
              ':frontier': packFrontier(commit.frontier),
              ':writer': commit.writerId,
              ':now': commit.nowMs,
              ...(keepLease ? { ':until': (commit.lease as { untilMs: number }).untilMs } : {}),
              ...(commit.pendingShards !== undefined ? { ':shards': commit.pendingShards } : {}),
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        { kind: 'head' },
      );
      blocks.forEach((block, i) => {
        transaction.add(
          { Put: { TableName: tableName, Item: blockItem(block, shards, commit.treeNodes[i]), ConditionExpression: conditions.itemDoesNotExist } },
          { kind: 'block' },
        );
      });
      for (const record of proofRecords) {
        transaction.add(
          {
            Update: {
              TableName: tableName,
              Key: { pk: chainPk(record.subChain), sk: HEAD_SK },
              UpdateExpression: 'SET last_proof_head_index = :proven, last_proof_id = :proof, proof_count = proof_count + :one',
              ConditionExpression: `attribute_exists(pk) AND (${conditions.proofIsNewer})`,
              ExpressionAttributeValues: { ':proven': record.headIndex, ':proof': record.proofId, ':one': 1 },
            },
          },
          { kind: 'proof', blockPosition: record.blockPosition },
        );
      }
      // Each sealed pending append: removed (it must still be there: sealed once, never twice) and its receipt written.
      seals.forEach(({ ref, receipt }, sealPosition) => {
        transaction
          .add(
            { Delete: { TableName: tableName, Key: { pk: pendingPk(chainName, ref.shard), sk: ref.sk }, ConditionExpression: 'attribute_exists(pk)' } },
            { kind: 'seal', sealPosition },
          )
          .add({ Put: { TableName: tableName, Item: receiptItem(chainName, ref, receipt) } });
      });
      // Each Idempotency-Key these blocks answer: done, with where its blocks are, in the same transaction
      // (a crash after the commit cannot leave the key unanswered, so a retry never appends twice).
      for (const { claim, blockPosition, count } of completions) {
        transaction.add(
          {
            Update: {
              TableName: tableName,
              Key: { pk: idempotencyPk(claim.id), sk: IDEMPOTENCY_SK },
              UpdateExpression: 'SET #status = :done, first_index = :first, block_count = :count REMOVE claim_token, claim_until_ms',
              ConditionExpression: 'claim_token = :token',
              ExpressionAttributeNames: { '#status': 'status' },
              ExpressionAttributeValues: { ':done': 'done', ':first': blocks[blockPosition]!.index, ':count': count, ':token': claim.token },
            },
          },
          { kind: 'completion', blockPosition },
        );
      }
      try {
        await client.send(new TransactWriteCommand({ TransactItems: transaction.items }));
        return { status: 'committed' };
      } catch (error) {
        const cancelled = transaction.cancellation(error);
        if (!cancelled) throw translateStorageError(error);
        // The first failed condition, in the order the items were added, says what happened.
        const first = cancelled.failed[0];
        switch (first?.meaning.kind) {
          case 'head':
            return { status: 'head-moved', head: first.item ? noted(unmarshall(first.item as Record<string, AttributeValue>)) : undefined };
          case 'block':
            // A block key already taken means another writer got there first: the head moved too.
            return { status: 'head-moved', head: await repository.getHead(chainName) };
          case 'proof':
            return { status: 'proof-stale', blockPosition: first.meaning.blockPosition };
          case 'seal':
            return { status: 'pending-gone', sealPosition: first.meaning.sealPosition };
          case 'completion':
            return { status: 'claim-lost', blockPosition: first.meaning.blockPosition };
          case undefined:
            if (cancelled.conflict) return { status: 'conflict' };
            throw translateStorageError(error);
        }
      }
    },

    async acquireLease(chainName, holder, nowMs, untilMs) {
      try {
        const out = await client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { pk: chainPk(chainName), sk: HEAD_SK },
            UpdateExpression: 'SET turn_holder = :writer, turn_expires_ms = :until',
            ConditionExpression: `attribute_exists(pk) AND (${conditions.turnIsFree})`,
            ExpressionAttributeValues: { ':writer': holder, ':until': untilMs, ':now': nowMs },
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return { acquired: true, head: noted(out.Attributes!) };
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) {
          if (!error.Item) return { acquired: false, head: undefined };
          const head = noted(unmarshall(error.Item));
          return { acquired: false, head, holder: head.turnHolder ?? '', untilMs: head.turnExpiresMs ?? 0 };
        }
        throw translateStorageError(error);
      }
    },

    async releaseLease(chainName, holder) {
      // Not ours any more (the condition failed): nothing to give back.
      await updateHeadIf(chainName, {
        UpdateExpression: 'REMOVE turn_holder, turn_expires_ms',
        ConditionExpression: 'turn_holder = :writer',
        ExpressionAttributeValues: { ':writer': holder },
      });
    },

    async getBlock(chainName, index, consistent = false) {
      // One read: a chain whose layout is not known yet is read as a new chain's. The ledger reads the head
      // on a miss (which teaches the layout) and reads again, so an older chain's block is still found.
      const shards = layouts.get(chainName) ?? BLOCK_SHARDS;
      const out = await send(() =>
        client.send(
          new GetCommand({
            TableName: tableName,
            Key: { pk: blockPk(chainName, index, shards), sk: blockSk(index) },
            ConsistentRead: consistent,
            ProjectionExpression: BLOCK_BODY,
          }),
        ),
      );
      return out.Item ? blockFromItem(out.Item) : undefined;
    },

    async findBlockByHash(chainName, hash) {
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

    async getBlockRange(chainName, from, to, descending, consistent = false) {
      if (to < from) return [];
      const shards = await layoutOf(chainName);
      if (shards > 1) {
        // One Query per run of consecutive blocks the range touches (a page of 100: one or two), at once.
        const segments: [number, number][] = [];
        for (let start = from; start <= to; start = (Math.floor(start / BLOCK_RUN) + 1) * BLOCK_RUN) {
          segments.push([start, Math.min(to, (Math.floor(start / BLOCK_RUN) + 1) * BLOCK_RUN - 1)]);
        }
        const runs = await Promise.all(
          segments.map(([a, b]) =>
            queryAll({
              TableName: tableName,
              KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
              ExpressionAttributeValues: { ':pk': blockPk(chainName, a, shards), ':from': blockSk(a), ':to': blockSk(b) },
              ProjectionExpression: BLOCK_BODY,
              ConsistentRead: consistent,
            }),
          ),
        );
        const blocks = runs.flat().map(blockFromItem);
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

    async listBlockHashes(chainName, toIndex) {
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

    async readTreeData(chainName, indices, consistent = false) {
      const shards = await layoutOf(chainName);
      const found = new Map<number, BlockTreeData>();
      const keys = [...new Set(indices)].map((index) => ({ pk: blockPk(chainName, index, shards), sk: blockSk(index) }));
      for (const item of await batchGet(keys, { expression: '#i, #h, tree_nodes', names: { '#i': 'index', '#h': 'hash' }, consistent })) {
        found.set(Number(item.index), { hash: String(item.hash), treeNodes: Array.isArray(item.tree_nodes) ? item.tree_nodes.map(String) : [] });
      }
      return found;
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

    async setFrontier(chainName, headIndex, frontier) {
      return updateHeadIf(chainName, {
        UpdateExpression: 'SET frontier = :frontier',
        ConditionExpression: 'head_index = :index AND attribute_not_exists(frontier)',
        ExpressionAttributeValues: { ':frontier': packFrontier(frontier), ':index': headIndex },
      });
    },

    async queryEntityBlocks(entityId) {
      const items = await queryAll({
        TableName: tableName,
        IndexName: LEDGER_INDEXES.byEntity,
        KeyConditionExpression: 'gsi_entity_pk = :e',
        ExpressionAttributeValues: { ':e': entityPk(entityId) },
      });
      return items.map(blockFromItem);
    },

    async ping() {
      // One read of a key that never exists: constant time, half a read unit, and it fails as a missing
      // table or an unreachable DynamoDB would. DescribeTable, used before, is a control-plane call that
      // AWS rate-limits per account, and DynamoDB Local counts the table's items to answer it.
      await send(() => client.send(new GetCommand({ TableName: tableName, Key: { pk: 'HEALTH', sk: 'PING' } })));
    },
  };
  return repository;
}
