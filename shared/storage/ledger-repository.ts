/**
 * The domain's LedgerStorage port in DynamoDB: chain heads, commits and leases here; records, segments
 * and legacy block items in ledger-blocks.ts; pending appends, refusals and Idempotency-Key records in
 * ledger-combining.ts; the item shapes in ledger-items.ts. `createLedgerRepository` adds the block reads
 * every storage shares (shared/ledger/block-reads.ts). Stateless; the client and table name are injected
 * (ElectroDB's `createXRepository({ client, table })` shape).
 *
 * A block is stored with its exact canonical JSON (`block_json`): what was hashed is what is read
 * back, byte for byte, whatever DynamoDB does to numbers, empty maps or deep nesting.
 */
import { ConditionalCheckFailedException, type AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  GetCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { withBlockReads } from '../ledger/block-reads.ts';
import type { LedgerRepository, LedgerStorage } from '../ledger/repository.ts';
import type { ChainHead } from '../ledger/types.ts';
import { translateStorageError } from './errors.ts';
import { Transaction } from './transactions.ts';
import { addToSubChainCount, countSubChains as countSubChainsKept } from './sub-chain-count.ts';
import { createBlockStorage } from './ledger-blocks.ts';
import { createPageStorage } from './ledger-pages.ts';
import type { ReadCache } from './read-cache.ts';
import { completion, createCombiningRecords } from './ledger-combining.ts';
import { blockFromItem, chainListItem, headFromItem, headItem, type Item, packFrontier, recentAttributes, recordItem, segmentItems } from './ledger-items.ts';
import { checkDeadline } from '../deadline.ts';
import { batchGetAll, queryAll as queryAllPages, retryConflicts, send, writeIf } from './requests.ts';
import { CHAINS_PARTITION, HEAD_SK, LEDGER_INDEXES, SWEEP_POSITION_KEY, anchorPk, anchorSk, chainPk, entityIndexPk, entityPk } from './keys.ts';

export interface LedgerRepositoryOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  /** Keeps written records and segments between requests (shared/storage/read-cache.ts); none: no caching. */
  cache?: ReadCache | undefined;
}

/** Chains per page when the whole list is read (its heads are read 100 a request whatever the page). */
const LIST_PAGE = 1_000;

const conditions = {
  itemDoesNotExist: 'attribute_not_exists(pk)',
  headIsAt: 'head_index = :expected',
  /** The cursor as the commit was built on it ('' before any: absent, or empty). */
  cursorIsAt: '(sealed_to = :cursor OR (attribute_not_exists(sealed_to) AND :cursor = :empty))',
  holdsLease: 'turn_holder = :writer',
  noLiveLease: '(attribute_not_exists(turn_holder) OR turn_expires_ms < :now)',
  leaseIsFree: 'attribute_not_exists(turn_holder) OR turn_holder = :writer OR turn_expires_ms < :now',
  proofIsNewer: 'attribute_not_exists(last_proof_head_index) OR last_proof_head_index < :proven',
} as const;

/** The head's attributes a round commit can leave out (and removes when it does). */
const RECENT_ATTRIBUTES = ['recent_blocks', 'recent_round', 'recent_first', 'recent_last'] as const;
const RECENT_FLUSHED = 'recent_flushed';

export function createLedgerStorage({ client, tableName, cache }: LedgerRepositoryOptions): LedgerStorage {
  const queryAll = (input: QueryCommandInput) => queryAllPages(client, input);

  /**
   * How each chain's legacy blocks are spread (its head's `block_shards`; 1 for chains of the earliest
   * versions). It never changes for a chain, so it is learnt from any head read and kept.
   */
  const layouts = new Map<string, number>();
  const noted = (item: Item): ChainHead => {
    const head = headFromItem(item);
    if (layouts.size > 10_000) layouts.clear();
    layouts.set(head.chainName, Number(item.block_shards ?? 1));
    return head;
  };
  async function readHead(chainName: string, consistent: boolean): Promise<ChainHead | undefined> {
    const out = await send(() =>
      client.send(new GetCommand({ TableName: tableName, Key: { pk: chainPk(chainName), sk: HEAD_SK }, ConsistentRead: consistent })),
    );
    // A look may be a moment old: only a strong read teaches the chain's record layout.
    return out.Item ? (consistent ? noted(out.Item) : headFromItem(out.Item)) : undefined;
  }
  async function layoutOf(chainName: string): Promise<number> {
    const known = layouts.get(chainName);
    if (known !== undefined) return known;
    await storage.getHead(chainName);
    return layouts.get(chainName) ?? 1;
  }

  /** A conditional update of a chain's head; false when its condition failed. */
  const updateHeadIf = (chainName: string, update: Omit<UpdateCommandInput, 'TableName' | 'Key'>) =>
    writeIf(client, new UpdateCommand({ TableName: tableName, Key: { pk: chainPk(chainName), sk: HEAD_SK }, ...update }));

  const batchGet = (keys: Record<string, unknown>[]) => batchGetAll(client, tableName, keys) as Promise<Item[]>;

  const storage: LedgerStorage = {
    ...createCombiningRecords({ client, tableName }),
    ...createBlockStorage({ client, tableName, layoutOf, cache }),
    ...createPageStorage({ client, tableName, cache }),

    getHead: (chainName) => readHead(chainName, true),
    lookHead: (chainName) => readHead(chainName, false),

    async listHeads() {
      // The whole list (Main Chain first, then Sub-Chains by name), page after page.
      const heads: ChainHead[] = [];
      let after: string | undefined;
      do {
        const page = await storage.listHeadsPage(after, LIST_PAGE);
        heads.push(...page.heads.map((h) => h.head));
        after = page.next;
      } while (after !== undefined);
      return heads;
    },

    async listHeadsPage(after, limit) {
      checkDeadline('DynamoDB (a page of the chain list)');
      const page = await send(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :p',
            ExpressionAttributeValues: { ':p': CHAINS_PARTITION },
            ProjectionExpression: 'sk, chain_name',
            Limit: limit,
            ...(after !== undefined ? { ExclusiveStartKey: { pk: CHAINS_PARTITION, sk: after } } : {}),
          }),
        ),
      );
      // Then the heads themselves, 100 per request.
      const listed = (page.Items ?? []).map((item) => ({ position: String(item.sk), name: String(item.chain_name) }));
      const heads = new Map<string, ChainHead>();
      for (const item of await batchGet(listed.map(({ name }) => ({ pk: chainPk(name), sk: HEAD_SK })))) heads.set(String(item.chain_name), noted(item));
      return {
        heads: listed.flatMap(({ position, name }) => (heads.has(name) ? [{ position, head: heads.get(name)! }] : [])),
        ...(page.LastEvaluatedKey ? { next: String(page.LastEvaluatedKey.sk) } : {}),
      };
    },

    async getSweepPosition() {
      const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: SWEEP_POSITION_KEY, ConsistentRead: true })));
      return typeof out.Item?.after === 'string' ? out.Item.after : undefined;
    },

    async saveSweepPosition(after) {
      await send(() =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: SWEEP_POSITION_KEY,
            ...(after !== undefined
              ? { UpdateExpression: 'SET #after = :after, saved_at = :at', ExpressionAttributeValues: { ':after': after, ':at': Date.now() } }
              : { UpdateExpression: 'REMOVE #after SET saved_at = :at', ExpressionAttributeValues: { ':at': Date.now() } }),
            ExpressionAttributeNames: { '#after': 'after' },
          }),
        ),
      );
    },

    countSubChains() {
      return countSubChainsKept(client, tableName);
    },

    async createChains(chains) {
      // A failed condition on a head means that chain exists (its genesis record then exists too).
      const transaction = new Transaction<{ exists: string } | undefined>();
      for (const { head, genesis } of chains) {
        transaction
          .add({ Put: { TableName: tableName, Item: headItem(head), ConditionExpression: conditions.itemDoesNotExist } }, { exists: head.chainName })
          .add({ Put: { TableName: tableName, Item: recordItem(genesis) } })
          .add({ Put: { TableName: tableName, Item: chainListItem(head) } });
      }
      // The kept count of Sub-Chains grows in the same transaction: exact whatever fails or is retried.
      const subChains = chains.filter(({ head }) => head.kind === 'sub');
      if (subChains.length > 0) transaction.add(addToSubChainCount(tableName, subChains.length, subChains[0]!.head.chainName));
      try {
        await client.send(new TransactWriteCommand({ TransactItems: transaction.items }));
        return { status: 'created' };
      } catch (error) {
        const existing = (transaction.cancellation(error)?.failed ?? []).flatMap(({ meaning }) => (meaning ? [meaning.exists] : []));
        if (existing.length > 0) return { status: 'exists', chainNames: existing };
        throw translateStorageError(error);
      }
    },

    async commitRound(commit) {
      const { chainName, blocks } = commit;
      const last = blocks[blocks.length - 1];
      if (!last) return { status: 'committed' };
      const events = blocks.reduce((n, b) => n + b.events.length, 0);
      const proofRecords = commit.proofRecords ?? [];
      const completions = commit.completions ?? [];
      const records = commit.records ?? [];
      const segment = commit.segment ? [commit.segment] : [];
      const direct = 'direct' in commit.mode;
      const recent = recentAttributes(commit.recent);
      const values: Record<string, unknown> = {
        ':index': last.index,
        ':hash': last.hash,
        ':events': events,
        ':proofs': proofRecords.length,
        ':expected': commit.expectedHeadIndex,
        ':cursor': commit.expectedCursor,
        ':empty': '',
        ':newCursor': commit.cursor,
        ':materialized': commit.materialized,
        ':frontier': packFrontier(commit.frontier),
      };
      const sets = [
        'head_index = :index',
        'head_hash = :hash',
        'frontier = :frontier',
        'event_count = event_count + :events',
        'proof_count = proof_count + :proofs',
        'sealed_to = :newCursor',
        'written_to = :materialized',
      ];
      for (const [name, value] of Object.entries(recent)) {
        sets.push(`${name} = :r_${name}`);
        values[`:r_${name}`] = value;
      }
      // What this commit adds is in no segment yet.
      const removes = [...RECENT_ATTRIBUTES.filter((name) => !(name in recent)), RECENT_FLUSHED];
      if (commit.recordsFrom !== undefined) {
        sets.push('records_from = :recordsFrom');
        values[':recordsFrom'] = commit.recordsFrom;
      }
      if (commit.pendingShards !== undefined) {
        sets.push('pending_shards = :shards');
        values[':shards'] = commit.pendingShards;
      }
      if (direct) {
        values[':now'] = commit.nowMs;
      } else {
        sets.push('turn_expires_ms = :until');
        values[':until'] = (commit.mode as { untilMs: number }).untilMs;
        values[':writer'] = commit.writerId;
      }
      const head = {
        TableName: tableName,
        Key: { pk: chainPk(chainName), sk: HEAD_SK },
        // Only on the head and cursor the blocks were built on, and only by the lease holder (or, direct, with no live lease).
        UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ConditionExpression: `${conditions.headIsAt} AND ${conditions.cursorIsAt} AND ${direct ? conditions.noLiveLease : conditions.holdsLease}`,
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
      };
      // One item: a conditional update. With records, proofs or Idempotency-Key records: one transaction.
      if (records.length === 0 && proofRecords.length === 0 && completions.length === 0 && segment.length === 0) {
        try {
          await retryConflicts(() => client.send(new UpdateCommand(head)));
          return { status: 'committed' };
        } catch (error) {
          if (error instanceof ConditionalCheckFailedException) {
            return { status: 'head-moved', head: error.Item ? noted(unmarshall(error.Item)) : undefined };
          }
          throw translateStorageError(error);
        }
      }
      type Meaning = { kind: 'head' } | { kind: 'proof'; blockPosition: number } | { kind: 'completion'; blockPosition: number };
      const transaction = new Transaction<Meaning>().add({ Update: head }, { kind: 'head' });
      for (const block of records) transaction.add({ Put: { TableName: tableName, Item: recordItem(block) } });
      for (const item of segment.flatMap((run) => segmentItems(chainName, run))) transaction.add({ Put: { TableName: tableName, Item: item } });
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
      // Each Idempotency-Key of blocks written with the commit (a direct commit's, a leader's own too large to be
      // pending: bound to no pending append): done, with where its blocks are, in the same transaction, so that a
      // crash after the commit cannot leave the key unanswered. Pending appends' keys are answered after the commit.
      for (const { claim, blockPosition, count } of completions) {
        transaction.add({ Update: { TableName: tableName, ...completion(claim, blocks[blockPosition]!.index, count) } }, { kind: 'completion', blockPosition });
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
          case 'proof':
            return { status: 'proof-stale', blockPosition: first.meaning.blockPosition };
          case 'completion':
            return { status: 'claim-lost', blockPosition: first.meaning.blockPosition };
          case undefined:
            if (cancelled.conflict) return { status: 'conflict' };
            throw translateStorageError(error);
        }
      }
    },

    async finishRound(chainName, holder, headIndex, materialized) {
      return updateHeadIf(chainName, {
        // The newest blocks' metadata stays on the head (writers read their receipts there), marked as in its segment.
        UpdateExpression: `SET written_to = :materialized, ${RECENT_FLUSHED} = :true REMOVE turn_holder, turn_expires_ms`,
        ConditionExpression: 'turn_holder = :writer AND head_index = :index',
        ExpressionAttributeValues: { ':writer': holder, ':index': headIndex, ':materialized': materialized, ':true': true },
      });
    },

    async withdraw(chainName, sk) {
      return updateHeadIf(chainName, {
        UpdateExpression: 'SET sealed_to = :sk',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(sealed_to) OR sealed_to < :sk)',
        ExpressionAttributeValues: { ':sk': sk },
      });
    },

    async acquireLease(chainName, holder, nowMs, untilMs) {
      try {
        const out = await retryConflicts(() =>
          client.send(
            new UpdateCommand({
              TableName: tableName,
              Key: { pk: chainPk(chainName), sk: HEAD_SK },
              UpdateExpression: 'SET turn_holder = :writer, turn_expires_ms = :until',
              ConditionExpression: `attribute_exists(pk) AND (${conditions.leaseIsFree})`,
              ExpressionAttributeValues: { ':writer': holder, ':until': untilMs, ':now': nowMs },
              ReturnValues: 'ALL_NEW',
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            }),
          ),
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

    async putAnchor(subChain, headIndex, mainIndex) {
      await send(() => client.send(new PutCommand({ TableName: tableName, Item: { pk: anchorPk(subChain), sk: anchorSk(headIndex), main_index: mainIndex } })));
    },

    async listAnchors(subChain, { fromHeadIndex, limit } = {}) {
      const input: QueryCommandInput = {
        TableName: tableName,
        KeyConditionExpression: fromHeadIndex === undefined ? 'pk = :pk' : 'pk = :pk AND sk >= :from',
        ExpressionAttributeValues: { ':pk': anchorPk(subChain), ...(fromHeadIndex === undefined ? {} : { ':from': anchorSk(fromHeadIndex) }) },
        ConsistentRead: true,
      };
      const items = limit === undefined ? await queryAll(input) : ((await send(() => client.send(new QueryCommand({ ...input, Limit: limit })))).Items ?? []);
      return items.map((item) => ({ headIndex: Number(item.sk), mainIndex: Number(item.main_index) }));
    },

    async queryEntityPage(entityId, { scope, limit, after, chainName }) {
      const out = await send(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            IndexName: LEDGER_INDEXES.byEntity,
            KeyConditionExpression: after === undefined ? 'gsi_entity_pk = :e' : 'gsi_entity_pk = :e AND gsi_entity_sk > :after',
            ...(chainName === undefined ? {} : { FilterExpression: 'chain_name = :c' }),
            ExpressionAttributeValues: {
              ':e': entityIndexPk(entityId, scope),
              ...(after === undefined ? {} : { ':after': after }),
              ...(chainName === undefined ? {} : { ':c': chainName }),
            },
            Limit: limit,
          }),
        ),
      );
      const next = out.LastEvaluatedKey?.gsi_entity_sk;
      const items = out.Items ?? [];
      return {
        blocks: items.map(blockFromItem),
        positions: items.map((item) => String(item.gsi_entity_sk)),
        next: typeof next === 'string' ? next : null,
        read: out.ScannedCount ?? items.length,
      };
    },

    async ping() {
      // One read of a key that never exists: constant time, half a read unit, and it fails as a missing
      // table or an unreachable DynamoDB would. DescribeTable, used before, is a control-plane call that
      // AWS rate-limits per account, and DynamoDB Local counts the table's items to answer it.
      await send(() => client.send(new GetCommand({ TableName: tableName, Key: { pk: 'HEALTH', sk: 'PING' } })));
    },
  };
  return storage;
}

/** The ledger's storage in DynamoDB with the block reads every storage shares. */
export function createLedgerRepository(options: LedgerRepositoryOptions): LedgerRepository {
  return withBlockReads(createLedgerStorage(options));
}
