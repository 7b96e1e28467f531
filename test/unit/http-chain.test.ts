/**
 * The middleware chain, offline: `createHttpHandler` around routes declared for the test, with its edge
 * passed in (an in-memory key registry and rate limiters, counted metrics). API Gateway's events are
 * built by hand, as API Gateway would send them. What a client would notice: the declared status and
 * parsed input, the contract's error bodies, who is let through, limits, and the headers on every answer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Context } from 'aws-lambda';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import * as z from 'zod';
import { type ApiKeyRecord, type ApiKeyRepository, hashApiKey } from '#shared/admin/api-keys';
import { routesOf } from '#shared/api/define';
import { LOGGED_PATH_MAX, loggedPath } from '#shared/http/access-log';
import { createAuthenticator, OVER_BUDGET_FACTOR } from '#shared/http/auth';
import { viewerAddress } from '#shared/http/cdn';
import { createHttpHandler, type Edge } from '#shared/http/chain';
import type { HttpEvent, HttpResult } from '#shared/http/types';
import { createCloudWatchMetrics } from '#shared/metrics/cloudwatch';
import type { Metrics } from '#shared/metrics/metrics';
import { pause } from '#shared/deadline';
import { UnprocessableError } from '#shared/errors';
import { steadyNow } from '#shared/clock';
import { beforeRead, chargeReads, itemsRead } from '#shared/read-allowance';

const HEADER = 'X-API-Key';
const KEYS: Record<string, ApiKeyRecord> = {
  'reader-key': { key_id: 'r1', role: 'reader', org_id: null, created_at: '2026-01-01T00:00:00Z' },
  'writer-key': { key_id: 'w1', role: 'writer', org_id: 'acme', created_at: '2026-01-01T00:00:00Z' },
};

function memoryKeys(): ApiKeyRepository {
  const byHash = new Map(Object.entries(KEYS).map(([key, record]) => [hashApiKey(key), record]));
  return {
    put: async (record, hash) => void byHash.set(hash, record),
    findByHash: async (hash) => byHash.get(hash),
    list: async () => [...byHash.values()],
    hashOf: async (id) => [...byHash].find(([, r]) => r.key_id === id)?.[0],
    revoke: async (id) => [...byHash].some(([hash, r]) => r.key_id === id && byHash.delete(hash)),
  };
}

interface Deps {
  calls: string[];
  /** What happens during a long run (/long-run). */
  meanwhile?: () => Promise<void>;
}

const route = routesOf<Deps>('ledger');
const ROUTES = [
  route({ method: 'GET', path: '/health', summary: 'health', access: 'public', handler: async () => ({ body: { status: 'healthy' } }) }),
  route({ method: 'GET', path: '/open', summary: 'a public route, as /openapi.json is', access: 'public', handler: async () => ({ body: { open: true } }) }),
  route({
    method: 'GET',
    path: '/chains/{chain_name}/blocks',
    summary: 'blocks',
    access: 'reader',
    query: z.object({ limit: z.coerce.number().int().min(1).max(100).default(10) }),
    handler: async ({ params, query, principal }, { calls }) => {
      calls.push(`blocks ${params.chain_name}`);
      return { body: { chain: params.chain_name, limit: query.limit, caller: principal.key_id } };
    },
  }),
  route({
    method: 'POST',
    path: '/chains/{chain_name}/create',
    summary: 'create',
    access: 'writer',
    status: 201,
    body: z.object({ name: z.string().min(1) }),
    handler: async ({ body }, { calls }) => {
      calls.push(`create ${body.name}`);
      return { body: { created: body.name } };
    },
  }),
  route({
    method: 'POST',
    path: '/chains/{chain_name}/events',
    summary: 'append',
    access: 'writer',
    idempotent: true,
    handler: async ({ params }, { calls }) => {
      calls.push(`append ${params.chain_name}`);
      return { body: { appended: true } };
    },
  }),
  route({
    method: 'POST',
    path: '/chains/{chain_name}/long-run',
    summary: "a long run (a contract's): something happens meanwhile, then the key is checked again before it writes",
    access: 'writer',
    handler: async ({ keyStillHeld }, { calls, meanwhile }) => {
      await meanwhile?.();
      await keyStillHeld();
      calls.push('written');
      return { body: { written: true } };
    },
  }),
  route({
    method: 'GET',
    path: '/waits',
    summary: 'waits for something that never comes, a pause at a time (a receipt poll)',
    access: 'reader',
    handler: async () => {
      for (;;) await pause(50, 'a receipt');
    },
  }),
  route({
    method: 'GET',
    path: '/stuck',
    summary: 'never answers, and ignores the deadline (a wait nothing bounds)',
    access: 'reader',
    handler: () => new Promise(() => undefined),
  }),
  route({
    method: 'GET',
    path: '/drifts',
    summary: 'answers another shape than it declares',
    access: 'reader',
    response: z.object({ name: z.string() }),
    handler: async () => ({ body: { nom: 'x' } }),
  }),
  route({
    method: 'GET',
    path: '/huge',
    summary: 'answers 6.5 MB of JSON, or of quotes (each escaped once in the body, again in the response)',
    access: 'reader',
    query: z.object({ quotes: z.string().optional() }),
    handler: async ({ query }) => ({ body: { data: (query.quotes ? '"' : 'x').repeat(query.quotes ? 1_700_000 : 6_500_000) } }),
  }),
  route({
    method: 'GET',
    path: '/refuses-at-length',
    summary: "refuses with a caller's 7 MB message (a contract's thrown error)",
    access: 'reader',
    handler: async () => {
      throw new UnprocessableError(`contract failed: ${'\u0001'.repeat(7_000_000)}`);
    },
  }),
  route({
    method: 'GET',
    path: '/chains/{chain_name}/read-all',
    summary: 'reads 10 items at a time, `pages` times, by what it is (as a verify reads a whole chain)',
    access: 'reader',
    readItems: 100,
    query: z.object({ pages: z.coerce.number().int() }),
    handler: async ({ query }) => {
      for (let page = 0; page < query.pages; page += 1) {
        await beforeRead();
        chargeReads(10);
      }
      return { body: { read: itemsRead() } };
    },
  }),
  route({
    method: 'GET',
    path: '/boom',
    summary: 'fails',
    access: 'reader',
    handler: async () => {
      throw new Error('connection string postgres://admin:hunter2@db');
    },
  }),
];

function stack(
  options: {
    rpm?: number;
    maxBody?: number;
    failures?: number;
    checkResponses?: boolean;
    cloudWatchNamespace?: string;
    edgeSecret?: string;
    edgeOnly?: boolean;
    maxReads?: number;
    authCacheSeconds?: number;
  } = {},
) {
  const stored = memoryKeys();
  let lookups = 0;
  const keys: ApiKeyRepository = {
    ...stored,
    findByHash: (hash, options) => {
      lookups += 1;
      return stored.findByHash(hash, options);
    },
  };
  const deps: Deps = { calls: [] };
  const recorded: number[] = [];
  const metrics = { record: async (status: number) => void recorded.push(status) } as unknown as Metrics;
  const failureLimiter = new RateLimiterMemory({ points: options.failures ?? 10, duration: 60, keyPrefix: 'authfail' });
  const edge: Edge = {
    settings: {
      SVC_AUTH_ENABLED: true,
      API_KEY_NAME: HEADER,
      SVC_RATE_LIMIT_RPM: options.rpm ?? 100,
      SVC_MAX_BODY_BYTES: options.maxBody ?? 1024,
      SVC_CORS_ORIGINS: ['https://app.example'],
      SVC_CHECK_RESPONSES: options.checkResponses ?? false,
      SVC_EDGE_SECRET: options.edgeSecret,
      SVC_EDGE_ONLY: options.edgeOnly,
      SVC_MAX_READ_ITEMS: options.maxReads,
    },
    metrics: () => metrics,
    cloudWatch: options.cloudWatchNamespace ? (group) => createCloudWatchMetrics({ namespace: options.cloudWatchNamespace!, functionGroup: group }) : undefined,
    rateLimiter: () => limiter,
    authenticator: createAuthenticator({
      apiKeys: () => keys,
      adminApiKey: undefined,
      cacheSeconds: options.authCacheSeconds ?? 0,
      failuresPerMinute: options.failures ?? 10,
      failureLimiter: () => failureLimiter,
    }),
  };
  const limiter = new RateLimiterMemory({ points: options.rpm ?? 100, duration: 60 });
  const handler = createHttpHandler({ group: 'ledger', routes: ROUTES, deps, edge });
  const call = async (
    method: string,
    path: string,
    init: {
      routeKey?: string;
      key?: string;
      body?: string;
      headers?: Record<string, string>;
      query?: Record<string, string>;
      ip?: string;
      /** The function's remaining time, as Lambda's context tells it (default: no timeout). */
      remainingMs?: number;
    } = {},
  ) => {
    const event = {
      version: '2.0',
      routeKey: init.routeKey ?? `${method} ${path.replace(/\/chains\/[^/]+/, '/chains/{chain_name}')}`.replace(/^(\w+) /, `$1 /api/ledger`),
      rawPath: `/api/ledger${path}`,
      rawQueryString: new URLSearchParams(init.query ?? {}).toString(),
      headers: { ...(init.key ? { [HEADER.toLowerCase()]: init.key } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}), ...init.headers },
      queryStringParameters: init.query,
      body: init.body,
      isBase64Encoded: false,
      requestContext: { http: { method, path: `/api/ledger${path}`, sourceIp: init.ip ?? '203.0.113.7' }, requestId: 'gw-1' },
    } as unknown as HttpEvent;
    const endsAt = steadyNow() + (init.remainingMs ?? 0);
    const context = { awsRequestId: 'aws-1', ...(init.remainingMs ? { getRemainingTimeInMillis: () => endsAt - steadyNow() } : {}) } as Context;
    const result = (await handler(event, context)) as HttpResult;
    return { status: result.statusCode, headers: result.headers, body: result.body && !result.isBase64Encoded ? JSON.parse(String(result.body)) : result.body };
  };
  return { call, deps, recorded, limiter, keys, lookups: () => lookups };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('the middleware chain (offline)', () => {
  it('answers a declared route with its parsed parameters, query defaults and the headers every answer carries', async () => {
    const { call, deps, recorded } = stack();
    const res = await call('GET', '/chains/pkg%2017/blocks', { key: 'reader-key' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { chain: 'pkg 17', limit: 10, caller: 'r1' });
    assert.deepEqual(deps.calls, ['blocks pkg 17']);
    assert.match(String(res.headers['X-Request-ID']), UUID);
    assert.equal(res.headers['X-Frame-Options'], 'DENY');
    assert.equal(res.headers['X-Content-Type-Options'], 'nosniff');
    assert.match(String(res.headers['Content-Security-Policy']), /default-src 'none'/);
    assert.equal(res.headers['X-RateLimit-Limit'], '100');
    assert.deepEqual(recorded, [200], 'the request was counted for /metrics');
  });

  it('uses the declared success status, and refuses a body outside its schema with a 422 before the handler runs', async () => {
    const { call, deps } = stack();
    const created = await call('POST', '/chains/x/create', { key: 'writer-key', body: '{"name":"orders"}' });
    assert.equal(created.status, 201);
    assert.deepEqual(created.body, { created: 'orders' });
    const refused = await call('POST', '/chains/x/create', { key: 'writer-key', body: '{"name":""}' });
    assert.equal(refused.status, 422);
    assert.deepEqual(refused.body.detail[0].loc, ['body', 'name']);
    assert.equal(refused.body.request_id, refused.headers['X-Request-ID']);
    const missing = await call('POST', '/chains/x/create', { key: 'writer-key' });
    assert.equal(missing.status, 422, 'no body at all is told what is missing');
    const badQuery = await call('GET', '/chains/x/blocks', { key: 'reader-key', query: { limit: '0' } });
    assert.equal(badQuery.status, 422);
    assert.deepEqual(badQuery.body.detail[0].loc, ['query', 'limit']);
    const notJson = await call('POST', '/chains/x/create', { key: 'writer-key', body: '{"name":' });
    assert.equal(notJson.status, 400);
    assert.deepEqual(deps.calls, ['create orders'], 'the handler ran for the valid request only');
  });

  it("lets through what each route's declared access allows, and no more", async () => {
    const { call } = stack();
    assert.equal((await call('GET', '/health')).status, 200, 'public: no key needed');
    const noKey = await call('GET', '/chains/x/blocks');
    assert.equal(noKey.status, 401);
    assert.match(String(noKey.headers['WWW-Authenticate']), /X-API-Key/);
    assert.equal((await call('GET', '/chains/x/blocks', { key: 'nope' })).status, 401);
    const reader = await call('POST', '/chains/x/create', { key: 'reader-key', body: '{"name":"a"}' });
    assert.equal(reader.status, 403);
    assert.match(reader.body.detail, /needs the 'writer' role; this key has 'reader'/);
    assert.equal((await call('POST', '/chains/x/create', { key: 'writer-key', body: '{"name":"a"}' })).status, 201);
  });

  it('with SVC_CHECK_RESPONSES (as the tests run), an answer that drifts from its declared shape is a 500', async () => {
    assert.equal((await stack().call('GET', '/drifts', { key: 'reader-key' })).status, 200);
    const res = await stack({ checkResponses: true }).call('GET', '/drifts', { key: 'reader-key' });
    assert.equal(res.status, 500);
    assert.equal(res.body.detail, 'Internal server error');
  });

  it('answers 404 for an unknown route only to a caller with a valid key', async () => {
    const { call } = stack();
    assert.equal((await call('GET', '/secret', { routeKey: '$default' })).status, 401, 'routes cannot be probed without a key');
    const res = await call('GET', '/secret', { routeKey: '$default', key: 'reader-key' });
    assert.equal(res.status, 404);
    assert.deepEqual(Object.keys(res.body).sort(), ['detail', 'request_id']);
  });

  it('refuses an answer Lambda could not carry with a 422 that says so, not the bare 500 API Gateway would answer; compressed, it goes', async () => {
    const { call } = stack();
    const big = await call('GET', '/huge', { key: 'reader-key' });
    assert.equal(big.status, 422);
    assert.match(big.body.detail, /^This answer would be \d+ bytes, more than one answer can carry \(6275172\); ask for less/);
    // 1.7 M quotes are 3.4 MB of body, and 6.8 MB once the response escapes them again, as Lambda counts it.
    const quotes = await call('GET', '/huge', { key: 'reader-key', query: { quotes: '1' } });
    assert.equal(quotes.status, 422, 'measured as Lambda serializes it');
    const gzipped = await call('GET', '/huge', { key: 'reader-key', headers: { 'accept-encoding': 'gzip' } });
    assert.equal(gzipped.status, 200);
    assert.equal(gzipped.headers['Content-Encoding'], 'gzip');
  });

  it("cuts an error's message a caller chose to 4,096 characters, saying how much was left out: a contract's 7 MB error had made API Gateway's bare 500 (red team)", async () => {
    const { call } = stack();
    const res = await call('GET', '/refuses-at-length', { key: 'reader-key' });
    assert.equal(res.status, 422);
    assert.ok(res.body.detail.length < 4_200, `${res.body.detail.length} characters`);
    assert.ok(res.body.detail.startsWith('contract failed: ') && res.body.detail.endsWith('… (6995921 characters more)'), res.body.detail.slice(-60));
  });

  it('hides the cause of a 500 from the client', async () => {
    const { call } = stack();
    const res = await call('GET', '/boom', { key: 'reader-key' });
    assert.equal(res.status, 500);
    assert.equal(res.body.detail, 'Internal server error');
    assert.doesNotMatch(JSON.stringify(res), /hunter2|postgres/);
    assert.equal(res.headers['X-Frame-Options'], 'DENY', 'errors carry the security headers too');
  });

  it('limits requests per key per minute (health is free), bodies by size, and unknown keys per address', async () => {
    const limited = stack({ rpm: 2 });
    for (let i = 0; i < 3; i += 1) assert.equal((await limited.call('GET', '/health')).status, 200);
    assert.equal((await limited.call('GET', '/chains/x/blocks', { key: 'reader-key' })).status, 200);
    assert.equal((await limited.call('GET', '/chains/x/blocks', { key: 'reader-key' })).status, 200);
    const over = await limited.call('GET', '/chains/x/blocks', { key: 'reader-key' });
    assert.equal(over.status, 429);
    assert.ok(Number(over.headers['Retry-After']) > 0);
    assert.equal(over.headers['X-RateLimit-Remaining'], '0');
    assert.equal((await limited.call('GET', '/chains/x/blocks', { key: 'writer-key' })).status, 200, 'another key has its own budget');

    const small = stack({ maxBody: 16 });
    const big = await small.call('POST', '/chains/x/create', { key: 'writer-key', body: JSON.stringify({ name: 'x'.repeat(32) }) });
    assert.equal(big.status, 413);
    assert.deepEqual(small.deps.calls, []);

    const guessing = stack({ failures: 2 });
    assert.equal((await guessing.call('GET', '/chains/x/blocks', { key: 'guess-1' })).status, 401);
    assert.equal((await guessing.call('GET', '/chains/x/blocks', { key: 'guess-2' })).status, 401);
    assert.equal((await guessing.call('GET', '/chains/x/blocks', { key: 'guess-3' })).status, 429, 'over the budget of unknown keys');
    assert.equal((await guessing.call('GET', '/chains/x/blocks', { key: 'guess-3', ip: '198.51.100.1' })).status, 401, 'another address is not');
    // A valid key from the guessing address still passes: 21 made-up keys had shut a NAT's tenants out (red team).
    assert.equal((await guessing.call('GET', '/chains/x/blocks', { key: 'reader-key' })).status, 200, 'a known key is not locked out by another caller');
    assert.equal((await guessing.call('GET', '/chains/x/blocks', { key: 'guess-4' })).status, 429, 'while unknown ones still are');
    // Guessing stays bounded: past (1 + OVER_BUDGET_FACTOR) times its budget, every key of the address is 429 unread.
    const before = guessing.lookups();
    for (let i = 5; i <= 2 * (1 + OVER_BUDGET_FACTOR); i += 1) await guessing.call('GET', '/chains/x/blocks', { key: `guess-${i}` });
    const looked = guessing.lookups() - before;
    assert.equal(looked, 2 * (1 + OVER_BUDGET_FACTOR) - 4, 'each unknown key up to the bound was looked up');
    assert.equal((await guessing.call('GET', '/chains/x/blocks', { key: 'guess-99' })).status, 429);
    assert.equal((await guessing.call('GET', '/chains/x/blocks', { key: 'reader-key' })).status, 429, 'past the bound, a known key too');
    assert.equal(guessing.lookups() - before, looked, 'and neither was looked up');
  });

  it('keeps no unknown key an address past its budget presents: made-up keys cannot fill the key cache and empty it of real ones (a review)', async () => {
    const stored = memoryKeys();
    const seen: string[] = [];
    const limiter = new RateLimiterMemory({ points: 2, duration: 60, keyPrefix: 'authfail-cache' });
    const authenticator = createAuthenticator({
      apiKeys: () => ({
        ...stored,
        findByHash: (hash, options) => {
          seen.push(hash);
          return stored.findByHash(hash, options);
        },
      }),
      adminApiKey: undefined,
      cacheSeconds: 60,
      failuresPerMinute: 2,
      failureLimiter: () => limiter,
    });
    const from = (key: string) => authenticator.authenticateFrom(key, '203.0.113.50').catch((e: Error) => e.constructor.name);
    assert.equal(await from('made-up-1'), undefined);
    assert.equal(await from('made-up-1'), undefined, 'within the budget, an unknown key is kept: not looked up again');
    assert.equal(seen.length, 1);
    assert.equal(await from('made-up-2'), 'TooManyRequestsError');
    assert.equal(await from('made-up-2'), 'TooManyRequestsError');
    assert.equal(seen.length, 3, 'past it, each is looked up and not kept');
    assert.equal((await from('reader-key')) && 'passed', 'passed', 'a known key still passes');
    // Kept by the instance, it passes again without a read of the address's budget (a read of the limiter's table each).
    let reads = 0;
    const get = limiter.get.bind(limiter);
    limiter.get = (...args) => {
      reads += 1;
      return get(...args);
    };
    assert.equal((await from('reader-key')) && 'passed', 'passed');
    assert.equal(reads, 0);
  });

  it('counts a public route by address, whatever key a caller makes up, and a checked route by its key (red team)', async () => {
    // A made-up X-API-Key a request had each escaped the limit on public routes (the key is never checked there).
    const limited = stack({ rpm: 2 });
    assert.equal((await limited.call('GET', '/open', { key: 'junk-1' })).status, 200);
    assert.equal((await limited.call('GET', '/open', { key: 'junk-2' })).status, 200);
    assert.equal((await limited.call('GET', '/open', { key: 'junk-3' })).status, 429, 'the third from one address, each with a new key');
    assert.equal((await limited.call('GET', '/open', { ip: '198.51.100.9' })).status, 200, 'another address has its own budget');
    assert.equal((await limited.call('GET', '/chains/x/blocks', { key: 'reader-key' })).status, 200, 'a checked key counts on its own');
  });

  it("through the CDN, counts unknown keys by the viewer's address the edge vouches for, never by one a caller sends itself", async () => {
    const SECRET = 'edge-secret-0123456789abcdef';
    const EDGE_IP = '130.176.0.1';
    const guessing = stack({ failures: 2, edgeSecret: SECRET });
    const viaEdge = (key: string, viewer: string, secret = SECRET) =>
      guessing.call('GET', '/chains/x/blocks', { key, ip: EDGE_IP, headers: { 'x-ledger-edge': secret, 'cloudfront-viewer-address': viewer } });
    assert.equal((await viaEdge('guess-1', '198.51.100.7:40000')).status, 401);
    assert.equal((await viaEdge('guess-2', '198.51.100.7:40001')).status, 401);
    assert.equal((await viaEdge('guess-3', '198.51.100.7:40002')).status, 429, 'the guessing viewer is over its budget');
    assert.equal((await viaEdge('guess-3', '[2001:db8::5]:443')).status, 401, 'another viewer behind the same edge is not');
    // The same headers without the secret (or a wrong one), sent straight to the API: the address API Gateway saw.
    const forged = stack({ failures: 2, edgeSecret: SECRET });
    for (const key of ['guess-1', 'guess-2']) {
      const sent = { 'x-ledger-edge': 'not-the-secret-at-all-xx', 'cloudfront-viewer-address': `192.0.2.${key.at(-1)}:1` };
      assert.equal((await forged.call('GET', '/chains/x/blocks', { key, ip: '203.0.113.9', headers: sent })).status, 401);
    }
    const fresh = { 'cloudfront-viewer-address': '192.0.2.200:1' };
    assert.equal(
      (await forged.call('GET', '/chains/x/blocks', { key: 'guess-3', ip: '203.0.113.9', headers: fresh })).status,
      429,
      'a chosen address does not reset it',
    );
  });

  it('with SVC_EDGE_ONLY, refuses (403) every request that did not come through the CDN, before its body, key or count (red team)', async () => {
    // The API's own URL reached the functions beside the CDN, around whatever the edge enforces (a WAF's limits).
    const SECRET = 'edge-secret-0123456789abcdef';
    const { call, limiter } = stack({ edgeSecret: SECRET, edgeOnly: true, rpm: 100 });
    const direct = await call('POST', '/chains/x/events', { key: 'writer-key', body: '{not json' });
    assert.equal(direct.status, 403, 'straight to the API');
    assert.match(String(direct.body.detail), /served through its CDN/);
    assert.ok(direct.headers['X-Request-ID'], 'the contract headers as on every answer');
    assert.equal(await limiter.get(`key:${hashApiKey('writer-key')}`), null, 'nothing counted');
    for (const secret of ['not-the-secret-at-all-xx', `${SECRET}x`]) {
      assert.equal((await call('GET', '/chains/x/blocks', { key: 'reader-key', headers: { 'x-ledger-edge': secret } })).status, 403, 'a wrong secret');
    }
    assert.equal((await call('OPTIONS', '/chains/x/blocks', { headers: { origin: 'https://app.example' } })).status, 403, 'a preflight too');
    const viaEdge = await call('GET', '/chains/x/blocks', {
      key: 'reader-key',
      headers: { 'x-ledger-edge': SECRET, 'cloudfront-viewer-address': '198.51.100.7:1' },
    });
    assert.equal(viaEdge.status, 200, 'through the CDN');
    // Without the setting (the default), the API's own URL answers as before.
    assert.equal((await stack({ edgeSecret: SECRET }).call('GET', '/chains/x/blocks', { key: 'reader-key' })).status, 200);
  });

  it("pays for a route's reads past SVC_MAX_READ_ITEMS from the caller's rate budget, one request an allowance, 429 once spent (red team)", async () => {
    // A reader's verify of a long chain read the whole chain, counted as one request: twelve at once held the stack.
    const { call } = stack({ rpm: 5, maxReads: 20 });
    const within = await call('GET', '/chains/x/read-all', { key: 'reader-key', query: { pages: '2' } });
    assert.equal(within.status, 200);
    assert.equal(within.headers['X-RateLimit-Remaining'], '4', 'inside its own allowance: one request');
    const longer = await call('GET', '/chains/x/read-all', { key: 'reader-key', query: { pages: '5' } });
    assert.equal(longer.status, 200);
    assert.equal(longer.body.read, 50);
    assert.equal(longer.headers['X-RateLimit-Remaining'], '1', '50 items: its own allowance and two more');
    const spent = await call('GET', '/chains/x/read-all', { key: 'reader-key', query: { pages: '10' } });
    assert.equal(spent.status, 429, 'the budget ran out while it read');
    assert.ok(Number(spent.headers['Retry-After']) >= 1);
    // The route's own ceiling still holds, whatever the budget.
    const rich = stack({ rpm: 1000, maxReads: 20 });
    assert.equal((await rich.call('GET', '/chains/x/read-all', { key: 'reader-key', query: { pages: '10' } })).status, 200);
    const past = await rich.call('GET', '/chains/x/read-all', { key: 'reader-key', query: { pages: '11' } });
    assert.equal(past.status, 422);
    // Without a rate limit, the whole ceiling at once, as before.
    assert.equal((await stack({ rpm: 0, maxReads: 20 }).call('GET', '/chains/x/read-all', { key: 'reader-key', query: { pages: '10' } })).status, 200);
  });

  it('counts a request by its key only once auth knows the key (made-up keys write no buckets), and counts a refused role too (red team)', async () => {
    // Counted before auth, each made-up key wrote a new item into the shared limiter's table (40 guesses, 40 buckets).
    const { call, limiter } = stack({ rpm: 100, failures: 100 });
    for (let i = 0; i < 5; i += 1) assert.equal((await call('GET', '/chains/x/blocks', { key: `guess-${i}` })).status, 401);
    for (let i = 0; i < 5; i += 1) assert.equal(await limiter.get(`key:${hashApiKey(`guess-${i}`)}`), null, `guess-${i} has no bucket`);
    assert.equal((await call('GET', '/chains/x/blocks', { key: 'reader-key' })).status, 200);
    assert.equal((await call('POST', '/chains/x/create', { key: 'reader-key', body: '{"name":"x"}' })).status, 403);
    assert.equal((await limiter.get(`key:${hashApiKey('reader-key')}`))?.consumedPoints, 2, 'a key that is one counts, its 403 included');
    // A request with no key is counted by its address, its 401 included, as before.
    const keyless = stack({ rpm: 2 });
    assert.equal((await keyless.call('GET', '/chains/x/blocks')).status, 401);
    const second = await keyless.call('GET', '/chains/x/blocks');
    assert.equal(second.status, 401);
    assert.equal(second.headers['X-RateLimit-Remaining'], '0');
    assert.equal((await keyless.call('GET', '/chains/x/blocks')).status, 429);
  });

  it('checks the key again in the registry, not the cache its first check filled, before a long run writes (red team)', async () => {
    // Through the cache (10 s by default), a key revoked during a 3 s contract run still appended.
    const { call, deps, keys } = stack({ authCacheSeconds: 10 });
    assert.equal((await call('GET', '/chains/x/blocks', { key: 'writer-key' })).status, 200, 'the key is cached now');
    deps.meanwhile = async () => void (await keys.revoke('w1'));
    const run = await call('POST', '/chains/x/long-run', { key: 'writer-key' });
    assert.equal(run.status, 401, JSON.stringify(run.body));
    assert.match(run.body.detail, /revoked or changed during the request/);
    assert.deepEqual(deps.calls, ['blocks x']);
  });

  it('reads no body a route cannot take: a preflight, a GET, a path no route serves (red team: 2 s of CPU a 2.6 MB body, with no key)', async () => {
    const { call } = stack();
    const junk = '{not json';
    assert.equal((await call('OPTIONS', '/chains/x/blocks', { body: junk, headers: { origin: 'https://app.example' } })).status, 204);
    assert.equal((await call('GET', '/health', { body: junk })).status, 200);
    assert.equal((await call('POST', '/no/such/route', { key: 'writer-key', body: junk, routeKey: '$default' })).status, 404);
    assert.equal((await call('POST', '/chains/x/create', { key: 'writer-key', body: junk })).status, 400, 'a route that takes one still reads it');
  });

  it('answers a CORS preflight for an allowed origin, and echoes a client request id', async () => {
    const { call } = stack();
    const preflight = await call('OPTIONS', '/chains/x/blocks', {
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers['Access-Control-Allow-Origin'], 'https://app.example');
    const id = '0b6f2c1e-2d5b-4c1a-9f3e-7a8b9c0d1e2f';
    const res = await call('GET', '/health', { headers: { 'x-request-id': id } });
    assert.equal(res.headers['X-Request-ID'], id);
  });

  it("answers 503 with Retry-After when a wait reaches the invocation's deadline, before the function's timeout", async () => {
    const { call, recorded } = stack();
    const started = steadyNow();
    const res = await call('GET', '/waits', { key: 'reader-key', remainingMs: 2_500 });
    const took = steadyNow() - started;
    assert.equal(res.status, 503);
    assert.match(res.body.detail, /ran out of time waiting for a receipt/);
    assert.ok(Number(res.headers['Retry-After']) >= 1);
    assert.match(String(res.headers['X-Request-ID']), UUID);
    // The deadline is the remaining time less the 1.5 s kept to answer: about 1 s here, never the 2.5 s.
    assert.ok(took >= 900 && took < 2_000, `answered after ${took} ms`);
    assert.deepEqual(recorded, [503], 'counted for /metrics like any answer');
  });

  it('answers 503 for a handler that ignores the deadline too, with every header, while the function still has time', async () => {
    const { call } = stack();
    const started = steadyNow();
    const res = await call('GET', '/stuck', { key: 'reader-key', remainingMs: 2_500 });
    const took = steadyNow() - started;
    assert.equal(res.status, 503);
    assert.match(res.body.detail, /ran out of time/);
    assert.ok(Number(res.headers['Retry-After']) >= 1);
    assert.match(String(res.headers['X-Request-ID']), UUID);
    assert.equal(res.body.request_id, res.headers['X-Request-ID']);
    assert.equal(res.headers['X-Frame-Options'], 'DENY');
    assert.match(String(res.headers['Content-Security-Policy']), /default-src 'none'/);
    assert.ok(took < 2_500, `answered after ${took} ms, before the function's 2.5 s were up`);
  });

  it('answers a handler that ignores the deadline at its deadline even with the wall clock set an hour back meanwhile', { timeout: 10_000 }, async () => {
    const { call } = stack();
    const wallClock = Date.now;
    Date.now = () => wallClock() - 3_600_000;
    try {
      const started = steadyNow();
      const res = await call('GET', '/stuck', { key: 'reader-key', remainingMs: 2_500 });
      const took = steadyNow() - started;
      assert.equal(res.status, 503);
      assert.ok(took < 2_500, `answered after ${took} ms, before the function's 2.5 s were up`);
    } finally {
      Date.now = wallClock;
    }
  });

  it("writes each request's CloudWatch figures as one embedded-metric-format line before answering, append latency for appends", async () => {
    const lines: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = String(chunk);
      if (text.includes('"_aws"')) {
        lines.push(text);
        return true;
      }
      return (write as (...args: unknown[]) => boolean).call(process.stdout, chunk, ...rest);
    }) as typeof process.stdout.write;
    // Lambda sets it in every on-demand instance; Powertools writes its cold-start metric only then.
    process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'on-demand';
    try {
      const { call } = stack({ cloudWatchNamespace: 'LedgerTest' });
      assert.equal((await call('POST', '/chains/orders/events', { key: 'writer-key', body: '{}' })).status, 200);
      assert.equal((await call('GET', '/boom', { key: 'reader-key' })).status, 500);
    } finally {
      process.stdout.write = write;
      delete process.env.AWS_LAMBDA_INITIALIZATION_TYPE;
    }
    const emf = lines.flatMap((l) => l.trim().split('\n')).map((l) => JSON.parse(l));
    const requests = emf.filter((e) => 'Requests' in e);
    assert.equal(requests.length, 2, 'one line per request');
    const [append, failed] = requests;
    const directive = append._aws.CloudWatchMetrics[0];
    assert.equal(directive.Namespace, 'LedgerTest');
    assert.deepEqual(directive.Dimensions, [['service', 'function']]);
    assert.deepEqual(directive.Metrics.map((m: { Name: string; Unit: string }) => `${m.Name}:${m.Unit}`).sort(), [
      'AppendLatency:Milliseconds',
      'Latency:Milliseconds',
      'Requests:Count',
      'ServerErrors:Count',
    ]);
    assert.equal(append.function, 'ledger');
    assert.equal(append.service, 'verifiable-ledger');
    assert.equal(append.ServerErrors, 0);
    assert.ok(append.AppendLatency >= 0 && append.AppendLatency === append.Latency);
    assert.equal(failed.ServerErrors, 1);
    assert.equal('AppendLatency' in failed, false, 'only appends carry the append latency');
    assert.ok(
      emf.some((e) => 'ColdStart' in e),
      "the instance's first request writes Powertools' cold-start metric",
    );
  });
});

describe('the viewer address behind the CDN', () => {
  it('is the address CloudFront names, without its port, or the one it appended to X-Forwarded-For; nothing without the secret', () => {
    const secret = 'edge-secret-0123456789abcdef';
    const edge = { 'x-ledger-edge': secret };
    assert.equal(viewerAddress({ ...edge, 'cloudfront-viewer-address': '198.51.100.10:46532' }, secret), '198.51.100.10');
    assert.equal(viewerAddress({ ...edge, 'cloudfront-viewer-address': '[2001:db8::1]:443' }, secret), '2001:db8::1');
    assert.equal(viewerAddress({ ...edge, 'cloudfront-viewer-address': '2001:db8::1:443' }, secret), '2001:db8::1');
    assert.equal(viewerAddress({ ...edge, 'x-forwarded-for': '10.0.0.1, 198.51.100.10, 130.176.0.1' }, secret), '198.51.100.10');
    assert.equal(viewerAddress({ ...edge, 'cloudfront-viewer-address': '198.51.100.10:1' }, undefined), undefined, 'no secret set: no CDN');
    assert.equal(viewerAddress({ 'x-ledger-edge': `${secret}x`, 'cloudfront-viewer-address': '198.51.100.10:1' }, secret), undefined);
    assert.equal(viewerAddress({ 'cloudfront-viewer-address': '198.51.100.10:1' }, secret), undefined);
  });
});

describe('the access log', () => {
  it("leaves a private value's key out of the path it logs, however the path is spelt (red team)", () => {
    assert.equal(loggedPath('/api/business/private-data/ch/col/alice@example.com'), '/api/business/private-data/ch/col/…');
    assert.equal(loggedPath('/api/v2/private-data/ch/col/a/b%2Fc'), '/api/v2/private-data/ch/col/…');
    // Paths that match no route are logged too.
    assert.equal(loggedPath('//api/business/private-data/ch/col/alice@example.com'), '//api/business/private-data/ch/col/…');
    assert.equal(loggedPath('/API/Business/Private-Data/ch/col/alice@example.com'), '/API/Business/Private-Data/ch/col/…');
    assert.equal(loggedPath('/business/private-data/ch/col/alice@example.com/'), '/business/private-data/ch/col/…');
    assert.equal(loggedPath('/api/v1/chains/orders/blocks/3'), '/api/v1/chains/orders/blocks/3');
    assert.equal(loggedPath(undefined), undefined);
    // Slashes percent-encoded (a red team's), and a traced entity's id, which may be personal too.
    assert.equal(loggedPath('/api/business/private-data%2Fsupply%2Fprices%2FPDKEY-alice@example.com'), '/api/business/private-data/supply/prices/…');
    assert.equal(loggedPath('/api/business/private-data/supply/prices%2FPDKEY-alice@example.com'), '/api/business/private-data/supply/prices/…');
    assert.equal(loggedPath('/api/v1/entities/alice@example.com/trace'), '/api/v1/entities/…/trace');
  });

  it('logs at most LOGGED_PATH_MAX characters of a path: requests refused without a key had each written 9 KB (red team)', () => {
    const long = `/api/v1/chains/${'A'.repeat(9_000)}/stats`;
    const logged = loggedPath(long)!;
    assert.ok(logged.length < LOGGED_PATH_MAX + 32, `${logged.length}`);
    assert.ok(logged.startsWith('/api/v1/chains/AAAA'));
    assert.match(logged, /… \(8\d{3} more\)$/);
  });
});
