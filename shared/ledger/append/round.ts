/**
 * A leader's round (docs/appending.md, "Leading"): holding the lease, it reads the pending appends above the
 * cursor, commits them with its own, writes their records and segment, and goes on while appends wait.
 *
 * Invariant kept here: sealed exactly once. A round seals only appends above the cursor it read (and old
 * enough to have landed), and its commit, conditional on that cursor, moves the cursor past them. The
 * leader's own blocks, once committed, are answered whatever fails later; its own append not committed is
 * withdrawn (withdraw.ts) before the lease goes, so it cannot land after its caller is told it failed.
 */
import { remainingMs } from '../../deadline.ts';
import { ChainContendedError, ChainNotFoundError, DeadlineExceededError } from '../../errors.ts';
import { type MetaRun, type PendingRef, pendingSk, pendingSkMs } from '../block-meta.ts';
import { type BlockDraft, draftBytes, MAX_TRANSACTION_ITEMS, transactionItems } from '../blocks.ts';
import { ensureTree } from '../tree.ts';
import type { Block, ChainHead } from '../types.ts';
import type { AppenderCore } from './core.ts';
import { attemptCommit, build, landed, roundCommit } from './direct-commit.ts';
import { nthAfter, refusalError, unitAt } from './parts.ts';
import { flushRecent, placeRecent, writeRound } from './recovery.ts';
import { plan, spreadTo } from './round-plan.ts';
import { findSealed, matching } from './seals.ts';
import {
  CLAIM_LOST,
  INLINE_FROM_BLOCKS,
  MAX_PENDING_BYTES,
  MAX_SETTLE_MS,
  NO_LATER_KEY,
  NOTHING_WRITTEN,
  OVERLAP_FROM_EVENTS,
  PENDING_READ_LIMIT,
  PROOF_SUPERSEDED,
  refKey,
  ROUND_RESERVE_MS,
  typical,
  type Unit,
} from './settings.ts';
import { PendingKeysTakenError, putPending, settledOutcome } from './withdraw.ts';

/**
 * Holds the lease: commits `own` (if any) and the pending appends it finds, round after round, writes
 * their records and segments, then gives the lease back. Answers the blocks of `own`; or, when the
 * lease was lost with `own` still pending, where `own` waits (its writer follows it from there).
 * `mustSeal`: a pending append of this instance's that may be sealed however fresh it is.
 */
export async function lead(
  a: AppenderCore,
  chainName: string,
  acquiredHead: ChainHead,
  own: BlockDraft[] | undefined,
  mustSeal?: string,
): Promise<{ blocks?: Block[]; ref?: PendingRef }> {
  const started = a.nowMs();
  let head: ChainHead = acquiredHead.frontier ? acquiredHead : await ensureTree(a.repository, acquiredHead);
  const ownFits = !own || own.reduce((n, d) => n + draftBytes(d), 0) <= MAX_PENDING_BYTES;
  // Many blocks that fit one transaction with their records go with the commit too (INLINE_FROM_BLOCKS).
  const ownWhole = own !== undefined && own.length >= INLINE_FROM_BLOCKS && 1 + transactionItems(own) <= MAX_TRANSACTION_ITEMS;
  let ownUnit: Unit | undefined = own ? { drafts: own, ref: NOTHING_WRITTEN, inline: !ownFits || ownWhole } : undefined;
  let ownBlocks: Block[] | undefined;
  let ownError: unknown;
  let attempt = 0;
  /** Times our cursor was found stale (every key above it sealed by others): each time the lease is taken again. */
  let staleCursors = 0;
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
  /**
   * Our lease lapsed, and another instance may lead now: take it again and lead from the head as it is ('again'); or
   * leave the chain to whoever leads ('left': our own append, not landed, is answered 503); or, our own append still
   * pending above the new cursor, follow it from there (its key).
   */
  const leadAgain = async (): Promise<'again' | 'left' | PendingRef> => {
    const lease = await a.takeLease(chainName);
    if (!lease.head) throw new ChainNotFoundError(chainName);
    if (!lease.acquired) {
      leased = false;
      if (ownUnit && !ownUnit.inline && ownUnit.ref.sk !== '' && ownUnit.ref.sk > (lease.head.cursor ?? '')) return ownUnit.ref;
      if (ownUnit) ownError = new ChainContendedError(chainName, a.options.maxAttempts);
      return 'left';
    }
    head = lease.head.frontier ? lease.head : await ensureTree(a.repository, lease.head);
    return 'again';
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
      if (!inFlight && (head.recent || (head.materialized ?? head.headIndex) < head.headIndex)) head = await flushRecent(a, head);
      // A small round's records are written before the next round's read: that wait is short, and the appends
      // that come meanwhile join the next round rather than wait for another (each round writes the head and
      // a segment whatever its size). A large one's are written while the next round is read and built.
      if (inFlight && inFlight.events < OVERLAP_FROM_EVENTS) await settle();
      // A crowded chain: after a small round that served several others (its records written just above), the
      // next round's appends gather for a round's time.
      if (gather) {
        gather = false;
        await a.sleep(Math.min(MAX_SETTLE_MS, a.weatherOf(chainName).roundMs));
      }
      const cursor = head.cursor ?? '';
      // Our own pending append below the cursor: another leader sealed it while our lease had lapsed, or read
      // past it before it landed. Sealed, it is answered from where it was sealed; only a skipped one is written
      // again. (Written again unseen, a sealed append landed twice: found by the deterministic simulation.)
      if (ownUnit && !ownUnit.inline && ownUnit.ref.sk !== '' && ownUnit.ref.sk <= cursor) {
        const sealed = await findSealed(a, chainName, ownUnit.ref, acquiredHead.headIndex, { head });
        const blocks = sealed && matching(a, chainName, ownUnit.drafts, sealed);
        if (blocks) {
          ownBlocks = blocks;
          ownUnit = undefined;
          if (a.nowMs() - started >= a.maxLeadMs) break;
          continue;
        }
      }
      // Our own drafts as a pending append just above the cursor (sealing it skips nobody), beside the read.
      // Its key is known before the write: a read that fails beside it must not leave it unknown (see settleFailed).
      const unit = ownUnit;
      const ownPut =
        unit && !unit.inline && (unit.ref.sk === '' || unit.ref.sk <= cursor)
          ? putPending(
              a,
              chainName,
              unit.drafts,
              (n) => ({ shard: 0, sk: nthAfter(cursor, n + 1) }),
              (candidate) => (unit.ref = candidate),
            )
          : undefined;
      const shards = head.pendingShards ?? 1;
      a.counters.pendingReads += 1;
      const readSentMs = a.nowMs();
      let read: Awaited<ReturnType<typeof a.repository.listPending>>;
      let ownRef: PendingRef | undefined;
      try {
        [read, ownRef] = await Promise.all([a.repository.listPending(chainName, shards, cursor, NO_LATER_KEY, PENDING_READ_LIMIT), ownPut]);
      } catch (error) {
        if (!(error instanceof PendingKeysTakenError) || (staleCursors += 1) > a.options.maxAttempts) throw error;
        // The keys above our cursor were all sealed by others: our lease lapsed meanwhile and the head moved on.
        // Nothing of ours was written; lead again from the head as it is, or leave it to whoever leads now.
        a.counters.conflicts += 1;
        const next = await leadAgain();
        if (next === 'left') break;
        if (next !== 'again') return { ref: next };
        continue;
      }
      if (ownUnit && ownRef) ownUnit.ref = ownRef;
      // Appends written a moment ago wait (older keys may still be on their way); a writer that leads for its own may seal it.
      // "A moment ago" counts back from when the read was sent, not from its answer: the read may have been
      // served anywhere between the two, and an append keyed before it was served may land after.
      const settleMs = a.settleFor(chainName);
      const settledTo = pendingSk(Math.max(readSentMs - settleMs, pendingSkMs(mustSeal ?? '')), 'ffffffffffff');
      const others = read.appends.filter((p) => !ownUnit || refKey(p.ref) !== refKey(ownUnit.ref));
      const waiting = others.filter((p) => p.ref.sk <= settledTo);
      const fresh = others.filter((p) => p.ref.sk > settledTo);
      if (others.length > 0) a.weatherOf(chainName).othersSeenMs = a.nowMs();
      // Many waiting: spread the next ones over more partitions, as many doublings as the crowd asks for
      // (recorded by this round's commit).
      const grown = spreadTo(read.appends.length, others, shards, a.shards);
      const { units, cursorAfter } = plan(a, ownUnit, waiting, read.truncatedAt, cursor, refused);
      if (units.length === 0) {
        await settle();
        // Serving nobody else, we may be alone: remember the head for a direct commit next time.
        if (own && ownBlocks && !servedOthers && fresh.length === 0) a.weatherOf(chainName).head = { ...head, turnHolder: null, turnExpiresMs: null };
        // Only refused appends: the cursor passes them, so that their writers read why.
        if (cursorAfter > cursor) await a.repository.withdraw(chainName, cursorAfter);
        // Only appends too fresh to seal, and time to go on: wait for them to settle.
        if (fresh.length > 0 && a.nowMs() - started < a.maxLeadMs) {
          await a.sleep(Math.max(1, pendingSkMs(fresh[0]!.ref.sk) + settleMs - a.nowMs() + 1));
          continue;
        }
        break;
      }
      attempt += 1;
      const built = build(a, chainName, head, units);
      const { blocks, frontier, metas, proofRecords } = built;
      const run: MetaRun = { prev: head.headHash, blocks: metas };
      const recent = await placeRecent(a, chainName, run);
      // Our own drafts too large for a pending append are written as records with the commit (they come first).
      const inlineRecords = ownUnit?.inline && units[0] === ownUnit ? blocks.slice(0, ownUnit.drafts.length) : [];
      servedOthers ||= units.some((u) => u !== ownUnit);
      // The last round's metadata leaves the head with this commit: its segment must be written first.
      await settle();
      const result = await attemptCommit(a, roundCommit(a, head, built, { recent, cursor, cursorAfter, records: inlineRecords, grown }));
      if (result.status === 'failed') {
        if (!result.head || attempt >= a.options.maxAttempts) throw result.error;
        head = await a.retake(chainName, result.head);
        continue;
      }
      switch (result.status) {
        case 'committed': {
          const committed = landed(
            a,
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
          const committedMs = a.nowMs();
          const weather = a.weatherOf(chainName);
          weather.roundMs = typical(weather.roundMs, committedMs - readSentMs);
          // Every round costs a head write and a segment whatever its size. On a chain where a small round
          // served several other instances, more are arriving: once its records are written, the next read
          // waits a round's time, and takes what gathered in one round, not two. A round that served one other
          // (two instances taking turns) or none is followed at once: nothing would gather.
          const siblings = units.filter((u) => u !== ownUnit && u.ref.sk !== mustSeal).length;
          gather = a.gatherSiblings > 0 && siblings >= a.gatherSiblings && blocks.length < OVERLAP_FROM_EVENTS;
          // The records written with the commit (our own, inline) are not written again.
          const done = writeRound(a, chainName, blocks.slice(inlineRecords.length), run, shards).then(() => {
            weather.writeMs = typical(weather.writeMs, a.nowMs() - committedMs);
          });
          done.catch(() => undefined);
          inFlight = { done, last: committed.headIndex, events: blocks.length };
          head = committed;
          if (ownUnit && units[0] === ownUnit) {
            ownBlocks = blocks.slice(0, ownUnit.drafts.length);
            ownUnit = undefined;
          }
          attempt = 0;
          a.weatherOf(chainName).headIndex = head.headIndex;
          // Go on while the time allows (the next read says whether appends wait); else give the lease back,
          // saying the records are written.
          if (!ownUnit && a.nowMs() - started >= a.maxLeadMs) {
            await settle();
            // Serving nobody else, we may be alone: remember the head for a direct commit next time.
            a.weatherOf(chainName).head = own && !servedOthers ? { ...head, turnHolder: null, turnExpiresMs: null } : undefined;
            break rounds;
          }
          break;
        }
        case 'head-moved': {
          a.counters.conflicts += 1;
          a.weatherOf(chainName).othersSeenMs = a.nowMs();
          if (!result.head) throw new ChainNotFoundError(chainName);
          if (result.head.turnHolder === a.writerId) {
            // Still ours: the cursor moved (a follower withdrew). Build again on the head as it is.
            head = result.head.frontier ? result.head : await ensureTree(a.repository, result.head);
            continue;
          }
          // The lease lapsed and another instance leads now.
          const next = await leadAgain();
          if (next === 'left') break rounds;
          if (next !== 'again') return { ref: next };
          break;
        }
        case 'conflict':
          a.counters.conflicts += 1;
          if (attempt >= a.options.maxAttempts) {
            // Too contended to go on: our own caller gets a 503; pending writers lead or withdraw themselves.
            if (ownUnit) ownError = new ChainContendedError(chainName, a.options.maxAttempts);
            break rounds;
          }
          await a.backoff(attempt);
          break;
        case 'proof-stale':
        case 'claim-lost': {
          // An anchor already superseded, or a request whose Idempotency-Key a later attempt holds now:
          // refuse that unit's blocks, keep the rest.
          const reason = result.status === 'proof-stale' ? PROOF_SUPERSEDED : CLAIM_LOST;
          const owner = unitAt(units, result.blockPosition);
          if (owner === ownUnit) {
            ownError = refusalError(chainName, owner.drafts, reason);
            ownUnit = undefined;
          } else {
            // Its writer reads why from the refusal; the cursor passes it with the next commit.
            await a.repository.putRefusal(chainName, owner.ref, reason);
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
    if (ownUnit && ownError && !ownUnit.inline)
      ({ blocks: ownBlocks, error: ownError } = await settledOutcome(a, chainName, ownUnit, acquiredHead.headIndex, ownError));
    // Given back saying what is written: with the newest blocks in a segment, the head drops their metadata.
    if (leased) {
      a.counters.roundWrites += 1;
      await a.giveBack(chainName, head);
    }
  }
  if (ownError) throw ownError;
  if (own && !ownBlocks) throw new ChainContendedError(chainName, a.options.maxAttempts);
  return { blocks: ownBlocks };
}
