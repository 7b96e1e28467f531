/**
 * The shapes of docs/rules.md, "Chains and blocks", as stored on chain and as answered. snake_case, because these are the
 * wire format and the hashed form at once.
 */

import type { MetaRun } from './block-meta.ts';

/** Where the head keeps the metadata of its newest blocks, not yet in a segment. */
export type Recent = { run: MetaRun } | { round: { id: string; first: number; last: number } } | null;

export type ChainKind = 'main' | 'sub';

/** An event inside a block, exactly as hashed and stored. */
export interface LedgerEvent {
  event_id: string;
  chain_name: string;
  block_index: number;
  entity_id: string;
  event_type: string;
  details: Record<string, unknown>;
  details_cid: string | null;
  details_nonce: string | null;
  details_metadata: Record<string, unknown> | null;
  /** Seconds since the epoch, millisecond precision, set by the server. */
  timestamp: number;
  is_offchain: boolean;
  /**
   * Erasable events only (absent on every other event, so their hashes are what they always were): the
   * data subject whose personal data the details are, and the details sealed under that subject's key
   * (null when they went off chain, sealed under the same key). Their `details` are `{}` on chain.
   */
  subject_id?: string;
  details_sealed?: string | null;
  /**
   * Events of a channel's chain only (absent elsewhere, so other hashes are what they always were): 128 random bits
   * (32 hex) the service adds, so that the block hash, which any reader may see, cannot confirm a guess at content
   * only the channel's members read (a private value's hash, a low-entropy detail).
   */
  salt?: string;
  /**
   * Secure events only (absent elsewhere, so other hashes are what they always were): who signed the event and how,
   * so that anyone reading the block can check it again (shared/ledger/signed-events.ts), and tell it from a copy
   * any writer of the chain could append.
   */
  signed?: EventSignature;
}

/** A secure event's signature as its block records it. */
export interface EventSignature {
  /** The organization whose registered key signed it. */
  org_id: string;
  /** That key, an Ed25519 public key in hex, as it was registered when the event was appended. */
  public_key: string;
  nonce: string;
  /** The node it was signed for, when the signer named one (signed with the rest). */
  node_id?: string;
  /** Ed25519, hex, over `signedEventMessage`. */
  signature: string;
}

export interface UnhashedBlock {
  index: number;
  chain_name: string;
  timestamp: number;
  previous_hash: string;
  events: LedgerEvent[];
}

export interface Block extends UnhashedBlock {
  hash: string;
}

/** What the head record of a chain says about it. */
export interface ChainHead {
  chainName: string;
  kind: ChainKind;
  headIndex: number;
  headHash: string;
  eventCount: number;
  /** Sub-Chains: proofs anchored so far; Main Chain: anchor blocks held. */
  proofCount: number;
  /** Sub-Chains: the head index covered by the latest proof, if any. */
  lastProofHeadIndex: number | null;
  lastProofId: string | null;
  createdAt: number;
  /**
   * The combining lease (docs/appending.md): its holder leads the chain's appends, and other writers'
   * commits fail while it is live; it expires on its own at `turnExpiresMs`.
   */
  turnHolder?: string | null;
  turnExpiresMs?: number | null;
  /**
   * The Merkle frontier of the chain's tree (leaves = block hashes 0…headIndex): the roots of its perfect
   * subtrees, largest first, hex. Null for a chain made before trees were kept, until it is built.
   */
  frontier: string[] | null;
  /**
   * How many partitions the chain's pending appends are spread over now: 1 at first, doubled by a leader
   * that finds many waiting (up to SVC_APPEND_PENDING_SHARDS), never lowered, so a writer that learned the
   * number earlier always writes where every later leader reads.
   */
  pendingShards?: number;
  /**
   * Blocks from this index on are stored as records with packed metadata (docs/appending.md, "Storage");
   * before it, as the block items of earlier versions. Undefined: every block so far is a block item.
   */
  recordsFrom?: number;
  /** Where the metadata of the newest blocks is until a segment holds it: on the head, or in a round item. */
  recent?: Recent;
  /** The newest blocks' metadata is in a segment already (it stays on the head until the next commit: writers read it there). */
  recentFlushed?: boolean;
  /** Pending appends with sort keys up to this one are sealed or never will be ('' before any). */
  cursor?: string;
  /** Every block up to this index has its record; the blocks after it wait in pending appends. */
  materialized?: number;
}

/** The client-facing summary (ChainInfoResponse). */
export interface ChainInfo {
  name: string;
  type: ChainKind;
  block_count: number;
  latest_block_hash: string | null;
}

export interface ChainStats {
  chain_name: string;
  total_blocks: number;
  total_events: number;
  proof_count: number | null;
  registered_sub_chains: number | null;
}

export interface BlocksPage {
  chain_name: string;
  total: number;
  limit: number;
  offset: number;
  blocks: Block[];
}

export interface EntityTrace {
  entity_id: string;
  /** The chains of this page's events, in order of first appearance. */
  chains: string[];
  events: LedgerEvent[];
  /** Where the next page starts (pass it as `cursor`), or null when this page is the last. */
  next_cursor: string | null;
}

/** The `details` of a Main Chain anchor event (docs/rules.md, "Anchors"). */
export interface ProofDetails {
  sub_chain: string;
  head_index: number;
  head_hash: string;
  tree_size: number;
  merkle_root: string;
  /** When the anchored head is a QLDB import's closing `qldb_import` event: that event's details, the import's record. */
  qldb_import?: Record<string, unknown>;
}
