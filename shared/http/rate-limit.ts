/**
 * SVC_RATE_LIMIT_RPM requests per minute per API key, per source IP without one (docs/rules.md, "Keys and limits");
 * 0 turns it off. Health checks and preflights are not counted. Every counted response carries
 * X-RateLimit-Limit, -Remaining and -Reset (seconds until the window resets); a 429 adds Retry-After. A request that
 * reads past SVC_MAX_READ_ITEMS by what it is (a chain's verify) counts once more for each further allowance it reads
 * (`chargeRequest`, shared/read-allowance.ts), so that no route reads more for a caller than its budget of requests could.
 */
import type { MiddlewareObj } from '@middy/core';
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { hashApiKey } from '../admin/api-keys.ts';
import { TooManyRequestsError } from '../errors.ts';
import { logger } from '../log.ts';
import { headerValue } from './request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

/**
 * Who a request counts against: its key where auth checked that key (auth runs first and names it on the context; a key
 * that is not one never gets here), else its source address. A key is only a name a caller picks until it is checked:
 * counted by it on a public route (or with auth off), or before auth, a new made-up key a request had each gone free,
 * and each made a new item in the shared limiter's table (red team).
 */
function clientKey(event: HttpEvent, headerName: string, keyChecked: boolean): string {
  const key = keyChecked ? headerValue(event, headerName) : undefined;
  // Hashed: the limiter's store must never hold a key.
  return key ? `key:${hashApiKey(key)}` : `ip:${event.requestContext?.http?.sourceIp ?? 'unknown'}`;
}

export interface RateLimitOptions {
  /** Requests per minute per client (SVC_RATE_LIMIT_RPM); 0 turns the limit off. */
  perMinute: number;
  /** The header keys are read from (API_KEY_NAME): a client is its key, or its source IP without one. */
  header: string;
  limiter: () => RateLimiterAbstract;
}

export function rateLimit(options: RateLimitOptions): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  const stamp = (request: { response: HttpResult | null; context: ServiceContext }) => {
    const state = request.context.rateLimit;
    if (!state || !request.response) return;
    request.response.headers = {
      ...request.response.headers,
      'X-RateLimit-Limit': String(state.limit),
      'X-RateLimit-Remaining': String(state.remaining),
      'X-RateLimit-Reset': String(state.resetSeconds),
    };
  };
  return {
    before: async (request) => {
      const limit = options.perMinute;
      const method = request.event.requestContext?.http?.method;
      if (limit === 0 || method === 'OPTIONS' || request.context.relativeKey === 'GET /health') return;
      const key = clientKey(request.event, options.header, request.context.apiKey !== undefined);
      const count = async () => {
        try {
          const res = await options.limiter().consume(key);
          request.context.rateLimit = { limit, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
        } catch (outcome) {
          if (!(outcome instanceof RateLimiterRes)) {
            // The store failed and there was no insurance: do not turn an outage into refusals.
            logger.warn('rate limiter unavailable; request not counted', { request_id: request.context.requestId, error: outcome });
            return;
          }
          const resetSeconds = Math.ceil(outcome.msBeforeNext / 1000);
          request.context.rateLimit = { limit, remaining: 0, resetSeconds };
          throw new TooManyRequestsError(resetSeconds);
        }
      };
      await count();
      request.context.chargeRequest = count;
    },
    after: stamp,
    onError: stamp,
  };
}
