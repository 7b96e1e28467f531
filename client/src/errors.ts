/**
 * The two ways a call fails: the service said no (ApiError, from its error body), or its answer did not
 * verify (VerificationError). Verified mode never returns data it could not check.
 */

/**
 * Set on the error of a verified append whose append the service acknowledged but whose proof failed (or
 * could not be fetched): the events are on the ledger, at these ids. Append nothing new for them: calling
 * `append` / `appendBatch` again with `idempotency_key` appends nothing and proves the same events again.
 */
export interface Appended {
  chain: string;
  event_ids: string[];
  idempotency_key: string;
}

/** The service refused or failed: its status, its `detail` and the request id to quote to its operators. */
export class ApiError extends Error {
  override name = 'ApiError';
  /** Set when the append itself landed and only its proof failed (`Appended`). */
  appended?: Appended;
  readonly status: number;
  readonly detail: unknown;
  readonly requestId: string | undefined;
  readonly retryAfter: number | undefined;
  constructor(
    status: number,
    /** The error body's `detail`: a message, or for 422 a list of `{loc, msg, type}`. */
    detail: unknown,
    requestId: string | undefined,
    /** Seconds, from a 429's or 503's Retry-After. */
    retryAfter: number | undefined,
    method: string,
    path: string,
  ) {
    super(`${method} ${path}: ${status} ${typeof detail === 'string' ? detail : JSON.stringify(detail)}${requestId ? ` (request ${requestId})` : ''}`);
    this.status = status;
    this.detail = detail;
    this.requestId = requestId;
    this.retryAfter = retryAfter;
  }
}

/** What failed to verify. Each names one check; docs/clients.md says what each means. */
export type VerificationFailure =
  /** A block's hash does not match its contents. */
  | 'block-hash'
  /** A block is not the one asked for (another index or chain), or an event is not in the block it names. */
  | 'wrong-block'
  /** Consecutive blocks do not link (previous_hash). */
  | 'block-link'
  /** A secure event's recorded signature does not verify with the key it names. */
  | 'event-signature'
  /** An event differs from the event in its hashed block, or an appended event is not what was sent. */
  | 'event-mismatch'
  /** An inclusion proof does not lead to the trusted root. */
  | 'inclusion'
  /** A consistency proof does not show the new tree extends the trusted one: a rewritten or forked history. */
  | 'consistency'
  /** The log answered a tree smaller than one it showed before. */
  | 'rollback'
  /** Two different roots for one tree size: a split view. */
  | 'fork'
  /** The checkpoint's signature is missing, malformed or by another key. */
  | 'signature'
  /** The checkpoint names another log (origin). */
  | 'origin'
  /** Fewer valid witness cosignatures than required. */
  | 'witnesses'
  /** A proof, checkpoint or block the check needs is missing or malformed. */
  | 'missing-proof';

export class VerificationError extends Error {
  override name = 'VerificationError';
  /** Set when the append itself landed and only its proof failed (`Appended`). */
  appended?: Appended;
  readonly failure: VerificationFailure;
  readonly chain?: string;
  constructor(failure: VerificationFailure, message: string, chain?: string) {
    super(`${chain ? `'${chain}': ` : ''}${message}`);
    this.failure = failure;
    this.chain = chain;
  }
}
