/**
 * Writing a pending append once, and withdrawing it before any error is answered.
 *
 * Invariant kept here: an append answered 503 never lands later. Before an error is answered its key is below
 * the cursor (withdrawn, or certainly never written), or it is found sealed and its blocks are the answer.
 * When DynamoDB fails both the withdrawal and the look to the end, nothing is promised: a 500
 * (OutcomeUnknownError). A pending put whose answer was lost is known by its token (putOnce), not rewritten.
 */
import { randomBytes } from 'node:crypto';
import { remainingMs, withGrace } from '../../deadline.ts';
import { DependencyUnavailableError, OutcomeUnknownError } from '../../errors.ts';
import { type PendingRef, pendingSk, pendingSkMs } from '../block-meta.ts';
import type { BlockDraft } from '../blocks.ts';
import type { Block } from '../types.ts';
import type { AppenderCore } from './core.ts';
import { findSealed, matching } from './seals.ts';
import { NOTHING_WRITTEN, PENDING_TTL_SECONDS, type Unit } from './settings.ts';

/** Writes the drafts as a pending append (above `cursor`, in one of `shards` shards), a fresh key on a collision. */
export async function putPending(
  a: AppenderCore,
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
      if (await a.repository.putPending(chainName, { ref: candidate, drafts: json }, Math.ceil(a.now()) + PENDING_TTL_SECONDS)) return candidate;
    } catch (error) {
      // A put that certainly changed nothing (DynamoDB unreachable, or refusing it) leaves nothing to settle.
      if (error instanceof DependencyUnavailableError && error.notApplied) trying(NOTHING_WRITTEN);
      throw error;
    }
    if (attempt >= 8) throw new Error(`no free key for a pending append of '${chainName}'`);
  }
}

/** A follower's pending append: a random key a little above the cursor it knows, in a random shard. */
export function followerRef(a: AppenderCore, chainName: string): PendingRef {
  const weather = a.weatherOf(chainName);
  const ms = Math.max(Math.floor(a.nowMs()), pendingSkMs(weather.cursor) + 1);
  return { shard: Math.floor(a.random() * weather.pendingShards), sk: pendingSk(ms, BigInt(`0x${randomBytes(6).toString('hex')}`)) };
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
export async function settleFailed(
  a: AppenderCore,
  chainName: string,
  drafts: BlockDraft[],
  ref: PendingRef,
  after: number,
  error: unknown,
): Promise<Block[] | undefined> {
  if (ref.sk === '') return undefined; // nothing was written
  const withdrawn = await settling(a, () => a.repository.withdraw(chainName, ref.sk)).catch(() => undefined);
  if (withdrawn === true) return undefined;
  if (withdrawn === undefined) throw new OutcomeUnknownError(chainName, { cause: error });
  const sealed = await settling(a, () => findSealed(a, chainName, ref, after)).catch((cause: unknown) => {
    throw new OutcomeUnknownError(chainName, { cause });
  });
  return sealed && matching(a, chainName, drafts, sealed);
}

/**
 * One step of settling a failed append, sent again (backing off from 50 ms to 1 s) while DynamoDB is
 * unavailable and the deadline leaves time: a DynamoDB stopped for a few seconds under a write whose answer
 * was lost then gets a definite answer (503, withdrawn) instead of a 500. Past the deadline, a grace of 500 ms.
 * Outside an invocation (no deadline: a script, a test), it waits at most `waitMs` in all, never for ever.
 */
export async function settling<T>(a: AppenderCore, step: () => Promise<T>): Promise<T> {
  const deadlined = Number.isFinite(remainingMs());
  let waited = 0;
  for (let wait = 50; ; wait = Math.min(wait * 2, 1_000)) {
    try {
      return await withGrace(500, step);
    } catch (error) {
      const timeLeft = deadlined ? remainingMs() - 500 : a.waitMs - waited;
      if (!(error instanceof DependencyUnavailableError) || timeLeft <= wait) throw error;
      await a.sleep(wait);
      waited += wait;
    }
  }
}

/**
 * settleFailed for a leader's own unit, as an outcome: its blocks if it was sealed after all, else the error
 * to answer (the one it failed with, or the 500 of an outcome that could not be settled).
 */
export async function settledOutcome(
  a: AppenderCore,
  chainName: string,
  unit: Unit,
  after: number,
  error: unknown,
): Promise<{ blocks: Block[]; error: undefined } | { blocks: undefined; error: unknown }> {
  try {
    const sealed = await settleFailed(a, chainName, unit.drafts, unit.ref, after, error);
    return sealed ? { blocks: sealed, error: undefined } : { blocks: undefined, error };
  } catch (unsettled) {
    return { blocks: undefined, error: unsettled };
  }
}
