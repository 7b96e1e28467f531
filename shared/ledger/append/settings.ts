/**
 * The appender's settings, limits and the types its parts share. No behaviour here: each number says what it
 * bounds and why, and the parts (core.ts, direct-commit.ts, round.ts, receipt.ts, withdraw.ts, recovery.ts)
 * read them. docs/appending.md tells the protocol they tune.
 */
import { pendingSk, type PendingRef } from '../block-meta.ts';
import type { BlockDraft } from '../blocks.ts';
import type { ChainHead } from '../types.ts';

export interface AppenderOptions {
  maxAttempts: number;
  /** Most blocks one round commits. */
  batchMax: number;
  /**
   * Most partitions a chain's pending appends spread over. A chain starts with one; a leader that finds
   * PENDING_PER_SHARD or more waiting per shard doubles the chain's shards, recorded on its head.
   */
  pendingShards?: number;
  /** How long the combining lease lasts without a commit: the longest a crashed leader holds others up. */
  leaseMs?: number;
  /** How long a leader goes on with more rounds (while appends wait) before it answers its own caller. */
  maxLeadMs?: number;
  /** How long a follower waits for its append to be sealed before withdrawing it (then 503). */
  waitMs?: number;
  /**
   * How old a pending append must be before a leader seals it: writes still on their way with older keys
   * would otherwise land below the cursor and have to be written again.
   */
  settleMs?: number;
  /**
   * A leader whose round (a small one) sealed at least this many other instances' appends, once that round's
   * records are written, waits one of its typical rounds before it reads again, so that the appends arriving
   * meanwhile share the next round's head write and segment (PostgreSQL's commit_delay and commit_siblings,
   * for the same reason). 0: it reads again at once.
   */
  gatherSiblings?: number;
  /** Seconds since the epoch, millisecond precision. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export interface AppenderCounters {
  blocksAppended: number;
  eventsAppended: number;
  /** Commits of the head that landed (rounds of a leader, and direct commits). */
  commits: number;
  conflicts: number;
  /** Appends this instance handed to another instance's leader. */
  followed: number;
  /** Leases this instance took (each a request on the chain's serial path before its commits). */
  leaseTakes: number;
  /** Reads of the pending appends a leader made (each one round of parallel Queries before a commit). */
  pendingReads: number;
  /** Writes on a round's serial path besides its commit: the round item, the records, the segment, the head's release. */
  roundWrites: number;
  /** Pending appends written again because they landed below the cursor (after a leader read past them). */
  rewrites: number;
  /** Rounds whose leader died before writing their records, finished by this instance. */
  recoveries: number;
}

/** What a chain looked like to this instance lately: whether others lead it, how fast appends get sealed. */
export interface ChainWeather {
  /** Until when another instance's lease was seen live (epoch ms): follow first until then. */
  othersLeadUntilMs: number;
  /**
   * Typical time from writing a pending append to its receipt readable (ms), and how far one strays from it:
   * a writer first looks after both, so that most find their receipt at the first look (each look is a read).
   * Each wait teaches it a time between the commit (the block's timestamp) or its last fruitless look,
   * whichever was later, and the look that found it, so looking late does not teach it to look later.
   */
  receiptMs: number;
  receiptDevMs: number;
  /** Typical time from a commit to its records written (this instance's rounds). */
  writeMs: number;
  /** The head as this instance's last commit left it: a lone writer commits straight on it. */
  head?: ChainHead;
  /** When another writer was last seen on this chain (a lease, a pending append, a moved head), epoch ms. */
  othersSeenMs: number;
  /** The chain's pending shards as its head last said (they only grow). */
  pendingShards: number;
  /** The newest head index and cursor seen. */
  headIndex: number;
  cursor: string;
  /** Typical time of one request on this chain's items (ms): how long this instance's leases last follows it. */
  requestMs: number;
  /** Typical time of this instance's rounds on this chain, from the read of the pending appends to the commit's answer. */
  roundMs: number;
}

/** A writer that has seen no other on a chain for this long commits straight on the head it remembers. */
export const ALONE_AFTER_MS = 2_000;

/** One unit a leader commits: a caller's drafts in one pending append (its own, or another instance's). */
export interface Unit {
  drafts: BlockDraft[];
  ref: PendingRef;
  /** The leader's own unit written with the commit as records (too large for a pending append, or many blocks: see INLINE_FROM_BLOCKS). */
  inline?: boolean;
}

/**
 * A leader's own drafts of this many blocks or more that fit one transaction with their records (a batch of
 * up to 99 events) are committed with their records, as the leader's own too large for a pending append are,
 * rather than written as a pending append first and as records after the commit: the same write units (a
 * transaction's write counts twice, and the pending body is not written), one request instead of the pending
 * append and a BatchWriteItem per 25 records. Smaller units stay pending: their commit stays one conditional
 * update of the head, not a transaction, and writes that few records in one request after it.
 */
export const INLINE_FROM_BLOCKS = 16;

/** A pending append is one item (400 KB at most). */
export const MAX_PENDING_BYTES = 350_000;
/** Bytes of drafts one round holds (in the leader's memory, then its record writes). */
export const MAX_ROUND_BYTES = 4_000_000;
/**
 * When a leader doubles a chain's pending shards: it found PENDING_PER_SHARD or more waiting per shard, written
 * at GROW_RATE_PER_SHARD a second per shard or faster (a quarter of the 1,000 write units a second one
 * partition takes, an append of up to 1 KB one unit: room for the burst while the doubling takes effect), or
 * twice as many however fast (a backlog). Each shard costs a seal per round, and a chain with one shard has
 * its waiting writers read the segments instead (see findSealed): spreading a chain whose rounds are slow,
 * not busy, would only add writes.
 */
export const PENDING_PER_SHARD = 8;
export const GROW_RATE_PER_SHARD = 250;
/** Rounds of this many blocks or more have their records written while the next round is read (see lead). */
export const OVERLAP_FROM_EVENTS = 16;
/** Seals (or, on a chain with one pending shard, segments) a waiting writer's look reads. */
export const RECEIPTS_READ = 4;
/** Segments a look reads oldest first, once the writer knows its append was sealed (small ones: half a read unit). */
export const SWEEP_READ = 8;
/** Pending appends read per round and shard. */
export const PENDING_READ_LIMIT = 100;
/**
 * Pending appends and large rounds' metadata expire (TTL) after this long: a week. A round whose records were
 * not written (its leader died, or its writes were refused) is finished from them by the chain's next leader,
 * so they must outlive the quiet spells of a chain; a week of them costs about $0.05 per million events stored.
 */
export const PENDING_TTL_SECONDS = 7 * 24 * 3600;

/** The key of a pending append not written (none, or one whose put certainly changed nothing). */
export const NOTHING_WRITTEN: PendingRef = Object.freeze({ shard: 0, sk: '' });

/** The longest a writer waits before a look for its receipt (a free lease is noticed within it). */
export const MAX_FIRST_LOOK_MS = 200;
/** Above every pending append's key: a leader reads them all (and seals those old enough). */
export const NO_LATER_KEY = pendingSk(10 ** 13 - 1, 'ffffffffffff');
/** A round's metadata goes on the head when it packs into this many bytes (the head stays under 1 KB); else into a round item. */
export const INLINE_BYTES = 520;

/**
 * Kept back from the invocation's deadline (shared/deadline.ts): an append that has not landed by then is
 * withdrawn with time left to do it, so a caller told 503 never has its event land later.
 */
export const WITHDRAW_RESERVE_MS = 1_000;
/** A leader starts no new round with less time left than this (a round is a few requests). */
export const ROUND_RESERVE_MS = 1_000;
/**
 * A lease lasts at least leaseMs, and LEASE_REQUESTS times a request's typical time (the few requests of a
 * round, with room to spare) up to MAX_LEASE_MS. When requests are slow (an overloaded store, a starved CPU),
 * a lease as short as on a quick day would lapse while its holder works: the next holder would redo the
 * unfinished round, and lapse the same way (measured: 64 clients on a loaded machine committed 8 rounds in
 * 20 s, with 30 rounds redone). The cap bounds how long a crashed holder holds others up.
 */
export const LEASE_REQUESTS = 20;
export const MAX_LEASE_MS = 5_000;
/** After a fruitless look, a follower looks again after a quarter of a round, or a quarter of its wait so far, at most this. */
export const MAX_LOOK_INTERVAL_MS = 1_000;
export const BACKOFF_BASE_MS = 5;
export const BACKOFF_CAP_MS = 250;

/** The longest a leader leaves fresh appends for the next round (see settleFor). */
export const MAX_SETTLE_MS = 100;
/** A typical time, moved a fifth of the way towards a new sample (the weather's moving averages). */
export const typical = (average: number, sample: number) => 0.8 * average + 0.2 * sample;

/** The reason a refused pending append's refusal gives, and the error its writer answers with. */
export const PROOF_SUPERSEDED = 'proof-superseded';
export const CLAIM_LOST = 'idempotency-claim-lost';

/** Where a waiting writer's next look for its receipt starts (blocks after `from`), and whether it goes oldest first. */
export interface ReceiptLook {
  from: number;
  sweep: boolean;
  /**
   * Its receipts are its shard's seals: its writer knew the chain spread over several shards before writing it,
   * so every round that may seal it writes them (shards only grow, and a round commits on the newest head).
   * Otherwise the segments (a round on a chain of one shard writes no seals).
   */
  seals: boolean;
  /** The last look was a sweep that did not reach the newest segment. */
  more?: boolean;
  /** The last look read the newest few, and rounds between `from` and them may hold the append. */
  gap?: boolean;
}

export const refKey = (ref: PendingRef) => `${ref.shard}|${ref.sk}`;
