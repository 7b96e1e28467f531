/**
 * Retries made safe with an Idempotency-Key (docs/appending.md, "Retries"): a request claims its key, binds
 * it to each pending append before writing it, and the leader that seals it records its blocks as the key's
 * answer. A retry with the same key and body answers those blocks again (or the blocks of the append the key
 * is bound to, once sealed); another body is 422, a request still in progress 409. A retry that takes over a
 * key whose hold lapsed settles the append it is bound to first: withdrawn, or sealed and then the answer.
 */
import type { PayloadOpener } from './offchain-port.ts';
import { createHash, randomUUID } from 'node:crypto';
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError } from '../errors.ts';
import { IdempotencyClaimLostError } from './appender.ts';
import type { BlockDraft } from './blocks.ts';
import type { EventDraft } from './events.ts';
import { canonicalJson } from './hashing.ts';
import type { BoundAppend, LedgerRepository, PendingRef } from './repository.ts';
import type { Block, EventSignature } from './types.ts';

/**
 * An append sent with an Idempotency-Key (`caller`: who sent it, so that keys are each caller's own).
 * The same key with the same request answers what the first answered and appends nothing; with another
 * request it is refused (422); while the first is still being appended, the retry is refused (409).
 */
export interface AppendOptions {
  idempotency?: { caller: string; key: string };
  /**
   * Whether the appending caller may read an off-chain payload its events cite (shared/access: the guarded ledger
   * sets it); without one, an event citing a payload is refused (422).
   */
  opener?: PayloadOpener;
  /**
   * The service's own record (a channel's membership, collections, private-data writes it names): it may take one of
   * the service's event types (shared/ledger/event-types.ts), which every caller's event is refused. Only the
   * service's bookkeeping sets it; a caller's options never carry it (the guarded ledger builds them anew).
   */
  serviceRecord?: true;
  /**
   * Checks the caller's right again after its events were prepared, when that stored a payload off chain (an upload
   * of megabytes takes seconds), before they are handed to the commit: a right lost meanwhile (an admin took its
   * organization out of the channel) refuses the append, as it refuses the next request. The guarded ledger sets it.
   */
  stillAllowed?: () => Promise<void>;
  /**
   * The signature a secure event was verified with, recorded in its event (`signed`). Only the admin's secure-event
   * relay sets it, having checked it; a caller's options never carry it (the guarded ledger builds them anew).
   */
  signature?: EventSignature;
}

/** Set on an append's answer when it is the answer of an earlier request with the same Idempotency-Key. */
export interface Replayed {
  replayed?: boolean;
}

/** How long a request holds its Idempotency-Key: longer than any append may take (its deadline is 10 s). */
const IDEMPOTENCY_HOLD_MS = 60_000;
/** How long a key's answer is kept (TTL). */
const IDEMPOTENCY_KEEP_SECONDS = 24 * 3600;

/**
 * A request's drafts as its key's fingerprint covers them. An erasable event's details (it has a
 * `subject_id`) enter only as a keyed digest under its subject's key (`blind`), never as a plain hash: a
 * fingerprint is kept for a day, in the table and its backups, and a plain hash of erased details would let
 * whoever holds it, or can replay the key, confirm a guess of them. With the key destroyed the digest cannot
 * be made again, so a replay of an erased subject's event is 410, like any new event of it.
 */
async function fingerprintOf(
  kind: 'event' | 'batch',
  drafts: readonly EventDraft[],
  blind: (subjectId: string, details: Record<string, unknown>) => Promise<string>,
): Promise<string> {
  const covered = await Promise.all(
    drafts.map(async (draft) => {
      if (draft.subject_id === undefined) return draft;
      const { details, ...rest } = draft;
      return { ...rest, details_blinded: await blind(draft.subject_id, details) };
    }),
  );
  return createHash('sha256')
    .update(canonicalJson({ kind, drafts: covered }))
    .digest('hex');
}

export function createIdempotency({
  repository,
  now,
  holdMs = IDEMPOTENCY_HOLD_MS,
  firstRef,
  settleBound,
  blind,
}: {
  repository: LedgerRepository;
  now: () => number;
  /** How long a request holds its key (IDEMPOTENCY_HOLD_MS; a simulation shortens it to race takeovers). */
  holdMs?: number | undefined;
  /** The appender's: the key a new pending append of the chain would be written at (ChainAppender.firstRef). */
  firstRef?: (chainName: string) => { ref: PendingRef; after: number };
  /** The appender's: the blocks of a key's bound append if sealed; with `takeover`, withdrawn first (ChainAppender.settleBound). */
  settleBound: (chainName: string, claimId: string, bound: BoundAppend, takeover: boolean) => Promise<Block[] | undefined>;
  /** An erasable event's details as a keyed digest under its subject's key (PersonalData's `blind`). */
  blind: (subjectId: string, details: Record<string, unknown>) => Promise<string>;
}) {
  /**
   * Runs an append under its Idempotency-Key, if it has one: claims the key, and hands `append` the claim its
   * first block carries. Its pending append is bound to the key before it is written, and the blocks, once
   * sealed, answer the key (recorded after the commit, or in it for a commit that writes the blocks itself).
   * A key already answered replays the blocks it landed.
   */
  return async function idempotent(
    chainName: string,
    kind: 'event' | 'batch',
    drafts: EventDraft[],
    options: AppendOptions | undefined,
    append: (completes?: BlockDraft['completes']) => Promise<Block[]>,
  ): Promise<{ blocks: Block[]; replayed?: true }> {
    if (!options?.idempotency) return { blocks: await append() };
    const { caller, key } = options.idempotency;
    const claim = { id: `${chainName}#${caller}#${key}`, token: randomUUID() };
    const fingerprint = await fingerprintOf(kind, drafts, blind);
    const nowMs = now() * 1000;
    // A new key is made naming the key its pending append will most likely be written at: one write, no bind after.
    const first = firstRef?.(chainName);
    const state = await repository.claimIdempotency(claim, fingerprint, nowMs, nowMs + holdMs, Math.floor(now()) + IDEMPOTENCY_KEEP_SECONDS, first);
    if (state.status === 'done') {
      if (state.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError();
      // Read strongly consistent: the first request may have landed a moment ago.
      const found = await Promise.all(Array.from({ length: state.count }, (_, i) => repository.getBlock(chainName, state.firstIndex + i, true)));
      const blocks = found.filter((b): b is Block => b !== undefined);
      if (blocks.length !== state.count) throw new Error(`the blocks of Idempotency-Key record ${claim.id} are not all there`);
      return { blocks, replayed: true };
    }
    if (state.status === 'in-progress') {
      if (state.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError();
      // Held by a request whose append may have landed, its answer lost on the way to the client (or its
      // record's answer not written yet): those blocks are the answer. Otherwise the retry must wait.
      const landed = state.bound?.fingerprint === fingerprint ? await settleBound(chainName, claim.id, state.bound, false) : undefined;
      if (landed) return { blocks: landed, replayed: true };
      throw new IdempotencyKeyInUseError();
    }
    try {
      if (state.bound) {
        // Taken over from a request whose hold lapsed: its append either never lands (withdrawn now) or landed.
        const landed = await settleBound(chainName, claim.id, state.bound, true);
        if (landed) {
          if (state.bound.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError();
          await repository.completeIdempotency(claim, landed[0]!.index, landed.length).catch(() => false);
          return { blocks: landed, replayed: true };
        }
      }
      return { blocks: await append({ ...claim, count: drafts.length, ...(state.first && first ? { bound: first.ref } : {}) }) };
    } catch (error) {
      // Not appended: let a retry go at once rather than wait for the hold to lapse (it settles what the key names).
      await repository.releaseIdempotency(claim).catch(() => undefined);
      if (error instanceof IdempotencyClaimLostError) throw new IdempotencyKeyInUseError();
      throw error;
    }
  };
}
