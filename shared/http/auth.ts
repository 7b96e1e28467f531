/**
 * API keys (docs/rules.md, "Keys and limits"): on when SVC_AUTH_ENABLED, key in the API_KEY_NAME header. A missing or
 * unknown key is 401 with WWW-Authenticate; a key whose role is too low is 403. Keys are looked up by
 * their SHA-256 hash; answers are cached for SVC_AUTH_CACHE_SECONDS, which bounds how long a revoked
 * key keeps working on an instance that saw it. A source IP that presents more than
 * SVC_AUTH_FAILURES_PER_MINUTE unknown keys in a minute gets 429 before any lookup until the minute ends:
 * the per-key rate limit alone would give every guessed key a fresh budget.
 */
import type { MiddlewareObj } from '@middy/core';
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { ANONYMOUS, OPEN_ACCESS, passesEdge } from '../access/policy.ts';
import { type ApiKeyRecord, type ApiKeyRepository, hashApiKey, seedAdminKey } from '../admin/api-keys.ts';
import { ForbiddenError, TooManyRequestsError, UnauthorizedError } from '../errors.ts';
import { logger } from '../log.ts';
import { headerValue } from './request-id.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

export interface Authenticator {
  /**
   * The stored record of a presented key, or undefined when the key is unknown or revoked. Seeds the
   * admin key once per instance, so that it works on the first request a Lambda serves. Shared by the
   * HTTP edge and the WebSocket $connect.
   */
  authenticate(key: string, options?: { fresh?: boolean }): Promise<ApiKeyRecord | undefined>;
  /**
   * `authenticate`, for a key presented by `sourceIp`: refused with 429 while that source is over its
   * budget of unknown keys, and each unknown key it presents is counted against the budget.
   */
  authenticateFrom(key: string, sourceIp: string): Promise<ApiKeyRecord | undefined>;
}

export interface AuthenticatorOptions {
  apiKeys: () => ApiKeyRepository;
  /** SVC_ADMIN_API_KEY: seeded into the registry before the first lookup. */
  adminApiKey: string | undefined;
  /** How long an answer is kept (0: never); bounds how long a revoked key keeps working on an instance. */
  cacheSeconds: number;
  /** Unknown keys a source may present per minute (0: no limit), counted by `failureLimiter`. */
  failuresPerMinute: number;
  failureLimiter: () => RateLimiterAbstract;
  now?: () => number;
}

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const now = options.now ?? Date.now;
  const cache = new Map<string, { record: ApiKeyRecord | undefined; expires: number }>();
  let seeded: Promise<void> | undefined;

  /** `fresh`: read from the registry whatever the cache holds (and keep that answer). */
  async function lookup(keyHash: string, fresh = false): Promise<ApiKeyRecord | undefined> {
    const ttlMs = options.cacheSeconds * 1000;
    const hit = fresh ? undefined : cache.get(keyHash);
    if (hit && hit.expires > now()) return hit.record;
    // Fresh: strongly consistent too, or on AWS a revocation a moment old could still read as the key held.
    const record = await options.apiKeys().findByHash(keyHash, fresh ? { consistent: true } : {});
    if (ttlMs > 0) {
      if (cache.size > 10_000) cache.clear();
      cache.set(keyHash, { record, expires: now() + ttlMs });
    }
    return record;
  }

  async function authenticate(key: string, { fresh = false }: { fresh?: boolean } = {}): Promise<ApiKeyRecord | undefined> {
    if (options.adminApiKey) {
      seeded ??= seedAdminKey(options.apiKeys(), options.adminApiKey).catch((error) => {
        seeded = undefined;
        throw error;
      });
      await seeded;
    }
    return lookup(hashApiKey(key), fresh);
  }

  return {
    authenticate,
    async authenticateFrom(key, sourceIp) {
      const limit = options.failuresPerMinute;
      const bucket = `ip:${sourceIp}`;
      const record = await authenticate(key);
      // A known key passes whatever its address did: refused before its lookup, 21 made-up keys from an address (a
      // NAT, a proxy) had shut its valid keys out for the rest of the minute (red team, 2026-12-07). An unknown one
      // past the address's budget is 429, counted no more; its lookup is the price of telling the two apart.
      if (record) return record;
      if (limit > 0) {
        const state = await options
          .failureLimiter()
          .get(bucket)
          .catch((error: unknown) => {
            logger.warn('auth failure limiter unavailable; not checked', { error });
            return null;
          });
        if (state && state.consumedPoints >= limit) throw new TooManyRequestsError(Math.max(1, Math.ceil(state.msBeforeNext / 1000)));
        await options
          .failureLimiter()
          .consume(bucket)
          .catch((outcome: unknown) => {
            // Over the budget now: this answer is still 401, the next one from this source is 429.
            if (!(outcome instanceof RateLimiterRes)) logger.warn('auth failure limiter unavailable; not counted', { error: outcome });
          });
      }
      return undefined;
    },
  };
}

export interface AuthOptions {
  /** SVC_AUTH_ENABLED: off, every caller is OPEN_ACCESS. */
  enabled: boolean;
  /** The header keys are read from (API_KEY_NAME). */
  header: string;
  authenticator: Authenticator;
}

/** Checks the caller's key against the route's declared access (set on the context when the route was matched). */
export function auth(options: AuthOptions): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  return {
    before: async (request) => {
      if (!options.enabled) {
        request.context.principal = OPEN_ACCESS;
        return;
      }
      request.context.principal = ANONYMOUS;
      const access = request.context.access;
      if (access === 'public') return;
      const key = headerValue(request.event, options.header);
      // No key: refused by `authorize`, after the rate limit has counted the request by its address.
      if (!key) return;
      const record = await options.authenticator.authenticateFrom(key, request.event.requestContext?.http?.sourceIp ?? 'unknown');
      if (!record) throw new UnauthorizedError('Invalid API key', options.header);
      request.context.apiKey = { key_id: record.key_id, role: record.role, org_id: record.org_id };
      request.context.principal = { key_id: record.key_id, role: record.role, org_id: record.org_id };
      request.context.keyStillHeld = async () => {
        // From the registry, not the cache the edge's check just filled: within SVC_AUTH_CACHE_SECONDS of that check the
        // cache still answered a key revoked during a long run (red team).
        const now = await options.authenticator.authenticate(key, { fresh: true });
        if (!now || now.key_id !== record.key_id || now.role !== record.role || now.org_id !== record.org_id)
          throw new UnauthorizedError('This API key was revoked or changed during the request', options.header);
      };
    },
  };
}

/**
 * Refuses a request that needs a key and sent none (401), and a checked key whose role the route's declared access does
 * not allow (403). Apart from `auth`, after the rate limit: both are counted (by address, by key), as before any refusal.
 */
export function authorize(options: Pick<AuthOptions, 'enabled' | 'header'>): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  return {
    before: (request) => {
      const { access } = request.context;
      if (!options.enabled || access === 'public') return;
      // auth refused a key that is none; a request that sent no key is refused here, counted by its address.
      const role = request.context.principal?.role;
      if (!role) throw new UnauthorizedError(`Missing API key: send it in the ${options.header} header`, options.header);
      if (!passesEdge(role, access)) {
        throw new ForbiddenError(`Missing permission: this operation needs the '${access}' role; this key has '${role}'`);
      }
    },
  };
}
