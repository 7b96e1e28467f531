/**
 * CORS from SVC_CORS_ORIGINS (@middy/http-cors). Preflights are answered by the router (204), so they
 * pass through the whole chain and carry the security headers and a request id like any response.
 */
import type { MiddlewareObj } from '@middy/core';
import httpCors from '@middy/http-cors';
import { getConfig } from '../config.ts';
import { REQUEST_ID_HEADER } from './request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

export const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'] as const;

export function cors(): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  const config = getConfig();
  return httpCors({
    origins: config.SVC_CORS_ORIGINS,
    methods: 'GET,POST,OPTIONS',
    headers: ['Content-Type', config.API_KEY_NAME, REQUEST_ID_HEADER, 'Idempotency-Key'].join(','),
    exposeHeaders: [REQUEST_ID_HEADER, 'Retry-After', 'Idempotent-Replayed', ...RATE_LIMIT_HEADERS].join(','),
    maxAge: 600,
  }) as MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext>;
}
