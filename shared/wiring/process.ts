/**
 * The one core of a Lambda instance (or of a worker-thread instance of the local stack), made from the
 * environment the function was configured with, on its first request. Function entries reach it only
 * through `lambdaHandler`; the local launcher and tests build their own cores from settings instead.
 */
import middy from '@middy/core';
import { getConfig, loadCorsSettings } from '../config.ts';
import { cors } from '../http/cors.ts';
import { errorResponse } from '../http/errors.ts';
import { REQUEST_ID_HEADER, requestIdOf } from '../http/request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from '../http/types.ts';
import { type Core, createCore, once } from './core.ts';
import { readSecretSettings } from './secrets.ts';

export const processCore = once((): Core => createCore(getConfig()));

/**
 * A function's Lambda handler from its composition root: built on the first invocation (its secret settings fetched
 * then, shared/wiring/secrets.ts, and its settings read, once), and the same for every later one. A first invocation
 * that could not build it fails, and the next one tries again (the secrets are read again only if they were not read):
 * an HTTP request is answered in the contract's shape (503 with Retry-After when Secrets Manager did not answer); any
 * other event fails, for its source to retry; the HTTP answer carries the CORS headers every answer does (a browser
 * shown none reads a 503 as a network error, with no Retry-After). `deps` are the process's own but in tests.
 */
export function lambdaHandler<Event, Context, Result>(
  create: (core: Core) => (event: Event, context: Context) => Promise<Result>,
  deps: { readSecrets: () => Promise<void>; core: () => Core; env?: NodeJS.ProcessEnv } = { readSecrets: () => readSecretSettings(), core: processCore },
) {
  let secretsRead: Promise<void> | undefined;
  let built: Promise<(event: Event, context: Context) => Promise<Result>> | undefined;
  return async (event: Event, context: Context): Promise<Result> => {
    secretsRead ??= deps.readSecrets().catch((error: unknown) => {
      secretsRead = undefined;
      throw error;
    });
    built ??= secretsRead.then(() => create(deps.core()));
    let handler: (event: Event, context: Context) => Promise<Result>;
    try {
      handler = await built;
    } catch (error) {
      built = undefined;
      if (!isHttpEvent(event)) throw error;
      const requestId = requestIdOf(event);
      // Logged there, with the request id the body names.
      const answer = errorResponse(error, { requestId } as ServiceContext, event);
      const headers = { ...answer.headers, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff', [REQUEST_ID_HEADER]: requestId };
      const settings = loadCorsSettings(deps.env);
      const withCors = middy<HttpEvent, HttpResult>()
        .use(cors({ origins: settings.SVC_CORS_ORIGINS, apiKeyHeader: settings.API_KEY_NAME }))
        .handler(async () => ({ ...answer, headers }) as HttpResult);
      return (await withCors(event, {} as never)) as Result;
    }
    return handler(event, context);
  };
}

/** An HTTP API request (payload 2.0), which API Gateway answers with whatever the function returns. */
function isHttpEvent(event: unknown): event is HttpEvent {
  return typeof (event as { requestContext?: { http?: unknown } } | undefined)?.requestContext?.http === 'object';
}
