/**
 * Parses a JSON body once, before the router. Not valid JSON → 400; another content type → 415
 * (docs/rules.md, "Errors"). The parsed value
 * travels in `request.internal.body`; an empty body is `undefined`, and the route decides if that's fine.
 */
import type { MiddlewareObj } from '@middy/core';
import { BadRequestError, InvalidJsonError, UnsupportedMediaTypeError, ValidationError } from '../errors.ts';
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

/** Deepest nesting of arrays and objects a body may have (hashing and validation walk it recursively). */
export const MAX_BODY_DEPTH = 64;

/**
 * Refuses, before anything walks the body recursively, a body nested deeper than MAX_BODY_DEPTH and an
 * object key `__proto__`: JSON.parse keeps it as data, but every later copy (validation, spreading)
 * would turn it into the object's prototype and drop it, changing what the client signed or hashed.
 * `constructor` and `prototype` stay ordinary keys. Iterative: a deep body cannot overflow the stack here.
 */
export function checkShape(value: unknown): void {
  const stack: { value: unknown; depth: number; path: (string | number)[] }[] = [{ value, depth: 0, path: ['body'] }];
  while (stack.length > 0) {
    const { value: current, depth, path } = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth + 1 > MAX_BODY_DEPTH) {
      throw ValidationError.single(['body'], `The body is nested deeper than ${MAX_BODY_DEPTH} levels of arrays and objects`);
    }
    if (Array.isArray(current)) {
      current.forEach((item, i) => stack.push({ value: item, depth: depth + 1, path: path.length < 8 ? [...path, i] : path }));
      continue;
    }
    for (const key of Object.keys(current)) {
      if (key === '__proto__') throw ValidationError.single([...path, key], "A key named '__proto__' is not accepted: rename it");
      stack.push({ value: (current as Record<string, unknown>)[key], depth: depth + 1, path: path.length < 8 ? [...path, key] : path });
    }
  }
}

export function jsonBody(): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  return {
    before: (request) => {
      const body = request.event.body;
      if (body === undefined || body === null || body === '') return;
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
      checkShape(parsed);
      (request.event as EventWithBody)[PARSED_BODY] = parsed;
    },
  };
}
