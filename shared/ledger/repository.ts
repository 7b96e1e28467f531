/**
 * What the ledger domain needs from storage: the port. shared/storage implements it against DynamoDB;
 * the domain never sees a DynamoDB shape. Each method states its contract.
 */
import type { Block, ChainHead } from './types.ts';

/** A new chain: its head record and its genesis block, written together. */
export interface NewChain {
  head: ChainHead;
  genesis: Block;
}

/** Marks a Sub-Chain as anchored by a Main Chain block, inside the same transaction as that block. */
export interface ProofRecord {
  /** Position of the anchoring block within `BlockCommit.blocks`. */
  blockPosition: number;
  subChain: string;
  /** Sub-Chain head index covered by the proof. */
  headIndex: number;
  proofId: string;
}

/** What a block item holds for the Merkle tree: its hash (the leaf) and the nodes it completed. */
export interface BlockTreeData {
  hash: string;
  /** Hex hashes of the perfect subtrees this block completed, levels 1, 2, … */
  treeNodes: string[];
}

/** Where a pending append waits: one of the chain's shards, and its sort key there (time, then writer id). */
export interface PendingRef {
  shard: number;
  sk: string;
}

/** A pending append's sort key: oldest first (13-digit epoch ms), then by writer id. */
export function pendingSk(epochMs: number, writerId: string): string {
  return `${String(Math.floor(epochMs)).padStart(13, '0')}#${writerId}`;
}

/** An append written for whichever instance combines next: its blocks' drafts, serialized by the appender. */
export interface PendingAppend {
  ref: PendingRef;
  /** JSON of the drafts; opaque to storage. */
  drafts: string;
}

/** What became of a pending append, written in the transaction that sealed (or refused) it. */
export type Receipt =
  | { status: 'sealed'; firstIndex: number; previousHash: string; timestamp: number; lastHash: string }
  | { status: 'rejected'; reason: string };

/** Who holds a chain's combining lease, when the lease was not ours to take. */
export type LeaseOutcome =
  | { acquired: true; head: ChainHead }
  | { acquired: false; head: ChainHead; holder: string; untilMs: number }
  | { acquired: false; head: undefined };

/**
 * A request's hold on its Idempotency-Key: `id` names the key's record (the caller, the chain and the
 * key), `token` this attempt. The commit that lands the request's blocks completes the record, on the
 * condition that the token is still the one holding it.
 */
export interface IdempotencyClaim {
  id: string;
  token: string;
}

/** What a key's record said when a request tried to claim it. */
export type IdempotencyState =
  | { status: 'claimed' }
  /** A request with this key is being appended (until `untilMs`, when its hold lapses). */
  | { status: 'in-progress'; fingerprint: string; untilMs: number }
  /** A request with this key landed as the `count` blocks from `firstIndex`. */
  | { status: 'done'; fingerprint: string; firstIndex: number; count: number };

/** Consecutive blocks appended to one chain in one transaction. */
export interface BlockCommit {
  chainName: string;
  /** The head index the blocks were built on; the commit fails if the head moved. */
  expectedHeadIndex: number;
  /** Who commits: the commit fails while another writer holds a live turn reservation. */
  writerId: string;
  /** The writer's clock, epoch milliseconds, to judge whether a reservation has expired. */
  nowMs: number;
  blocks: Block[];
  /** For each block, the tree nodes it completes (aligned with `blocks`). */
  treeNodes: string[][];
  /** The frontier after the last block. */
  frontier: string[];
  proofRecords?: ProofRecord[];
  /** Pending appends these blocks seal: each is removed and its receipt written, in the same transaction. */
  seals?: { ref: PendingRef; receipt: Receipt & { status: 'sealed' } }[];
  /** The combining lease: kept until `untilMs` (the writer goes on combining), or released. */
  lease?: { untilMs: number } | { release: true };
  /** Spreads the chain's pending appends over this many partitions from now on (only ever raised). */
  pendingShards?: number;
  /** Idempotency-Key records these blocks complete: `count` blocks from `blockPosition` are that request's. */
  completions?: { claim: IdempotencyClaim; blockPosition: number; count: number }[];
}

export type CommitResult =
  | { status: 'committed' }
  /** Another writer moved the head; `head` is the head now (undefined if the chain vanished). */
  | { status: 'head-moved'; head: ChainHead | undefined }
  /** A proof record's condition failed: that Sub-Chain was already anchored at this head or later. */
  | { status: 'proof-stale'; blockPosition: number }
  /** DynamoDB refused a concurrent transaction on the same items; retrying is right. */
  | { status: 'conflict' }
  /** A sealed pending append was no longer there (its writer withdrew it): leave it out and retry. */
  | { status: 'pending-gone'; sealPosition: number }
  /** An Idempotency-Key record is no longer held by the claim the blocks at `blockPosition` carry. */
  | { status: 'claim-lost'; blockPosition: number };

export type CreateChainsResult = { status: 'created' } | { status: 'exists'; chainNames: string[] };

export interface LedgerRepository {
  /** The head of a chain, read strongly consistent; undefined when the chain does not exist. */
  getHead(chainName: string): Promise<ChainHead | undefined>;
  /** Every chain head, Main Chain first, then Sub-Chains by name. */
  listHeads(): Promise<ChainHead[]>;
  countSubChains(): Promise<number>;
  /** Writes all the chains or none; `exists` names the chains that were already there. */
  createChains(chains: NewChain[]): Promise<CreateChainsResult>;
  /** Appends blocks on the expected head in one conditional transaction. */
  commitBlocks(commit: BlockCommit): Promise<CommitResult>;
  /**
   * Takes the chain's combining lease for `holder` until `untilMs`, unless another holder's lease is live.
   * Answers the head either way (undefined head: no such chain).
   */
  acquireLease(chainName: string, holder: string, nowMs: number, untilMs: number): Promise<LeaseOutcome>;
  /** Gives the lease back, if `holder` still has it. */
  releaseLease(chainName: string, holder: string): Promise<void>;
  /** Writes an append for the next combiner to seal; it expires (TTL) at `expiresAt` (epoch seconds). */
  putPending(chainName: string, pending: PendingAppend, expiresAt: number): Promise<void>;
  /** The oldest pending appends of the chain across `shards` shards, oldest first, at most `limit`; read strongly consistent. */
  listPending(chainName: string, shards: number, limit: number): Promise<PendingAppend[]>;
  /** Removes a pending append that was not sealed; false when it was gone (sealed or refused: read its receipt). */
  withdrawPending(chainName: string, ref: PendingRef): Promise<boolean>;
  /** Removes a pending append and records why it was refused; false when it was already gone. */
  rejectPending(chainName: string, ref: PendingRef, reason: string): Promise<boolean>;
  /** The receipt of a pending append, read strongly consistent; undefined while it waits. */
  getReceipt(chainName: string, ref: PendingRef): Promise<Receipt | undefined>;
  /** A block by index; eventually consistent unless `consistent` (a block acknowledged moments ago may lag). */
  getBlock(chainName: string, index: number, consistent?: boolean): Promise<Block | undefined>;
  /** The block of that chain with that hash, if any (by-hash index, then a consistent read). */
  findBlockByHash(chainName: string, hash: string): Promise<Block | undefined>;
  /** Blocks with indices in [from, to], ascending or descending; eventually consistent unless `consistent`. */
  getBlockRange(chainName: string, from: number, to: number, descending: boolean, consistent?: boolean): Promise<Block[]>;
  /** The hashes of blocks 0…toIndex, in index order. */
  listBlockHashes(chainName: string, toIndex: number): Promise<string[]>;
  /**
   * Tree data of the given blocks, read in batches; a block that does not exist is absent from the map.
   * Eventually consistent unless `consistent`: a block committed a moment ago may be missing.
   */
  readTreeData(chainName: string, indices: readonly number[], consistent?: boolean): Promise<Map<number, BlockTreeData>>;
  /** Writes tree nodes onto existing blocks (building the tree of an older chain). */
  storeTreeNodes(chainName: string, entries: readonly { index: number; treeNodes: string[] }[]): Promise<void>;
  /** Sets the frontier of a chain that has none, if its head is still at `headIndex`; false otherwise. */
  setFrontier(chainName: string, headIndex: number, frontier: string[]): Promise<boolean>;
  /** Every block holding an event of the entity, in trace order (time, chain, index). */
  queryEntityBlocks(entityId: string): Promise<Block[]>;
  /**
   * Claims an Idempotency-Key's record for a request with this fingerprint, unless another request holds
   * it (and its hold has not lapsed at `nowMs`) or it is done; answers the record's state either way.
   * The record expires (TTL) at `expiresAt` (epoch seconds).
   */
  claimIdempotency(claim: IdempotencyClaim, fingerprint: string, nowMs: number, untilMs: number, expiresAt: number): Promise<IdempotencyState>;
  /** Lets go of a claim whose request did not land, if it still holds the record (a retry may go at once). */
  releaseIdempotency(claim: IdempotencyClaim): Promise<void>;
  /** Throws when the table cannot be reached. */
  ping(): Promise<void>;
}
