/**
 * SVC_MAX_BODY_BYTES (docs/rules.md, "Keys and limits"): a larger body is a 413, decided from the declared length and the
 * body's size before anything parses it.
 */
import type { MiddlewareObj } from '@middy/core';
import { PayloadTooLargeError } from '../errors.ts';
import { headerValue } from './request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

export function bodySize(event: HttpEvent): number {
  if (!event.body) return 0;
  return event.isBase64Encoded ? Buffer.byteLength(event.body, 'base64') : Buffer.byteLength(event.body, 'utf8');
}

/** `maxBytes`: SVC_MAX_BODY_BYTES. */
export function bodyLimit(maxBytes: number): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  return {
    before: (request) => {
      const max = maxBytes;
      const declared = Number(headerValue(request.event, 'content-length') ?? 0) || 0;
      const size = Math.max(declared, bodySize(request.event));
      if (size > max) throw new PayloadTooLargeError(`Request body is ${size} bytes; the limit is ${max} bytes`);
    },
  };
}
