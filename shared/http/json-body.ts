/**
 * Parses a JSON body once, before the router. Not valid JSON → 400; another content type → 415
 * (contract.md §1). The parsed value
 * travels in `request.internal.body`; an empty body is `undefined`, and the route decides if that's fine.
 */
import type { MiddlewareObj } from '@middy/core';
import { InvalidJsonError, UnsupportedMediaTypeError } from '../errors.ts';
import { headerValue } from './request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

export const PARSED_BODY = Symbol('parsed-body');

/** application/json and the +json family, with any parameters (charset…). A body without a type is read as JSON. */
const JSON_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i;

export type EventWithBody = HttpEvent & { [PARSED_BODY]?: unknown };

export function rawBody(event: HttpEvent): string | undefined {
  if (event.body === undefined || event.body === null) return undefined;
  return event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
}

export function jsonBody(): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  return {
    before: (request) => {
      const text = rawBody(request.event);
      if (text === undefined || text.trim() === '') return;
      const type = headerValue(request.event, 'content-type');
      if (type !== undefined && !JSON_TYPE.test(type)) {
        throw new UnsupportedMediaTypeError(`Content-Type '${type}' is not supported; send application/json`);
      }
      try {
        (request.event as EventWithBody)[PARSED_BODY] = JSON.parse(text);
      } catch {
        throw new InvalidJsonError();
      }
    },
  };
}
