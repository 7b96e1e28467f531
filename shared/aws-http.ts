/**
 * The HTTP handler every AWS SDK client of the service is given (DynamoDB, KMS, the WebSocket management
 * API): each attempt has a deadline of its own, and the invocation's deadline aborts whatever is still in
 * flight (shared/deadline.ts).
 *
 * Why not the SDK's defaults: since @smithy/node-http-handler 4, `requestTimeout` only logs a warning unless
 * `throwOnRequestTimeout` is set, and the service's SDK logger drops warnings. A request DynamoDB never
 * answered therefore waited until Lambda stopped the instance at its timeout. Now an attempt that has not
 * answered within `requestTimeoutMs` fails with a TimeoutError, which the SDK retries (its retry budget, then
 * a 503 here); a request still waiting at the invocation's deadline is aborted.
 */
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { deadlineSignal } from './deadline.ts';

type HandlerOptions = NonNullable<Parameters<NodeHttpHandler['handle']>[1]>;

export interface AwsHttpOptions {
  /** To open a connection. */
  connectionTimeoutMs: number;
  /** One attempt, from sending the request to the whole answer's headers. */
  requestTimeoutMs: number;
}

/** DynamoDB answers in milliseconds; an attempt silent for 5 s is retried on a fresh connection. */
export const DYNAMODB_HTTP: AwsHttpOptions = { connectionTimeoutMs: 2_000, requestTimeoutMs: 5_000 };
/** KMS and the management API: the same bounds. */
export const AWS_HTTP: AwsHttpOptions = { connectionTimeoutMs: 2_000, requestTimeoutMs: 5_000 };

/** A NodeHttpHandler whose attempts time out as errors, and whose requests end at the invocation's deadline. */
export class DeadlineHttpHandler extends NodeHttpHandler {
  constructor(options: AwsHttpOptions) {
    super({ connectionTimeout: options.connectionTimeoutMs, requestTimeout: options.requestTimeoutMs, throwOnRequestTimeout: true });
  }

  override handle(request: Parameters<NodeHttpHandler['handle']>[0], options: HandlerOptions = {}): ReturnType<NodeHttpHandler['handle']> {
    const signal = options.abortSignal ?? deadlineSignal();
    return super.handle(request, signal ? { ...options, abortSignal: signal } : options);
  }
}
