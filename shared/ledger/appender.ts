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
import { steadyNow } from '../clock.ts';
import { currentDeadline, outsideDeadline, withDeadline } from '../deadline.ts';
import { ChainNotFoundError, ChainContendedError, DeadlineExceededError } from '../errors.ts';
import { AtomicLimitError, type BlockDraft, draftBytes, MAX_ATOMIC_BLOCKS, MAX_BATCH_BYTES, MAX_TRANSACTION_ITEMS, transactionItems } from './blocks.ts';
import { AppenderCore } from './append/core.ts';
import { commitDirect } from './append/direct-commit.ts';
import { anchoredChains, anchorsAgain } from './append/parts.ts';
import { follow } from './append/receipt.ts';
import { finishAbandoned } from './append/recovery.ts';
import { lead } from './append/round.ts';
import { ALONE_AFTER_MS, MAX_PENDING_BYTES } from './append/settings.ts';
import { followerRef, settleBound } from './append/withdraw.ts';
import type { BoundAppend, PendingRef } from './repository.ts';
import type { Block } from './types.ts';

export * from './blocks.ts';
export { completedNodeCount } from './block-meta.ts';
export { IdempotencyClaimLostError, ProofSupersededError, recordsUnwritten } from './append/parts.ts';
export type { AppenderCounters, AppenderOptions } from './append/settings.ts';

/** One caller's blocks: committed together, never split across two commits. */
interface Pending {
  drafts: BlockDraft[];
  bytes: number;
  /** The caller's invocation deadline (epoch ms; Infinity outside one). */
  deadlineMs: number;
  resolve(blocks: Block[]): void;
  reject(error: unknown): void;
}

interface ChainQueue {
  pending: Pending[];
  running: boolean;
}

/**
 * The appender of one instance (a Lambda instance, or the local service): its callers' appends queued per
 * chain, each batch committed directly, by leading, or by following (commit). The protocol's parts are in
 * ./append/ (docs/appending.md, "Where the code is").
 */
export class ChainAppender extends AppenderCore {
  private readonly queues = new Map<string, ChainQueue>();

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
    const deadlineMs = currentDeadline();
    const promise = new Promise<Block[]>((resolve, reject) => target.pending.push({ drafts, bytes, deadlineMs, resolve, reject }));
    // The drain goes on while callers keep coming, so it must not run inside this caller's budget: each
    // commit runs within the earliest deadline of the callers it serves (on Lambda, the one caller's).
    if (!queue.running) void outsideDeadline(() => this.drain(chainName, queue));
    return promise;
  }

  private async drain(chainName: string, queue: ChainQueue): Promise<void> {
    queue.running = true;
    try {
      while (queue.pending.length > 0) {
        const batch = this.takeBatch(chainName, queue);
        if (batch.length === 0) continue;
        try {
          const deadlineMs = Math.min(...batch.map((p) => p.deadlineMs));
          const blocks = await withDeadline(deadlineMs, () =>
            this.commit(
              chainName,
              batch.flatMap((p) => p.drafts),
            ),
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

  /**
   * Callers waiting in this process that go together: one unit, as long as it fits one commit. A caller whose
   * deadline passed while it waited was answered 503 already: its drafts are not committed after that.
   */
  private takeBatch(chainName: string, queue: ChainQueue): Pending[] {
    const now = steadyNow();
    if (queue.pending.some((p) => p.deadlineMs <= now)) {
      for (const p of queue.pending) if (p.deadlineMs <= now) p.reject(new DeadlineExceededError(`a commit of '${chainName}'`));
      queue.pending = queue.pending.filter((p) => p.deadlineMs > now);
    }
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

  /** Commits one unit of drafts (this instance's batch) and answers its blocks: directly, leading, or following. */
  private async commit(chainName: string, drafts: BlockDraft[]): Promise<Block[]> {
    const weather = this.weatherOf(chainName);
    const fitsPending = drafts.reduce((n, d) => n + draftBytes(d), 0) <= MAX_PENDING_BYTES;
    const deadline = this.waitDeadline();
    // A lone writer (this instance made the last commit it knows of, and saw nobody else lately) commits
    // straight on the head it remembers: one request. The commit's conditions (head and cursor unmoved,
    // no live lease) make it safe; if another instance got there first, we go the long way.
    if (weather.head && this.nowMs() - weather.othersSeenMs > ALONE_AFTER_MS) {
      const direct = await commitDirect(this, chainName, weather.head, drafts);
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
          const own = await lead(this, chainName, lease.head, drafts);
          if (own.blocks) return own.blocks;
          // Our own append is pending and another leader took over: wait for it as a follower does.
          return follow(this, chainName, drafts, deadline, own.ref);
        }
        this.saw(chainName, lease.head);
        if (fitsPending) break;
        // Too large to hand over as a pending append: wait for the lease.
        if (this.nowMs() >= deadline) throw new ChainContendedError(chainName, attempt);
        await this.sleep(Math.max(1, Math.min(lease.untilMs - this.nowMs(), 20 + this.random() * 20)));
      }
    }
    return follow(this, chainName, drafts, deadline);
  }

  /**
   * Where this instance's next pending append on the chain would be written (a follower's key, a moment
   * ahead: about when the write will be sent), and a block index none of it can be at or below: what a new
   * Idempotency-Key's record is made bound to, so that its usual write needs no bind before it.
   */
  firstRef(chainName: string): { ref: PendingRef; after: number } {
    return { ref: followerRef(this, chainName, 2 * this.weatherOf(chainName).requestMs), after: this.weatherOf(chainName).headIndex };
  }

  /**
   * The blocks of the pending append an Idempotency-Key's record is bound to, if a round sealed it; with
   * `takeover`, first withdrawn, so that no round seals it later (see append/withdraw.ts, settleBound).
   */
  settleBound(chainName: string, claimId: string, bound: BoundAppend, takeover: boolean): Promise<Block[] | undefined> {
    return settleBound(this, chainName, claimId, bound, takeover);
  }

  /**
   * Finishes the chain's newest round if its leader left it unwritten and nobody holds the lease (the
   * scheduled sweep's call): see append/recovery.ts.
   */
  finishAbandoned(chainName: string): Promise<'finished' | 'written' | 'leased'> {
    return finishAbandoned(this, chainName);
  }
}
