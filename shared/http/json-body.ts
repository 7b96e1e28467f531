/**
 * Parses a JSON body once, before the router, for a route that may take one (not a GET, HEAD or preflight, and a route
 * this function serves). Not valid JSON → 400; another content type, or a content coding, → 415
 * (docs/rules.md, "Errors"). The parsed value
 * travels in `request.internal.body`; an empty body is `undefined`, and the route decides if that's fine.
 */
import type { MiddlewareObj } from '@middy/core';
import { BadRequestError, InvalidJsonError, UnsupportedMediaTypeError, ValidationError } from '../errors.ts';
import { inexactMessage, inexactNumber } from '../json-numbers.ts';
import { checkShape } from '../json-shape.ts';
import { headerValue } from './request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

export const PARSED_BODY = Symbol('parsed-body');

/** application/json and the +json family, with any parameters (charset…). A body without a type is read as JSON. */
const JSON_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i;

export type EventWithBody = HttpEvent & { [PARSED_BODY]?: unknown };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as text; bytes that are not UTF-8 are the client's error (JSON is UTF-8, RFC 8259), not U+FFFD. */
export function rawBody(event: HttpEvent): string | undefined {
  if (event.body === undefined || event.body === null) return undefined;
  if (!event.isBase64Encoded) return event.body;
  try {
    return strictUtf8.decode(Buffer.from(event.body, 'base64'));
  } catch {
    throw new BadRequestError('The body is not valid UTF-8');
  }
}

export function jsonBody(): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  return {
    before: (request) => {
      const body = request.event.body;
      if (body === undefined || body === null || body === '') return;
      // Read only for a route that may take one: a preflight, a GET (health, pages, tiles) or a path no route serves is
      // answered without it. Those are the answers a caller gets with no key and no count: a 2.6 MB body parsed and
      // walked before each took 2 s of an instance's CPU (red team).
      const method = request.event.requestContext?.http?.method ?? 'GET';
      if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS' || !request.context.relativeKey) return;
      // The body is read as sent: a coded one (gzip, br) was taken for plain JSON, or refused as not UTF-8, so that a
      // proxy that decodes it and this service read two bodies (red team).
      const encoding = headerValue(request.event, 'content-encoding')?.trim();
      if (encoding !== undefined && encoding !== '' && encoding.toLowerCase() !== 'identity') {
        throw new UnsupportedMediaTypeError(`Content-Encoding '${encoding}' is not supported; send the body uncompressed`);
      }
      const type = headerValue(request.event, 'content-type');
      if (type !== undefined && !JSON_TYPE.test(type)) {
        throw new UnsupportedMediaTypeError(`Content-Type '${type}' is not supported; send application/json`);
      }
      const text = rawBody(request.event)!;
      if (text.trim() === '') return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new InvalidJsonError();
      }
      const inexact = inexactNumber(text);
      if (inexact) throw ValidationError.single(['body'], inexactMessage(inexact));
      checkShape(parsed);
      (request.event as EventWithBody)[PARSED_BODY] = parsed;
    },
  };
}
