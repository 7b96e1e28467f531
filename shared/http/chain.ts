/**
 * THE middleware chain, built once here and used unchanged by every function group. Order is a
 * design decision (contract.md §7, architecture.md):
 *
 *   request id → security headers → JSON body → router → (handler) → errors
 *
 * middy runs `before` in this order and `after`/`onError` in reverse, so the error handler shapes a
 * failure first and the security headers and request id are stamped on every response after it.
 * (Body limit, CORS, rate limit and auth join between security headers and JSON body.)
 */
import middy from '@middy/core';
import { jsonResponse, errorHandler } from './errors.ts';
import { PARSED_BODY, jsonBody, type EventWithBody } from './json-body.ts';
import { requestId } from './request-id.ts';
import { resolveRoute } from './router.ts';
import { securityHeaders } from './security-headers.ts';
import type { HttpEvent, HttpResult, RouteHandlers, ServiceContext } from './types.ts';

function lowerCaseHeaders(event: HttpEvent): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(event.headers ?? {})) if (value !== undefined) headers[key.toLowerCase()] = value;
  return headers;
}

/** A Lambda handler for one function group: the shared chain around the group's routes. */
export function createHttpHandler(handlers: RouteHandlers) {
  const route = async (event: HttpEvent, context: ServiceContext): Promise<HttpResult> => {
    const { handler, params } = resolveRoute(handlers, event);
    const query: Record<string, string> = {};
    for (const [key, value] of Object.entries(event.queryStringParameters ?? {})) if (value !== undefined) query[key] = value;
    const result = await handler({
      params,
      query,
      body: (event as EventWithBody)[PARSED_BODY],
      headers: lowerCaseHeaders(event),
      requestId: context.requestId,
      event,
    });
    return jsonResponse(result.statusCode, result.body ?? null, result.headers);
  };

  return middy<HttpEvent, HttpResult, Error, ServiceContext>(route)
    .use(requestId())
    .use(securityHeaders())
    .use(jsonBody())
    .use(errorHandler());
}
