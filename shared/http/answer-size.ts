/**
 * How large an answer may be. On AWS a function's answer is a Lambda synchronous response, at most 6 MB as Lambda
 * counts it: the serialized response (status, headers, and the body as a JSON string, escapes and base64 included).
 * Past it the invocation fails and API Gateway answers a bare 500 `{"message":"Internal Server Error"}` (the local
 * gateway does the same: infra/local/gateway.ts). The chain measures each answer as Lambda will and refuses one past
 * the limit with a 422 that says so (AnswerTooLargeError); the margin is for the headers the outer middlewares add
 * after the measure (security, CORS, request id, rate limit).
 */
import { AnswerTooLargeError } from '../errors.ts';
import type { HttpResult } from './types.ts';

/** A Lambda synchronous response's limit, in bytes of its serialized form (AWS Lambda quotas: "6 MB"). */
export const LAMBDA_RESPONSE_BYTES = 6_291_556;
/** What the middlewares after the measure may still add. */
const HEADERS_MARGIN_BYTES = 16 * 1024;
export const MAX_ANSWER_BYTES = LAMBDA_RESPONSE_BYTES - HEADERS_MARGIN_BYTES;

/** Below this many characters of body no answer can reach the limit (each character serializes to at most 6 bytes). */
const SURELY_SMALL = Math.floor(MAX_ANSWER_BYTES / 6);

/** The answer itself, or AnswerTooLargeError when Lambda could not carry it. */
export function withinAnswerLimit(result: HttpResult, maxBytes = MAX_ANSWER_BYTES): HttpResult {
  const body = typeof result.body === 'string' ? result.body : '';
  if (body.length < SURELY_SMALL) return result;
  const bytes = Buffer.byteLength(JSON.stringify(result), 'utf8');
  if (bytes > maxBytes) throw new AnswerTooLargeError(bytes, maxBytes);
  return result;
}
