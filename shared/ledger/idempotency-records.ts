/**
 * An Idempotency-Key's record as storage keeps it (docs/appending.md, "Retries"): the claim that holds it, the
 * pending append it is bound to, and what a request finds when it claims it. The repository's methods over it
 * are LedgerStorage's (claimIdempotency, bindIdempotency, completeIdempotency, releaseIdempotency).
 */
import type { PendingRef } from './block-meta.ts';

/**
 * A request's hold on its Idempotency-Key: `id` names the key's record (the caller, the chain and the
 * key), `token` this attempt. Before each write of the request's pending append the record is bound to it
 * (bindIdempotency), on the condition that the token still holds the record; a direct commit, or a round
 * that commits the blocks with its records, completes the record in its transaction, on the same condition.
 */
export interface IdempotencyClaim {
  id: string;
  token: string;
}

/**
 * The pending append a key's record was last bound to: where it was written (`ref`), no block up to `after`
 * can be it, `token` the claim that bound it, `fingerprint` that claim's request.
 */
export interface BoundAppend {
  ref: PendingRef;
  after: number;
  token: string;
  fingerprint: string;
}

/** An Idempotency-Key's answer: the `count` blocks from `blockPosition` of a commit are its request's. */
export interface KeyAnswer {
  claim: IdempotencyClaim;
  blockPosition: number;
  count: number;
}

/** What a key's record said when a request tried to claim it. */
export type IdempotencyState =
  /**
   * Ours now; `bound`: an earlier holder's pending append, to settle before ours is written; `first`: the
   * record was new and names the key asked for (`first` of claimIdempotency), no bind needed before its write.
   */
  | { status: 'claimed'; bound?: BoundAppend; first?: true }
  /** A request with this key is being appended (until `untilMs`, when its hold lapses). */
  | { status: 'in-progress'; fingerprint: string; untilMs: number; bound?: BoundAppend }
  /** A request with this key landed as the `count` blocks from `firstIndex`. */
  | { status: 'done'; fingerprint: string; firstIndex: number; count: number };
