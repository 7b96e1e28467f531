/**
 * Appending keeps every chain linear, and combines appends into few commits, within one process and
 * across instances (Lambda runs one request per instance, so requests never meet in a process).
 * docs/appending.md tells the whole protocol and why; in short:
 *
 * - Within a process: one queue per chain; whatever waits while a commit is in flight goes together.
 * - A writer that finds the chain's lease free takes it and *leads*: it puts its own drafts as a pending
 *   append just above the chain's cursor, reads the pending appends others wrote (above the cursor, old
 *   enough to have landed), builds the blocks on the head and commits them with one conditional write of
 *   the head (their metadata on it; their bodies stay in the pending appends), moving the cursor past
 *   every append it sealed. Then it writes the blocks' records and their metadata segment, and gives the
 *   lease back saying so. It may go on for more rounds while appends wait (a bounded time).
 * - A writer that finds the lease taken *follows*: it writes a pending append and reads the chain's new
 *   segments until one names it (written only after the records: its block is readable when it answers).
 * - Sealed exactly once: a leader seals only appends above the cursor and its commit, conditional on the
 *   cursor it read, moves the cursor past them. An append that landed below the cursor after the leader
 *   read (a slow write) was skipped: its writer sees that on the head and writes it again. At its deadline
 *   a follower moves the cursor past its own append (withdraws it), so it cannot land after a 503.
 * - A lone writer (the last commit it knows of was its own) commits straight on the head it remembers:
 *   one transaction with its blocks' records.
 * - A leader that died between its commit and its records leaves its blocks' metadata on the head and its
 *   lease to expire: the next holder writes the records from the pending appends first.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { remainingMs, withGrace } from '../deadline.ts';
import { ChainContendedError, ChainNotFoundError, DeadlineExceededError, DependencyUnavailableError, OutcomeUnknownError } from '../errors.ts';
import {
  type BlockMeta,
  completedNodeCount,
  type MetaRun,
  nextPendingSk,
  packedSize,
  type PendingRef,
  pendingSk,
  pendingSkMs,
  type SealEntry,
  splitRun,
} from './block-meta.ts';
import type { CommitResult, LedgerRepository, PendingAppend, ProofRecord, Recent, RoundCommit } from './repository.ts';
import {
  AtomicLimitError,
  type BlockDraft,
  buildBlocks,
  draftBytes,
  MAX_ATOMIC_BLOCKS,
  MAX_BATCH_BYTES,
  MAX_TRANSACTION_ITEMS,
  transactionItems,
} from './blocks.ts';
import { ensureTree, extendTree } from './tree.ts';

export * from './blocks.ts';
import type { Block, ChainHead } from './types.ts';

/** Refusal of blocks whose Idempotency-Key hold was taken over (their request outlived its hold). */
export class IdempotencyClaimLostError extends Error {
  constructor() {
    super('the hold on this Idempotency-Key lapsed before the append could land');
  }
}

/** The append sealed at a key is not the drafts this writer has: another writer's, at a key it took first. */
class ForeignAppendError extends Error {
  constructor(chainName: string) {
    super(`the metadata of an append to '${chainName}' does not match its drafts`);
  }
}

/** Rejection of an anchor whose Sub-Chain was already anchored at that head or later. */
export class ProofSupersededError extends Error {
  constructor(readonly subChain: string) {
    super(`Sub-Chain '${subChain}' was already anchored at this head`);
    this.name = 'ProofSupersededError';
  }
}

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

/** One caller's blocks: committed together, never split across two commits. */
interface Pending {
  drafts: BlockDraft[];
  bytes: number;
  resolve(blocks: Block[]): void;
  reject(error: unknown): void;
}

interface ChainQueue {
  pending: Pending[];
  running: boolean;
}

/** What a chain looked like to this instance lately: whether others lead it, how fast appends get sealed. */
interface ChainWeather {
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
const ALONE_AFTER_MS = 2_000;

/** One unit a leader commits: a caller's drafts in one pending append (its own, or another instance's). */
interface Unit {
  drafts: BlockDraft[];
  ref: PendingRef;
  /** The leader's own unit written with the commit as records (too large for a pending append). */
  inline?: boolean;
}

/** A pending append is one item (400 KB at most). */
const MAX_PENDING_BYTES = 350_000;
/** Bytes of drafts one round holds (in the leader's memory, then its record writes). */
const MAX_ROUND_BYTES = 4_000_000;
/**
 * When a leader doubles a chain's pending shards: it found PENDING_PER_SHARD or more waiting per shard, written
 * at GROW_RATE_PER_SHARD a second per shard or faster (a quarter of the 1,000 write units a second one
 * partition takes, an append of up to 1 KB one unit: room for the burst while the doubling takes effect), or
 * twice as many however fast (a backlog). Each shard costs a seal per round, and a chain with one shard has
 * its waiting writers read the segments instead (see findSealed): spreading a chain whose rounds are slow,
 * not busy, would only add writes.
 */
const PENDING_PER_SHARD = 8;
const GROW_RATE_PER_SHARD = 250;
/** Rounds of this many blocks or more have their records written while the next round is read (see lead). */
const OVERLAP_FROM_EVENTS = 16;
/** Seals (or, on a chain with one pending shard, segments) a waiting writer's look reads. */
const RECEIPTS_READ = 4;
/** Segments a look reads oldest first, once the writer knows its append was sealed (small ones: half a read unit). */
const SWEEP_READ = 8;
/** Pending appends read per round and shard. */
const PENDING_READ_LIMIT = 100;
/**
 * Pending appends and large rounds' metadata expire (TTL) after this long: a week. A round whose records were
 * not written (its leader died, or its writes were refused) is finished from them by the chain's next leader,
 * so they must outlive the quiet spells of a chain; a week of them costs about $0.05 per million events stored.
 */
const PENDING_TTL_SECONDS = 7 * 24 * 3600;

/** The key of a pending append not written (none, or one whose put certainly changed nothing). */
const NOTHING_WRITTEN: PendingRef = Object.freeze({ shard: 0, sk: '' });

/** The longest a writer waits before a look for its receipt (a free lease is noticed within it). */
const MAX_FIRST_LOOK_MS = 200;
/** Above every pending append's key: a leader reads them all (and seals those old enough). */
const NO_LATER_KEY = pendingSk(10 ** 13 - 1, 'ffffffffffff');
/** A round's metadata goes on the head when it packs into this many bytes (the head stays under 1 KB); else into a round item. */
const INLINE_BYTES = 520;

/**
 * Kept back from the invocation's deadline (shared/deadline.ts): an append that has not landed by then is
 * withdrawn with time left to do it, so a caller told 503 never has its event land later.
 */
const WITHDRAW_RESERVE_MS = 1_000;
/** A leader starts no new round with less time left than this (a round is a few requests). */
const ROUND_RESERVE_MS = 1_000;
/**
 * A lease lasts at least leaseMs, and LEASE_REQUESTS times a request's typical time (the few requests of a
 * round, with room to spare) up to MAX_LEASE_MS. When requests are slow (an overloaded store, a starved CPU),
 * a lease as short as on a quick day would lapse while its holder works: the next holder would redo the
 * unfinished round, and lapse the same way (measured: 64 clients on a loaded machine committed 8 rounds in
 * 20 s, with 30 rounds redone). The cap bounds how long a crashed holder holds others up.
 */
const LEASE_REQUESTS = 20;
const MAX_LEASE_MS = 5_000;
/** After a fruitless look, a follower looks again after a quarter of a round, or a quarter of its wait so far, at most this. */
const MAX_LOOK_INTERVAL_MS = 1_000;
const BACKOFF_BASE_MS = 5;
const BACKOFF_CAP_MS = 250;

/** The longest a leader leaves fresh appends for the next round (see settleFor). */
const MAX_SETTLE_MS = 100;
/** A typical time, moved a fifth of the way towards a new sample (the weather's moving averages). */
const typical = (average: number, sample: number) => 0.8 * average + 0.2 * sample;

const defaultNow = () => Date.now() / 1000;
const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The reason a refused pending append's refusal gives, and the error its writer answers with. */
const PROOF_SUPERSEDED = 'proof-superseded';
const CLAIM_LOST = 'idempotency-claim-lost';

/** Where a waiting writer's next look for its receipt starts (blocks after `from`), and whether it goes oldest first. */
interface ReceiptLook {
  from: number;
  sweep: boolean;
  /** The last look was a sweep that did not reach the newest segment. */
  more?: boolean;
  /** The last look read the newest few, and rounds between `from` and them may hold the append. */
  gap?: boolean;
}

const refKey = (ref: PendingRef) => `${ref.shard}|${ref.sk}`;

/**
 * Whether a round on the head has blocks without records (their bodies only in pending appends, which
 * expire): a round its leader did not finish. Its segment alone unwritten puts nothing at risk (the head
 * holds its metadata until the next commit, which writes the segment first).
 */
export function recordsUnwritten(head: ChainHead): boolean {
  return !head.recentFlushed && (head.materialized ?? head.headIndex) < head.headIndex;
}

export class ChainAppender {
  /** Names this instance in leases. */
  readonly writerId = randomUUID();
  readonly counters: AppenderCounters = {
    blocksAppended: 0,
    eventsAppended: 0,
    commits: 0,
    conflicts: 0,
    followed: 0,
    leaseTakes: 0,
    pendingReads: 0,
    roundWrites: 0,
    rewrites: 0,
    recoveries: 0,
  };
  private readonly queues = new Map<string, ChainQueue>();
  private readonly weather = new Map<string, ChainWeather>();
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly shards: number;
  private readonly leaseMs: number;
  private readonly maxLeadMs: number;
  private readonly waitMs: number;
  private readonly settleMs: number;
  private readonly gatherSiblings: number;

  constructor(
    private readonly repository: LedgerRepository,
    private readonly options: AppenderOptions,
  ) {
    this.now = options.now ?? defaultNow;
    this.sleep = options.sleep ?? defaultSleep;
    this.random = options.random ?? Math.random;
    this.shards = options.pendingShards ?? 1;
    this.leaseMs = options.leaseMs ?? 1_000;
    this.maxLeadMs = options.maxLeadMs ?? 0;
    this.waitMs = options.waitMs ?? 10_000;
    this.settleMs = options.settleMs ?? 10;
    this.gatherSiblings = options.gatherSiblings ?? 2;
  }

  /** Appends one block to a chain; resolves with the committed block. */
  async append(chainName: string, draft: BlockDraft): Promise<Block> {
    const [block] = await this.appendAll(chainName, [draft]);
    return block!;
  }

  /**
   * Appends consecutive blocks to a chain in one commit: all of them land, or none. Other callers'
   * blocks may share the commit, but never come between these. Resolves in order.
   */
  appendAll(chainName: string, drafts: BlockDraft[]): Promise<Block[]> {
    const items = transactionItems(drafts);
    const bytes = drafts.reduce((n, d) => n + draftBytes(d), 0);
    if (drafts.length === 0) return Promise.resolve([]);
    if (items + 1 > MAX_TRANSACTION_ITEMS) {
      return Promise.reject(
        new AtomicLimitError(
          `At most ${MAX_ATOMIC_BLOCKS} blocks commit atomically: a DynamoDB transaction holds ${MAX_TRANSACTION_ITEMS} items, one per block and one for the chain head`,
        ),
      );
    }
    if (bytes > MAX_BATCH_BYTES) {
      return Promise.reject(
        new AtomicLimitError(`The blocks take about ${bytes} bytes; at most ${MAX_BATCH_BYTES} bytes commit atomically (move large details off chain)`),
      );
    }
    let queue = this.queues.get(chainName);
    if (!queue) {
      queue = { pending: [], running: false };
      this.queues.set(chainName, queue);
    }
    const target = queue;
    const promise = new Promise<Block[]>((resolve, reject) => target.pending.push({ drafts, bytes, resolve, reject }));
    if (!queue.running) void this.drain(chainName, queue);
    return promise;
  }

  private async drain(chainName: string, queue: ChainQueue): Promise<void> {
    queue.running = true;
    try {
      while (queue.pending.length > 0) {
        const batch = this.takeBatch(queue);
        try {
          const blocks = await this.commit(
            chainName,
            batch.flatMap((p) => p.drafts),
          );
          let next = 0;
          for (const p of batch) {
            p.resolve(blocks.slice(next, next + p.drafts.length));
            next += p.drafts.length;
          }
        } catch (error) {
          // Nothing may wait forever: a failure answers the whole batch.
          for (const p of batch) p.reject(error);
        }
      }
    } finally {
      queue.running = false;
      if (queue.pending.length === 0) this.queues.delete(chainName);
    }
  }

  /** Callers waiting in this process that go together: one unit, as long as it fits one commit. */
  private takeBatch(queue: ChainQueue): Pending[] {
    const batch: Pending[] = [];
    let items = 1; // the head update
    let bytes = 0;
    let blocks = 0;
    const anchored = new Set<string>();
    while (queue.pending.length > 0) {
      const next = queue.pending[0]!;
      // The first caller always goes (appendAll checked it fits); others join while everything fits, and
      // while they anchor no Sub-Chain the batch already anchors (see anchorsAgain).
      if (
        batch.length > 0 &&
        (blocks + next.drafts.length > Math.min(this.options.batchMax, MAX_ATOMIC_BLOCKS) ||
          items + transactionItems(next.drafts) > MAX_TRANSACTION_ITEMS ||
          bytes + next.bytes > MAX_BATCH_BYTES ||
          anchorsAgain(anchored, next.drafts))
      ) {
        break;
      }
      for (const chain of anchoredChains(next.drafts)) anchored.add(chain);
      batch.push(queue.pending.shift()!);
      items += transactionItems(next.drafts);
      bytes += next.bytes;
      blocks += next.drafts.length;
    }
    return batch;
  }

  private nowMs(): number {
    return this.now() * 1000;
  }

  /** How long an append may wait for a lease or a receipt: waitMs, never past the invocation's deadline less the time to withdraw. */
  private waitDeadline(): number {
    return this.nowMs() + Math.max(0, Math.min(this.waitMs, remainingMs() - WITHDRAW_RESERVE_MS));
  }

  /** How long a lease this instance takes (or extends with a commit) lasts: see LEASE_REQUESTS. */
  private leaseFor(chainName: string): number {
    return Math.max(this.leaseMs, Math.min(MAX_LEASE_MS, LEASE_REQUESTS * this.weatherOf(chainName).requestMs));
  }

  /**
   * How old a pending append must be, when a leader's read is sent, to be sealed: `settleMs`, or twice the
   * typical request time if that is more (at most MAX_SETTLE_MS). An append's key is its writer's clock as
   * it sends the write, so the write may land up to a request's time later; a leader that seals past it
   * before then leaves it below the cursor, and its writer must find that out and write it again (hundreds
   * of milliseconds lost, and a write unit).
   */
  private settleFor(chainName: string): number {
    return Math.max(this.settleMs, Math.min(MAX_SETTLE_MS, 2 * this.weatherOf(chainName).requestMs));
  }

  /** Runs one request on the chain's items, noting how long it took (the typical request time leases follow). */
  private async timed<T>(chainName: string, request: () => Promise<T>): Promise<T> {
    const started = this.nowMs();
    const result = await request();
    const w = this.weatherOf(chainName);
    w.requestMs = typical(w.requestMs, Math.max(0, this.nowMs() - started));
    return result;
  }

  private weatherOf(chainName: string): ChainWeather {
    let w = this.weather.get(chainName);
    if (!w) {
      w = {
        othersLeadUntilMs: 0,
        receiptMs: 30,
        receiptDevMs: 10,
        writeMs: 20,
        othersSeenMs: 0,
        pendingShards: 1,
        headIndex: -1,
        cursor: '',
        requestMs: 10,
        roundMs: 20,
      };
      this.weather.set(chainName, w);
      if (this.weather.size > 10_000) this.weather.delete(this.weather.keys().next().value!);
    }
    return w;
  }

  /** Notes what a head read says about the chain. */
  private saw(chainName: string, head: ChainHead): void {
    const w = this.weatherOf(chainName);
    if (head.headIndex > w.headIndex) w.headIndex = head.headIndex;
    if ((head.cursor ?? '') > w.cursor) w.cursor = head.cursor ?? '';
    w.pendingShards = Math.max(w.pendingShards, head.pendingShards ?? 1);
    if (head.turnHolder && head.turnHolder !== this.writerId && (head.turnExpiresMs ?? 0) > this.nowMs()) {
      w.othersLeadUntilMs = head.turnExpiresMs!;
      w.othersSeenMs = this.nowMs();
    }
  }

  /** Commits one unit of drafts (this instance's batch) and answers its blocks: directly, leading, or following. */
  private async commit(chainName: string, drafts: BlockDraft[]): Promise<Block[]> {
    const weather = this.weatherOf(chainName);
    const fitsPending = drafts.reduce((n, d) => n + draftBytes(d), 0) <= MAX_PENDING_BYTES;
    const deadline = this.waitDeadline();
    // A lone writer (this instance made the last commit it knows of, and saw nobody else lately) commits
    // straight on the head it remembers: one request. The commit's conditions (head and cursor unmoved,
    // no live lease) make it safe; if another instance got there first, we go the long way.
    if (weather.head && this.nowMs() - weather.othersSeenMs > ALONE_AFTER_MS) {
      const direct = await this.commitDirect(chainName, weather.head, drafts);
      if (direct) return direct;
    }
    // On a chain others wrote to lately, a look first, unless one a moment ago saw a live lease: a lease
    // request that a live lease refuses still costs a write unit on the head's partition (the busy chain's
    // limit), a look half a read unit. A look a moment old only costs time: a lease it shows live that was
    // given back is found free at the first look of the wait; one it shows free that is held is refused.
    if (fitsPending && this.nowMs() >= weather.othersLeadUntilMs && this.nowMs() - weather.othersSeenMs <= ALONE_AFTER_MS) {
      const look = await this.timed(chainName, () => this.repository.lookHead(chainName));
      if (look) this.saw(chainName, look);
    }
    // Lead at once unless another instance was seen leading this chain a moment ago.
    if (!fitsPending || this.nowMs() >= weather.othersLeadUntilMs) {
      for (let attempt = 1; ; attempt += 1) {
        const lease = await this.takeLease(chainName);
        if (!lease.head) throw new ChainNotFoundError(chainName);
        if (lease.acquired) {
          const own = await this.lead(chainName, lease.head, drafts);
          if (own.blocks) return own.blocks;
          // Our own append is pending and another leader took over: wait for it as a follower does.
          return this.follow(chainName, drafts, deadline, own.ref);
        }
        this.saw(chainName, lease.head);
        if (fitsPending) break;
        // Too large to hand over as a pending append: wait for the lease.
        if (this.nowMs() >= deadline) throw new ChainContendedError(chainName, attempt);
        await this.sleep(Math.max(1, Math.min(lease.untilMs - this.nowMs(), 20 + this.random() * 20)));
      }
    }
    return this.follow(chainName, drafts, deadline);
  }

  /** The blocks `drafts` become on `head`, all with one timestamp (they commit together), and the tree after them. */
  private build(chainName: string, head: ChainHead, units: readonly Unit[]) {
    const timestamp = Math.round(this.now() * 1000) / 1000;
    const drafts = units.flatMap((u) => u.drafts);
    const blocks = buildBlocks(chainName, head, drafts, () => timestamp);
    const tree = extendTree(
      head.frontier!,
      head.headIndex + 1,
      blocks.map((b) => b.hash),
    );
    const metas: BlockMeta[] = [];
    let at = 0;
    for (const unit of units) {
      unit.drafts.forEach((_, position) => {
        const block = blocks[at]!;
        metas.push({
          index: block.index,
          hash: block.hash,
          timestamp,
          nodes: tree.treeNodes[at]!,
          ref: unit.inline ? null : unit.ref,
          position: unit.inline ? 0 : position,
        });
        at += 1;
      });
    }
    const completions = drafts.flatMap((d, blockPosition) =>
      d.completes ? [{ claim: { id: d.completes.id, token: d.completes.token }, blockPosition, count: d.completes.count }] : [],
    );
    const proofRecords: ProofRecord[] = [];
    drafts.forEach((draft, position) => {
      if (draft.proof) {
        proofRecords.push({
          blockPosition: position,
          subChain: draft.proof.subChain,
          headIndex: draft.proof.headIndex,
          proofId: `${draft.proof.subChain}_${blocks[position]!.index}`,
        });
      }
    });
    return { blocks, frontier: tree.frontier, metas, completions, proofRecords };
  }

  /** Counts a landed commit, and answers the head it left. */
  private landed(head: ChainHead, blocks: Block[], frontier: string[], extra: Partial<ChainHead>, proofs = 0): ChainHead {
    const last = blocks[blocks.length - 1]!;
    const events = blocks.reduce((n, b) => n + b.events.length, 0);
    this.counters.commits += 1;
    this.counters.blocksAppended += blocks.length;
    this.counters.eventsAppended += events;
    return {
      ...head,
      headIndex: last.index,
      headHash: last.hash,
      frontier,
      eventCount: head.eventCount + events,
      proofCount: head.proofCount + proofs,
      ...extra,
    };
  }

  /**
   * Commits a round. A commit whose outcome is unknown (a timeout may still have committed) is settled by
   * reading the head: landed is `committed`; otherwise `failed`, with the head as it was read.
   */
  private async attempt(commit: RoundCommit): Promise<CommitResult | { status: 'failed'; error: unknown; head: ChainHead | undefined }> {
    try {
      const result = await this.repository.commitRound(commit);
      // A leader's round commit is one conditional write: refused, it may still be ours. An earlier attempt of
      // this very write may have landed with its answer lost, the AWS SDK sending it again, and its condition
      // then refusing it (the head has moved: by our commit, and maybe by others' since). Taken as refused, the
      // blocks were built and committed a second time (found by the deterministic simulation). A direct
      // commit is a transaction with a ClientRequestToken: a second attempt answers as the first did.
      if (result.status === 'head-moved' && !('direct' in commit.mode) && (await this.isOwnCommit(commit, result.head))) return { status: 'committed' };
      return result;
    } catch (error) {
      // Settled even when the error was the invocation's deadline cutting the commit off: a short grace.
      return withGrace(500, async () => {
        const now = await this.repository.getHead(commit.chainName);
        return (await this.isOwnCommit(commit, now)) ? { status: 'committed' as const } : { status: 'failed' as const, error, head: now };
      }).catch(() => ({ status: 'failed' as const, error, head: undefined }));
    }
  }

  /** Whether the chain holds this commit's blocks: its head ends with them, or, moved on, holds its first at its index. */
  private async isOwnCommit(commit: RoundCommit, head: ChainHead | undefined): Promise<boolean> {
    const first = commit.blocks[0]!;
    const last = commit.blocks[commit.blocks.length - 1]!;
    if (!head || head.headIndex < last.index) return false;
    if (head.headHash === last.hash) return true;
    const { blocks } = await this.repository.readMeta(commit.chainName, first.index, first.index, true);
    return blocks[0]?.hash === first.hash;
  }

  /** The head's unflushed metadata as a run (from a round item when it is not on the head). */
  private async recentRun(head: ChainHead): Promise<MetaRun | undefined> {
    const recent = head.recent;
    if (!recent) return undefined;
    if ('run' in recent) return recent.run;
    // A round item gone (TTL) after its segment was written: the segments have the same metadata.
    const run =
      (await this.repository.getRound(head.chainName, recent.round.id)) ?? (await this.segmentsOf(head.chainName, recent.round.first, recent.round.last));
    if (!run) throw new Error(`the metadata of blocks ${recent.round.first}…${recent.round.last} of '${head.chainName}' is missing`);
    return run;
  }

  /** Where a round's metadata goes: on the head if it packs small, else into a round item written now. */
  private async placeRecent(chainName: string, run: MetaRun): Promise<Exclude<Recent, null>> {
    if (packedSize(run.blocks) <= INLINE_BYTES) return { run };
    const id = randomUUID();
    this.counters.roundWrites += 1;
    await this.repository.putRound(chainName, id, run, Math.ceil(this.now()) + PENDING_TTL_SECONDS);
    return { round: { id, first: run.blocks[0]!.index, last: run.blocks.at(-1)!.index } };
  }

  /**
   * Makes the head's newest blocks safe to replace: writes their segment, and first their records if their
   * leader died before it could (its lease expired with them unwritten). Answers the head as if flushed.
   *
   * A leader may have written them and lost only the write that says so (its finish refused or timed out):
   * then their pending appends and round item, kept a week, may have expired since. Records already there
   * need no drafts, and a round item gone is read back from its segments: a chain is never left unwritable
   * by a round that was written whole. Only metadata or bodies that are nowhere are an error (lost data).
   */
  private async flushRecent(head: ChainHead): Promise<ChainHead> {
    if (head.recentFlushed) return { ...head, recent: null, recentFlushed: false };
    const run = await this.recentRun(head);
    if (!run || run.blocks.length === 0) return { ...head, recent: null };
    const materialized = head.materialized ?? head.headIndex;
    const unwritten = run.blocks.filter((b) => b.index > materialized);
    const blocks: Block[] = [];
    if (unwritten.length > 0) {
      this.counters.recoveries += 1;
      const written = await this.repository.getRecords(head.chainName, unwritten, true);
      const missing = unwritten.filter((b) => !written.has(b.index));
      const refs = missing.flatMap((b) => (b.ref ? [b.ref] : []));
      const drafts = refs.length > 0 ? await this.repository.getPendings(head.chainName, refs) : new Map<string, string>();
      let prev = run.prev;
      for (const meta of run.blocks) {
        if (meta.index > materialized && !written.has(meta.index)) {
          const json = meta.ref ? drafts.get(refKey(meta.ref)) : undefined;
          const draft = json === undefined ? undefined : (JSON.parse(json) as BlockDraft[])[meta.position];
          if (!draft) throw new Error(`the drafts of block ${meta.index} of '${head.chainName}' are missing: its record cannot be written`);
          const [block] = buildBlocks(head.chainName, { headIndex: meta.index - 1, headHash: prev }, [draft], () => meta.timestamp);
          if (block!.hash !== meta.hash) throw new Error(`block ${meta.index} of '${head.chainName}' does not rebuild to its hash`);
          blocks.push(block!);
        }
        prev = meta.hash;
      }
    }
    await this.writeRound(head.chainName, blocks, run, head.pendingShards ?? 1);
    return { ...head, recent: null, materialized: head.headIndex };
  }

  /**
   * The metadata of blocks first…last from their segments (strongly consistent), if they are all there. Up to
   * one segment per block is read (a segment holds one at least); the read is priced by its bytes, not its limit.
   */
  private async segmentsOf(chainName: string, first: number, last: number): Promise<MetaRun | undefined> {
    const runs = await this.repository.readSegments(chainName, first, last - first + 1, true);
    const blocks = runs.flatMap((r) => r.blocks).filter((b) => b.index >= first && b.index <= last);
    const start = runs.find((r) => r.blocks.some((b) => b.index === first));
    if (!start || blocks.length !== last - first + 1) return undefined;
    const at = start.blocks.findIndex((b) => b.index === first);
    return { prev: at === 0 ? start.prev : start.blocks[at - 1]!.hash, blocks };
  }

  /**
   * A round's records, with what tells its writers their appends are sealed: the run's segment, and on a
   * chain spread over several pending shards, each shard's seal (its writers read that, not the segment all
   * would read). One wave of requests.
   */
  private async writeRound(chainName: string, records: Block[], run: MetaRun, shards: number): Promise<void> {
    const seals = shards >= 2 ? sealsOf(run) : undefined;
    this.counters.roundWrites += 1;
    await this.repository.writeRound(chainName, { records, segment: run, ...(seals && seals.size > 0 ? { seals } : {}) });
  }

  /** One commit of the drafts on a remembered head, without the lease; undefined when that head was stale. */
  private async commitDirect(chainName: string, remembered: ChainHead, drafts: BlockDraft[]): Promise<Block[] | undefined> {
    const weather = this.weatherOf(chainName);
    weather.head = undefined; // used once: whatever happens, the next commit learns the head anew unless this one lands
    if ((remembered.materialized ?? remembered.headIndex) < remembered.headIndex) return undefined; // a round to finish first: the long way
    const unit: Unit = { drafts, ref: NOTHING_WRITTEN, inline: true };
    const { blocks, frontier, metas, completions, proofRecords } = this.build(chainName, remembered, [unit]);
    // The newest blocks' metadata stays on the head while it packs small; else it goes to a segment in the same
    // transaction (metadata in a round item, a leader's, is written to its segment first).
    let base: ChainHead = remembered;
    let tail = remembered.recent && 'run' in remembered.recent && !remembered.recentFlushed ? remembered.recent.run : undefined;
    if (remembered.recent && !tail) {
      base = await this.flushRecent(remembered);
      tail = undefined;
    }
    const run: MetaRun = tail ? { prev: tail.prev, blocks: [...tail.blocks, ...metas] } : { prev: remembered.headHash, blocks: metas };
    const inline = packedSize(run.blocks) <= INLINE_BYTES;
    // Its records, the head and its segments in one transaction of at most 100 items; a larger one goes the
    // long way (a round writes its records after the commit), rather than being refused by DynamoDB.
    if (1 + transactionItems(drafts) + (inline ? 0 : splitRun(run).length) > MAX_TRANSACTION_ITEMS) return undefined;
    const recent: Recent = inline ? { run } : null;
    const last = blocks[blocks.length - 1]!.index;
    const result = await this.attempt({
      chainName,
      writerId: this.writerId,
      nowMs: this.nowMs(),
      expectedHeadIndex: remembered.headIndex,
      expectedCursor: remembered.cursor ?? '',
      mode: { direct: true },
      blocks,
      frontier,
      recent,
      cursor: remembered.cursor ?? '',
      materialized: last,
      ...(remembered.recordsFrom === undefined ? { recordsFrom: remembered.headIndex + 1 } : {}),
      records: blocks,
      ...(inline ? {} : { segment: run }),
      proofRecords,
      completions,
    });
    if (result.status === 'failed') return undefined; // did not land: the long way settles it
    if (result.status !== 'committed') {
      this.counters.conflicts += 1;
      weather.othersSeenMs = this.nowMs();
      if (result.status === 'head-moved' && result.head) this.saw(chainName, result.head);
      if (result.status === 'proof-stale') throw new ProofSupersededError(drafts[result.blockPosition]?.proof?.subChain ?? '');
      if (result.status === 'claim-lost') throw new IdempotencyClaimLostError();
      return undefined;
    }
    weather.head = this.landed(
      base,
      blocks,
      frontier,
      { recent, materialized: last, recordsFrom: remembered.recordsFrom ?? remembered.headIndex + 1 },
      proofRecords.length,
    );
    weather.headIndex = last;
    return blocks;
  }

  /** Writes the drafts as a pending append (above `cursor`, in one of `shards` shards), a fresh key on a collision. */
  private async putPending(
    chainName: string,
    drafts: BlockDraft[],
    ref: (attempt: number) => PendingRef,
    /** Told each key before it is written: a write that fails may still have landed there (an answer lost). */
    trying: (candidate: PendingRef) => void,
  ): Promise<PendingRef> {
    const json = JSON.stringify(drafts);
    for (let attempt = 0; ; attempt += 1) {
      const candidate = ref(attempt);
      trying(candidate);
      try {
        if (await this.repository.putPending(chainName, { ref: candidate, drafts: json }, Math.ceil(this.now()) + PENDING_TTL_SECONDS)) return candidate;
      } catch (error) {
        // A put that certainly changed nothing (DynamoDB unreachable, or refusing it) leaves nothing to settle.
        if (error instanceof DependencyUnavailableError && error.notApplied) trying(NOTHING_WRITTEN);
        throw error;
      }
      if (attempt >= 8) throw new Error(`no free key for a pending append of '${chainName}'`);
    }
  }

  /** A follower's pending append: a random key a little above the cursor it knows, in a random shard. */
  private followerRef(chainName: string): PendingRef {
    const weather = this.weatherOf(chainName);
    const ms = Math.max(Math.floor(this.nowMs()), pendingSkMs(weather.cursor) + 1);
    return { shard: Math.floor(this.random() * weather.pendingShards), sk: pendingSk(ms, BigInt(`0x${randomBytes(6).toString('hex')}`)) };
  }

  /** Hands the drafts to the chain's leader as a pending append (or waits for one already written) and answers its blocks. */
  private async follow(chainName: string, drafts: BlockDraft[], deadline: number, written?: PendingRef): Promise<Block[]> {
    const weather = this.weatherOf(chainName);
    weather.othersSeenMs = this.nowMs();
    const after = weather.headIndex;
    // `after`: no block up to it can be this append's (what a decision to write it again rests on);
    // `look`: where its writer's next look for its receipt starts, and how (moved on by looks that missed it).
    const state = { ref: written ?? NOTHING_WRITTEN, after, look: { from: after, sweep: false } };
    try {
      if (!written)
        await this.putPending(
          chainName,
          drafts,
          () => this.followerRef(chainName),
          (candidate) => (state.ref = candidate),
        );
      const writtenMs = this.nowMs();
      this.counters.followed += 1;
      return await this.awaitSeal(chainName, drafts, state, writtenMs, deadline);
    } catch (error) {
      const sealed = await this.settleFailed(chainName, drafts, state.ref, state.after, error);
      if (sealed) return sealed;
      throw error;
    }
  }

  /**
   * Before an append that failed is answered with an error, makes sure it will not land later: withdraws it
   * (moves the cursor past its key), within a grace past the deadline if the deadline is what failed. If the
   * cursor is past it already, it was sealed (then that is the answer: its blocks) or skipped (undefined: the
   * error stands). An append sealed at that key that is not ours (its blocks are not our drafts') says ours never
   * landed there: a write whose answer was lost is known by its key only, and that key may have been another
   * writer's, refused (a conditional put never replaces an item). When neither can be settled, DynamoDB failing
   * both until the deadline (and a grace past it), no promise can be made: OutcomeUnknownError (500), never the
   * 503 that says it did not land. Found by the deterministic simulation: a leader whose read failed answered 503
   * without withdrawing the append it had just written, and another leader sealed it.
   */
  private async settleFailed(chainName: string, drafts: BlockDraft[], ref: PendingRef, after: number, error: unknown): Promise<Block[] | undefined> {
    if (ref.sk === '') return undefined; // nothing was written
    const withdrawn = await this.settling(() => this.repository.withdraw(chainName, ref.sk)).catch(() => undefined);
    if (withdrawn === true) return undefined;
    if (withdrawn === undefined) throw new OutcomeUnknownError(chainName, { cause: error });
    const sealed = await this.settling(() => this.findSealed(chainName, ref, after)).catch((cause: unknown) => {
      throw new OutcomeUnknownError(chainName, { cause });
    });
    return sealed && this.matching(chainName, drafts, sealed);
  }

  /**
   * One step of settling a failed append, sent again (backing off from 50 ms to 1 s) while DynamoDB is
   * unavailable and the deadline leaves time: a DynamoDB stopped for a few seconds under a write whose answer
   * was lost then gets a definite answer (503, withdrawn) instead of a 500. Past the deadline, a grace of 500 ms.
   */
  private async settling<T>(step: () => Promise<T>): Promise<T> {
    for (let wait = 50; ; wait = Math.min(wait * 2, 1_000)) {
      try {
        return await withGrace(500, step);
      } catch (error) {
        if (!(error instanceof DependencyUnavailableError) || remainingMs() <= wait + 500) throw error;
        await this.sleep(wait);
      }
    }
  }

  /** The blocks a sealed append became, if they are these drafts' (else undefined: another writer's append at that key). */
  private matching(chainName: string, drafts: BlockDraft[], sealed: { metas: Omit<BlockMeta, 'nodes'>[]; prev: string }): Block[] | undefined {
    try {
      return this.fromMeta(chainName, drafts, sealed);
    } catch (error) {
      if (error instanceof ForeignAppendError) return undefined;
      throw error;
    }
  }

  /**
   * Where a pending append was sealed: its blocks' metadata (and the hash before the first). `receipt` (its
   * number of blocks): from the newest few seals of its shard, or on a chain with one pending shard the newest
   * segments (a waiting writer's cheap look); undefined if not all of them are there. Otherwise the complete
   * answer: the head's newest blocks (`head`, or the head read now; `headLooked`: the caller looked there),
   * then every segment after `after`.
   * Read in that order, an append not found was sealed by no round committed before that head (a round's
   * segment is written before the next commit takes its metadata off the head): what writing it again,
   * or answering an error, rests on.
   */
  private async findSealed(
    chainName: string,
    ref: PendingRef,
    after: number,
    how: { receipt: number; look: ReceiptLook; writtenMs: number } | { head?: ChainHead; headLooked?: boolean } = {},
  ): Promise<{ metas: Omit<BlockMeta, 'nodes'>[]; prev: string } | undefined> {
    const key = refKey(ref);
    const pick = (run: MetaRun) => pickRef(run, ref);
    if ('receipt' in how) {
      if (this.weatherOf(chainName).pendingShards >= 2) {
        const seals = await this.timed(chainName, () => this.repository.readSeals(chainName, ref.shard, after + 1, RECEIPTS_READ));
        for (const entries of seals) {
          const mine = entries.filter((e) => e.ref && refKey(e.ref) === key);
          if (mine.length > 0) return mine.length === how.receipt ? { metas: mine, prev: mine[0]!.prev } : undefined;
        }
        return undefined;
      }
      // One pending shard: the segments are the receipts (a seal would copy them), the newest few first: its
      // round is usually among them. But on a chain making many small rounds, more rounds than a look reads may
      // pass between its round and its writer's look. So when the oldest of the newest few was committed after
      // the append was written (its round may be older), or a look at the head has shown the cursor past it (it
      // is sealed, in a round up to that head), looks go through the segments after `from` oldest first, a few a
      // look (`sweep`). What looks learn moves only where the next starts (`look`), never whether the append is
      // written again: that rests on strong reads (below).
      const { look } = how;
      const runs = await this.timed(chainName, () =>
        look.sweep
          ? this.repository.readSegments(chainName, look.from + 1, SWEEP_READ, false)
          : this.repository.readNewestSegments(chainName, look.from + 1, RECEIPTS_READ),
      );
      look.more = look.sweep && runs.length === SWEEP_READ;
      look.gap = !look.sweep && runs.length === RECEIPTS_READ && runs[0]!.blocks[0]!.timestamp * 1000 > how.writtenMs;
      const parts = runs.flatMap((run) => pick(run) ?? []);
      const metas = parts.flatMap((part) => part.metas);
      if (metas.length === how.receipt) return { metas, prev: parts[0]!.prev };
      if (parts.length > 0) {
        // A batch cut over two segments, one of them outside what was read: from its first block, next time.
        look.from = Math.max(look.from, parts[0]!.metas[0]!.index - 1);
        look.sweep = true;
      } else if (runs.length > 0 && (look.sweep || runs.length < RECEIPTS_READ)) {
        // Every segment after `from` up to the last read is not its round: the next look starts after them.
        look.from = Math.max(look.from, runs.at(-1)!.blocks.at(-1)!.index);
      }
      if (look.gap) look.sweep = true;
      return undefined;
    }
    const head = how.head ?? (await this.repository.getHead(chainName));
    if (head && !how.headLooked) {
      const recent = await this.recentRun(head);
      const newest = recent ? pick(recent) : undefined;
      if (newest) return newest;
    }
    // A batch's blocks are consecutive, but a round's metadata is cut into segments under 4 KB: the
    // batch may go on in the next segment (and the next page). Its blocks are all there or none are.
    let found: { metas: BlockMeta[]; prev: string } | undefined;
    for (let from = after + 1; ; ) {
      const runs = await this.repository.readSegments(chainName, Math.max(0, from), 8, true);
      for (const run of runs) {
        const part = pick(run);
        if (!part) {
          if (found) return found;
          continue;
        }
        found = found ? { metas: [...found.metas, ...part.metas], prev: found.prev } : part;
        if (part.metas.at(-1)!.index < run.blocks.at(-1)!.index) return found;
      }
      if (runs.length < 8) return found;
      from = runs[runs.length - 1]!.blocks.at(-1)!.index + 1;
    }
  }

  /**
   * Waits until the pending append is sealed and its records written, looking as seldom as it can: first
   * after about the time appends have lately taken, then every quarter of it. Each look is one read: of the
   * head (it says where the newest blocks came from, whether their records are written, and who leads), or
   * on a chain spread over several pending shards, of this shard's seals (the head every so often besides).
   * Meanwhile it leads when nobody holds the lease (or its holder died before writing its records), and
   * writes the append again if a leader read past it before it landed.
   */
  private async awaitSeal(
    chainName: string,
    drafts: BlockDraft[],
    state: { ref: PendingRef; after: number; look: ReceiptLook },
    writtenMs: number,
    deadline: number,
  ): Promise<Block[]> {
    const weather = this.weatherOf(chainName);
    const expected = () => weather.receiptMs;
    const firstLook = () => Math.max(2, Math.min(weather.receiptMs + weather.receiptDevMs, MAX_FIRST_LOOK_MS));
    let delay = firstLook();
    let nextHeadCheck = writtenMs + Math.max(4 * expected(), 200);
    /** When the last look that did not find the receipt was sent. */
    let missedMs = writtenMs;
    let missedOnce = false;
    /** When a look at the head first found the cursor past this append. */
    let passedMs: number | undefined;
    /** Looks for the receipt that missed since, and whether that head showed its leader done. */
    let passedMisses = 0;
    let passedDone = false;
    const done = (sealed: { metas: Omit<BlockMeta, 'nodes'>[]; prev: string }) => {
      const committed = sealed.metas[0]!.timestamp * 1000;
      const found = this.nowMs();
      const ready = Math.max(1, (Math.min(Math.max(committed, missedMs), found) + found) / 2 - writtenMs);
      weather.receiptDevMs = typical(weather.receiptDevMs, Math.abs(ready - weather.receiptMs));
      weather.receiptMs = typical(weather.receiptMs, ready);
      return this.fromMeta(chainName, drafts, sealed);
    };
    // Looks thin out as the wait grows: a long wait is a slow or crowded chain, where every waiting writer
    // looking often would be most of its load (and push its rounds further out). None sleeps past the deadline.
    const after = (ms: number) => Math.min(Math.max(ms, (this.nowMs() - writtenMs) / 4, 5), MAX_LOOK_INTERVAL_MS, Math.max(1, deadline - this.nowMs()));
    for (;;) {
      await this.sleep(delay);
      delay = after(Math.max(expected() / 4, weather.receiptDevMs));
      if (this.nowMs() < nextHeadCheck && this.nowMs() < deadline) {
        const looked = this.nowMs();
        const receipt = await this.findSealed(chainName, state.ref, state.after, { receipt: drafts.length, look: state.look, writtenMs });
        if (receipt) return done(receipt);
        // A look that may have read past its round says nothing of when it became readable (what the first look's
        // time is learnt from): the next look goes through what it skipped, at once.
        if (state.look.gap) {
          delay = 0;
          continue;
        }
        missedMs = looked;
        // A sweep that has not reached the newest segment yet says nothing of whether it is there: it goes on.
        if (passedMs !== undefined && !state.look.more) {
          passedMisses += 1;
          // Its leader was done: no need to wait for the next look at the head.
          if (passedDone) {
            nextHeadCheck = this.nowMs();
            delay = 0;
          }
        }
        // On a chain with one pending shard (a quiet one), a receipt not there at the first look may mean that
        // nobody leads any more (the last leader gave the lease back before this append landed): the next
        // look is at the head.
        if (weather.pendingShards < 2 && !missedOnce) nextHeadCheck = this.nowMs();
        missedOnce = true;
        continue;
      }
      // The head only every few rounds (less often as the wait grows): on a busy chain every writer reading it
      // would make it the hot partition.
      nextHeadCheck = this.nowMs() + Math.max(4 * expected(), 200, Math.min((this.nowMs() - writtenMs) / 2, MAX_LOOK_INTERVAL_MS));
      if (this.nowMs() >= deadline) throw new ChainContendedError(chainName, this.options.maxAttempts);
      // A look reads the head eventually consistent (half the read units), so it may be a moment old. What
      // is done on it holds regardless: leading or finishing a round is a conditional write; a head, however
      // old, that has the cursor past the append has the rounds that sealed it on it or in the segments (a
      // round's segment is written before the next commit), and no later round can seal it. A chain created
      // a moment ago may not be there yet for a look: only a strong read says it is not.
      const head = (await this.timed(chainName, () => this.repository.lookHead(chainName))) ?? (await this.repository.getHead(chainName));
      if (!head) throw new ChainNotFoundError(chainName);
      this.saw(chainName, head);
      const leaseLive = !!head.turnHolder && (head.turnExpiresMs ?? 0) > this.nowMs();
      if ((head.cursor ?? '') < state.ref.sk) {
        // No round up to this head sealed it (however old the head): its receipt is further on.
        state.look = { from: Math.max(state.look.from, head.headIndex), sweep: false };
        // Not sealed yet: a round is on (ours comes after it: look again after about a round), or nobody
        // leads (the last leader gave the lease back before this append landed): lead.
        if (leaseLive) {
          delay = after(Math.min(expected(), MAX_FIRST_LOOK_MS));
          continue;
        }
        const lease = await this.takeLease(chainName);
        if (!lease.head) throw new ChainNotFoundError(chainName);
        if (lease.acquired) {
          await this.lead(chainName, lease.head, undefined, state.ref.sk);
          delay = 0;
        }
        continue;
      }
      // Past the cursor: sealed in the newest round (on the head), in an earlier one (a segment), refused, or skipped.
      // Most likely sealed: its receipt says so, at once if its leader is done, else once the records are
      // written (the head's metadata may be in a round item, a read more). Only if none comes, the whole
      // answer below.
      passedMs ??= this.nowMs();
      state.look.sweep = true;
      // Nobody leads and the head says every record is written: its leader is done, so its receipt is due now.
      // One more look for it, then (missed too) the whole answer. Otherwise it may still be on its way, for a while.
      passedDone = !leaseLive && (head.materialized ?? head.headIndex) >= head.headIndex;
      if (!(passedDone && passedMisses > 0) && this.nowMs() - passedMs < Math.max(4 * weather.writeMs, 200)) {
        delay = leaseLive ? after(Math.min(weather.writeMs / 2, 200)) : 0;
        continue;
      }
      const recent = await this.recentRun(head).catch(() => undefined);
      const newest = recent ? pickRef(recent, state.ref) : undefined;
      if (newest) {
        if ((head.materialized ?? head.headIndex) >= newest.metas.at(-1)!.index) return done(newest);
        if (leaseLive) {
          // Sealed; its records are being written.
          delay = after(Math.min(weather.writeMs / 2, 200));
          continue;
        }
        // Its leader died before writing its records: finish its round.
        const lease = await this.takeLease(chainName);
        if (lease.acquired) await this.lead(chainName, lease.head, undefined);
        delay = 0;
        continue;
      }
      // Every segment since it was written (not only the newest seals): writing it again must not duplicate it.
      const sealed = await this.findSealed(chainName, state.ref, state.after, { head, headLooked: recent !== undefined || !head.recent });
      if (sealed) return done(sealed);
      const refusal = await this.repository.getRefusal(chainName, state.ref);
      if (refusal) throw refusalError(chainName, drafts, refusal);
      // Landed below the cursor after a leader read past it: write it again, above the cursor now.
      this.counters.rewrites += 1;
      state.after = head.headIndex;
      state.look = { from: head.headIndex, sweep: false };
      await this.putPending(
        chainName,
        drafts,
        () => this.followerRef(chainName),
        (candidate) => (state.ref = candidate),
      );
      passedMs = undefined;
      passedMisses = 0;
      // Nobody leads (the head just read said so): read the head again at once, and lead.
      if (!leaseLive) nextHeadCheck = this.nowMs();
      delay = leaseLive ? firstLook() : 0;
    }
  }

  /** The blocks a sealed append became, rebuilt from its drafts and checked against their hashes. */
  private fromMeta(chainName: string, drafts: BlockDraft[], sealed: { metas: Omit<BlockMeta, 'nodes'>[]; prev: string }): Block[] {
    const first = sealed.metas[0]!;
    const times = sealed.metas.map((m) => m.timestamp);
    let i = 0;
    const blocks = buildBlocks(chainName, { headIndex: first.index - 1, headHash: sealed.prev }, drafts, () => times[Math.min(i++, times.length - 1)]!);
    blocks.forEach((block, k) => {
      if (block.hash !== sealed.metas[k]?.hash) throw new ForeignAppendError(chainName);
    });
    this.weatherOf(chainName).headIndex = Math.max(this.weatherOf(chainName).headIndex, blocks.at(-1)!.index);
    return blocks;
  }

  /** Asks for the chain's lease (a conditional update of its head), counting each one taken. */
  private async takeLease(chainName: string): ReturnType<LedgerRepository['acquireLease']> {
    const lease = await this.timed(chainName, () =>
      this.repository.acquireLease(chainName, this.writerId, this.nowMs(), this.nowMs() + this.leaseFor(chainName)),
    );
    if (lease.acquired) this.counters.leaseTakes += 1;
    if (lease.head) this.saw(chainName, lease.head);
    return lease;
  }

  /**
   * Holds the lease: commits `own` (if any) and the pending appends it finds, round after round, writes
   * their records and segments, then gives the lease back. Answers the blocks of `own`; or, when the
   * lease was lost with `own` still pending, where `own` waits (its writer follows it from there).
   * `mustSeal`: a pending append of this instance's that may be sealed however fresh it is.
   */
  private async lead(
    chainName: string,
    acquiredHead: ChainHead,
    own: BlockDraft[] | undefined,
    mustSeal?: string,
  ): Promise<{ blocks?: Block[]; ref?: PendingRef }> {
    const started = this.nowMs();
    let head: ChainHead = acquiredHead.frontier ? acquiredHead : await ensureTree(this.repository, acquiredHead);
    const ownFits = !own || own.reduce((n, d) => n + draftBytes(d), 0) <= MAX_PENDING_BYTES;
    let ownUnit: Unit | undefined = own ? { drafts: own, ref: NOTHING_WRITTEN, inline: !ownFits } : undefined;
    let ownBlocks: Block[] | undefined;
    let ownError: unknown;
    let attempt = 0;
    let leased = true;
    const refused = new Set<string>();
    // The last round's records, segment and seals, still being written while the next round is read and built.
    let inFlight: { done: Promise<void>; last: number; events: number } | undefined;
    /** Whether any round sealed another instance's append: if none, this instance may be alone on the chain. */
    let servedOthers = false;
    /** Whether the next read waits a round after the last round's records (a crowded chain: appends gather meanwhile). */
    let gather = false;
    const settle = async () => {
      if (!inFlight) return;
      const { done, last } = inFlight;
      inFlight = undefined;
      await done;
      head = { ...head, recent: null, materialized: last };
    };
    try {
      rounds: for (;;) {
        if (remainingMs() < ROUND_RESERVE_MS) {
          // No time for another round before the invocation's deadline: give the lease back (pending writers
          // lead or withdraw themselves); our own drafts, if not committed yet, are answered 503.
          if (ownUnit) ownError = new DeadlineExceededError(`a commit of '${chainName}'`);
          break;
        }
        // The head's newest blocks go to a segment first (their records too, if their leader died before),
        // unless they are ours and being written.
        if (!inFlight && (head.recent || (head.materialized ?? head.headIndex) < head.headIndex)) head = await this.flushRecent(head);
        // A small round's records are written before the next round's read: that wait is short, and the appends
        // that come meanwhile join the next round rather than wait for another (each round writes the head and
        // a segment whatever its size). A large one's are written while the next round is read and built.
        if (inFlight && inFlight.events < OVERLAP_FROM_EVENTS) await settle();
        // A crowded chain: after a small round that served several others (its records written just above), the
        // next round's appends gather for a round's time.
        if (gather) {
          gather = false;
          await this.sleep(Math.min(MAX_SETTLE_MS, this.weatherOf(chainName).roundMs));
        }
        const cursor = head.cursor ?? '';
        // Our own pending append below the cursor: another leader sealed it while our lease had lapsed, or read
        // past it before it landed. Sealed, it is answered from where it was sealed; only a skipped one is written
        // again. (Written again unseen, a sealed append landed twice: found by the deterministic simulation.)
        if (ownUnit && !ownUnit.inline && ownUnit.ref.sk !== '' && ownUnit.ref.sk <= cursor) {
          const sealed = await this.findSealed(chainName, ownUnit.ref, acquiredHead.headIndex, { head });
          const blocks = sealed && this.matching(chainName, ownUnit.drafts, sealed);
          if (blocks) {
            ownBlocks = blocks;
            ownUnit = undefined;
            if (this.nowMs() - started >= this.maxLeadMs) break;
            continue;
          }
        }
        // Our own drafts as a pending append just above the cursor (sealing it skips nobody), beside the read.
        // Its key is known before the write: a read that fails beside it must not leave it unknown (see settleFailed).
        const unit = ownUnit;
        const ownPut =
          unit && !unit.inline && (unit.ref.sk === '' || unit.ref.sk <= cursor)
            ? this.putPending(
                chainName,
                unit.drafts,
                (n) => ({ shard: 0, sk: nthAfter(cursor, n + 1) }),
                (candidate) => (unit.ref = candidate),
              )
            : undefined;
        const shards = head.pendingShards ?? 1;
        this.counters.pendingReads += 1;
        const readSentMs = this.nowMs();
        const [read, ownRef] = await Promise.all([this.repository.listPending(chainName, shards, cursor, NO_LATER_KEY, PENDING_READ_LIMIT), ownPut]);
        if (ownUnit && ownRef) ownUnit.ref = ownRef;
        // Appends written a moment ago wait (older keys may still be on their way); a writer that leads for its own may seal it.
        // "A moment ago" counts back from when the read was sent, not from its answer: the read may have been
        // served anywhere between the two, and an append keyed before it was served may land after.
        const settleMs = this.settleFor(chainName);
        const settledTo = pendingSk(Math.max(readSentMs - settleMs, pendingSkMs(mustSeal ?? '')), 'ffffffffffff');
        const others = read.appends.filter((p) => !ownUnit || refKey(p.ref) !== refKey(ownUnit.ref));
        const waiting = others.filter((p) => p.ref.sk <= settledTo);
        const fresh = others.filter((p) => p.ref.sk > settledTo);
        if (others.length > 0) this.weatherOf(chainName).othersSeenMs = this.nowMs();
        // Many waiting: spread the next ones over twice the partitions (recorded by this round's commit).
        const grown = shards * 2 <= this.shards && crowded(read.appends.length, others, shards) ? shards * 2 : undefined;
        const { units, cursorAfter } = this.plan(ownUnit, waiting, read.truncatedAt, cursor, refused);
        if (units.length === 0) {
          await settle();
          // Serving nobody else, we may be alone: remember the head for a direct commit next time.
          if (own && ownBlocks && !servedOthers && fresh.length === 0) this.weatherOf(chainName).head = { ...head, turnHolder: null, turnExpiresMs: null };
          // Only refused appends: the cursor passes them, so that their writers read why.
          if (cursorAfter > cursor) await this.repository.withdraw(chainName, cursorAfter);
          // Only appends too fresh to seal, and time to go on: wait for them to settle.
          if (fresh.length > 0 && this.nowMs() - started < this.maxLeadMs) {
            await this.sleep(Math.max(1, pendingSkMs(fresh[0]!.ref.sk) + settleMs - this.nowMs() + 1));
            continue;
          }
          break;
        }
        attempt += 1;
        const { blocks, frontier, metas, completions, proofRecords } = this.build(chainName, head, units);
        const run: MetaRun = { prev: head.headHash, blocks: metas };
        const recent = await this.placeRecent(chainName, run);
        // Our own drafts too large for a pending append are written as records with the commit (they come first).
        const inlineRecords = ownUnit?.inline && units[0] === ownUnit ? blocks.slice(0, ownUnit.drafts.length) : [];
        servedOthers ||= units.some((u) => u !== ownUnit);
        // The last round's metadata leaves the head with this commit: its segment must be written first.
        await settle();
        const result = await this.attempt({
          chainName,
          writerId: this.writerId,
          nowMs: this.nowMs(),
          expectedHeadIndex: head.headIndex,
          expectedCursor: cursor,
          mode: { untilMs: this.nowMs() + this.leaseFor(chainName) },
          blocks,
          frontier,
          recent,
          cursor: cursorAfter,
          materialized: head.headIndex,
          ...(head.recordsFrom === undefined ? { recordsFrom: head.headIndex + 1 } : {}),
          ...(inlineRecords.length ? { records: inlineRecords } : {}),
          ...(grown ? { pendingShards: grown } : {}),
          proofRecords,
          completions,
        });
        if (result.status === 'failed') {
          if (!result.head || attempt >= this.options.maxAttempts) throw result.error;
          head = await this.retake(chainName, result.head);
          continue;
        }
        switch (result.status) {
          case 'committed': {
            const committed = this.landed(
              head,
              blocks,
              frontier,
              {
                recent,
                cursor: cursorAfter,
                materialized: head.headIndex,
                recordsFrom: head.recordsFrom ?? head.headIndex + 1,
                ...(grown ? { pendingShards: grown } : {}),
              },
              proofRecords.length,
            );
            // The bodies, the segment (and seals) that say they are written (followers answer when they see
            // them): written while the next round is read and built.
            const committedMs = this.nowMs();
            const weather = this.weatherOf(chainName);
            weather.roundMs = typical(weather.roundMs, committedMs - readSentMs);
            // Every round costs a head write and a segment whatever its size. On a chain where a small round
            // served several other instances, more are arriving: once its records are written, the next read
            // waits a round's time, and takes what gathered in one round, not two. A round that served one other
            // (two instances taking turns) or none is followed at once: nothing would gather.
            const siblings = units.filter((u) => u !== ownUnit && u.ref.sk !== mustSeal).length;
            gather = this.gatherSiblings > 0 && siblings >= this.gatherSiblings && blocks.length < OVERLAP_FROM_EVENTS;
            const done = this.writeRound(chainName, blocks, run, shards).then(() => {
              weather.writeMs = typical(weather.writeMs, this.nowMs() - committedMs);
            });
            done.catch(() => undefined);
            inFlight = { done, last: committed.headIndex, events: blocks.length };
            head = committed;
            if (ownUnit && units[0] === ownUnit) {
              ownBlocks = blocks.slice(0, ownUnit.drafts.length);
              ownUnit = undefined;
            }
            attempt = 0;
            this.weatherOf(chainName).headIndex = head.headIndex;
            // Go on while the time allows (the next read says whether appends wait); else give the lease back,
            // saying the records are written.
            if (!ownUnit && this.nowMs() - started >= this.maxLeadMs) {
              await settle();
              // Serving nobody else, we may be alone: remember the head for a direct commit next time.
              this.weatherOf(chainName).head = own && !servedOthers ? { ...head, turnHolder: null, turnExpiresMs: null } : undefined;
              break rounds;
            }
            break;
          }
          case 'head-moved': {
            this.counters.conflicts += 1;
            this.weatherOf(chainName).othersSeenMs = this.nowMs();
            if (!result.head) throw new ChainNotFoundError(chainName);
            if (result.head.turnHolder === this.writerId) {
              // Still ours: the cursor moved (a follower withdrew). Build again on the head as it is.
              head = result.head.frontier ? result.head : await ensureTree(this.repository, result.head);
              continue;
            }
            // The lease lapsed and another instance leads now.
            const lease = await this.takeLease(chainName);
            if (!lease.head) throw new ChainNotFoundError(chainName);
            if (!lease.acquired) {
              leased = false;
              if (ownUnit && !ownUnit.inline && ownUnit.ref.sk !== '' && ownUnit.ref.sk > (lease.head.cursor ?? '')) return { ref: ownUnit.ref };
              if (ownUnit) ownError = new ChainContendedError(chainName, this.options.maxAttempts);
              break rounds;
            }
            head = lease.head.frontier ? lease.head : await ensureTree(this.repository, lease.head);
            break;
          }
          case 'conflict':
            this.counters.conflicts += 1;
            if (attempt >= this.options.maxAttempts) {
              // Too contended to go on: our own caller gets a 503; pending writers lead or withdraw themselves.
              if (ownUnit) ownError = new ChainContendedError(chainName, this.options.maxAttempts);
              break rounds;
            }
            await this.backoff(attempt);
            break;
          case 'proof-stale':
          case 'claim-lost': {
            // An anchor already superseded, or a request whose Idempotency-Key a later attempt holds now:
            // refuse that unit's blocks, keep the rest.
            const stale = result.status === 'proof-stale';
            const owner = unitAt(units, result.blockPosition);
            if (owner === ownUnit) {
              ownError = stale ? new ProofSupersededError(owner.drafts.find((d) => d.proof)?.proof?.subChain ?? '') : new IdempotencyClaimLostError();
              ownUnit = undefined;
            } else {
              // Its writer reads why from the refusal; the cursor passes it with the next commit.
              await this.repository.putRefusal(chainName, owner.ref, stale ? PROOF_SUPERSEDED : CLAIM_LOST);
              refused.add(refKey(owner.ref));
            }
            attempt -= 1;
            break;
          }
        }
      }
    } catch (error) {
      // A failure in a later round, while serving others, does not undo our own blocks once committed: they are
      // answered (answered 503 instead, a committed append was reported as not landed: found by the simulation).
      if (!ownBlocks) ownError = error;
    } finally {
      // Our last round's records: written before the lease goes (or, failing, left for the next holder).
      // Our own blocks, committed, are answered even so: they are on the chain, their drafts where the records come from.
      await settle().catch((error: unknown) => {
        if (!ownBlocks) ownError ??= error;
      });
      // Our own append not committed: before the lease goes, make sure it cannot land after our caller is
      // told it failed (move the cursor past it). If the cursor is past it already, it landed: that is the answer.
      if (ownUnit && ownError && !ownUnit.inline) {
        try {
          const sealed = await this.settleFailed(chainName, ownUnit.drafts, ownUnit.ref, acquiredHead.headIndex, ownError);
          if (sealed) {
            ownBlocks = sealed;
            ownError = undefined;
          }
        } catch (unsettled) {
          ownError = unsettled;
        }
      }
      // Given back saying what is written: with the newest blocks in a segment, the head drops their metadata.
      if (leased) {
        this.counters.roundWrites += 1;
        await this.giveBack(chainName, head);
      }
    }
    if (ownError) throw ownError;
    if (own && !ownBlocks) throw new ChainContendedError(chainName, this.options.maxAttempts);
    return { blocks: ownBlocks };
  }

  /**
   * Finishes the chain's newest round if its leader left it unwritten (died between its commit and its
   * records, or its writes were refused) and nobody holds the lease: its records from the pending appends,
   * its segment, and the head saying so. Nothing else: no pending append is sealed. The scheduled sweep
   * calls it, so that such a round never waits for the chain's next append (its bodies expire with TTL).
   * 'written': nothing to finish; 'leased': someone holds the lease (its holder finishes it, or a later sweep).
   */
  async finishAbandoned(chainName: string): Promise<'finished' | 'written' | 'leased'> {
    const head = await this.repository.getHead(chainName);
    if (!head) throw new ChainNotFoundError(chainName);
    if (!recordsUnwritten(head)) return 'written';
    if (head.turnHolder && (head.turnExpiresMs ?? 0) > this.nowMs()) return 'leased';
    const lease = await this.takeLease(chainName);
    if (!lease.head) throw new ChainNotFoundError(chainName);
    if (!lease.acquired) return 'leased';
    let held = lease.head;
    try {
      held = await this.flushRecent(held);
    } finally {
      await this.giveBack(chainName, held);
    }
    return 'finished';
  }

  /**
   * Gives the lease back, saying what is written: with the newest blocks in a segment (`head` has no
   * unflushed metadata and every record written), the head drops their metadata. Within a grace; a failure
   * leaves the lease to expire (the next holder, or the sweep, finishes what the head says is unwritten).
   */
  private async giveBack(chainName: string, head: ChainHead): Promise<void> {
    const flushed = head.recent === null && head.materialized === head.headIndex;
    await withGrace<unknown>(500, () =>
      flushed ? this.repository.finishRound(chainName, this.writerId, head.headIndex, head.headIndex) : this.repository.releaseLease(chainName, this.writerId),
    ).catch(() => undefined);
  }

  /** After a commit whose outcome stayed unknown: the lease again (ours still, or free), or give up. */
  private async retake(chainName: string, head: ChainHead): Promise<ChainHead> {
    if (head.turnHolder === this.writerId) return head.frontier ? head : ensureTree(this.repository, head);
    const lease = await this.takeLease(chainName);
    if (!lease.acquired) throw new ChainContendedError(chainName, this.options.maxAttempts);
    return lease.head.frontier ? lease.head : ensureTree(this.repository, lease.head);
  }

  /**
   * The units of the next round: our own drafts first, then pending appends oldest first while they fit,
   * and the cursor after them. Refused appends the cursor passes too; an append in a shard that had more
   * than was read waits unless it is below what was read there.
   */
  private plan(
    own: Unit | undefined,
    pendings: PendingAppend[],
    truncatedAt: Map<number, string>,
    cursor: string,
    refused: ReadonlySet<string>,
  ): { units: Unit[]; cursorAfter: string } {
    const units: Unit[] = [];
    let items = 1;
    let bytes = 0;
    let blocks = 0;
    let cursorAfter = cursor;
    // A shard read only in part: nothing above the last key read there may be taken (its older appends were not read).
    const limit = [...truncatedAt.values()].reduce((min, sk) => (sk < min ? sk : min), '\uffff');
    const fits = (drafts: BlockDraft[]) =>
      units.length === 0 ||
      (blocks + drafts.length <= this.options.batchMax &&
        items + transactionItems(drafts) - drafts.length <= MAX_TRANSACTION_ITEMS &&
        bytes + drafts.reduce((n, d) => n + draftBytes(d), 0) <= MAX_ROUND_BYTES);
    const take = (unit: Unit) => {
      units.push(unit);
      items += transactionItems(unit.drafts) - unit.drafts.length + (unit.inline ? unit.drafts.length : 0);
      bytes += unit.drafts.reduce((n, d) => n + draftBytes(d), 0);
      blocks += unit.drafts.length;
      if (!unit.inline && unit.ref.sk > cursorAfter) cursorAfter = unit.ref.sk;
    };
    const anchored = new Set<string>();
    if (own) {
      take(own);
      for (const chain of anchoredChains(own.drafts)) anchored.add(chain);
    }
    for (const pending of pendings) {
      if (pending.ref.sk > limit) break;
      let drafts: BlockDraft[] | undefined;
      try {
        drafts = JSON.parse(pending.drafts) as BlockDraft[];
      } catch {
        drafts = undefined; // not ours to read: passed by, never sealed
      }
      if (!drafts || refused.has(refKey(pending.ref))) {
        // Refused (its writer reads why) or unreadable: the cursor passes it with the others.
        if (pending.ref.sk > cursorAfter) cursorAfter = pending.ref.sk;
        continue;
      }
      // A second anchor of a Sub-Chain waits for the next round, where the first has landed and it is refused as superseded.
      if (!fits(drafts) || anchorsAgain(anchored, drafts)) break;
      for (const chain of anchoredChains(drafts)) anchored.add(chain);
      take({ drafts, ref: pending.ref });
    }
    return { units, cursorAfter };
  }

  /** Full jitter: a random wait up to an exponentially growing cap. */
  private backoff(attempt: number): Promise<void> {
    const cap = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
    return this.sleep(Math.floor(this.random() * cap));
  }
}

/** The blocks of a run that a pending append became, and the hash before the first; undefined when it is not in the run. */
function pickRef(run: MetaRun, ref: PendingRef): { metas: BlockMeta[]; prev: string } | undefined {
  const key = refKey(ref);
  const metas = run.blocks.filter((b) => b.ref && refKey(b.ref) === key);
  if (metas.length === 0) return undefined;
  const first = metas[0]!.index - run.blocks[0]!.index;
  return { metas, prev: first === 0 ? run.prev : run.blocks[first - 1]!.hash };
}

/** Each pending shard's sealed blocks of a run, with the hash before each. */
function sealsOf(run: MetaRun): Map<number, SealEntry[]> {
  const seals = new Map<number, SealEntry[]>();
  let prev = run.prev;
  for (const { nodes: _nodes, ...meta } of run.blocks) {
    if (meta.ref) {
      const entries = seals.get(meta.ref.shard) ?? seals.set(meta.ref.shard, []).get(meta.ref.shard)!;
      entries.push({ ...meta, prev });
    }
    prev = meta.hash;
  }
  return seals;
}

/** Whether a round's read found the chain's pending shards crowded (PENDING_PER_SHARD): `others`' keys say when they were written. */
function crowded(found: number, others: readonly PendingAppend[], shards: number): boolean {
  if (found >= 2 * PENDING_PER_SHARD * shards) return true;
  if (others.length < PENDING_PER_SHARD * shards) return false;
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  for (const p of others) {
    const ms = pendingSkMs(p.ref.sk);
    first = Math.min(first, ms);
    last = Math.max(last, ms);
  }
  return ((others.length - 1) * 1000) / Math.max(1, last - first) >= GROW_RATE_PER_SHARD * shards;
}

/** The n-th sort key above the cursor (1: the next one). */
function nthAfter(cursor: string, n: number): string {
  let sk = cursor;
  for (let i = 0; i < n; i += 1) sk = nextPendingSk(sk);
  return sk;
}

/** The error a refused pending append's writer answers with. */
function refusalError(chainName: string, drafts: BlockDraft[], reason: string): Error {
  if (reason === PROOF_SUPERSEDED) return new ProofSupersededError(drafts.find((d) => d.proof)?.proof?.subChain ?? '');
  if (reason === CLAIM_LOST) return new IdempotencyClaimLostError();
  return new Error(`append to '${chainName}' refused: ${reason}`);
}

/** The Sub-Chains the drafts anchor. */
function anchoredChains(drafts: readonly BlockDraft[]): string[] {
  return drafts.flatMap((d) => (d.proof ? [d.proof.subChain] : []));
}

/**
 * Whether the drafts anchor a Sub-Chain already anchored in the round being built. Two anchors of one
 * Sub-Chain cannot share a transaction: both would update its head item, which DynamoDB refuses (and
 * DynamoDB Local let both conditions pass against the old head: two anchors for one head).
 */
function anchorsAgain(anchored: ReadonlySet<string>, drafts: readonly BlockDraft[]): boolean {
  return anchoredChains(drafts).some((chain) => anchored.has(chain));
}

/** The unit a block position belongs to. */
function unitAt(units: Unit[], position: number): Unit {
  let offset = 0;
  for (const unit of units) {
    if (position < offset + unit.drafts.length) return unit;
    offset += unit.drafts.length;
  }
  return units[units.length - 1]!;
}

export { completedNodeCount };
