/**
 * The one core of a Lambda instance (or of a worker-thread instance of the local stack), made from the
 * environment the function was configured with, on its first request. Function entries reach it only
 * through `lambdaHandler`; the local launcher and tests build their own cores from settings instead.
 */
import { randomUUID } from 'node:crypto';
import { getConfig } from '../config.ts';
import { errorResponse } from '../http/errors.ts';
import { REQUEST_ID_HEADER } from '../http/request-id.ts';
import type { HttpEvent, ServiceContext } from '../http/types.ts';
import { type Core, createCore, once } from './core.ts';
import { readSecretSettings } from './secrets.ts';

export const processCore = once((): Core => createCore(getConfig()));

/**
 * A function's Lambda handler from its composition root: built on the first invocation (its secret settings fetched
 * then, shared/wiring/secrets.ts, and its settings read, once), and the same for every later one. A first invocation
 * that could not build it fails, and the next one tries again: an HTTP request is answered in the contract's shape
 * (503 with Retry-After when Secrets Manager did not answer); any other event fails, for its source to retry.
 */
export function lambdaHandler<Event, Context, Result>(create: (core: Core) => (event: Event, context: Context) => Promise<Result>) {
  let built: Promise<(event: Event, context: Context) => Promise<Result>> | undefined;
  return async (event: Event, context: Context): Promise<Result> => {
    built ??= readSecretSettings().then(() => create(processCore()));
    let handler: (event: Event, context: Context) => Promise<Result>;
    try {
      handler = await built;
    } catch (error) {
      built = undefined;
      if (!isHttpEvent(event)) throw error;
      const requestId = randomUUID();
      const answer = errorResponse(error, { requestId } as ServiceContext, event);
      const headers = { ...answer.headers, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff', [REQUEST_ID_HEADER]: requestId };
      return { ...answer, headers } as Result;
    }
    return handler(event, context);
  };
}

/** An HTTP API request (payload 2.0), which API Gateway answers with whatever the function returns. */
function isHttpEvent(event: unknown): event is HttpEvent {
  return typeof (event as { requestContext?: { http?: unknown } } | undefined)?.requestContext?.http === 'object';
}
