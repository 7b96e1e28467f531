/**
 * How the ledger is stored as DynamoDB items, and read back: chain heads (with their packed frontier and
 * the metadata of their newest blocks), the chain list, block records (their exact canonical JSON beside
 * the keys and the by-entity index), segments of block metadata, and the block items of earlier versions.
 * Pure: no client here.
 */
import { type MetaRun, packRun, splitRun, unpackRun } from '../ledger/block-meta.ts';
import { canonicalJson, inContractOrder } from '../ledger/hashing.ts';
import { entityScopeOf } from '../ledger/names.ts';
import type { Recent } from '../ledger/repository.ts';
import type { Block, ChainHead, ChainKind } from '../ledger/types.ts';
import { blockPk, blockSk, CHAINS_PARTITION, chainPk, chainsSk, entityIndexPk, entitySk, HEAD_SK, indexSk, recordPk, segmentPk } from './keys.ts';

export type Item = Record<string, unknown>;

/**
 * The frontier as the head stores it: its 32-byte hashes in one binary value, half the size of hex. Every
 * commit rewrites the head, and DynamoDB bills a write per started KB (twice inside a transaction): packed,
 * a head stays under 1 KB up to chains of about 2^20 blocks, where hex passed it at a few hundred.
 * Heads written by earlier versions hold a list of hex strings; both are read.
 */
export function packFrontier(frontier: readonly string[]): Uint8Array {
  return Buffer.from(frontier.join(''), 'hex');
}

export function unpackFrontier(value: unknown): string[] | null {
  if (Array.isArray(value)) return value.map(String);
  if (value instanceof Uint8Array) {
    const hex = Buffer.from(value).toString('hex');
    return Array.from({ length: hex.length / 64 }, (_, i) => hex.slice(i * 64, i * 64 + 64));
  }
  return null;
}

export function headItem(head: ChainHead): Item {
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
    ...(head.recordsFrom !== undefined ? { records_from: head.recordsFrom } : {}),
    ...(head.cursor !== undefined ? { sealed_to: head.cursor } : {}),
    ...(head.materialized !== undefined ? { written_to: head.materialized } : {}),
    ...recentAttributes(head.recent ?? null),
    ...(head.recentFlushed ? { recent_flushed: true } : {}),
  };
}

/** How the head keeps its newest blocks' metadata: packed on it (`recent`), or the id and range of a round item. */
export function recentAttributes(recent: Recent): Item {
  if (!recent) return {};
  if ('run' in recent) return { recent_blocks: packRun(recent.run) };
  return { recent_round: recent.round.id, recent_first: recent.round.first, recent_last: recent.round.last };
}

function recentFromItem(item: Item): Recent {
  if (item.recent_blocks instanceof Uint8Array) return { run: unpackRun(item.recent_blocks) };
  if (typeof item.recent_round === 'string') {
    return { round: { id: item.recent_round, first: Number(item.recent_first), last: Number(item.recent_last) } };
  }
  return null;
}

/**
 * A chain's entry in the chain list: written once, with the chain. The list is never written by an
 * append (a head that carried list keys made every append of every chain write one index partition).
 */
export function chainListItem(head: ChainHead): Item {
  return {
    pk: CHAINS_PARTITION,
    sk: chainsSk(head.kind, head.chainName),
    chain_name: head.chainName,
    kind: head.kind,
    created_at: head.createdAt,
    // Added to the kept count of Sub-Chains in the transaction that wrote this item (keys.ts, SUB_CHAIN_COUNT_PK).
    ...(head.kind === 'sub' ? { counted: true } : {}),
  };
}

export function headFromItem(item: Item): ChainHead {
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
    ...(item.records_from !== undefined ? { recordsFrom: Number(item.records_from) } : {}),
    recent: recentFromItem(item),
    recentFlushed: item.recent_flushed === true,
    cursor: item.sealed_to === undefined ? '' : String(item.sealed_to),
    ...(item.written_to !== undefined ? { materialized: Number(item.written_to) } : {}),
  };
}

export function blockItem(block: Block, shards: number, treeNodes: string[] = []): Item {
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
    item.gsi_entity_pk = entityIndexPk(first.entity_id, entityScopeOf(block.chain_name));
    item.gsi_entity_sk = entitySk(block.timestamp, block.chain_name, block.index);
  }
  return item;
}

/** Reads of whole blocks fetch only the body: less for DynamoDB to send and the SDK to unmarshall. */
export const BLOCK_BODY = 'block_json';

export function blockFromItem(item: Item): Block {
  return inContractOrder(JSON.parse(String(item.block_json)) as Block);
}

/**
 * A block's record: its exact canonical JSON, keyed by its hash, with the by-entity index keys. Written
 * once per block (a repair writes the same item again).
 */
export function recordItem(block: Block): Item {
  const item: Item = {
    pk: recordPk(block.hash),
    sk: blockSk(block.index),
    chain_name: block.chain_name,
    index: block.index,
    block_json: canonicalJson(block),
  };
  const [first] = block.events;
  if (first) {
    item.gsi_entity_pk = entityIndexPk(first.entity_id, entityScopeOf(block.chain_name));
    item.gsi_entity_sk = entitySk(block.timestamp, block.chain_name, block.index);
  }
  return item;
}

/**
 * The segments of a run of block metadata, each keyed by its last index (the blocks up to an index have one
 * history: one segment per key), each under 4 KB (splitRun): a read of one is one read unit.
 */
export function segmentItems(chainName: string, run: MetaRun): Item[] {
  return splitRun(run).map((piece) => ({ pk: segmentPk(chainName), sk: indexSk(piece.blocks.at(-1)!.index), run: packRun(piece) }));
}
