/**
 * The only module that speaks DynamoDB for chains and blocks: implements the domain's LedgerRepository port. Stateless; the client and table name
 * are injected (ElectroDB's `createXRepository({ client, table })` shape).
 *
 * A block is stored with its exact canonical JSON (`block_json`): what was hashed is what is read
 * back, byte for byte, whatever DynamoDB does to numbers, empty maps or deep nesting.
 */
import { ConditionalCheckFailedException, TransactionCanceledException, type AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { canonicalJson, inContractOrder } from '../ledger/hashing.ts';
import type { BlockTreeData, LedgerRepository, PendingRef, Receipt } from '../ledger/repository.ts';
import type { Block, ChainHead, ChainKind } from '../ledger/types.ts';
import { translateStorageError } from './errors.ts';
import { batchGetAll, queryAll as queryAllPages, send, type BatchProjection } from './requests.ts';
import {
  BLOCK_RUN,
  BLOCK_SHARDS,
  CHAINS_PARTITION,
  HEAD_SK,
  LEDGER_INDEXES,
  RECEIPT_SK,
  IDEMPOTENCY_SK,
  idempotencyPk,
  SUB_CHAINS_SK_PREFIX,
  blockPk,
  blockSk,
  chainPk,
  chainsSk,
  entityPk,
  entitySk,
  isBlockPkOf,
  pendingPk,
  receiptPk,
} from './keys.ts';

export interface LedgerRepositoryOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
}

type Item = Record<string, unknown>;

const conditions = {
  itemDoesNotExist: 'attribute_not_exists(pk)',
  headIsAt: 'head_index = :expected',
  turnIsFree: 'attribute_not_exists(turn_holder) OR turn_holder = :writer OR turn_expires_ms < :now',
  proofIsNewer: 'attribute_not_exists(last_proof_head_index) OR last_proof_head_index < :proven',
} as const;

/**
 * The frontier as the head stores it: its 32-byte hashes in one binary value, half the size of hex. Every
 * commit rewrites the head, and DynamoDB bills a write per started KB (twice inside a transaction): packed,
 * a head stays under 1 KB up to chains of about 2^20 blocks, where hex passed it at a few hundred.
 * Heads written by earlier versions hold a list of hex strings; both are read.
 */
function packFrontier(frontier: readonly string[]): Uint8Array {
  return Buffer.from(frontier.join(''), 'hex');
}

function unpackFrontier(value: unknown): string[] | null {
  if (Array.isArray(value)) return value.map(String);
  if (value instanceof Uint8Array) {
    const hex = Buffer.from(value).toString('hex');
    return Array.from({ length: hex.length / 64 }, (_, i) => hex.slice(i * 64, i * 64 + 64));
  }
  return null;
}

function headItem(head: ChainHead): Item {
  return {
    pk: chainPk(head.chainName),
    sk: HEAD_SK,
    chain_name: head.chainName,
    kind: head.kind,
    head_index: head.headIndex,
    head_hash: head.headHash,
    event_count: head.eventCount,
    proof_count: head.proofCount,
    created_at: head.createdAt,
    ...(head.frontier ? { frontier: packFrontier(head.frontier) } : {}),
  };
}

/**
 * A chain's entry in the chain list: written once, with the chain. The list is never written by an
 * append (a head that carried list keys made every append of every chain write one index partition).
 */
function chainListItem(head: ChainHead): Item {
  return { pk: CHAINS_PARTITION, sk: chainsSk(head.kind, head.chainName), chain_name: head.chainName, kind: head.kind, created_at: head.createdAt };
}

function headFromItem(item: Item): ChainHead {
  return {
    chainName: String(item.chain_name),
    kind: item.kind as ChainKind,
    headIndex: Number(item.head_index),
    headHash: String(item.head_hash),
    eventCount: Number(item.event_count ?? 0),
    proofCount: Number(item.proof_count ?? 0),
    lastProofHeadIndex: item.last_proof_head_index === undefined ? null : Number(item.last_proof_head_index),
    lastProofId: item.last_proof_id === undefined ? null : String(item.last_proof_id),
    createdAt: Number(item.created_at ?? 0),
    turnHolder: item.turn_holder === undefined ? null : String(item.turn_holder),
    turnExpiresMs: item.turn_expires_ms === undefined ? null : Number(item.turn_expires_ms),
    frontier: unpackFrontier(item.frontier),
    pendingShards: Number(item.pending_shards ?? 1),
  };
}

function blockItem(block: Block, shards: number, treeNodes: string[] = []): Item {
  const item: Item = {
    pk: blockPk(block.chain_name, block.index, shards),
    sk: blockSk(block.index),
    chain_name: block.chain_name,
    index: block.index,
    hash: block.hash,
    previous_hash: block.previous_hash,
    timestamp: block.timestamp,
    event_count: block.events.length,
    block_json: canonicalJson(block),
    gsi_hash: block.hash,
    // Merkle nodes this block completed; beside the block, not in it (they are not part of its hash).
    ...(treeNodes.length ? { tree_nodes: treeNodes } : {}),
  };
  // One event closes one block (docs/rules.md, "Chains and blocks"), so a block belongs to at most one entity's trace.
  const [first] = block.events;
  if (first) {
    item.gsi_entity_pk = entityPk(first.entity_id);
    item.gsi_entity_sk = entitySk(block.timestamp, block.chain_name, block.index);
  }
  return item;
}

/** Reads of whole blocks fetch only the body: less for DynamoDB to send and the SDK to unmarshall. */
const BLOCK_BODY = 'block_json';

function blockFromItem(item: Item): Block {
  return inContractOrder(JSON.parse(String(item.block_json)) as Block);
}

/** A receipt's writer id: the part of the pending append's sort key after its time. */
function writerOf(ref: PendingRef): string {
  return ref.sk.slice(ref.sk.indexOf('#') + 1);
}

/** How long a receipt is kept for its writer to read (epoch seconds from now). */
const RECEIPT_TTL_SECONDS = 3600;

function receiptItem(chainName: string, ref: PendingRef, receipt: Receipt): Item {
  return {
    pk: receiptPk(chainName, writerOf(ref)),
    sk: RECEIPT_SK,
    ...(receipt.status === 'sealed'
      ? { status: 'sealed', first_index: receipt.firstIndex, previous_hash: receipt.previousHash, timestamp: receipt.timestamp, last_hash: receipt.lastHash }
      : { status: 'rejected', reason: receipt.reason }),
    ttl: Math.floor(Date.now() / 1000) + RECEIPT_TTL_SECONDS,
  };
}

function receiptFromItem(item: Item): Receipt {
  return item.status === 'sealed'
    ? {
        status: 'sealed',
        firstIndex: Number(item.first_index),
        previousHash: String(item.previous_hash),
        timestamp: Number(item.timestamp),
        lastHash: String(item.last_hash),
      }
    : { status: 'rejected', reason: String(item.reason ?? 'rejected') };
}

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

  const batchGet = (keys: Record<string, unknown>[], projection?: BatchProjection) => batchGetAll(client, tableName, keys, projection) as Promise<Item[]>;

  const repository: LedgerRepository = {
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
      const transactItems = chains.flatMap(({ head, genesis }) => [
        { Put: { TableName: tableName, Item: { ...headItem(head), block_shards: BLOCK_SHARDS }, ConditionExpression: conditions.itemDoesNotExist } },
        { Put: { TableName: tableName, Item: blockItem(genesis, BLOCK_SHARDS), ConditionExpression: conditions.itemDoesNotExist } },
        { Put: { TableName: tableName, Item: chainListItem(head) } },
      ]);
      try {
        await client.send(new TransactWriteCommand({ TransactItems: transactItems }));
        for (const { head } of chains) layouts.set(head.chainName, BLOCK_SHARDS);
        return { status: 'created' };
      } catch (error) {
        if (error instanceof TransactionCanceledException) {
          const reasons = error.CancellationReasons ?? [];
          const existing = chains.filter((_, i) => reasons[i * 3]?.Code === 'ConditionalCheckFailed').map((c) => c.head.chainName);
          if (existing.length > 0) return { status: 'exists', chainNames: existing };
        }
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
      const transactItems: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']> = [
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
        ...blocks.map((block, i) => ({
          Put: { TableName: tableName, Item: blockItem(block, shards, commit.treeNodes[i]), ConditionExpression: conditions.itemDoesNotExist },
        })),
        ...proofRecords.map((record) => ({
          Update: {
            TableName: tableName,
            Key: { pk: chainPk(record.subChain), sk: HEAD_SK },
            UpdateExpression: 'SET last_proof_head_index = :proven, last_proof_id = :proof, proof_count = proof_count + :one',
            ConditionExpression: `attribute_exists(pk) AND (${conditions.proofIsNewer})`,
            ExpressionAttributeValues: { ':proven': record.headIndex, ':proof': record.proofId, ':one': 1 },
          },
        })),
        // Each sealed pending append: removed (it must still be there: sealed once, never twice) and its receipt written.
        ...seals.flatMap(({ ref, receipt }) => [
          { Delete: { TableName: tableName, Key: { pk: pendingPk(chainName, ref.shard), sk: ref.sk }, ConditionExpression: 'attribute_exists(pk)' } },
          { Put: { TableName: tableName, Item: receiptItem(chainName, ref, receipt) } },
        ]),
        // Each Idempotency-Key these blocks answer: done, with where its blocks are, in the same transaction
        // (a crash after the commit cannot leave the key unanswered, so a retry never appends twice).
        ...completions.map(({ claim, blockPosition, count }) => ({
          Update: {
            TableName: tableName,
            Key: { pk: idempotencyPk(claim.id), sk: IDEMPOTENCY_SK },
            UpdateExpression: 'SET #status = :done, first_index = :first, block_count = :count REMOVE claim_token, claim_until_ms',
            ConditionExpression: 'claim_token = :token',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':done': 'done', ':first': blocks[blockPosition]!.index, ':count': count, ':token': claim.token },
          },
        })),
      ];
      try {
        await client.send(new TransactWriteCommand({ TransactItems: transactItems }));
        return { status: 'committed' };
      } catch (error) {
        if (!(error instanceof TransactionCanceledException)) throw translateStorageError(error);
        const reasons = error.CancellationReasons ?? [];
        const headReason = reasons[0];
        if (headReason?.Code === 'ConditionalCheckFailed') {
          const item = headReason.Item as Record<string, AttributeValue> | undefined;
          return { status: 'head-moved', head: item ? noted(unmarshall(item)) : undefined };
        }
        // A block key already taken means another writer got there first: the head moved too.
        if (reasons.slice(1, 1 + blocks.length).some((r) => r.Code === 'ConditionalCheckFailed')) {
          return { status: 'head-moved', head: await repository.getHead(chainName) };
        }
        const proofOffset = 1 + blocks.length;
        const staleProof = proofRecords.findIndex((_, i) => reasons[proofOffset + i]?.Code === 'ConditionalCheckFailed');
        if (staleProof >= 0) return { status: 'proof-stale', blockPosition: proofRecords[staleProof]!.blockPosition };
        const sealOffset = proofOffset + proofRecords.length;
        const gone = seals.findIndex((_, i) => reasons[sealOffset + 2 * i]?.Code === 'ConditionalCheckFailed');
        if (gone >= 0) return { status: 'pending-gone', sealPosition: gone };
        const completionOffset = sealOffset + 2 * seals.length;
        const lost = completions.findIndex((_, i) => reasons[completionOffset + i]?.Code === 'ConditionalCheckFailed');
        if (lost >= 0) return { status: 'claim-lost', blockPosition: completions[lost]!.blockPosition };
        if (reasons.some((r) => r.Code === 'TransactionConflict')) return { status: 'conflict' };
        throw translateStorageError(error);
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
      try {
        await client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { pk: chainPk(chainName), sk: HEAD_SK },
            UpdateExpression: 'REMOVE turn_holder, turn_expires_ms',
            ConditionExpression: 'turn_holder = :writer',
            ExpressionAttributeValues: { ':writer': holder },
          }),
        );
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return; // not ours any more: nothing to give back
        throw translateStorageError(error);
      }
    },

    async claimIdempotency(claim, fingerprint, nowMs, untilMs, expiresAt) {
      try {
        await client.send(
          new PutCommand({
            TableName: tableName,
            Item: {
              pk: idempotencyPk(claim.id),
              sk: IDEMPOTENCY_SK,
              status: 'in-progress',
              fingerprint,
              claim_token: claim.token,
              claim_until_ms: untilMs,
              ttl: expiresAt,
            },
            // Free, or held by a request whose hold lapsed (it died): never over a finished one.
            ConditionExpression: 'attribute_not_exists(pk) OR (#status = :progress AND claim_until_ms < :now)',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':progress': 'in-progress', ':now': nowMs },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return { status: 'claimed' };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException) || !error.Item) throw translateStorageError(error);
        const item = unmarshall(error.Item);
        return item.status === 'done'
          ? { status: 'done', fingerprint: String(item.fingerprint), firstIndex: Number(item.first_index), count: Number(item.block_count) }
          : { status: 'in-progress', fingerprint: String(item.fingerprint), untilMs: Number(item.claim_until_ms) };
      }
    },

    async releaseIdempotency(claim) {
      try {
        await client.send(
          new DeleteCommand({
            TableName: tableName,
            Key: { pk: idempotencyPk(claim.id), sk: IDEMPOTENCY_SK },
            ConditionExpression: 'claim_token = :token',
            ExpressionAttributeValues: { ':token': claim.token },
          }),
        );
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return; // done meanwhile, or held by another: not ours
        throw translateStorageError(error);
      }
    },

    async putPending(chainName, pending, expiresAt) {
      await send(() =>
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: { pk: pendingPk(chainName, pending.ref.shard), sk: pending.ref.sk, drafts: pending.drafts, ttl: expiresAt },
          }),
        ),
      );
    },

    async listPending(chainName, shards, limit) {
      const pages = await Promise.all(
        Array.from({ length: shards }, (_, shard) =>
          send(() =>
            client.send(
              new QueryCommand({
                TableName: tableName,
                KeyConditionExpression: 'pk = :pk',
                ExpressionAttributeValues: { ':pk': pendingPk(chainName, shard) },
                ConsistentRead: true,
                Limit: limit,
              }),
            ),
          ).then((out) => (out.Items ?? []).map((item) => ({ ref: { shard, sk: String(item.sk) }, drafts: String(item.drafts) }))),
        ),
      );
      return pages
        .flat()
        .sort((a, b) => (a.ref.sk < b.ref.sk ? -1 : a.ref.sk > b.ref.sk ? 1 : a.ref.shard - b.ref.shard))
        .slice(0, limit);
    },

    async withdrawPending(chainName, ref) {
      try {
        await client.send(
          new DeleteCommand({ TableName: tableName, Key: { pk: pendingPk(chainName, ref.shard), sk: ref.sk }, ConditionExpression: 'attribute_exists(pk)' }),
        );
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw translateStorageError(error);
      }
    },

    async rejectPending(chainName, ref, reason) {
      try {
        await client.send(
          new TransactWriteCommand({
            TransactItems: [
              { Delete: { TableName: tableName, Key: { pk: pendingPk(chainName, ref.shard), sk: ref.sk }, ConditionExpression: 'attribute_exists(pk)' } },
              { Put: { TableName: tableName, Item: receiptItem(chainName, ref, { status: 'rejected', reason }) } },
            ],
          }),
        );
        return true;
      } catch (error) {
        if (error instanceof TransactionCanceledException && error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') return false;
        throw translateStorageError(error);
      }
    },

    async getReceipt(chainName, ref) {
      const out = await send(() =>
        client.send(new GetCommand({ TableName: tableName, Key: { pk: receiptPk(chainName, writerOf(ref)), sk: RECEIPT_SK }, ConsistentRead: true })),
      );
      return out.Item ? receiptFromItem(out.Item) : undefined;
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

    async getBlockRange(chainName, from, to, descending) {
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
      try {
        await client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { pk: chainPk(chainName), sk: HEAD_SK },
            UpdateExpression: 'SET frontier = :frontier',
            ConditionExpression: 'head_index = :index AND attribute_not_exists(frontier)',
            ExpressionAttributeValues: { ':frontier': packFrontier(frontier), ':index': headIndex },
          }),
        );
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw translateStorageError(error);
      }
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
