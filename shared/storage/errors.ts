/**
 * Turns AWS SDK failures into domain errors: an unreachable or throttled DynamoDB is a 503 the client
 * can retry; anything else stays an internal error (500), logged with its cause, never shown.
 */
import { DeadlineExceededError, DependencyUnavailableError } from '../errors.ts';

const RETRYABLE_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  // A transaction retried with its ClientRequestToken while the first attempt is still being applied.
  'TransactionInProgressException',
  // A single write that kept meeting transactions holding its item (after requests.ts's retries of it).
  'TransactionConflictException',
]);

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

/** Whether an SDK error means "DynamoDB could not be reached or is overloaded". */
export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const named = error as Error & { code?: string; $metadata?: { httpStatusCode?: number } };
  if (RETRYABLE_NAMES.has(named.name)) return true;
  if (named.code && NETWORK_CODES.has(named.code)) return true;
  const status = named.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  const cause = (error as { cause?: unknown }).cause;
  return cause !== undefined && cause !== error && isUnavailable(cause);
}

/**
 * SDK errors (the last attempt's, as the SDK throws it) of requests none of whose attempts can have been
 * applied: marked by the client's middleware (shared/storage/client.ts), which sees every attempt.
 */
const neverApplied = new WeakSet<object>();

/** Errors that say an attempt certainly did not reach DynamoDB: no connection was made, no name was found. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Whether one attempt's failure says it changed nothing: it never reached DynamoDB (connection refused, no
 * address), or DynamoDB answered it with a definite refusal (any 4xx: throttled, condition failed, held by a
 * transaction, invalid). Timeouts, resets, aborts and 5xx are not: DynamoDB documents that after an
 * InternalServerError the request may or may not have been applied, and an answer lost on the way back looks
 * the same as one never sent.
 */
export function attemptChangedNothing(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const named = error as Error & { code?: string; $metadata?: { httpStatusCode?: number } };
  if (named.code !== undefined && NOT_SENT_CODES.has(named.code)) return true;
  const status = named.$metadata?.httpStatusCode;
  return status !== undefined && status >= 400 && status < 500;
}

/** Marks the error a request failed with as certainly not applied (every attempt of it changed nothing). */
export function markNeverApplied(error: unknown): void {
  if (typeof error === 'object' && error !== null) neverApplied.add(error);
}

/** Unmarks it: an earlier request of the same write (one sent again) may have been applied. */
export function forgetNeverApplied(error: unknown): void {
  if (typeof error === 'object' && error !== null) neverApplied.delete(error);
}

/** Whether `error`, or an error it was caused by, is a request that certainly changed nothing. */
export function wasNeverApplied(error: unknown): boolean {
  for (let at: unknown = error, depth = 0; typeof at === 'object' && at !== null && depth < 8; at = (at as { cause?: unknown }).cause, depth += 1)
    if (neverApplied.has(at)) return true;
  return false;
}

/** An SDK request aborted by the invocation's deadline (shared/deadline.ts). */
function abortedByDeadline(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError' && (error as { cause?: unknown }).cause instanceof DeadlineExceededError;
}

/**
 * An AWS SDK failure as the domain sees it: a request cut off by the invocation's deadline is a
 * DeadlineExceededError, an unreachable or overloaded service a DependencyUnavailableError (both 503 with
 * Retry-After, naming `dependency`, never its error text); anything else stays what it is (a 500).
 */
export function translateAwsError(error: unknown, dependency: string): Error {
  if (error instanceof DeadlineExceededError) return error;
  if (abortedByDeadline(error)) return new DeadlineExceededError(dependency, { cause: error });
  if (isUnavailable(error)) return new DependencyUnavailableError(dependency, { cause: error, notApplied: wasNeverApplied(error) });
  return error instanceof Error ? error : new Error(String(error));
}

export function translateStorageError(error: unknown): Error {
  return translateAwsError(error, 'DynamoDB');
}
