/**
 * What the ledger domain needs from storage: the ports. shared/storage implements `LedgerStorage` against
 * DynamoDB (test/support has it in memory); the domain never sees a DynamoDB shape. Each method states its
 * contract. `LedgerRepository` is what the domain reads and appends through: the storage, plus block reads
 * composed over it (shared/ledger/block-reads.ts), the same for every storage.
 *
 * How a chain is stored (docs/appending.md, "Storage"): each block's body is one record, keyed by its hash,
 * written once; beside it, packed metadata (shared/ledger/block-meta.ts) maps indices to hashes, keeps the
 * tree nodes, and says where an unwritten record's drafts wait. Chains made before this layout keep their
 * earlier blocks as block items ("legacy") up to `recordsFrom`.
 */
import type { BlockMeta, MetaRun, PendingRef, SealEntry } from './block-meta.ts';
import type { IdempotencyClaim, IdempotencyState, KeyAnswer } from './idempotency-records.ts';
import type { Block, ChainHead, ChainKind, Recent } from './types.ts';

/**
 * How long a round's seals are kept (their TTL, seconds): a seal is read by its round's writers within seconds;
 * whoever asks later (a retry of an Idempotency-Key, hours on) must find the append in the segments.
 */
export const SEALS_KEPT_SECONDS = 3600;
export type { BlockMeta, MetaRun, PendingRef, SealEntry } from './block-meta.ts';
export { pendingSk } from './block-meta.ts';

/** A new chain: its head record and its genesis block, written together. */
export interface NewChain {
  head: ChainHead;
  genesis: Block;
}

/** Marks a Sub-Chain as anchored by a Main Chain block, inside the same transaction as that block. */
export interface ProofRecord {
  /** Position of the anchoring block within `RoundCommit.blocks`. */
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

/** An append written for whichever instance combines next: its blocks' drafts, serialized by the appender. */
export interface PendingAppend {
  ref: PendingRef;
  /** JSON of the drafts; opaque to storage. */
  drafts: string;
}

/** Who holds a chain's combining lease, when the lease was not ours to take. */
export type LeaseOutcome =
  | { acquired: true; head: ChainHead }
  | { acquired: false; head: ChainHead; holder: string; untilMs: number }
  | { acquired: false; head: undefined };

export type { Recent } from './types.ts';
export type { BoundAppend, IdempotencyClaim, IdempotencyState, KeyAnswer } from './idempotency-records.ts';

/**
 * Consecutive blocks committed on a chain: one conditional write of its head (a transaction when other
 * items change with it). The blocks' bodies are not in it: they wait in pending appends (their metadata
 * says where) until `writeRound` writes their records, or are written with it (`records`).
 */
export interface RoundCommit {
  chainName: string;
  /** Who commits: with `lease`, the holder of the chain's lease; a direct commit needs that no lease is live. */
  writerId: string;
  /** The writer's clock, epoch milliseconds, to judge whether a lease has expired. */
  nowMs: number;
  /** The head the blocks were built on: its index and its cursor (a withdrawal moves the cursor). */
  expectedHeadIndex: number;
  expectedCursor: string;
  /** `untilMs`: the writer holds the lease and keeps it until then; `direct`: no live lease, no pending sealed. */
  mode: { untilMs: number } | { direct: true };
  blocks: Block[];
  /** The frontier after the last block. */
  frontier: string[];
  /** Where the head keeps its unflushed metadata after this commit (these blocks' included), or none (`segment` holds it). */
  recent: Recent;
  /** A segment written in the same transaction (a direct commit whose metadata does not fit the head). */
  segment?: MetaRun;
  /** Pending appends with sort keys up to this one are sealed (or refused) from now on. */
  cursor: string;
  /** Every block up to this index has its record (after this commit). */
  materialized: number;
  /** For a chain made before records: blocks from this index on are records (set by its first such commit). */
  recordsFrom?: number;
  /** Records written in the same transaction (a direct commit's blocks). */
  records?: Block[];
  /** Spreads the chain's pending appends over this many partitions from now on (only ever raised). */
  pendingShards?: number;
  proofRecords?: ProofRecord[];
  /** Idempotency-Key records these blocks complete: `count` blocks from `blockPosition` are that request's. */
  completions?: KeyAnswer[];
}

export type CommitResult =
  | { status: 'committed' }
  /** The head is not the one the blocks were built on (moved, cursor moved, lease lost); `head` is the head now. */
  | { status: 'head-moved'; head: ChainHead | undefined }
  /** A proof record's condition failed: that Sub-Chain was already anchored at this head or later. */
  | { status: 'proof-stale'; blockPosition: number }
  /** DynamoDB refused a concurrent transaction on the same items; retrying is right. */
  | { status: 'conflict' }
  /** An Idempotency-Key record is no longer held by the claim the blocks at `blockPosition` carry. */
  | { status: 'claim-lost'; blockPosition: number };

export type CreateChainsResult = { status: 'created' } | { status: 'exists'; chainNames: string[] };

/** The pending appends a leader found, and for each shard whether it read all there were up to the bound. */
export interface PendingRead {
  appends: PendingAppend[];
  /** Per shard: the last sort key read when that shard had more than the limit (appends above it were not read). */
  truncatedAt: Map<number, string>;
}

export interface LedgerStorage {
  /** The head of a chain, read strongly consistent; undefined when the chain does not exist. */
  getHead(chainName: string): Promise<ChainHead | undefined>;
  /**
   * The head read eventually consistent, at half the read units: it may be a moment old (an earlier head
   * than the last one written), never one that was not written. For a waiting writer's looks, whose every
   * decision on it is to look again, a conditional write, or a search of the segments that any head with the
   * cursor past the append makes complete; a chain it does not find is read again strongly.
   */
  lookHead(chainName: string): Promise<ChainHead | undefined>;
  /** Every chain head, Main Chain first, then Sub-Chains by name. */
  listHeads(): Promise<ChainHead[]>;
  /**
   * Up to `limit` chains of the list after `after` (a position an earlier page answered; undefined: from the
   * start), in the list's order, each with its head read eventually consistent (a chain whose head is not
   * there yet is left out). `next`: where the following page starts; undefined once the list has ended.
   */
  listHeadsPage(after: string | undefined, limit: number): Promise<{ heads: { position: string; head: ChainHead }[]; next?: string }>;
  /** Where the sweep of unwritten rounds goes on in the chain list (a page's position); undefined: from the start. */
  getSweepPosition(): Promise<string | undefined>;
  /** Saves (or, undefined, clears: the next sweep starts from the list's start) where the sweep goes on. */
  saveSweepPosition(after: string | undefined): Promise<void>;
  countSubChains(): Promise<number>;
  /** Writes all the chains or none (heads and genesis records); `exists` names the chains that were already there. */
  createChains(chains: NewChain[]): Promise<CreateChainsResult>;

  /**
   * Takes the chain's combining lease for `holder` until `untilMs`, unless another holder's lease is live.
   * Answers the head either way (undefined head: no such chain).
   */
  acquireLease(chainName: string, holder: string, nowMs: number, untilMs: number): Promise<LeaseOutcome>;
  /** Gives the lease back, if `holder` still has it. */
  releaseLease(chainName: string, holder: string): Promise<void>;
  /** Commits blocks on the expected head, all or nothing. */
  commitRound(commit: RoundCommit): Promise<CommitResult>;
  /**
   * Ends a round whose records and segment are written: the lease is given back, every block up to
   * `materialized` has its record, and the head's metadata is marked as in its segment (it stays on the head,
   * where writers read their receipts, until the next commit). Only if `holder` still holds the lease and the
   * head is still at `headIndex`; false otherwise.
   */
  finishRound(chainName: string, holder: string, headIndex: number, materialized: number): Promise<boolean>;
  /**
   * Moves the cursor up to `sk` unless it is there already: no pending append up to it can be sealed from
   * then on (and a leader's commit built on the old cursor fails). False when the cursor was at `sk` or past.
   */
  withdraw(chainName: string, sk: string): Promise<boolean>;

  /** Writes an append for a leader to seal; false when its key is taken (pick another). It expires (TTL) at `expiresAt`. */
  putPending(chainName: string, pending: PendingAppend, expiresAt: number): Promise<boolean>;
  /**
   * The pending appends of `shards` shards with sort keys above `after` and up to `upTo`, oldest first,
   * at most `limit` per shard; read strongly consistent.
   */
  listPending(chainName: string, shards: number, after: string, upTo: string, limit: number): Promise<PendingRead>;
  /** The drafts of these pending appends (strongly consistent), by `shard|sk`; an expired one is absent. */
  getPendings(chainName: string, refs: readonly PendingRef[]): Promise<Map<string, string>>;
  /** Records why a pending append was refused (its writer reads it instead of its receipt). */
  putRefusal(chainName: string, ref: PendingRef, reason: string): Promise<void>;
  getRefusal(chainName: string, ref: PendingRef): Promise<string | undefined>;

  /** Writes a round's metadata that is too large for the head, before the commit that names it (TTL `expiresAt`). */
  putRound(chainName: string, id: string, run: MetaRun, expiresAt: number): Promise<void>;
  getRound(chainName: string, id: string): Promise<MetaRun | undefined>;
  /**
   * Writes a round's records, its segment and its seals in one wave of requests (in no order among them):
   * a seal per shard its pending appends were in (keyed by the round's last index), on a busy chain, where
   * each writer reads only its shard's rather than the segments every writer would read.
   */
  writeRound(chainName: string, round: { records: readonly Block[]; segment: MetaRun; seals?: ReadonlyMap<number, readonly SealEntry[]> }): Promise<void>;
  /**
   * The newest seals of one shard (at most `limit`) of rounds ending at `fromIndex` or later, ascending: a
   * waiting writer's append is sealed in one of the rounds after it was written, so among the newest when it
   * looks. Eventually consistent (half the read units): a seal is written once and never changed, so a read
   * either has it whole or not yet, and its writer looks again. Each with `last`, its round's last block index.
   * `oldest`: the first `limit` from `fromIndex` instead (a writer whose round may be older than the newest
   * few goes through them in order); `consistent`: a strong read (what deciding on them rests on).
   */
  readSeals(
    chainName: string,
    shard: number,
    fromIndex: number,
    limit: number,
    options?: { oldest?: boolean; consistent?: boolean },
  ): Promise<{ last: number; entries: SealEntry[] }[]>;
  /**
   * Segments with blocks at `fromIndex` or later, ascending, at most `limit`; with `through`, none after the one
   * that holds it (the caller wants no later block, so kept segments that reach it answer with no request).
   */
  readSegments(chainName: string, fromIndex: number, limit: number, consistent: boolean, through?: number): Promise<MetaRun[]>;
  /** The newest segments (at most `limit`) with blocks at `fromIndex` or later, ascending; eventually consistent, as readSeals. */
  readNewestSegments(chainName: string, fromIndex: number, limit: number): Promise<MetaRun[]>;
  /** Records by their metadata (index and hash), by index; a missing record is absent. */
  getRecords(chainName: string, metas: readonly Pick<BlockMeta, 'index' | 'hash'>[], consistent: boolean): Promise<Map<number, Block>>;
  /** The record with that hash, if any. */
  findRecord(hash: string): Promise<Block | undefined>;
  /**
   * The kept page of a chain's blocks `first`…`first`+99 (`first` a multiple of 100), as stored, if it was kept.
   * Written once (putPage) from a read of the whole page; a page of written blocks never changes after.
   */
  getPage(chainName: string, first: number): Promise<Block[] | undefined>;
  /** Keeps a full page of written blocks, as stored, for later reads; false when it is too large to keep. */
  putPage(chainName: string, first: number, blocks: readonly Block[]): Promise<boolean>;

  /** Legacy block items with indices in [from, to], ascending or descending. */
  getLegacyBlocks(chainName: string, from: number, to: number, descending: boolean, consistent: boolean): Promise<Block[]>;
  /** The legacy block item of that chain with that hash (by-hash index, then a consistent read). */
  findLegacyBlock(chainName: string, hash: string): Promise<Block | undefined>;
  /** Tree data of legacy block items; a block that does not exist is absent from the map. */
  readLegacyTreeData(chainName: string, indices: readonly number[], consistent: boolean): Promise<Map<number, BlockTreeData>>;
  /** The hashes of legacy blocks 0…toIndex, in index order. */
  listLegacyHashes(chainName: string, toIndex: number): Promise<string[]>;
  /** Writes tree nodes onto existing legacy blocks (building the tree of an older chain). */
  storeTreeNodes(chainName: string, entries: readonly { index: number; treeNodes: string[] }[]): Promise<void>;
  /** Sets the frontier of a chain that has none, if its head is still at `headIndex`; false otherwise. */
  setFrontier(chainName: string, headIndex: number, frontier: string[]): Promise<boolean>;

  /**
   * Every block of a chain any reader reads (not a channel's) holding an event of the entity, in trace order (time,
   * chain, index). Unbounded (any writer adds to an entity): only for rebuilding a Sub-Chain's anchor list once, where
   * items of it are missing (putAnchor).
   */
  queryEntityBlocks(entityId: string): Promise<Block[]>;
  /** Notes that the Main Chain's block `mainIndex` anchors the Sub-Chain's first `headIndex + 1` blocks. Idempotent. */
  putAnchor(subChain: string, headIndex: number, mainIndex: number): Promise<void>;
  /**
   * The Sub-Chain's anchors noted, by the head they anchor, ascending: from `fromHeadIndex` on when given, at most
   * `limit` when given. Reads what it answers, whatever else was written about the chain.
   */
  listAnchors(subChain: string, range?: { fromHeadIndex?: number; limit?: number }): Promise<{ headIndex: number; mainIndex: number }[]>;
  /**
   * A page of an entity's blocks in one scope of the entity index for a caller's trace: `scope` null, the chains any
   * reader reads; else a channel's chain (shared/storage/keys.ts, entityIndexPk). At most `limit` entries read after
   * the position `after` (an entity index sort key, entitySk), those of `chainName` only when given (the filter reads
   * the others all the same, so a page may hold fewer), each block's own position, and the position the next page
   * starts after: null when none is left. `read`: the entries DynamoDB read (filtered ones too).
   */
  queryEntityPage(
    entityId: string,
    page: { scope: string | null; limit: number; after?: string | undefined; chainName?: string | undefined },
  ): Promise<{ blocks: Block[]; positions: string[]; next: string | null; read: number }>;
  /**
   * Claims an Idempotency-Key's record for a request with this fingerprint, unless another request holds
   * it (and its hold has not lapsed at `nowMs`) or it is done; answers the record's state either way. A
   * record taken over keeps the pending append it was bound to (answered as `bound`). The record expires
   * (TTL) at `expiresAt` (epoch seconds). `first`: a new record is made bound to that pending append key, as
   * bindIdempotency would (one write where two were); a record already there is not.
   */
  claimIdempotency(
    claim: IdempotencyClaim,
    fingerprint: string,
    nowMs: number,
    untilMs: number,
    expiresAt: number,
    first?: { ref: PendingRef; after: number },
  ): Promise<IdempotencyState>;
  /**
   * Binds the record to the pending append about to be written at `ref` (no block up to `after` can be it),
   * if `claim` still holds it; false if it does not (then nothing may be written).
   */
  bindIdempotency(claim: IdempotencyClaim, ref: PendingRef, after: number): Promise<boolean>;
  /** Records the key's answer (`count` blocks from `firstIndex`), if `claim` still holds it; false if not. */
  completeIdempotency(claim: IdempotencyClaim, firstIndex: number, count: number): Promise<boolean>;
  /**
   * Lets go of a claim whose request did not land, if it still holds the record: its hold lapses at once (a
   * retry may go), and the record keeps the append it is bound to, for the retry to settle.
   */
  releaseIdempotency(claim: IdempotencyClaim): Promise<void>;
  /** Throws when the table cannot be reached. */
  ping(): Promise<void>;
}

/** How many blocks a kept page holds: a page of the blocks API at its largest, at an offset that is a multiple of it. */
export const KEPT_PAGE = 100;

/** Where a chain sits in the chain list, the Main Chain first, then Sub-Chains by name: a page's `after` for the chains after it. */
export function chainListPosition(kind: ChainKind, chainName: string): string {
  return kind === 'main' ? `0#${chainName}` : `1#${chainName}`;
}

/** Block reads over the storage, whatever layout each block is in. */
export interface BlockReads {
  /** A block by index; eventually consistent unless `consistent` (a block acknowledged moments ago may lag). */
  getBlock(chainName: string, index: number, consistent?: boolean): Promise<Block | undefined>;
  /** The block of that chain with that hash, if any. */
  findBlockByHash(chainName: string, hash: string): Promise<Block | undefined>;
  /** Blocks with indices in [from, to] that exist, ascending or descending; eventually consistent unless `consistent`. */
  getBlockRange(chainName: string, from: number, to: number, descending: boolean, consistent?: boolean): Promise<Block[]>;
  /**
   * Blocks from…to that exist, ascending, read from their own records (or block items), never from a kept page,
   * and keeping none: what a check of the chain as stored reads.
   */
  readStoredRange(chainName: string, from: number, to: number, consistent?: boolean): Promise<Block[]>;
  /** The hashes of blocks 0…toIndex, in index order. */
  listBlockHashes(chainName: string, toIndex: number): Promise<string[]>;
  /**
   * Tree data of the given blocks; a block that does not exist is absent from the map. Eventually
   * consistent unless `consistent`: a block committed a moment ago may be missing.
   */
  readTreeData(chainName: string, indices: readonly number[], consistent?: boolean): Promise<Map<number, BlockTreeData>>;
  /** Metadata of blocks from…to of a chain stored as records (what exists of it), read from segments and the head. */
  readMeta(chainName: string, from: number, to: number, consistent: boolean): Promise<{ blocks: BlockMeta[]; runs: MetaRun[] }>;
}

export interface LedgerRepository extends LedgerStorage, BlockReads {}
