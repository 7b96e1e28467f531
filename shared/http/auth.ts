/**
 * API keys (docs/rules.md, "Keys and limits"): on when SVC_AUTH_ENABLED, key in the API_KEY_NAME header. A missing or
 * unknown key is 401 with WWW-Authenticate; a key whose role is too low is 403. Keys are looked up by
 * their SHA-256 hash; answers are cached for SVC_AUTH_CACHE_SECONDS, which bounds how long a revoked
 * key keeps working on an instance that saw it. A source IP that presents more than
 * SVC_AUTH_FAILURES_PER_MINUTE unknown keys in a minute gets 429 for its unknown keys until the minute ends (the
 * per-key rate limit alone would give every guessed key a fresh budget); its known keys still pass, looked up until
 * it has presented OVER_BUDGET_FACTOR times more unknown ones, and past that every key of it is 429 before any lookup.
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

/**
 * How many times its budget of unknown keys an address may go on presenting keys that are looked up: a known key from
 * it passes meanwhile (21 made-up keys from a NAT or a proxy had shut its valid keys out, red team 2026-12-07), and
 * guessing stays bounded: at most (1 + this) times the budget of lookups a minute, then 429 before any lookup.
 */
export const OVER_BUDGET_FACTOR = 5;

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const now = options.now ?? Date.now;
  const cache = new Map<string, { record: ApiKeyRecord | undefined; expires: number }>();
  let seeded: Promise<void> | undefined;

  /**
   * `fresh`: read from the registry whatever the cache holds (and keep that answer). `keepUnknown` false: an unknown
   * key is not kept (an address past its budget cannot fill the cache with made-up keys and empty it of real ones).
   */
  async function lookup(keyHash: string, fresh = false, keepUnknown = true): Promise<ApiKeyRecord | undefined> {
    const ttlMs = options.cacheSeconds * 1000;
    const hit = fresh ? undefined : kept(keyHash);
    if (hit) return hit.record;
    // Fresh: strongly consistent too, or on AWS a revocation a moment old could still read as the key held.
    const record = await options.apiKeys().findByHash(keyHash, fresh ? { consistent: true } : {});
    if (ttlMs > 0 && (record || keepUnknown)) {
      if (cache.size > 10_000) cache.clear();
      cache.set(keyHash, { record, expires: now() + ttlMs });
    }
    return record;
  }

  /** What this instance keeps for a key's hash, unexpired (a record, or that the key is unknown). */
  function kept(keyHash: string): { record: ApiKeyRecord | undefined } | undefined {
    const hit = cache.get(keyHash);
    return hit && hit.expires > now() ? hit : undefined;
  }

  async function authenticateHash(keyHash: string, { fresh = false, keepUnknown = true }: { fresh?: boolean; keepUnknown?: boolean } = {}) {
    if (options.adminApiKey) {
      seeded ??= seedAdminKey(options.apiKeys(), options.adminApiKey).catch((error) => {
        seeded = undefined;
        throw error;
      });
      await seeded;
    }
    return lookup(keyHash, fresh, keepUnknown);
  }

  return {
    authenticate: (key, how) => authenticateHash(hashApiKey(key), how),
    async authenticateFrom(key, sourceIp) {
      const keyHash = hashApiKey(key);
      const limit = options.failuresPerMinute;
      if (limit <= 0) return authenticateHash(keyHash);
      // A key this instance knows (and keeps) passes without a look at its address's budget: no read of the limiter.
      const known = kept(keyHash)?.record;
      if (known) return known;
      const bucket = `ip:${sourceIp}`;
      const state = await options
        .failureLimiter()
        .get(bucket)
        .catch((error: unknown) => {
          logger.warn('auth failure limiter unavailable; not checked', { error });
          return null;
        });
      const refuse = () => new TooManyRequestsError(Math.max(1, Math.ceil((state?.msBeforeNext ?? 60_000) / 1000)));
      const over = state !== null && state.consumedPoints >= limit;
      // Far past its budget: every key of it is refused before a lookup, for the rest of the minute.
      if (over && state.consumedPoints >= limit * (1 + OVER_BUDGET_FACTOR)) throw refuse();
      const record = await authenticateHash(keyHash, { keepUnknown: !over });
      if (record) return record;
      await options
        .failureLimiter()
        .consume(bucket)
        .catch((outcome: unknown) => {
          // Over the budget now: the count goes on (it bounds the lookups past it), and the answer says so.
          if (!(outcome instanceof RateLimiterRes)) logger.warn('auth failure limiter unavailable; not counted', { error: outcome });
        });
      // Past its budget, an unknown key is 429 (the first past it is still told 401, as before).
      if (over) throw refuse();
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
