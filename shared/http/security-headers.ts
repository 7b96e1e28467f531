/**
 * The spec's security headers on every response, errors and 404s included: a content security
 * policy, strict transport security, `X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff`.
 *
 * @middy/http-security-headers sets HSTS and nosniff everywhere but CSP and X-Frame-Options only on
 * text/html responses, so for JSON (every API response) they are added here, with the strictest
 * policy: an API response is never a document to render or frame.
 */
import type { MiddlewareObj } from '@middy/core';
import httpSecurityHeaders from '@middy/http-security-headers';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

const API_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";

export function securityHeaders(): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  const helmet = httpSecurityHeaders() as MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext>;
  const complete = (request: { response: HttpResult | null }) => {
    const headers = request.response?.headers;
    if (!headers) return;
    // helmet leaves `Server: undefined` and an empty `Reporting-Endpoints`; send neither.
    for (const key of Object.keys(headers)) if (headers[key] === undefined || headers[key] === '') delete headers[key];
    headers['Content-Security-Policy'] ??= API_CONTENT_SECURITY_POLICY;
    headers['X-Frame-Options'] ??= 'DENY';
  };
  return {
    after: async (request) => {
      // A page's own policy (the explorer, the docs) wins over helmet's, which would forbid its scripts.
      const own = request.response?.headers?.['Content-Security-Policy'];
      await helmet.after?.(request);
      if (own !== undefined) request.response!.headers['Content-Security-Policy'] = own;
      complete(request);
    },
    onError: async (request) => {
      await helmet.onError?.(request);
      complete(request);
    },
  };
}
