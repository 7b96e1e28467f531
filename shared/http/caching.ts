/**
 * HTTP caching of what cannot change (docs/rules.md, "Caching"): a written block, a page of them read at a named tree size, a proof
 * against a fixed tree size and a full tile are the same bytes forever, so they carry a strong `ETag` and a
 * year's `Cache-Control: immutable`, and a request whose `If-None-Match` names that tag is answered `304` with
 * no body. What can still change carries `no-cache` (kept, but asked again each time, cheaply with its tag)
 * or, when its contents can change without its hashes changing, `no-store`:
 *
 * - an erasable event's details (a data subject's personal data) read opened until the subject is erased, then
 *   `null`: a block holding one, and a page or trace holding one, is `no-store`, so that erasure shows at once;
 * - `resolve_cid=true` answers carry decrypted off-chain payloads, or a passing `resolve_error`: `no-store`.
 *
 * Shared caches: with auth off every caller may read everything, so answers are `public`; with auth on they are
 * `private`, so a shared cache (a CDN, a proxy) never hands one caller's answer to another, and vary by the key's
 * header. An answer whose route said nothing is `no-store` (cacheDefaults, for every route).
 */
import { createHash } from 'node:crypto';
import type { MiddlewareObj } from '@middy/core';
import { OPEN_ACCESS, type Principal } from '../access/policy.ts';
import { type Coding, codedTag } from './compression.ts';
import { headerValue } from './request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

/** A year: the longest lifetime HTTP caches honour, for what never changes. */
export const IMMUTABLE_SECONDS = 31_536_000;

/**
 * Whether a shared cache may hand what this caller read to anyone: auth is off (every caller is OPEN_ACCESS), or
 * the route answers anyone the same (`open`: the logs, with SVC_TLOG_PUBLIC).
 */
export const cacheScope = (principal: Principal, open = false) => (open || principal === OPEN_ACCESS ? 'public' : 'private');

/** A strong entity tag of the exact bytes served. */
export const bytesTag = (bytes: Buffer | string) => `"${createHash('sha256').update(bytes).digest('base64url')}"`;

/** A strong entity tag from the parts that decide the bytes (each already a hash or a plain value). */
export const entityTag = (...parts: (string | number)[]) => bytesTag(parts.join('\n'));

/** Headers of an answer that is the same forever. */
export const immutable = (tag: string, principal: Principal, open = false) => ({
  ETag: tag,
  'Cache-Control': `${cacheScope(principal, open)}, max-age=${IMMUTABLE_SECONDS}, immutable`,
});

/** Headers of an answer that may change, whose tag tells when it has. */
export const revalidated = (tag: string, principal: Principal) => ({ ETag: tag, 'Cache-Control': `${cacheScope(principal)}, no-cache` });

/** Headers of an answer no cache may keep. */
export const NO_STORE = { 'Cache-Control': 'no-store' } as const;

/**
 * Which form of `tag` `If-None-Match` names: the tag itself, or its form in `coding` (the form a compressed answer
 * carries, shared/http/compression.ts), undefined when neither. RFC 9110: `*`, or a list of tags, compared weakly
 * (`W/"x"` names `"x"`).
 */
export function matchedTag(ifNoneMatch: string | undefined, tag: string, coding?: Coding): string | undefined {
  if (!ifNoneMatch) return undefined;
  const value = ifNoneMatch.trim();
  if (value === '*') return tag;
  const named = new Set(value.split(',').map((candidate) => candidate.trim().replace(/^W\//, '')));
  const opaque = tag.replace(/^W\//, '');
  if (named.has(opaque)) return tag;
  return coding && named.has(codedTag(opaque, coding)) ? codedTag(tag, coding) : undefined;
}

/**
 * Every answer says how it may be cached, decided here for every route: one that set nothing is `no-store`, and a
 * cacheable answer to a keyed caller (auth on, a key presented) varies by the key's header, so that no cache hands
 * what one key read to another key's request (the key is not `Authorization`, which caches know to respect).
 * Outermost: it sees the final answer, a 304 and an error's included.
 */
export function cacheDefaults(options: { authEnabled: boolean; keyHeader: string }): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  const apply = (request: { response: HttpResult | null; context: ServiceContext }) => {
    const response = request.response;
    if (!response) return;
    const headers = { ...(response.headers ?? {}) };
    // An answer's headers, looked up as a request's are (by name in any case).
    const header = (name: string) => headerValue({ headers: headers as Record<string, string | undefined> }, name);
    const control = header('cache-control');
    if (control === undefined) headers['Cache-Control'] = 'no-store';
    const principal = request.context.principal;
    const keyed = options.authEnabled && principal !== undefined && principal.key_id !== null && principal !== OPEN_ACCESS;
    if (control !== undefined && !/\bno-store\b/.test(control) && keyed) {
      const vary = header('vary');
      for (const key of Object.keys(headers)) if (key.toLowerCase() === 'vary') delete headers[key];
      const names = new Set([...(vary ? vary.split(',').map((v) => v.trim()) : []), options.keyHeader]);
      headers.Vary = [...names].join(', ');
    }
    request.response = { ...response, headers };
  };
  return { after: apply, onError: apply };
}
