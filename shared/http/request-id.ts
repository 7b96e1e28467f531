/**
 * X-Request-ID (docs/rules.md, "Keys and limits"): a client-sent UUID is echoed, otherwise the service makes a UUID v4.
 * First in the chain, so every later middleware, log line and error body can name the request.
 */
import { randomUUID } from 'node:crypto';
import type { MiddlewareObj } from '@middy/core';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

export const REQUEST_ID_HEADER = 'X-Request-ID';
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A header of an API Gateway event (HTTP or WebSocket), by name in any case. */
export function headerValue(event: { headers?: Record<string, string | undefined> }, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

/** The request's id: the client's X-Request-ID when it is a UUID, else a new UUID v4. */
export function requestIdOf(event: { headers?: Record<string, string | undefined> }): string {
  const sent = headerValue(event, REQUEST_ID_HEADER);
  return sent && UUID_PATTERN.test(sent) ? sent.toLowerCase() : randomUUID();
}

export function requestId(): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  const stamp = (request: { response: HttpResult | null; context: ServiceContext }) => {
    if (request.response) {
      request.response.headers = { ...request.response.headers, [REQUEST_ID_HEADER]: request.context.requestId };
    }
  };
  return {
    before: (request) => {
      request.context.requestId = requestIdOf(request.event);
      request.context.startedAt = performance.now();
    },
    after: stamp,
    onError: stamp,
  };
}
