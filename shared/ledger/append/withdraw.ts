/**
 * Writing a pending append once, and withdrawing it before any error is answered; an Idempotency-Key's
 * pending append bound to its key before it is written, and settled by whoever takes the key over.
 *
 * Invariants kept here: an append answered 503 never lands later. Before an error is answered its key is below
 * the cursor (withdrawn, or certainly never written), or it is found sealed and its blocks are the answer.
 * When DynamoDB fails both the withdrawal and the look to the end, nothing is promised: a 500
 * (OutcomeUnknownError). A pending put whose answer was lost is known by its token (putOnce), not rewritten.
 * One Idempotency-Key lands once: its pending append is written only after the key's record names it, on the
 * condition that its request still holds the key (bindClaims), and a request that takes the key over settles
 * the append the record names before it writes its own: withdrawn (then no round can seal it) or found sealed
 * (then its blocks are the key's answer). Of all the appends written for one key, at most one is ever sealed.
 */
import { randomBytes } from 'node:crypto';
import { remainingMs, withGrace } from '../../deadline.ts';
import { ChainContendedError, DependencyUnavailableError, OutcomeUnknownError } from '../../errors.ts';
import { type PendingRef, pendingSk, pendingSkMs } from '../block-meta.ts';
import type { BlockDraft } from '../blocks.ts';
import type { BoundAppend } from '../repository.ts';
import type { Block } from '../types.ts';
import type { AppenderCore } from './core.ts';
import { IdempotencyClaimLostError } from './parts.ts';
import { findSealed, matching } from './seals.ts';
import { NOTHING_WRITTEN, PENDING_TTL_SECONDS, refKey, type Unit } from './settings.ts';

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
    // Refused, nothing is written: the key was taken over (its new holder withdraws what the key named).
    await bindClaims(a, chainName, drafts, candidate);
    trying(candidate);
    try {
      if (await a.repository.putPending(chainName, { ref: candidate, drafts: json }, Math.ceil(a.now()) + PENDING_TTL_SECONDS)) return candidate;
    } catch (error) {
      // A put that certainly changed nothing (DynamoDB unreachable, or refusing it) leaves nothing to settle.
      if (error instanceof DependencyUnavailableError && error.notApplied) trying(NOTHING_WRITTEN);
      throw error;
    }
    if (attempt >= MAX_KEY_ATTEMPTS) {
      // Every key was another's (a conditional put never replaces an item, and one of ours is known by its token):
      // nothing of ours was written anywhere.
      trying(NOTHING_WRITTEN);
      throw new PendingKeysTakenError(chainName, attempt + 1);
    }
  }
}

/** Keys tried for one pending append before giving up (each a conditional put). */
const MAX_KEY_ATTEMPTS = 8;

/**
 * Every key tried for a pending append was taken by another's, and nothing of ours was written. For a leader, whose
 * keys are the ones just above the cursor it read, that cursor is stale: its lease lapsed (a stall) and other leaders
 * sealed appends at those keys. A 503 if it reaches a caller (nothing landed; retry), never the 500 of an unknown
 * outcome (found by the deterministic simulation, chaos seed 668).
 */
export class PendingKeysTakenError extends ChainContendedError {
  constructor(chainName: string, tried: number) {
    super(chainName, tried);
  }
}

/**
 * A follower's pending append: a random key a little above the cursor it knows, in a random shard, keyed with
 * the time it is written (`aheadMs` from now, when the key is chosen before the write).
 */
export function followerRef(a: AppenderCore, chainName: string, aheadMs = 0): PendingRef {
  const weather = a.weatherOf(chainName);
  const ms = Math.max(Math.floor(a.nowMs() + aheadMs), pendingSkMs(weather.cursor) + 1);
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

/** The key a follower writes its drafts at first: the one its sole Idempotency-Key's record was made naming, if any. */
export function preboundRef(drafts: BlockDraft[]): PendingRef | undefined {
  const claims = drafts.flatMap((d) => (d.completes ? [d.completes] : []));
  return claims.length === 1 ? claims[0]!.bound : undefined;
}

/**
 * Binds the Idempotency-Keys the drafts answer to the pending append about to be written at `ref`, on the
 * condition that their requests still hold them; throws IdempotencyClaimLostError (nothing may be written)
 * if one does not. What is bound is the key's promise: a request that takes the key over settles it.
 */
export async function bindClaims(a: AppenderCore, chainName: string, drafts: BlockDraft[], ref: PendingRef): Promise<void> {
  // A claim made bound to this very key (claimIdempotency's `first`) needs no bind.
  const claims = drafts.flatMap((d) => (d.completes && !(d.completes.bound && refKey(d.completes.bound) === refKey(ref)) ? [d.completes] : []));
  if (claims.length === 0) return;
  // No block up to the newest this instance has seen can be this append: it is not written yet.
  const after = a.weatherOf(chainName).headIndex;
  const bound = await Promise.all(claims.map((c) => a.repository.bindIdempotency({ id: c.id, token: c.token }, ref, after)));
  if (bound.some((held) => !held)) throw new IdempotencyClaimLostError();
}

/**
 * The blocks of the pending append an Idempotency-Key's record is bound to (`claimId`'s own drafts in it), if
 * a round sealed it. `takeover`: first make sure no round seals it later (withdraw it: the cursor past its
 * key), as a request taking the key over must before it writes its own. Without, a look only: a retry while
 * the key is held may answer the blocks of an append that landed. An append found at that key that does not
 * carry the claim that bound it is another writer's (the bound put was refused there): not this key's.
 */
export async function settleBound(a: AppenderCore, chainName: string, claimId: string, bound: BoundAppend, takeover: boolean): Promise<Block[] | undefined> {
  if (takeover && (await settling(a, () => a.repository.withdraw(chainName, bound.ref.sk)))) return undefined;
  const sealed = await settling(a, () => findSealed(a, chainName, bound.ref, bound.after));
  if (!sealed) return undefined;
  const found = await settling(a, () => a.repository.getPendings(chainName, [bound.ref]));
  const json = found.get(refKey(bound.ref));
  // Sealed appends are kept a week, a key's record a day: one sealed and gone cannot be told ours or not.
  if (json === undefined) throw new Error(`the pending append bound to Idempotency-Key record ${claimId} was sealed and is gone`);
  const drafts = JSON.parse(json) as BlockDraft[];
  const position = drafts.findIndex((d) => d.completes?.id === claimId && d.completes.token === bound.token);
  if (position < 0) return undefined;
  const blocks = matching(a, chainName, drafts, sealed);
  return blocks?.slice(position, position + drafts[position]!.completes!.count);
}
