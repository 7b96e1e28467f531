/**
 * The one place where errors become responses (docs/rules.md, "Errors"): `{"detail": …, "request_id": …}`.
 * Domain errors carry their status; anything else is a 500 whose body says nothing about the cause,
 * which goes to the log instead.
 */
import type { MiddlewareObj } from '@middy/core';
import { DomainError, shortened, shownIssues, ValidationError } from '../errors.ts';
import { logger } from '../log.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

export const INTERNAL_ERROR_MESSAGE = 'Internal server error';

export function jsonResponse(statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResult {
  return {
    statusCode,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

/** The response for an error; logs what the client must not see. */
export function errorResponse(error: unknown, context: ServiceContext, event: HttpEvent): HttpResult {
  const requestId = context.requestId;
  if (error instanceof ValidationError) {
    return jsonResponse(422, { detail: shownIssues(error.issues), request_id: requestId }, error.headers);
  }
  if (error instanceof DomainError) {
    if (error.expected) {
      logger.info('request answered with a retry', { request_id: requestId, route: event.routeKey, status: error.statusCode, reason: error.message });
    } else if (error.statusCode >= 500) {
      logger.warn('request failed', { request_id: requestId, route: event.routeKey, status: error.statusCode, error });
    }
    const detail = error.expose ? shortened(error.message) : INTERNAL_ERROR_MESSAGE;
    return jsonResponse(error.statusCode, { detail, request_id: requestId }, error.headers);
  }
  logger.error('unhandled error', { request_id: requestId, route: event.routeKey, error });
  return jsonResponse(500, { detail: INTERNAL_ERROR_MESSAGE, request_id: requestId });
}

export function errorHandler(): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  return {
    onError: (request) => {
      const response = errorResponse(request.error, request.context, request.event);
      // No cache keeps an error: a block not written yet is 404 now and there a moment later (a 404 is
      // cacheable by default, and CDNs keep errors for seconds unless told not to).
      request.response = { ...response, headers: { 'Cache-Control': 'no-store', ...response.headers } };
      // Returning nothing lets the outer middlewares (security headers, request id) stamp the response.
    },
  };
}
