/**
 * Appending keeps every chain linear (architecture.md, "Appending").
 *
 * Across processes: each commit is one conditional transaction on the head the blocks were built on.
 * A lost race hands back the new head; the blocks are rebuilt on it and retried with jittered
 * backoff, a bounded number of times, then the caller gets a 503. Never a fork, never a gap.
 *
 * Within a process: one queue per chain. Whatever waits while a commit is in flight goes into the
 * next commit together (group commit): each event still closes its own block, but several
 * consecutive blocks share one transaction and one head condition.
 */
import { randomUUID } from 'node:crypto';
import { ChainContendedError, ChainNotFoundError, UnprocessableError } from '../errors.ts';
import type { LedgerRepository, ProofRecord } from './repository.ts';
import type { EventDraft } from './events.ts';
import { sealBlock } from './hashing.ts';
import { ensureTree, extendTree } from './tree.ts';
import type { Block, ChainHead } from './types.ts';

/** What a Main Chain anchor block records about the Sub-Chain it proves. */
export interface ProofClaim {
  subChain: string;
  headIndex: number;
}

/** One block to append: its events (one, per contract.md §2) and, for anchors, the proof claim. */
export interface BlockDraft {
  events: EventDraft[];
  proof?: ProofClaim;
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
  /** Most blocks in one transaction (DynamoDB allows 100 items: blocks + head + proof records). */
  batchMax: number;
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
  /** The head as of this process's last commit; a stale value only costs one failed condition. */
  head: ChainHead | undefined;
}

const MAX_TRANSACTION_ITEMS = 100;
/** Most blocks one caller may commit atomically: every block is one item, and the head takes one more. */
export const MAX_ATOMIC_BLOCKS = MAX_TRANSACTION_ITEMS - 1;
/** DynamoDB caps a transaction at 4 MB; stay well under it (a block item holds its body and its indexes). */
export const MAX_BATCH_BYTES = 1_500_000;

/** Rejection of an atomic set of blocks that cannot fit one DynamoDB transaction. */
export class AtomicLimitError extends UnprocessableError {}

/** Serialized size of a draft as the appender budgets it (the block around it adds about 512 bytes). */
export function draftBytes(draft: BlockDraft): number {
  return Buffer.byteLength(JSON.stringify(draft.events)) + 512;
}
/** How long a reserved turn stays reserved if its holder never commits (e.g. it crashed). */
const TURN_RESERVATION_MS = 1_000;
const BACKOFF_BASE_MS = 5;
const BACKOFF_CAP_MS = 250;

const defaultNow = () => Date.now() / 1000;
const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class ChainAppender {
  /** Names this process's writer in turn reservations. */
  readonly writerId = randomUUID();
  readonly counters: AppenderCounters = { blocksAppended: 0, eventsAppended: 0, commits: 0, conflicts: 0 };
  private readonly queues = new Map<string, ChainQueue>();
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;

  constructor(
    private readonly repository: LedgerRepository,
    private readonly options: AppenderOptions,
  ) {
    this.now = options.now ?? defaultNow;
    this.sleep = options.sleep ?? defaultSleep;
    this.random = options.random ?? Math.random;
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
    const items = drafts.reduce((n, d) => n + (d.proof ? 2 : 1), 0);
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
        new AtomicLimitError(
          `The blocks take about ${bytes} bytes; at most ${MAX_BATCH_BYTES} bytes commit atomically (move large details off chain)`,
        ),
      );
    }
    let queue = this.queues.get(chainName);
    if (!queue) {
      queue = { pending: [], running: false, head: undefined };
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
          await this.commitBatch(chainName, queue, batch);
        } catch (error) {
          // Nothing may wait forever: an unexpected failure answers the whole batch.
          queue.head = undefined;
          for (const p of batch) p.reject(error);
        }
      }
    } finally {
      queue.running = false;
      if (queue.pending.length === 0 && queue.head === undefined) this.queues.delete(chainName);
    }
  }

  private takeBatch(queue: ChainQueue): Pending[] {
    const batch: Pending[] = [];
    let items = 1; // the head update
    let bytes = 0;
    let blocks = 0;
    while (queue.pending.length > 0) {
      const next = queue.pending[0]!;
      // The first caller always goes (appendAll checked it fits); others join while everything fits.
      if (
        batch.length > 0 &&
        (blocks + next.drafts.length > this.options.batchMax ||
          items + next.items > MAX_TRANSACTION_ITEMS ||
          bytes + next.bytes > MAX_BATCH_BYTES)
      ) {
        break;
      }
      batch.push(queue.pending.shift()!);
      items += next.items;
      bytes += next.bytes;
      blocks += next.drafts.length;
    }
    return batch;
  }

  private async commitBatch(chainName: string, queue: ChainQueue, batch: Pending[]): Promise<void> {
    let attempt = 0;
    while (batch.length > 0) {
      attempt += 1;
      if (attempt > this.options.maxAttempts) {
        const error = new ChainContendedError(chainName, this.options.maxAttempts);
        for (const p of batch) p.reject(error);
        return;
      }
      try {
        queue.head ??= await this.repository.getHead(chainName);
      } catch (error) {
        for (const p of batch) p.reject(error);
        return;
      }
      let head = queue.head;
      if (!head) {
        const error = new ChainNotFoundError(chainName);
        for (const p of batch) p.reject(error);
        return;
      }
      if (!head.frontier) {
        // A chain from before trees were kept: build its tree once, then append on it.
        head = queue.head = await ensureTree(this.repository, head);
      }

      const drafts = batch.flatMap((p) => p.drafts);
      /** Which caller each block belongs to. */
      const owners = batch.flatMap((p) => p.drafts.map(() => p));
      const blocks = buildBlocks(chainName, head, drafts, this.now);
      const tree = extendTree(head.frontier!, head.headIndex + 1, blocks.map((b) => b.hash));
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

      let result;
      try {
        result = await this.repository.commitBlocks({
          chainName,
          writerId: this.writerId,
          nowMs: this.now() * 1000,
          expectedHeadIndex: head.headIndex,
          blocks,
          treeNodes: tree.treeNodes,
          frontier: tree.frontier,
          proofRecords,
        });
      } catch (error) {
        // The outcome is unknown (a timeout may still have committed): re-read the head next time.
        queue.head = undefined;
        for (const p of batch) p.reject(error);
        return;
      }

      switch (result.status) {
        case 'committed': {
          const last = blocks[blocks.length - 1]!;
          const events = blocks.reduce((n, b) => n + b.events.length, 0);
          queue.head = {
            ...head,
            headIndex: last.index,
            headHash: last.hash,
            frontier: tree.frontier,
            eventCount: head.eventCount + events,
            proofCount: head.proofCount + proofRecords.length,
          };
          this.counters.commits += 1;
          this.counters.blocksAppended += blocks.length;
          this.counters.eventsAppended += events;
          let next = 0;
          for (const p of batch) {
            p.resolve(blocks.slice(next, next + p.drafts.length));
            next += p.drafts.length;
          }
          return;
        }
        case 'head-moved':
          this.counters.conflicts += 1;
          // The head handed back is fresh: rebuild on it at once. A writer with a backlog sends its
          // next commit the moment the last one lands, so a loser can lose every race however it
          // backs off; after a repeated loss it reserves the next turn instead, which other writers
          // respect until it commits or the reservation expires.
          queue.head = result.head;
          if (attempt > 1 && result.head) {
            const nowMs = this.now() * 1000;
            const reserved = await this.repository.reserveTurn(chainName, this.writerId, nowMs, nowMs + TURN_RESERVATION_MS);
            if (reserved) {
              queue.head = reserved;
            } else {
              await this.backoff(attempt);
              queue.head = undefined;
            }
          }
          break;
        case 'conflict':
          this.counters.conflicts += 1;
          queue.head = undefined;
          await this.backoff(attempt);
          break;
        case 'proof-stale': {
          // Not contention: that anchor is redundant. Answer its caller, retry the others at once.
          const stale = owners[result.blockPosition]!;
          batch.splice(batch.indexOf(stale), 1);
          stale.reject(new ProofSupersededError(drafts[result.blockPosition]!.proof?.subChain ?? ''));
          attempt -= 1;
          break;
        }
      }
    }
  }

  /** Full jitter: a random wait up to an exponentially growing cap. */
  private backoff(attempt: number): Promise<void> {
    const cap = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
    return this.sleep(Math.floor(this.random() * cap));
  }
}

/**
 * The blocks that `drafts` become on top of `head`: consecutive indices, each linked to the one before,
 * every event given its id and place, sealed with its hash. `now` gives each block its timestamp (seconds).
 */
export function buildBlocks(chainName: string, head: Pick<ChainHead, 'headIndex' | 'headHash'>, drafts: BlockDraft[], now: () => number): Block[] {
  const blocks: Block[] = [];
  let previousHash = head.headHash;
  let index = head.headIndex;
  for (const draft of drafts) {
    index += 1;
    const timestamp = Math.round(now() * 1000) / 1000;
    const block = sealBlock({
      index,
      chain_name: chainName,
      timestamp,
      previous_hash: previousHash,
      events: draft.events.map((event, position) => ({
        event_id: `${chainName}_${index}_${position}`,
        chain_name: chainName,
        block_index: index,
        entity_id: event.entity_id,
        event_type: event.event_type,
        details: event.details,
        details_cid: event.details_cid,
        details_nonce: event.details_nonce,
        details_metadata: event.details_metadata,
        timestamp,
        is_offchain: event.is_offchain,
      })),
    });
    blocks.push(block);
    previousHash = block.hash;
  }
  return blocks;
}
