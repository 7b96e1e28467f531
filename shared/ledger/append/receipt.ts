/**
 * A follower's receipt (docs/appending.md, "Following"): it writes a pending append and looks for the round
 * that sealed it, as seldom as it can; it leads when nobody does.
 *
 * Invariant kept here: a writer answers only blocks rebuilt from its own drafts that hash to what a committed
 * round recorded, once their records are written (its block is readable when it answers); it writes its
 * append again only when strong reads of the head and every segment since show that no round sealed it.
 */
import { ChainContendedError, ChainNotFoundError } from '../../errors.ts';
import type { BlockMeta, PendingRef } from '../block-meta.ts';
import type { BlockDraft } from '../blocks.ts';
import type { Block } from '../types.ts';
import type { AppenderCore } from './core.ts';
import { pickRef, refusalError } from './parts.ts';
import { recentRun } from './recovery.ts';
import { lead } from './round.ts';
import { findSealed, fromMeta } from './seals.ts';
import { MAX_FIRST_LOOK_MS, MAX_LOOK_INTERVAL_MS, NOTHING_WRITTEN, type ReceiptLook, typical } from './settings.ts';
import { followerRef, preboundRef, putPending, settleFailed } from './withdraw.ts';

/** Hands the drafts to the chain's leader as a pending append (or waits for one already written) and answers its blocks. */
export async function follow(a: AppenderCore, chainName: string, drafts: BlockDraft[], deadline: number, written?: PendingRef): Promise<Block[]> {
  const weather = a.weatherOf(chainName);
  weather.othersSeenMs = a.nowMs();
  const after = weather.headIndex;
  // `after`: no block up to it can be this append's (what a decision to write it again rests on);
  // `look`: where its writer's next look for its receipt starts, and how (moved on by looks that missed it).
  // `seals` (ReceiptLook.seals): what the writer knows of the chain's shards before it writes; of an append
  // already written, only what its shard says.
  const seals = written ? written.shard >= 1 : weather.pendingShards >= 2;
  const state = { ref: written ?? NOTHING_WRITTEN, after, look: { from: after, sweep: false, seals } };
  try {
    if (!written) {
      // At the key its Idempotency-Key's record was made naming, if it was (then no bind before the write).
      const prebound = preboundRef(drafts);
      await putPending(
        a,
        chainName,
        drafts,
        (attempt) => (attempt === 0 && prebound ? prebound : followerRef(a, chainName)),
        (candidate) => (state.ref = candidate),
      );
    }
    const writtenMs = a.nowMs();
    a.counters.followed += 1;
    return await awaitSeal(a, chainName, drafts, state, writtenMs, deadline);
  } catch (error) {
    const sealed = await settleFailed(a, chainName, drafts, state.ref, state.after, error);
    if (sealed) return sealed;
    throw error;
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
export async function awaitSeal(
  a: AppenderCore,
  chainName: string,
  drafts: BlockDraft[],
  state: { ref: PendingRef; after: number; look: ReceiptLook },
  writtenMs: number,
  deadline: number,
): Promise<Block[]> {
  const weather = a.weatherOf(chainName);
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
    const found = a.nowMs();
    const ready = Math.max(1, (Math.min(Math.max(committed, missedMs), found) + found) / 2 - writtenMs);
    weather.receiptDevMs = typical(weather.receiptDevMs, Math.abs(ready - weather.receiptMs));
    weather.receiptMs = typical(weather.receiptMs, ready);
    return fromMeta(a, chainName, drafts, sealed);
  };
  // Looks thin out as the wait grows: a long wait is a slow or crowded chain, where every waiting writer
  // looking often would be most of its load (and push its rounds further out). None sleeps past the deadline.
  const after = (ms: number) => Math.min(Math.max(ms, (a.nowMs() - writtenMs) / 4, 5), MAX_LOOK_INTERVAL_MS, Math.max(1, deadline - a.nowMs()));
  for (;;) {
    await a.sleep(delay);
    delay = after(Math.max(expected() / 4, weather.receiptDevMs));
    if (a.nowMs() < nextHeadCheck && a.nowMs() < deadline) {
      const looked = a.nowMs();
      const lookedFrom = state.look.from;
      const receipt = await findSealed(a, chainName, state.ref, state.after, { receipt: drafts.length, look: state.look, writtenMs });
      if (receipt) return done(receipt);
      // A look that may have read past its round says nothing of when it became readable (what the first look's
      // time is learnt from): the next look goes through what it skipped, at once.
      if (state.look.gap) {
        delay = 0;
        continue;
      }
      // A sweep of the segments that read a whole page and moved past it goes on at once: the segments after it
      // are written, and its receipt may be among them. Waiting a look's interval between pages kept writers
      // 100-200 ms from receipts already written (bench:cloud, single events at 256 instances: p99 706 ms
      // before, 228 after; batches of 98 from 4 instances: see test/unit/simulation.test.ts). Not a sweep of a
      // shard's seals: on a chain spread over shards (1,024 instances) the seals' partitions are the hot ones,
      // and going on at once there too appended 6 % less. Nor a page that did not move it on (one holding part
      // of its batch: the next look starts at the batch's first block again).
      if (!state.look.seals && state.look.sweep && state.look.more && state.look.from > lookedFrom) {
        missedMs = looked;
        delay = 0;
        continue;
      }
      missedMs = looked;
      // A sweep that has not reached the newest segment yet says nothing of whether it is there: it goes on.
      if (passedMs !== undefined && !state.look.more) {
        passedMisses += 1;
        // Its leader was done: no need to wait for the next look at the head.
        if (passedDone) {
          nextHeadCheck = a.nowMs();
          delay = 0;
        }
      }
      // On a chain with one pending shard (a quiet one), a receipt not there at the first look may mean that
      // nobody leads any more (the last leader gave the lease back before this append landed): the next
      // look is at the head.
      if (weather.pendingShards < 2 && !missedOnce) nextHeadCheck = a.nowMs();
      missedOnce = true;
      continue;
    }
    // The head only every few rounds (less often as the wait grows): on a busy chain every writer reading it
    // would make it the hot partition. But at least every MAX_LOOK_INTERVAL_MS: four receipt times of a chain of
    // batches are seconds, and some receipts (a round's metadata in a round item), and a dead leader's lease
    // gone, show only on the head.
    nextHeadCheck = a.nowMs() + Math.min(Math.max(4 * expected(), 200, (a.nowMs() - writtenMs) / 2), MAX_LOOK_INTERVAL_MS);
    if (a.nowMs() >= deadline) throw new ChainContendedError(chainName, a.options.maxAttempts);
    // A look reads the head eventually consistent (half the read units), so it may be a moment old. What
    // is done on it holds regardless: leading or finishing a round is a conditional write; a head, however
    // old, that has the cursor past the append has the rounds that sealed it on it or in the segments (a
    // round's segment is written before the next commit), and no later round can seal it. A chain created
    // a moment ago may not be there yet for a look: only a strong read says it is not.
    const head = (await a.timed(chainName, () => a.repository.lookHead(chainName))) ?? (await a.repository.getHead(chainName));
    if (!head) throw new ChainNotFoundError(chainName);
    a.saw(chainName, head);
    const leaseLive = !!head.turnHolder && (head.turnExpiresMs ?? 0) > a.nowMs();
    if ((head.cursor ?? '') < state.ref.sk) {
      // No round up to this head sealed it (however old the head): its receipt is further on.
      state.look = { from: Math.max(state.look.from, head.headIndex), sweep: false, seals: state.look.seals };
      // Not sealed yet: a round is on (ours comes after it: look again after about a round), or nobody
      // leads (the last leader gave the lease back before this append landed): lead.
      if (leaseLive) {
        delay = after(Math.min(expected(), MAX_FIRST_LOOK_MS));
        continue;
      }
      const lease = await a.takeLease(chainName);
      if (!lease.head) throw new ChainNotFoundError(chainName);
      if (lease.acquired) {
        await lead(a, chainName, lease.head, undefined, state.ref.sk);
        delay = 0;
      }
      continue;
    }
    // Past the cursor: sealed in the newest round (on the head), in an earlier one (a segment), refused, or skipped.
    // Most likely sealed: its receipt says so, at once if its leader is done, else once the records are
    // written (the head's metadata may be in a round item, a read more). Only if none comes, the whole
    // answer below.
    passedMs ??= a.nowMs();
    state.look.sweep = true;
    // Nobody leads and the head says every record is written: its leader is done, so its receipt is due now.
    // One more look for it, then (missed too) the whole answer. Otherwise it may still be on its way, for a while.
    passedDone = !leaseLive && (head.materialized ?? head.headIndex) >= head.headIndex;
    if (!(passedDone && passedMisses > 0) && a.nowMs() - passedMs < Math.max(4 * weather.writeMs, 200)) {
      delay = leaseLive ? after(Math.min(weather.writeMs / 2, 200)) : 0;
      continue;
    }
    const recent = await recentRun(a, head).catch(() => undefined);
    const newest = recent ? pickRef(recent, state.ref) : undefined;
    if (newest) {
      if ((head.materialized ?? head.headIndex) >= newest.metas.at(-1)!.index) return done(newest);
      if (leaseLive) {
        // Sealed; its records are being written.
        delay = after(Math.min(weather.writeMs / 2, 200));
        continue;
      }
      // Its leader died before writing its records: finish its round.
      const lease = await a.takeLease(chainName);
      if (lease.acquired) await lead(a, chainName, lease.head, undefined);
      delay = 0;
      continue;
    }
    // Every segment since it was written (not only the newest seals): writing it again must not duplicate it.
    const sealed = await findSealed(a, chainName, state.ref, state.after, {
      head,
      headLooked: recent !== undefined || !head.recent,
      seals: state.look.seals,
    });
    if (sealed) return done(sealed);
    const refusal = await a.repository.getRefusal(chainName, state.ref);
    if (refusal) throw refusalError(chainName, drafts, refusal);
    // Landed below the cursor after a leader read past it: write it again, above the cursor now.
    a.counters.rewrites += 1;
    state.after = head.headIndex;
    state.look = { from: head.headIndex, sweep: false, seals: weather.pendingShards >= 2 };
    await putPending(
      a,
      chainName,
      drafts,
      () => followerRef(a, chainName),
      (candidate) => (state.ref = candidate),
    );
    passedMs = undefined;
    passedMisses = 0;
    // Nobody leads (the head just read said so): read the head again at once, and lead.
    if (!leaseLive) nextHeadCheck = a.nowMs();
    delay = leaseLive ? firstLook() : 0;
  }
}
