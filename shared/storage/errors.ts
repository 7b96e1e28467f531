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
  if (isUnavailable(error)) return new DependencyUnavailableError(dependency, { cause: error });
  return error instanceof Error ? error : new Error(String(error));
}

export function translateStorageError(error: unknown): Error {
  return translateAwsError(error, 'DynamoDB');
}
