/**
 * Requests that come through the cloud stack's CloudFront distribution (docs/deploy.md, "The CDN"): API
 * Gateway sees the edge's address, not the caller's, so per-IP limits (SVC_RATE_LIMIT_RPM without a key,
 * SVC_AUTH_FAILURES_PER_MINUTE) would lump every caller of one edge together. The distribution adds a
 * header only it knows (`X-Ledger-Edge`, the stack's generated secret, SVC_EDGE_SECRET); a request carrying
 * it is taken to be from the viewer CloudFront names (`CloudFront-Viewer-Address`, else the address
 * CloudFront appended to `X-Forwarded-For`). A request without it, or with a wrong one, keeps the address API
 * Gateway saw: a caller cannot choose its own address by sending the headers itself. The secret is removed
 * from the event before anything else reads it.
 *
 * With `only` (SVC_EDGE_ONLY, the cloud stack's `CdnOnly=true`), a request that did not come through the CDN is
 * refused (403) before anything else is done with it: the API's own URL would otherwise be served beside the CDN,
 * around whatever the edge enforces (a WAF's per-client limits: docs/deploy.md, "The CDN"). Refusing it still costs
 * the invocation that refuses it.
 */
import { timingSafeEqual } from 'node:crypto';
import type { MiddlewareObj } from '@middy/core';
import { ForbiddenError } from '../errors.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

export const EDGE_HEADER = 'x-ledger-edge';

const NOT_VIA_CDN = "This API is served through its CDN: send the request to the CDN's URL";

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** `198.51.100.10:46532` or `[2001:db8::1]:46532` (or `2001:db8::1:46532`): the address without its port. */
export function addressOf(viewer: string): string | undefined {
  const value = viewer.trim();
  if (value.startsWith('[')) return value.slice(1, value.indexOf(']')) || undefined;
  const cut = value.lastIndexOf(':');
  return cut > 0 ? value.slice(0, cut) : value || undefined;
}

/** Whether the edge vouches for a request: it carries the edge's secret (headers by lower-case name). */
function vouched(headers: Record<string, string | undefined>, secret: string | undefined): boolean {
  const sent = headers[EDGE_HEADER];
  return !!secret && !!sent && same(sent, secret);
}

/** The caller's address as the edge saw it, for a request the edge vouches for; undefined otherwise. */
export function viewerAddress(headers: Record<string, string | undefined>, secret: string | undefined): string | undefined {
  return vouched(headers, secret) ? viewerOf(headers) : undefined;
}

/** The viewer's address CloudFront names in a request's headers (by lower-case name). */
function viewerOf(headers: Record<string, string | undefined>): string | undefined {
  const viewer = headers['cloudfront-viewer-address'];
  if (viewer) return addressOf(viewer);
  // CloudFront appends the viewer's address to X-Forwarded-For; API Gateway then appends the edge's.
  const forwarded = (headers['x-forwarded-for'] ?? '').split(',').map((part) => part.trim());
  return forwarded.length >= 2 ? forwarded[forwarded.length - 2] || undefined : undefined;
}

export function viaCdn(secret: string | undefined, only = false): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  return {
    before: (request) => {
      const headers = request.event.headers;
      const names = Object.keys(headers ?? {}).filter((name) => name.toLowerCase() === EDGE_HEADER);
      if (!headers || names.length === 0) {
        if (only) throw new ForbiddenError(NOT_VIA_CDN);
        return;
      }
      const lowered = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
      const fromEdge = vouched(lowered, secret);
      for (const name of names) delete headers[name];
      if (only && !(fromEdge && names.length === 1)) throw new ForbiddenError(NOT_VIA_CDN);
      const viewer = fromEdge ? viewerOf(lowered) : undefined;
      const http = request.event.requestContext?.http;
      if (viewer && http) http.sourceIp = viewer;
    },
  };
}
