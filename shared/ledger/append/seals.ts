/**
 * Where a pending append was sealed: a waiting writer's cheap looks (seals, the newest segments), and the
 * complete answer that writing it again, or answering an error, rests on.
 *
 * Invariant kept here: the head's newest metadata, then every segment after a point, read strongly in that
 * order, hold every round committed up to that head (a round's segment is written before the next commit
 * takes its metadata off the head). An append not found there was sealed by no such round. An append found
 * at its key whose blocks are not its drafts' is another writer's (ForeignAppendError).
 */
import { type BlockMeta, type MetaRun, type PendingRef, pendingSkMs } from '../block-meta.ts';
import { SEALS_KEPT_SECONDS } from '../repository.ts';
import { type BlockDraft, buildBlocks } from '../blocks.ts';
import type { Block, ChainHead } from '../types.ts';
import type { AppenderCore } from './core.ts';
import { ForeignAppendError, pickRef, pickSealed } from './parts.ts';
import { recentRun } from './recovery.ts';
import { type ReceiptLook, RECEIPTS_READ, SWEEP_READ } from './settings.ts';

/**
 * How old (by its key, its writer's clock) an append may be for its shard's seals to be trusted as complete:
 * half the time they are kept, whatever the clocks' skew.
 */
const SEALS_TRUSTED_MS = (SEALS_KEPT_SECONDS * 1000) / 2;

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
export async function findSealed(
  a: AppenderCore,
  chainName: string,
  ref: PendingRef,
  after: number,
  how: { receipt: number; look: ReceiptLook; writtenMs: number } | { head?: ChainHead; headLooked?: boolean; seals?: boolean } = {},
): Promise<{ metas: Omit<BlockMeta, 'nodes'>[]; prev: string } | undefined> {
  const pick = (run: MetaRun) => pickRef(run, ref);
  if ('receipt' in how) {
    if (how.look.seals) {
      // The shard's newest few seals; when the oldest of them is newer than the append (its round may be older,
      // on a chain of many rounds), the next looks go through the seals after `from` oldest first, as the
      // segments' looks do below. (Without it, from 512 instances writers missed their seals, read every segment
      // for the whole answer instead, and throttled the segments' partition: found by bench:cloud.)
      const { look } = how;
      const from = Math.max(after, look.from) + 1;
      const seals = await a.timed(chainName, () =>
        a.repository.readSeals(chainName, ref.shard, from, look.sweep ? SWEEP_READ : RECEIPTS_READ, { oldest: look.sweep }),
      );
      const sealed = pickSealed(seals, ref);
      if (sealed) return sealed.metas.length === how.receipt ? sealed : undefined;
      if (look.sweep) {
        // Every seal read is not its round's: the next look starts after them, the newest few again once through.
        look.more = seals.length === SWEEP_READ;
        if (seals.length > 0) look.from = Math.max(look.from, seals.at(-1)!.last);
        if (!look.more) look.sweep = false;
        look.gap = false;
      } else {
        look.gap = seals.length === RECEIPTS_READ && (seals[0]!.entries[0]?.timestamp ?? 0) * 1000 > how.writtenMs;
        if (look.gap) look.sweep = true;
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
    const runs = await a.timed(chainName, () =>
      look.sweep
        ? a.repository.readSegments(chainName, look.from + 1, SWEEP_READ, false)
        : a.repository.readNewestSegments(chainName, look.from + 1, RECEIPTS_READ),
    );
    look.more = look.sweep && runs.length === SWEEP_READ;
    look.gap = !look.sweep && runs.length === RECEIPTS_READ && runs[0]!.blocks[0]!.timestamp * 1000 > how.writtenMs;
    const parts = runs.flatMap((run) => pick(run) ?? []);
    const metas = parts.flatMap((part) => part.metas);
    if (metas.length === how.receipt) return { metas, prev: parts[0]!.prev };
    if (parts.length > 0) {
      // A batch cut over segments, some outside what was read: next time from the batch's first block, which
      // the first block found names by its position in the append. The first block found is not the first
      // when the batch began in a segment before those read (the newest few): a look restarted there never
      // read that segment again, and its writer waited for the whole answer (600-1,000 ms of 4 instances'
      // batches of 98 in bench:cloud, where the round had sealed them at once).
      const found = parts[0]!.metas[0]!;
      look.from = Math.max(after, found.index - found.position - 1);
      look.sweep = true;
    } else if (runs.length > 0 && (look.sweep || runs.length < RECEIPTS_READ)) {
      // Every segment after `from` up to the last read is not its round: the next look starts after them.
      look.from = Math.max(look.from, runs.at(-1)!.blocks.at(-1)!.index);
    }
    if (look.gap) look.sweep = true;
    return undefined;
  }
  const head = how.head ?? (await a.repository.getHead(chainName));
  if (head && !how.headLooked) {
    const recent = await recentRun(a, head);
    const newest = recent ? pick(recent) : undefined;
    if (newest) return newest;
  }
  // An append written in a shard other than the first was written when the chain had several: every round
  // that may seal it writes that shard's seal, with all of its blocks, before the next commit takes the round's
  // metadata off the head (shards only grow, and a round's commit is on the head it read): the shard's seals
  // after `after`, read strongly, are as complete an answer as the segments, and a writer reads its shard's
  // partition, not the one all writers share (from 512 instances the segments' partition throttled). Only
  // while they are kept: for an append written long ago (a retry of its Idempotency-Key hours later), TTL may
  // have taken its seal, and the segments answer. (Without it, such a retry found no seal, took its append
  // for never sealed and appended it again: found by the simulation's late retries.)
  // The same holds for an append in the first shard whose writer knew the chain spread before writing it
  // (`seals`, ReceiptLook.seals): without it, such writers on a busy chain paged through every segment since
  // their append, on the partition every writer shares (found by bench:cloud at 1,024 instances).
  if ((ref.shard >= 1 || ('seals' in how && how.seals === true)) && a.nowMs() - pendingSkMs(ref.sk) < SEALS_TRUSTED_MS) {
    for (let from = after + 1; ; ) {
      const seals = await a.repository.readSeals(chainName, ref.shard, from, SWEEP_READ, { oldest: true, consistent: true });
      const sealed = pickSealed(seals, ref);
      if (sealed) return sealed;
      if (seals.length < SWEEP_READ) return undefined;
      from = seals.at(-1)!.last + 1;
    }
  }
  // A batch's blocks are consecutive, but a round's metadata is cut into segments under 4 KB: the
  // batch may go on in the next segment (and the next page). Its blocks are all there or none are.
  let found: { metas: BlockMeta[]; prev: string } | undefined;
  for (let from = after + 1; ; ) {
    const runs = await a.repository.readSegments(chainName, Math.max(0, from), 8, true);
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

/** The blocks a sealed append became, rebuilt from its drafts and checked against their hashes. */
export function fromMeta(a: AppenderCore, chainName: string, drafts: BlockDraft[], sealed: { metas: Omit<BlockMeta, 'nodes'>[]; prev: string }): Block[] {
  const first = sealed.metas[0]!;
  const times = sealed.metas.map((m) => m.timestamp);
  let i = 0;
  const blocks = buildBlocks(chainName, { headIndex: first.index - 1, headHash: sealed.prev }, drafts, () => times[Math.min(i++, times.length - 1)]!);
  blocks.forEach((block, k) => {
    if (block.hash !== sealed.metas[k]?.hash) throw new ForeignAppendError(chainName);
  });
  a.weatherOf(chainName).headIndex = Math.max(a.weatherOf(chainName).headIndex, blocks.at(-1)!.index);
  return blocks;
}

/** The blocks a sealed append became, if they are these drafts' (else undefined: another writer's append at that key). */
export function matching(
  a: AppenderCore,
  chainName: string,
  drafts: BlockDraft[],
  sealed: { metas: Omit<BlockMeta, 'nodes'>[]; prev: string },
): Block[] | undefined {
  try {
    return fromMeta(a, chainName, drafts, sealed);
  } catch (error) {
    if (error instanceof ForeignAppendError) return undefined;
    throw error;
  }
}
