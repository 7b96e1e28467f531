/**
 * Turns AWS SDK failures into domain errors: an unreachable or throttled DynamoDB is a 503 the client
 * can retry; anything else stays an internal error (500), logged with its cause, never shown.
 */
import { DependencyUnavailableError } from '../errors.ts';

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

export function translateStorageError(error: unknown): Error {
  if (isUnavailable(error)) return new DependencyUnavailableError('DynamoDB', { cause: error });
  return error instanceof Error ? error : new Error(String(error));
}
