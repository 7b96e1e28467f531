/**
 * CORS from SVC_CORS_ORIGINS (@middy/http-cors). Preflights are answered by the router (204), so they
 * pass through the whole chain and carry the security headers and a request id like any response.
 */
import type { MiddlewareObj } from '@middy/core';
import httpCors from '@middy/http-cors';
import { REQUEST_ID_HEADER } from './request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

export const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'] as const;

export interface CorsOptions {
  /** SVC_CORS_ORIGINS. */
  origins: string[];
  /** The header keys are sent in (API_KEY_NAME): browsers may send it. */
  apiKeyHeader: string;
}

export function cors(options: CorsOptions): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  return httpCors({
    origins: options.origins,
    methods: 'GET,POST,DELETE,OPTIONS',
    headers: ['Content-Type', options.apiKeyHeader, REQUEST_ID_HEADER, 'Idempotency-Key'].join(','),
    exposeHeaders: [REQUEST_ID_HEADER, 'Retry-After', 'Idempotent-Replayed', 'Link', ...RATE_LIMIT_HEADERS].join(','),
    maxAge: 600,
  }) as MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext>;
}
