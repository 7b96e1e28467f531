/**
 * THE middleware chain, built once here and used unchanged by every function group. The order is a
 * design decision (docs/rules.md, "Keys and limits"), written down once:
 *
 *   request id → access log → metrics → security headers → body limit → CORS → rate limit → auth
 *     → JSON body → router → (handler) → errors
 *
 * middy runs `before` in this order and `after`/`onError` in reverse: the error handler shapes a
 * failure first, then CORS, rate-limit and security headers are stamped on it, the access log records
 * the final status, and the request id goes on last. So every response, 4xx and 5xx included, carries
 * the same headers. The route is matched (pure, no I/O) when the request id is set, because rate limit
 * (health is free) and auth (who may call what) both depend on it; unknown routes still reach the
 * router, which answers 404 after auth.
 */
import middy from '@middy/core';
import { ANONYMOUS } from '../access/policy.ts';
import { accessLog, requestMetrics } from './access-log.ts';
import { auth } from './auth.ts';
import { bodyLimit } from './body-limit.ts';
import { cors } from './cors.ts';
import { errorHandler, jsonResponse } from './errors.ts';
import { PARSED_BODY, jsonBody, type EventWithBody } from './json-body.ts';
import { rateLimit } from './rate-limit.ts';
import { requestId } from './request-id.ts';
import { matchRoute, resolveRoute } from './router.ts';
import { securityHeaders } from './security-headers.ts';
import type { HttpEvent, HttpResult, RouteHandlers, ServiceContext } from './types.ts';

export interface HttpHandlerOptions {
  /** The function group's name: the auth policy depends on it (the admin group needs admin). */
  group: string;
}

function lowerCaseHeaders(event: HttpEvent): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(event.headers ?? {})) if (value !== undefined) headers[key.toLowerCase()] = value;
  return headers;
}

/** A Lambda handler for one function group: the shared chain around the group's routes. */
export function createHttpHandler(handlers: RouteHandlers, options: HttpHandlerOptions) {
  const route = async (event: HttpEvent, context: ServiceContext): Promise<HttpResult> => {
    // A CORS preflight: the cors middleware adds the Access-Control-* headers on the way out.
    if (event.requestContext?.http?.method === 'OPTIONS') return { statusCode: 204, headers: {} };
    const { handler, params } = resolveRoute(handlers, event);
    const query: Record<string, string> = {};
    for (const [key, value] of Object.entries(event.queryStringParameters ?? {})) if (value !== undefined) query[key] = value;
    const result = await handler({
      params,
      query,
      body: (event as EventWithBody)[PARSED_BODY],
      headers: lowerCaseHeaders(event),
      requestId: context.requestId,
      // The auth middleware always sets it; without it (a chain built without auth) nothing is allowed.
      principal: context.principal ?? ANONYMOUS,
      event,
    });
    if (result.contentType !== undefined) {
      // Binary files travel base64-encoded, as API Gateway expects them.
      const { 'X-Body-Encoding': encoding, ...headers } = result.headers ?? {};
      return {
        statusCode: result.statusCode,
        headers: { 'Content-Type': result.contentType, ...headers },
        body: String(result.body ?? ''),
        ...(encoding === 'base64' ? { isBase64Encoded: true } : {}),
      };
    }
    return jsonResponse(result.statusCode, result.body ?? null, result.headers);
  };

  const identify = requestId();
  return middy<HttpEvent, HttpResult, Error, ServiceContext>(route)
    .use({
      ...identify,
      before: (request) => {
        identify.before?.(request);
        request.context.group = options.group;
        request.context.relativeKey = matchRoute(handlers, request.event)?.relativeKey ?? null;
      },
    })
    .use(accessLog())
    .use(requestMetrics())
    .use(securityHeaders())
    .use(bodyLimit())
    .use(cors())
    .use(rateLimit())
    .use(auth())
    .use(jsonBody())
    .use(errorHandler());
}
