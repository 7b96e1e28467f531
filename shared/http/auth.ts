/**
 * API keys (docs/rules.md, "Keys and limits"): on when SVC_AUTH_ENABLED, key in the API_KEY_NAME header. A missing or
 * unknown key is 401 with WWW-Authenticate; a key whose role is too low is 403. Keys are looked up by
 * their SHA-256 hash; answers are cached for SVC_AUTH_CACHE_SECONDS, which bounds how long a revoked
 * key keeps working on an instance that saw it. A source IP that presents more than
 * SVC_AUTH_FAILURES_PER_MINUTE unknown keys in a minute gets 429 before any lookup until the minute ends:
 * the per-key rate limit alone would give every guessed key a fresh budget.
 */
import type { MiddlewareObj } from '@middy/core';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { hashApiKey, seedAdminKey, type ApiKeyRecord } from '../admin/api-keys.ts';
import { ANONYMOUS, OPEN_ACCESS, passesEdge } from '../access/policy.ts';
import { getConfig } from '../config.ts';
import { ForbiddenError, TooManyRequestsError, UnauthorizedError } from '../errors.ts';
import { logger } from '../log.ts';
import { getApiKeyRepository, getAuthFailureLimiter } from '../runtime.ts';
import { headerValue } from './request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

const cache = new Map<string, { record: ApiKeyRecord | undefined; expires: number }>();
let seeded: Promise<void> | undefined;

async function lookup(keyHash: string): Promise<ApiKeyRecord | undefined> {
  const ttlMs = getConfig().SVC_AUTH_CACHE_SECONDS * 1000;
  const hit = cache.get(keyHash);
  if (hit && hit.expires > Date.now()) return hit.record;
  const record = await getApiKeyRepository().findByHash(keyHash);
  if (ttlMs > 0) {
    if (cache.size > 10_000) cache.clear();
    cache.set(keyHash, { record, expires: Date.now() + ttlMs });
  }
  return record;
}

/**
 * The stored record of a presented key, or undefined when the key is unknown or revoked. Seeds the
 * SVC_ADMIN_API_KEY once per instance, so that it works on the first request a Lambda serves. Shared by
 * the HTTP edge and the WebSocket $connect.
 */
export async function authenticate(key: string): Promise<ApiKeyRecord | undefined> {
  const config = getConfig();
  if (config.SVC_ADMIN_API_KEY) {
    seeded ??= seedAdminKey(getApiKeyRepository(), config.SVC_ADMIN_API_KEY).catch((error) => {
      seeded = undefined;
      throw error;
    });
    await seeded;
  }
  return lookup(hashApiKey(key));
}

/**
 * `authenticate`, for a key presented by `sourceIp`: refused with 429 while that source is over its
 * budget of unknown keys, and each unknown key it presents is counted against the budget.
 */
export async function authenticateFrom(key: string, sourceIp: string): Promise<ApiKeyRecord | undefined> {
  const limit = getConfig().SVC_AUTH_FAILURES_PER_MINUTE;
  const bucket = `ip:${sourceIp}`;
  if (limit > 0) {
    const state = await getAuthFailureLimiter()
      .get(bucket)
      .catch((error: unknown) => {
        logger.warn('auth failure limiter unavailable; not checked', { error });
        return null;
      });
    if (state && state.consumedPoints >= limit) throw new TooManyRequestsError(Math.max(1, Math.ceil(state.msBeforeNext / 1000)));
  }
  const record = await authenticate(key);
  if (!record && limit > 0) {
    await getAuthFailureLimiter()
      .consume(bucket)
      .catch((outcome: unknown) => {
        // Over the budget now: this answer is still 401, the next one from this source is 429.
        if (!(outcome instanceof RateLimiterRes)) logger.warn('auth failure limiter unavailable; not counted', { error: outcome });
      });
  }
  return record;
}

export function auth(): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  return {
    before: async (request) => {
      const config = getConfig();
      if (!config.SVC_AUTH_ENABLED) {
        request.context.principal = OPEN_ACCESS;
        return;
      }
      request.context.principal = ANONYMOUS;
      const access = request.context.access;
      if (access === 'public') return;
      const key = headerValue(request.event, config.API_KEY_NAME);
      if (!key) throw new UnauthorizedError(`Missing API key: send it in the ${config.API_KEY_NAME} header`, config.API_KEY_NAME);
      const record = await authenticateFrom(key, request.event.requestContext?.http?.sourceIp ?? 'unknown');
      if (!record) throw new UnauthorizedError('Invalid API key', config.API_KEY_NAME);
      request.context.apiKey = { key_id: record.key_id, role: record.role, org_id: record.org_id };
      request.context.principal = { key_id: record.key_id, role: record.role, org_id: record.org_id };
      if (!passesEdge(record.role, access)) {
        throw new ForbiddenError(`Missing permission: this operation needs the '${access}' role; this key has '${record.role}'`);
      }
    },
  };
}
