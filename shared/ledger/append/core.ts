/**
 * What every part of the appender shares: the instance's identity in leases, its counters, its clock, sleep
 * and randomness (injected: the deterministic simulation runs this code on a virtual clock), and what it has
 * learnt of each chain lately (its "weather": who leads, how long receipts and requests take). Also the
 * lease's requests: taken, given back, taken again.
 *
 * Invariant kept here: the lease is for efficiency, never safety. Whatever this instance believes of a chain
 * (its weather, a lease it holds) may be stale; every write that orders the chain is conditional on the head
 * as read, so a belief that is wrong costs a refused write, never a fork.
 */
import { randomUUID } from 'node:crypto';
import { remainingMs, withGrace } from '../../deadline.ts';
import { ChainContendedError } from '../../errors.ts';
import type { LedgerRepository } from '../repository.ts';
import { ensureTree } from '../tree.ts';
import type { ChainHead } from '../types.ts';
import {
  type AppenderCounters,
  type AppenderOptions,
  BACKOFF_BASE_MS,
  BACKOFF_CAP_MS,
  type ChainWeather,
  LEASE_REQUESTS,
  MAX_LEASE_MS,
  MAX_SETTLE_MS,
  typical,
  WITHDRAW_RESERVE_MS,
} from './settings.ts';

const defaultNow = () => Date.now() / 1000;
const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class AppenderCore {
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
  private readonly weather = new Map<string, ChainWeather>();
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  readonly random: () => number;
  readonly shards: number;
  readonly leaseMs: number;
  readonly maxLeadMs: number;
  readonly waitMs: number;
  readonly settleMs: number;
  readonly gatherSiblings: number;

  readonly repository: LedgerRepository;
  readonly options: AppenderOptions;
  constructor(repository: LedgerRepository, options: AppenderOptions) {
    this.repository = repository;
    this.options = options;
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

  nowMs(): number {
    return this.now() * 1000;
  }

  /** How long an append may wait for a lease or a receipt: waitMs, never past the invocation's deadline less the time to withdraw. */
  waitDeadline(): number {
    return this.nowMs() + Math.max(0, Math.min(this.waitMs, remainingMs() - WITHDRAW_RESERVE_MS));
  }

  /** How long a lease this instance takes (or extends with a commit) lasts: see LEASE_REQUESTS. */
  leaseFor(chainName: string): number {
    return Math.max(this.leaseMs, Math.min(MAX_LEASE_MS, LEASE_REQUESTS * this.weatherOf(chainName).requestMs));
  }

  /**
   * How old a pending append must be, when a leader's read is sent, to be sealed: `settleMs`, or twice the
   * typical request time if that is more (at most MAX_SETTLE_MS). An append's key is its writer's clock as
   * it sends the write, so the write may land up to a request's time later; a leader that seals past it
   * before then leaves it below the cursor, and its writer must find that out and write it again (hundreds
   * of milliseconds lost, and a write unit).
   */
  settleFor(chainName: string): number {
    return Math.max(this.settleMs, Math.min(MAX_SETTLE_MS, 2 * this.weatherOf(chainName).requestMs));
  }

  /** Runs one request on the chain's items, noting how long it took (the typical request time leases follow). */
  async timed<T>(chainName: string, request: () => Promise<T>): Promise<T> {
    const started = this.nowMs();
    const result = await request();
    const w = this.weatherOf(chainName);
    w.requestMs = typical(w.requestMs, Math.max(0, this.nowMs() - started));
    return result;
  }

  weatherOf(chainName: string): ChainWeather {
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
  saw(chainName: string, head: ChainHead): void {
    const w = this.weatherOf(chainName);
    if (head.headIndex > w.headIndex) w.headIndex = head.headIndex;
    if ((head.cursor ?? '') > w.cursor) w.cursor = head.cursor ?? '';
    w.pendingShards = Math.max(w.pendingShards, head.pendingShards ?? 1);
    if (head.turnHolder && head.turnHolder !== this.writerId && (head.turnExpiresMs ?? 0) > this.nowMs()) {
      w.othersLeadUntilMs = head.turnExpiresMs!;
      w.othersSeenMs = this.nowMs();
    }
  }

  /** Asks for the chain's lease (a conditional update of its head), counting each one taken. */
  async takeLease(chainName: string): ReturnType<LedgerRepository['acquireLease']> {
    const lease = await this.timed(chainName, () =>
      this.repository.acquireLease(chainName, this.writerId, this.nowMs(), this.nowMs() + this.leaseFor(chainName)),
    );
    if (lease.acquired) this.counters.leaseTakes += 1;
    if (lease.head) this.saw(chainName, lease.head);
    return lease;
  }

  /**
   * Gives the lease back, saying what is written: with the newest blocks in a segment (`head` has no
   * unflushed metadata and every record written), the head drops their metadata. Within a grace; a failure
   * leaves the lease to expire (the next holder, or the sweep, finishes what the head says is unwritten).
   */
  async giveBack(chainName: string, head: ChainHead): Promise<void> {
    const flushed = head.recent === null && head.materialized === head.headIndex;
    await withGrace<unknown>(500, () =>
      flushed ? this.repository.finishRound(chainName, this.writerId, head.headIndex, head.headIndex) : this.repository.releaseLease(chainName, this.writerId),
    ).catch(() => undefined);
  }

  /** After a commit whose outcome stayed unknown: the lease again (ours still, or free), or give up. */
  async retake(chainName: string, head: ChainHead): Promise<ChainHead> {
    if (head.turnHolder === this.writerId) return head.frontier ? head : ensureTree(this.repository, head);
    const lease = await this.takeLease(chainName);
    if (!lease.acquired) throw new ChainContendedError(chainName, this.options.maxAttempts);
    return lease.head.frontier ? lease.head : ensureTree(this.repository, lease.head);
  }

  /** Full jitter: a random wait up to an exponentially growing cap. */
  backoff(attempt: number): Promise<void> {
    const cap = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
    return this.sleep(Math.floor(this.random() * cap));
  }
}
