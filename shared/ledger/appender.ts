/**
 * Appending keeps every chain linear, and combines appends into few transactions, within one process
 * and across instances (Lambda runs one request per instance, so requests never meet in a process).
 *
 * Within a process: one queue per chain; whatever waits while a commit is in flight goes into the next
 * commit together (group commit): each event still closes its own block.
 *
 * Across instances, through DynamoDB (flat combining with a lease):
 * - A writer first tries to take the chain's combining lease (a conditional update of the head item,
 *   which also hands it the head). With the lease it *leads*: it reads the chain's pending appends,
 *   builds its own blocks and theirs on the head, and commits them all in one transaction that moves the
 *   head, removes each pending append it sealed and writes its receipt. It goes on while appends are
 *   pending (for a bounded time), then gives the lease back in its last commit and looks once more, so
 *   an append written meanwhile is never left without a leader.
 * - A writer that finds the lease taken *follows*: it writes its drafts as a pending append, and reads
 *   its receipt until the leader has sealed it. If none has by the time the lease expires (a leader
 *   that crashed), it takes the lease itself. At its deadline it withdraws its append: if that fails,
 *   the append was sealed, and its receipt is the answer.
 * Every transaction is conditional on the head it was built on and on each pending append still being
 * there, so an append is sealed at most once and the chain never forks; an acknowledged event is in
 * exactly one block. A commit whose outcome is unknown (a timeout) is settled by reading the head.
 */
import { randomUUID } from 'node:crypto';
import { remainingMs, withGrace } from '../deadline.ts';
import { ChainContendedError, ChainNotFoundError, DeadlineExceededError } from '../errors.ts';
import {
  pendingSk,
  type BlockCommit,
  type CommitResult,
  type LedgerRepository,
  type PendingAppend,
  type PendingRef,
  type ProofRecord,
  type Receipt,
} from './repository.ts';
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

/** Rejection of an anchor whose Sub-Chain was already anchored at that head or later. */
export class ProofSupersededError extends Error {
  constructor(readonly subChain: string) {
    super(`Sub-Chain '${subChain}' was already anchored at this head`);
    this.name = 'ProofSupersededError';
  }
}

export interface AppenderOptions {
  maxAttempts: number;
  /** Most blocks in one transaction (DynamoDB allows 100 items: blocks + head + proof records + pending). */
  batchMax: number;
  /**
   * Most partitions a chain's pending appends spread over. A chain starts with one; a leader that finds
   * PENDING_PER_SHARD or more waiting per shard doubles the chain's shards, recorded on its head (more:
   * more appends per second on one chain; each is one query per combining round).
   */
  pendingShards?: number;
  /** How long the combining lease lasts without a commit: the longest a crashed leader holds others up. */
  leaseMs?: number;
  /** How long a leader goes on sealing others' appends before it answers its own caller. */
  maxLeadMs?: number;
  /** How long a follower waits for its append to be sealed before withdrawing it (then 503). */
  waitMs?: number;
  /** Seconds since the epoch, millisecond precision. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export interface AppenderCounters {
  blocksAppended: number;
  eventsAppended: number;
  commits: number;
  conflicts: number;
  /** Appends this instance handed to another instance's combiner. */
  followed: number;
  /** Leases this instance took (each a request on the chain's serial path before its commits). */
  leaseTakes: number;
  /** Reads of the pending appends a leader made (each one round of parallel Queries before a commit). */
  pendingReads: number;
}

/** One caller's blocks: committed together in one transaction, never split across two. */
interface Pending {
  drafts: BlockDraft[];
  /** Transaction items the drafts take: one per block, one more per proof record. */
  items: number;
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
  /** Typical time from writing a pending append to its receipt (ms), to time the first look. */
  sealMs: number;
  /** The head as this instance's last commit left it: a lone writer commits straight on it. */
  head?: ChainHead;
  /** When another writer was last seen on this chain (a lease, a pending append, a moved head), epoch ms. */
  othersSeenMs: number;
  /** The chain's pending shards as its head last said (they only grow). */
  pendingShards?: number;
}

/** A writer that has seen no other on a chain for this long commits straight on the head it remembers. */
const ALONE_AFTER_MS = 2_000;

/** One unit a leader commits: a caller's blocks, its own or from a pending append. */
interface Unit {
  drafts: BlockDraft[];
  /** The pending append it came from; undefined for the leader's own drafts. */
  ref?: PendingRef;
}

/** A pending append is one item (400 KB at most) and takes two transaction items (removal, receipt) besides its blocks. */
const MAX_PENDING_BYTES = 350_000;
const MAX_PENDING_BLOCKS = MAX_TRANSACTION_ITEMS - 3;
/** Pending appends found per shard in one round at which a leader doubles the chain's shards. */
const PENDING_PER_SHARD = 8;
/** Pending appends read per round and shard. */
const PENDING_READ_LIMIT = 50;
/** Receipts and unclaimed pending appends expire (TTL) after this long. */
const PENDING_TTL_SECONDS = 3600;

/**
 * Kept back from the invocation's deadline (shared/deadline.ts): an append that has not landed by then is
 * withdrawn with time left to do it, so a caller told 503 never has its event land later.
 */
const WITHDRAW_RESERVE_MS = 1_000;
/** A leader starts no new commit round with less time left than this (one round is one transaction). */
const ROUND_RESERVE_MS = 1_000;
const BACKOFF_BASE_MS = 5;
const BACKOFF_CAP_MS = 250;

const defaultNow = () => Date.now() / 1000;
const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The reason a refused pending append's receipt gives, and the error its writer answers with. */
const PROOF_SUPERSEDED = 'proof-superseded';
const CLAIM_LOST = 'idempotency-claim-lost';

export class ChainAppender {
  /** Names this instance in leases and pending appends. */
  readonly writerId = randomUUID();
  readonly counters: AppenderCounters = { blocksAppended: 0, eventsAppended: 0, commits: 0, conflicts: 0, followed: 0, leaseTakes: 0, pendingReads: 0 };
  private readonly queues = new Map<string, ChainQueue>();
  private readonly weather = new Map<string, ChainWeather>();
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly shards: number;
  private readonly leaseMs: number;
  private readonly maxLeadMs: number;
  private readonly waitMs: number;

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
  }

  /** Appends one block to a chain; resolves with the committed block. */
  async append(chainName: string, draft: BlockDraft): Promise<Block> {
    const [block] = await this.appendAll(chainName, [draft]);
    return block!;
  }

  /**
   * Appends consecutive blocks to a chain in one transaction: all of them commit, or none. Other
   * callers' blocks may share the transaction, but never come between these. Resolves in order.
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
    const promise = new Promise<Block[]>((resolve, reject) => target.pending.push({ drafts, items, bytes, resolve, reject }));
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
        (blocks + next.drafts.length > this.options.batchMax ||
          items + next.items > MAX_TRANSACTION_ITEMS ||
          bytes + next.bytes > MAX_BATCH_BYTES ||
          anchorsAgain(anchored, next.drafts))
      ) {
        break;
      }
      for (const chain of anchoredChains(next.drafts)) anchored.add(chain);
      batch.push(queue.pending.shift()!);
      items += next.items;
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

  private weatherOf(chainName: string): ChainWeather {
    let w = this.weather.get(chainName);
    if (!w) {
      w = { othersLeadUntilMs: 0, sealMs: 10, othersSeenMs: 0 };
      this.weather.set(chainName, w);
      if (this.weather.size > 10_000) this.weather.delete(this.weather.keys().next().value!);
    }
    return w;
  }

  /** Commits one unit of drafts (this instance's batch) and answers its blocks: leading, or following. */
  private async commit(chainName: string, drafts: BlockDraft[]): Promise<Block[]> {
    const weather = this.weatherOf(chainName);
    const fitsPending = drafts.length <= MAX_PENDING_BLOCKS && drafts.reduce((n, d) => n + draftBytes(d), 0) <= MAX_PENDING_BYTES;
    const deadline = this.waitDeadline();
    // A lone writer (this instance made the last commit it knows of, and saw nobody else lately) commits
    // straight on the head it remembers: one request. The commit's conditions (head unmoved, no live
    // lease) make it safe; if another instance got there first, the answer says so and we go the long way.
    if (weather.head && this.nowMs() - weather.othersSeenMs > ALONE_AFTER_MS) {
      const direct = await this.commitDirect(chainName, weather.head, drafts);
      if (direct) return direct;
    }
    // Lead at once unless another instance was seen leading this chain a moment ago.
    if (!fitsPending || this.nowMs() >= weather.othersLeadUntilMs) {
      for (let attempt = 1; ; attempt += 1) {
        const lease = await this.takeLease(chainName);
        if (!lease.head) throw new ChainNotFoundError(chainName);
        if (lease.acquired) return (await this.lead(chainName, lease.head, drafts))!;
        weather.othersLeadUntilMs = lease.untilMs;
        weather.othersSeenMs = this.nowMs();
        weather.pendingShards = lease.head.pendingShards ?? 1;
        if (fitsPending) break;
        // Too large to hand over as a pending append: wait for the lease.
        if (this.nowMs() >= deadline) throw new ChainContendedError(chainName, attempt);
        await this.sleep(Math.max(1, Math.min(lease.untilMs - this.nowMs(), 20 + this.random() * 20)));
      }
    }
    return this.follow(chainName, drafts, deadline);
  }

  /** The blocks `drafts` become on `head`, all with one timestamp (they commit together), and the tree after them. */
  private build(chainName: string, head: ChainHead, drafts: BlockDraft[]) {
    const timestamp = Math.round(this.now() * 1000) / 1000;
    const blocks = buildBlocks(chainName, head, drafts, () => timestamp);
    const tree = extendTree(
      head.frontier!,
      head.headIndex + 1,
      blocks.map((b) => b.hash),
    );
    const completions = drafts.flatMap((d, blockPosition) =>
      d.completes ? [{ claim: { id: d.completes.id, token: d.completes.token }, blockPosition, count: d.completes.count }] : [],
    );
    return { timestamp, blocks, tree, completions };
  }

  /** Counts a landed commit, and answers the head it left. */
  private landed(head: ChainHead, blocks: Block[], frontier: string[], proofs = 0): ChainHead {
    const last = blocks[blocks.length - 1]!;
    const events = blocks.reduce((n, b) => n + b.events.length, 0);
    this.counters.commits += 1;
    this.counters.blocksAppended += blocks.length;
    this.counters.eventsAppended += events;
    return { ...head, headIndex: last.index, headHash: last.hash, frontier, eventCount: head.eventCount + events, proofCount: head.proofCount + proofs };
  }

  /**
   * Commits blocks built on `head`. A commit whose outcome is unknown (a timeout may still have committed)
   * is settled by reading the head: landed is `committed`; otherwise `failed`, with the head as it was read.
   */
  private async attempt(
    chainName: string,
    head: ChainHead,
    blocks: Block[],
    tree: { frontier: string[]; treeNodes: string[][] },
    extra: Pick<BlockCommit, 'proofRecords' | 'seals' | 'lease' | 'completions'> = {},
  ): Promise<CommitResult | { status: 'failed'; error: unknown; head: ChainHead | undefined }> {
    try {
      return await this.repository.commitBlocks({
        chainName,
        writerId: this.writerId,
        nowMs: this.nowMs(),
        expectedHeadIndex: head.headIndex,
        blocks,
        treeNodes: tree.treeNodes,
        frontier: tree.frontier,
        ...extra,
      });
    } catch (error) {
      // Settled even when the error was the invocation's deadline cutting the commit off: a short grace.
      const now = await withGrace(500, () => this.repository.getHead(chainName)).catch(() => undefined);
      return now?.headHash === blocks[blocks.length - 1]!.hash ? { status: 'committed' } : { status: 'failed', error, head: now };
    }
  }

  /** One commit of the drafts on a remembered head, without the lease; undefined when that head was stale. */
  private async commitDirect(chainName: string, remembered: ChainHead, drafts: BlockDraft[]): Promise<Block[] | undefined> {
    const weather = this.weatherOf(chainName);
    weather.head = undefined; // used once: whatever happens, the next commit learns the head anew unless this one lands
    if (drafts.some((d) => d.proof)) return undefined; // anchors go the long way (their proof records)
    const { blocks, tree, completions } = this.build(chainName, remembered, drafts);
    const result = await this.attempt(chainName, remembered, blocks, tree, { completions });
    if (result.status === 'failed') return undefined; // did not land: the long way settles it
    if (result.status !== 'committed') {
      this.counters.conflicts += 1;
      weather.othersSeenMs = this.nowMs();
      if (
        result.status === 'head-moved' &&
        result.head?.turnHolder &&
        result.head.turnHolder !== this.writerId &&
        (result.head.turnExpiresMs ?? 0) > this.nowMs()
      ) {
        weather.othersLeadUntilMs = result.head.turnExpiresMs!;
        weather.pendingShards = result.head.pendingShards ?? 1;
      }
      return undefined;
    }
    weather.head = this.landed(remembered, blocks, tree.frontier);
    return blocks;
  }

  /** Hands the drafts to the chain's leader as a pending append and waits for its receipt. */
  private async follow(chainName: string, drafts: BlockDraft[], deadline: number): Promise<Block[]> {
    const weather = this.weatherOf(chainName);
    weather.othersSeenMs = this.nowMs();
    // Any of the shards the head named when we last saw it: every later leader reads at least those.
    const ref: PendingRef = { shard: Math.floor(this.random() * (weather.pendingShards ?? 1)), sk: pendingSk(this.nowMs(), randomUUID()) };
    const written = this.nowMs();
    await this.repository.putPending(chainName, { ref, drafts: JSON.stringify(drafts) }, Math.ceil(this.now()) + PENDING_TTL_SECONDS);
    this.counters.followed += 1;
    try {
      return await this.awaitReceipt(chainName, drafts, ref, written, deadline);
    } catch (error) {
      // Before answering an error, make sure the append will not land later: withdraw it. If it is gone,
      // it was sealed meanwhile, and the receipt is the answer after all.
      // A grace past the deadline, if that is what failed: the withdrawal must happen before the answer.
      const withdrawn = await withGrace(500, () => this.repository.withdrawPending(chainName, ref)).catch(() => undefined);
      if (withdrawn === false) {
        const receipt = await withGrace(500, () => this.repository.getReceipt(chainName, ref)).catch(() => undefined);
        if (receipt) return this.fromReceipt(chainName, drafts, receipt);
      }
      throw error;
    }
  }

  /** Reads the receipt of a pending append until it comes, leading when nobody seals it in time. */
  private async awaitReceipt(chainName: string, drafts: BlockDraft[], ref: PendingRef, written: number, deadline: number): Promise<Block[]> {
    const weather = this.weatherOf(chainName);
    let delay = Math.max(2, Math.min(weather.sealMs, 50));
    // Not sealed by the first look: the lease may have been given back before this append was written
    // (its leader's last look missed it), so try it then, and every 100 ms while another holds it.
    let nextLeaseTry = written + delay;
    for (;;) {
      await this.sleep(delay);
      const receipt = await this.repository.getReceipt(chainName, ref);
      if (receipt) {
        weather.sealMs = 0.8 * weather.sealMs + 0.2 * (this.nowMs() - written);
        return this.fromReceipt(chainName, drafts, receipt);
      }
      if (this.nowMs() >= deadline) {
        if (await this.repository.withdrawPending(chainName, ref)) throw new ChainContendedError(chainName, this.options.maxAttempts);
        // Gone already: it was sealed (or refused) meanwhile, and its receipt says which.
        const late = await this.repository.getReceipt(chainName, ref);
        if (!late) throw new Error(`pending append ${ref.sk} of '${chainName}' vanished without a receipt`);
        return this.fromReceipt(chainName, drafts, late);
      }
      if (this.nowMs() >= nextLeaseTry) {
        // No leader sealed it in time (none, or one that crashed): lead.
        const lease = await this.takeLease(chainName);
        if (!lease.head) throw new ChainNotFoundError(chainName);
        if (lease.acquired) {
          await this.lead(chainName, lease.head, undefined);
          nextLeaseTry = this.nowMs();
          continue; // read the receipt at once
        }
        weather.othersLeadUntilMs = lease.untilMs;
        nextLeaseTry = Math.min(lease.untilMs + 1, this.nowMs() + 100);
      }
      delay = Math.min(delay * 1.5, 50);
    }
  }

  /** The blocks a receipt says the drafts became, rebuilt and checked against the receipt's last hash. */
  private fromReceipt(chainName: string, drafts: BlockDraft[], receipt: Receipt): Block[] {
    if (receipt.status === 'rejected') {
      if (receipt.reason === PROOF_SUPERSEDED) throw new ProofSupersededError(drafts.find((d) => d.proof)?.proof?.subChain ?? '');
      if (receipt.reason === CLAIM_LOST) throw new IdempotencyClaimLostError();
      if (receipt.reason === 'chain-not-found') throw new ChainNotFoundError(chainName);
      throw new Error(`append to '${chainName}' refused: ${receipt.reason}`);
    }
    const blocks = buildBlocks(chainName, { headIndex: receipt.firstIndex - 1, headHash: receipt.previousHash }, drafts, () => receipt.timestamp);
    if (blocks[blocks.length - 1]!.hash !== receipt.lastHash) throw new Error(`the receipt of an append to '${chainName}' does not match its drafts`);
    return blocks;
  }

  /** Asks for the chain's lease (a conditional update of its head), counting each one taken. */
  private async takeLease(chainName: string): ReturnType<LedgerRepository['acquireLease']> {
    const lease = await this.repository.acquireLease(chainName, this.writerId, this.nowMs(), this.nowMs() + this.leaseMs);
    if (lease.acquired) this.counters.leaseTakes += 1;
    return lease;
  }

  /**
   * Holds the lease: commits `own` (if any) and every pending append it finds, round after round, then
   * gives the lease back. Answers the blocks of `own`.
   */
  private async lead(chainName: string, acquiredHead: ChainHead, own: BlockDraft[] | undefined): Promise<Block[] | undefined> {
    const started = this.nowMs();
    let head: ChainHead = acquiredHead.frontier ? acquiredHead : await ensureTree(this.repository, acquiredHead);
    let ownUnit: Unit | undefined = own ? { drafts: own } : undefined;
    let ownBlocks: Block[] | undefined;
    let ownError: unknown;
    let attempt = 0;
    const skip = new Set<string>(); // pending appends withdrawn under us
    rounds: for (;;) {
      if (remainingMs() < ROUND_RESERVE_MS) {
        // No time for another round before the invocation's deadline: give the lease back (pending writers
        // lead or withdraw themselves); our own drafts, if not committed yet, are answered 503.
        await withGrace(500, () => this.repository.releaseLease(chainName, this.writerId)).catch(() => undefined);
        if (ownUnit) ownError = new DeadlineExceededError(`a commit of '${chainName}'`);
        ownUnit = undefined;
        break;
      }
      const shards = head.pendingShards ?? 1;
      this.counters.pendingReads += 1;
      const pendings = (await this.repository.listPending(chainName, shards, PENDING_READ_LIMIT)).filter((p) => !skip.has(p.ref.sk));
      // Many waiting: spread the next ones over twice the partitions (recorded by this round's commit).
      const grown = pendings.length >= shards * PENDING_PER_SHARD && shards * 2 <= this.shards ? shards * 2 : undefined;
      const { units, takenAll } = this.plan(chainName, ownUnit, pendings);
      if (pendings.length > 0) this.weatherOf(chainName).othersSeenMs = this.nowMs();
      if (units.length === 0) {
        await this.repository.releaseLease(chainName, this.writerId);
        break;
      }
      attempt += 1;
      const overtime = this.nowMs() - started > this.maxLeadMs && !ownUnit;
      // The last round gives the lease back in its own commit.
      const last = takenAll || overtime;
      const drafts = units.flatMap((u) => u.drafts);
      const { timestamp, blocks, tree, completions } = this.build(chainName, head, drafts);
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
      const seals: NonNullable<Parameters<LedgerRepository['commitBlocks']>[0]['seals']> = [];
      let offset = 0;
      for (const unit of units) {
        const mine = blocks.slice(offset, offset + unit.drafts.length);
        if (unit.ref) {
          seals.push({
            ref: unit.ref,
            receipt: { status: 'sealed', firstIndex: mine[0]!.index, previousHash: mine[0]!.previous_hash, timestamp, lastHash: mine[mine.length - 1]!.hash },
          });
        }
        offset += unit.drafts.length;
      }

      const result = await this.attempt(chainName, head, blocks, tree, {
        proofRecords,
        seals,
        completions,
        ...(grown ? { pendingShards: grown } : {}),
        lease: last ? { release: true } : { untilMs: this.nowMs() + this.leaseMs },
      });
      if (result.status === 'failed') {
        // Not committed. Give up after as many tries as a contended commit gets, else try again.
        if (!result.head || attempt >= this.options.maxAttempts) {
          await this.repository.releaseLease(chainName, this.writerId).catch(() => undefined);
          throw result.error;
        }
        const lease = await this.takeLease(chainName);
        if (!lease.acquired) throw result.error;
        head = lease.head.frontier ? lease.head : await ensureTree(this.repository, lease.head);
        continue;
      }

      switch (result.status) {
        case 'committed': {
          head = { ...this.landed(head, blocks, tree.frontier, proofRecords.length), ...(grown ? { pendingShards: grown } : {}) };
          if (ownUnit && units[0] === ownUnit) {
            ownBlocks = blocks.slice(0, ownUnit.drafts.length);
            ownUnit = undefined;
          }
          attempt = 0;
          if (!last) continue;
          // Given back. An append written after our last read has no leader now, but its writer tries
          // the lease itself when its first look finds no receipt. If we served nobody else, we may be
          // alone: remember the head for a direct commit next time.
          this.weatherOf(chainName).head = head;
          break rounds;
        }
        case 'head-moved': {
          this.counters.conflicts += 1;
          this.weatherOf(chainName).othersSeenMs = this.nowMs();
          // Someone committed without our lease (ours had expired): take it again, or stop leading.
          const lease = await this.takeLease(chainName);
          if (!lease.head) throw new ChainNotFoundError(chainName);
          if (!lease.acquired) {
            if (ownUnit) {
              // Our own drafts still need a leader: hand them over as a pending append.
              const drafts2 = ownUnit.drafts;
              ownUnit = undefined;
              ownBlocks = await this.follow(chainName, drafts2, this.waitDeadline());
            }
            return ownBlocks;
          }
          head = lease.head.frontier ? lease.head : await ensureTree(this.repository, lease.head);
          break;
        }
        case 'conflict':
          this.counters.conflicts += 1;
          if (attempt >= this.options.maxAttempts) {
            // Too contended to go on: our own caller gets a 503; pending writers lead or withdraw themselves.
            if (ownUnit) ownError = new ChainContendedError(chainName, this.options.maxAttempts);
            ownUnit = undefined;
            await this.repository.releaseLease(chainName, this.writerId);
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
          if (owner.ref) {
            await this.repository.rejectPending(chainName, owner.ref, stale ? PROOF_SUPERSEDED : CLAIM_LOST);
            skip.add(owner.ref.sk);
          } else {
            ownError = stale ? new ProofSupersededError(drafts[result.blockPosition]?.proof?.subChain ?? '') : new IdempotencyClaimLostError();
            ownUnit = undefined;
          }
          attempt -= 1;
          break;
        }
        case 'pending-gone':
          skip.add(seals[result.sealPosition]!.ref.sk);
          attempt -= 1;
          break;
      }
    }
    if (ownError) throw ownError;
    if (own && !ownBlocks) throw new ChainContendedError(chainName, this.options.maxAttempts);
    return ownBlocks;
  }

  /** The units of the next commit: our own drafts first, then pending appends oldest first, while they fit. */
  private plan(_chainName: string, own: Unit | undefined, pendings: PendingAppend[]): { units: Unit[]; takenAll: boolean } {
    const units: Unit[] = [];
    let items = 1;
    let bytes = 0;
    let blocks = 0;
    const fits = (drafts: BlockDraft[], extra: number) =>
      units.length === 0 ||
      (blocks + drafts.length <= Math.max(this.options.batchMax, MAX_PENDING_BLOCKS) &&
        items + transactionItems(drafts) + extra <= MAX_TRANSACTION_ITEMS &&
        bytes + drafts.reduce((n, d) => n + draftBytes(d), 0) <= MAX_BATCH_BYTES);
    const take = (unit: Unit, extra: number) => {
      units.push(unit);
      items += transactionItems(unit.drafts) + extra;
      bytes += unit.drafts.reduce((n, d) => n + draftBytes(d), 0);
      blocks += unit.drafts.length;
    };
    const anchored = new Set<string>();
    if (own) {
      take(own, 0);
      for (const chain of anchoredChains(own.drafts)) anchored.add(chain);
    }
    let taken = 0;
    for (const pending of pendings) {
      let drafts: BlockDraft[];
      try {
        drafts = JSON.parse(pending.drafts) as BlockDraft[];
      } catch {
        continue; // not ours to read: left to expire
      }
      // A second anchor of a Sub-Chain waits for the next round, where the first has landed and it is refused as superseded.
      if (!fits(drafts, 2) || anchorsAgain(anchored, drafts)) break;
      for (const chain of anchoredChains(drafts)) anchored.add(chain);
      take({ drafts, ref: pending.ref }, 2);
      taken += 1;
    }
    return { units, takenAll: taken === pendings.length && pendings.length < PENDING_READ_LIMIT };
  }

  /** Full jitter: a random wait up to an exponentially growing cap. */
  private backoff(attempt: number): Promise<void> {
    const cap = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
    return this.sleep(Math.floor(this.random() * cap));
  }
}

/** The Sub-Chains the drafts anchor. */
function anchoredChains(drafts: readonly BlockDraft[]): string[] {
  return drafts.flatMap((d) => (d.proof ? [d.proof.subChain] : []));
}

/**
 * Whether the drafts anchor a Sub-Chain already anchored in the transaction being built. Two anchors of
 * one Sub-Chain cannot share a transaction: both would update its head item, which DynamoDB refuses
 * (and DynamoDB Local let both conditions pass against the old head: two anchors for one head).
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
