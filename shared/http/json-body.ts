/**
 * Parses a JSON body once, before the router. Not valid JSON → 400; another content type → 415
 * (docs/rules.md, "Errors"). The parsed value
 * travels in `request.internal.body`; an empty body is `undefined`, and the route decides if that's fine.
 */
import type { MiddlewareObj } from '@middy/core';
import { BadRequestError, InvalidJsonError, UnsupportedMediaTypeError, ValidationError } from '../errors.ts';
import { checkShape } from '../json-shape.ts';
import { headerValue } from './request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

export const PARSED_BODY = Symbol('parsed-body');

/** application/json and the +json family, with any parameters (charset…). A body without a type is read as JSON. */
const JSON_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i;

/** Text that may hold a number a double cannot keep: 16 digits in a row, or an exponent of 3 digits. */
const MAYBE_INEXACT = /\d{16}|[eE][+-]?\d{3}/;

/**
 * Whether a parsed number is kept as its source text says: finite, not a non-zero number read as 0 (1e-400), and an
 * integer written without an exponent read as itself: 9007199254740993 reads as …992 and is not; digits a double
 * prints itself with (JSON.stringify's `12345678901234567000`) or holds exactly (`9007199254740994`) are.
 */
function exact(value: number, source: string): boolean {
  if (!Number.isFinite(value)) return false;
  if (/^-?\d+$/.test(source)) return Number.isSafeInteger(value) || source === String(value) || BigInt(source) === BigInt(value);
  return value !== 0 || !/[1-9]/.test(source.split(/[eE]/)[0]!);
}

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
      const type = headerValue(request.event, 'content-type');
      if (type !== undefined && !JSON_TYPE.test(type)) {
        throw new UnsupportedMediaTypeError(`Content-Type '${type}' is not supported; send application/json`);
      }
      const text = rawBody(request.event)!;
      if (text.trim() === '') return;
      let parsed: unknown;
      let inexact: { key: string; source: string } | undefined;
      try {
        // A number JSON can write but a double cannot hold (an integer past 2^53, 1e400) would be kept as another one,
        // silently: looked for only where the text could hold one (16 digits in a row, a 3-digit exponent).
        parsed = MAYBE_INEXACT.test(text)
          ? JSON.parse(text, (key, value, context?: { source?: string }) => {
              if (typeof value === 'number' && context?.source !== undefined && !exact(value, context.source)) inexact ??= { key, source: context.source };
              return value;
            })
          : JSON.parse(text);
      } catch {
        throw new InvalidJsonError();
      }
      if (inexact) {
        const where = inexact.key === '' ? 'The body' : `The number at key '${inexact.key}'`;
        throw ValidationError.single(
          ['body'],
          `${where}, ${inexact.source.length > 40 ? `${inexact.source.slice(0, 40)}…` : inexact.source}, cannot be kept exactly (a JSON number is a double: integers past ±${Number.MAX_SAFE_INTEGER} lose digits): send it as a string`,
        );
      }
      checkShape(parsed);
      (request.event as EventWithBody)[PARSED_BODY] = parsed;
    },
  };
}
