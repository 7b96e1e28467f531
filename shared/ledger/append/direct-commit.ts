/**
 * The direct commit, and the commit every round sends. A lone writer (the last commit it knows of was its own)
 * commits straight on the head it remembers: one transaction with its blocks' records.
 *
 * Invariant kept here: a commit lands only on the head it was built on. It is conditional on the head index
 * and the cursor it read (and, for a direct commit, on no live lease), so two writers never both extend one
 * head. A commit whose answer was lost is settled by reading the head, never sent as a new commit: a direct
 * commit carries a ClientRequestToken, and a round commit refused by its own condition is recognised as ours
 * (isOwnCommit). A block is committed once.
 */
import { withGrace } from '../../deadline.ts';
import { type BlockMeta, type MetaRun, packedSize, splitRun } from '../block-meta.ts';
import { type BlockDraft, buildBlocks, MAX_TRANSACTION_ITEMS, transactionItems } from '../blocks.ts';
import type { CommitResult, KeyAnswer, ProofRecord, Recent, RoundCommit } from '../repository.ts';
import { extendTree } from '../tree.ts';
import type { Block, ChainHead } from '../types.ts';
import type { AppenderCore } from './core.ts';
import { IdempotencyClaimLostError, ProofSupersededError } from './parts.ts';
import { flushRecent } from './recovery.ts';
import { INLINE_BYTES, NOTHING_WRITTEN, type Unit } from './settings.ts';

/** One commit of the drafts on a remembered head, without the lease; undefined when that head was stale. */
export async function commitDirect(a: AppenderCore, chainName: string, remembered: ChainHead, drafts: BlockDraft[]): Promise<Block[] | undefined> {
  const weather = a.weatherOf(chainName);
  weather.head = undefined; // used once: whatever happens, the next commit learns the head anew unless this one lands
  if ((remembered.materialized ?? remembered.headIndex) < remembered.headIndex) return undefined; // a round to finish first: the long way
  const unit: Unit = { drafts, ref: NOTHING_WRITTEN, inline: true };
  const { blocks, frontier, metas, completions, proofRecords } = build(a, chainName, remembered, [unit]);
  // The newest blocks' metadata stays on the head while it packs small; else it goes to a segment in the same
  // transaction (metadata in a round item, a leader's, is written to its segment first).
  let base: ChainHead = remembered;
  let tail = remembered.recent && 'run' in remembered.recent && !remembered.recentFlushed ? remembered.recent.run : undefined;
  if (remembered.recent && !tail) {
    base = await flushRecent(a, remembered);
    tail = undefined;
  }
  const run: MetaRun = tail ? { prev: tail.prev, blocks: [...tail.blocks, ...metas] } : { prev: remembered.headHash, blocks: metas };
  const inline = packedSize(run.blocks) <= INLINE_BYTES;
  // Its records, the head and its segments in one transaction of at most 100 items; a larger one goes the
  // long way (a round writes its records after the commit), rather than being refused by DynamoDB.
  if (1 + transactionItems(drafts) + (inline ? 0 : splitRun(run).length) > MAX_TRANSACTION_ITEMS) return undefined;
  const recent: Recent = inline ? { run } : null;
  const last = blocks[blocks.length - 1]!.index;
  const result = await attemptCommit(a, {
    chainName,
    writerId: a.writerId,
    nowMs: a.nowMs(),
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
    a.counters.conflicts += 1;
    weather.othersSeenMs = a.nowMs();
    if (result.status === 'head-moved' && result.head) a.saw(chainName, result.head);
    if (result.status === 'proof-stale') throw new ProofSupersededError(drafts[result.blockPosition]?.proof?.subChain ?? '');
    if (result.status === 'claim-lost') throw new IdempotencyClaimLostError();
    return undefined;
  }
  weather.head = landed(
    a,
    base,
    blocks,
    frontier,
    { recent, materialized: last, recordsFrom: remembered.recordsFrom ?? remembered.headIndex + 1 },
    proofRecords.length,
  );
  weather.headIndex = last;
  return blocks;
}

/** The blocks `drafts` become on `head`, all with one timestamp (they commit together), and the tree after them. */
export function build(a: AppenderCore, chainName: string, head: ChainHead, units: readonly Unit[]) {
  const timestamp = Math.round(a.now() * 1000) / 1000;
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
  // An Idempotency-Key's answer is recorded in the commit's transaction for drafts written with it (a direct
  // commit, a leader's own too large to be pending: never bound to a pending append). A pending append's key
  // gets none: its record names the pending append, which answers a retry (a write unit an event saved).
  const completions: KeyAnswer[] = [];
  let blockPosition = 0;
  for (const unit of units) {
    for (const d of unit.drafts) {
      if (d.completes && unit.inline) completions.push({ claim: { id: d.completes.id, token: d.completes.token }, blockPosition, count: d.completes.count });
      blockPosition += 1;
    }
  }
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
export function landed(a: AppenderCore, head: ChainHead, blocks: Block[], frontier: string[], extra: Partial<ChainHead>, proofs = 0): ChainHead {
  const last = blocks[blocks.length - 1]!;
  const events = blocks.reduce((n, b) => n + b.events.length, 0);
  a.counters.commits += 1;
  a.counters.blocksAppended += blocks.length;
  a.counters.eventsAppended += events;
  return {
    ...head,
    headIndex: last.index,
    headHash: last.hash,
    frontier,
    eventCount: head.eventCount + events,
    proofCount: head.proofCount + proofs,
    // Every commit removes the head's mark that its recent metadata is in a segment (the storage's commitRound): the
    // recent metadata is now this commit's. Kept from `head`, a later direct commit took the run as written to a
    // segment and left it out of the head: the blocks of a direct commit that followed a round lost their place
    // (their records kept, unread by index), found by the simulation's shared instances (seed 155 of `shared`).
    recentFlushed: false,
    ...extra,
  };
}

/**
 * Commits a round. A commit whose outcome is unknown (a timeout may still have committed) is settled by
 * reading the head: landed is `committed`; otherwise `failed`, with the head as it was read.
 */
export async function attemptCommit(
  a: AppenderCore,
  commit: RoundCommit,
): Promise<CommitResult | { status: 'failed'; error: unknown; head: ChainHead | undefined }> {
  try {
    const result = await a.repository.commitRound(commit);
    // A leader's round commit is one conditional write: refused, it may still be ours. An earlier attempt of
    // this very write may have landed with its answer lost, the AWS SDK sending it again, and its condition
    // then refusing it (the head has moved: by our commit, and maybe by others' since). Taken as refused, the
    // blocks were built and committed a second time (found by the deterministic simulation). A direct
    // commit is a transaction with a ClientRequestToken: a second attempt answers as the first did.
    if (result.status === 'head-moved' && !('direct' in commit.mode) && (await isOwnCommit(a, commit, result.head))) return { status: 'committed' };
    return result;
  } catch (error) {
    // Settled even when the error was the invocation's deadline cutting the commit off: a short grace.
    return withGrace(500, async () => {
      const now = await a.repository.getHead(commit.chainName);
      return (await isOwnCommit(a, commit, now)) ? { status: 'committed' as const } : { status: 'failed' as const, error, head: now };
    }).catch(() => ({ status: 'failed' as const, error, head: undefined }));
  }
}

/** Whether the chain holds this commit's blocks: its head ends with them, or, moved on, holds its first at its index. */
export async function isOwnCommit(a: AppenderCore, commit: RoundCommit, head: ChainHead | undefined): Promise<boolean> {
  const first = commit.blocks[0]!;
  const last = commit.blocks[commit.blocks.length - 1]!;
  if (!head || head.headIndex < last.index) return false;
  if (head.headHash === last.hash) return true;
  const { blocks } = await a.repository.readMeta(commit.chainName, first.index, first.index, true);
  return blocks[0]?.hash === first.hash;
}

/** A leader's round commit on `head` (the lease extended with it), of what `build` made of its units. */
export function roundCommit(
  a: AppenderCore,
  head: ChainHead,
  built: ReturnType<typeof build>,
  round: { recent: Recent; cursor: string; cursorAfter: string; records: Block[]; grown: number | undefined },
): RoundCommit {
  return {
    chainName: head.chainName,
    writerId: a.writerId,
    nowMs: a.nowMs(),
    expectedHeadIndex: head.headIndex,
    expectedCursor: round.cursor,
    mode: { untilMs: a.nowMs() + a.leaseFor(head.chainName) },
    blocks: built.blocks,
    frontier: built.frontier,
    recent: round.recent,
    cursor: round.cursorAfter,
    materialized: head.headIndex,
    ...(head.recordsFrom === undefined ? { recordsFrom: head.headIndex + 1 } : {}),
    ...(round.records.length ? { records: round.records } : {}),
    ...(round.grown ? { pendingShards: round.grown } : {}),
    proofRecords: built.proofRecords,
    completions: built.completions,
  };
}
