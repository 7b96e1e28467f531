/**
 * API keys and roles at the edge, over HTTP. The matrix is generated from infra/routes.ts, so a route
 * added later is covered without editing this file. Expectations are the contract's words (§7),
 * written out here, not computed by the code under test.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { expandRoutes, type Route } from '#infra/routes';
import { call, keysCli, removeDir, startStack, type Stack } from '#test/support/stack';

const ADMIN_KEY = `admin-${randomBytes(24).toString('hex')}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Caller = 'none' | 'unknown' | 'reader' | 'writer' | 'admin';
const CALLERS: Caller[] = ['none', 'unknown', 'reader', 'writer', 'admin'];

let secured: Stack;
let open: Stack;
const keys: Record<Caller, string | undefined> = { none: undefined, unknown: 'lk_not-a-real-key', reader: '', writer: '', admin: ADMIN_KEY };

/** docs/rules.md, "Keys and limits" in plain terms: which caller passes the edge on which route. */
function expected(route: Route, caller: Caller): 'pass' | 401 | 403 {
  const isHealth = route.method === 'GET' && route.path.endsWith('/health');
  // The docs group is public: the explorer's files, the docs page and the OpenAPI document (no data in them).
  if (isHealth || route.group === ('docs' as string)) return 'pass';
  if (caller === 'none' || caller === 'unknown') return 401;
  // GraphQL: a reader may query (mutations are refused inside, tested in graphql.test.ts).
  // Erasing a data subject is an admin's act, though it is served by the ledger group.
  // Admins' only: the admin group, erasing a data subject, and taking an organization out of a channel.
  const adminOnly =
    route.group === ('admin' as string) ||
    route.path.endsWith('/subjects/{subject_id}/erase') ||
    route.path.endsWith('/channels/{channel_id}/organizations/{org_id}');
  const needs = adminOnly ? 'admin' : route.method === 'GET' || route.group === ('graphql' as string) ? 'reader' : 'writer';
  const rank = { reader: 1, writer: 2, admin: 3 } as const;
  return rank[caller] >= rank[needs] ? 'pass' : 403;
}

/** A concrete request for a route: sample values for its parameters, a valid body for writes. */
function sample(route: Route): { path: string; body?: unknown } {
  const path = route.path.replace('{index_or_hash}', '0').replace(/\{[a-z_]+\}/g, 'matrix');
  return route.method === 'POST' ? { path, body: { entity_id: 'pkg-1', event_type: 'checked' } } : { path };
}

function keyCreated(output: string): { id: string; key: string } {
  const key = /Key \(shown once, store it now\): (\S+)/.exec(output)?.[1];
  const id = /Created \w+ key (\w+)/.exec(output)?.[1];
  assert.ok(key && id, output);
  return { id, key };
}

before(async () => {
  secured = await startStack({
    env: { SVC_AUTH_ENABLED: 'true', SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_AUTH_CACHE_SECONDS: '0', SVC_LOG_LEVEL: 'info' },
  });
  open = await startStack();
  keys.reader = keyCreated(await keysCli(secured.dataDir, ['create', '--role', 'reader'])).key;
  keys.writer = keyCreated(await keysCli(secured.dataDir, ['create', '--role', 'writer', '--org', 'acme'])).key;
  // The chain the matrix's routes address, so that passing requests get real answers.
  for (const stack of [secured, open]) {
    await call(stack.url, 'POST', '/api/v1/chains/matrix/create', undefined, { 'X-API-Key': ADMIN_KEY });
  }
});

after(async () => {
  await secured?.stop();
  await open?.stop();
  for (const s of [secured, open]) if (s) removeDir(s.dataDir);
});

describe('Auth matrix from infra/routes.ts, auth on', () => {
  for (const route of expandRoutes()) {
    it(`${route.method} ${route.path}`, async () => {
      const { path, body } = sample(route);
      for (const caller of CALLERS) {
        const key = keys[caller];
        const res = await call(secured.url, route.method, path, body, key ? { 'X-API-Key': key } : {});
        const want = expected(route, caller);
        if (want === 'pass') {
          assert.ok(res.status !== 401 && res.status !== 403, `${caller}: expected to pass the edge, got ${res.status} ${res.text}`);
        } else {
          assert.equal(res.status, want, `${caller}: ${res.text}`);
          assert.equal(typeof res.body.detail, 'string');
          assert.equal(res.body.request_id, res.headers.get('x-request-id'));
          if (want === 401) assert.equal(res.headers.get('www-authenticate'), 'ApiKey header="X-API-Key"');
        }
        assert.match(res.headers.get('x-request-id') ?? '', UUID);
        assert.equal(res.headers.get('x-frame-options'), 'DENY');
      }
    });
  }

  it('answers 401 before 404 on an unknown route, and 404 to a valid key', async () => {
    assert.equal((await call(secured.url, 'GET', '/api/v1/nothing')).status, 401);
    assert.equal((await call(secured.url, 'GET', '/api/v1/nothing', undefined, { 'X-API-Key': keys.reader! })).status, 404);
  });

  it('sends /explorer/ and /docs/ on to their public pages without a key; any other unknown path still needs one', async () => {
    for (const typed of ['/explorer/', '/docs/']) {
      const res = await fetch(`${secured.url}${typed}`, { redirect: 'manual' });
      assert.equal(res.status, 308, typed);
      assert.equal(res.headers.get('location'), typed.slice(0, -1));
    }
    assert.equal((await call(secured.url, 'GET', '/explorer/x/')).status, 401);
    assert.equal((await call(secured.url, 'GET', '/api/v1/chains/')).status, 401);
  });

  it('marks what a key read private, so that no shared cache hands it to another caller; auth off, public', async () => {
    const keyed = await call(secured.url, 'GET', '/api/v1/chains/matrix/blocks/0', undefined, { 'X-API-Key': keys.reader! });
    assert.equal(keyed.status, 200);
    assert.equal(keyed.headers.get('cache-control'), 'private, max-age=31536000, immutable');
    const tile = await call(secured.url, 'GET', '/tlog/matrix/tile/0/000.p/1', undefined, { 'X-API-Key': keys.reader! });
    assert.equal(tile.headers.get('cache-control'), 'private, max-age=5');
    assert.equal((await call(open.url, 'GET', '/api/v1/chains/matrix/blocks/0')).headers.get('cache-control'), 'public, max-age=31536000, immutable');
  });

  it('with SVC_TLOG_PUBLIC, answers the logs to anyone, public for a CDN to keep, and everything else still needs a key', async () => {
    const logs = await startStack({ env: { SVC_AUTH_ENABLED: 'true', SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_TLOG_PUBLIC: 'true' } });
    try {
      const admin = { 'X-API-Key': ADMIN_KEY };
      await call(logs.url, 'POST', '/api/v1/chains/matrix/create', undefined, admin);
      const events = Array.from({ length: 99 }, (_, i) => ({ entity_id: `e-${i}`, event_type: 'recorded' }));
      for (let i = 0; i < 3; i += 1) assert.equal((await call(logs.url, 'POST', '/api/v1/chains/matrix/events/batch', { events }, admin)).status, 200);
      const expected: [string, string][] = [
        ['/tlog/vkey', 'public, max-age=5'],
        ['/tlog/matrix/checkpoint', 'public, max-age=5'],
        ['/tlog/matrix/tile/0/001.p/42', 'public, max-age=5'],
        ['/tlog/matrix/tile/0/000', 'public, max-age=31536000, immutable'],
        ['/tlog/matrix/tile/entries/000', 'public, max-age=31536000, immutable'],
      ];
      for (const [path, cacheControl] of expected) {
        const anyone = await call(logs.url, 'GET', path);
        assert.equal(anyone.status, 200, `${path}: ${anyone.text}`);
        assert.equal(anyone.headers.get('cache-control'), cacheControl, path);
        const keyed = await call(logs.url, 'GET', path, undefined, admin);
        assert.equal(keyed.headers.get('etag'), anyone.headers.get('etag'), `${path}: the same answer to a key holder`);
      }
      assert.equal((await call(logs.url, 'GET', '/tlog/nothing/checkpoint')).status, 404);
      for (const path of ['/api/v1/chains/matrix/blocks/0', '/api/v1/chains/matrix/evidence?leaves=0', '/api/v1/chains/matrix/checkpoint']) {
        assert.equal((await call(logs.url, 'GET', path)).status, 401, path);
      }
    } finally {
      await logs.stop();
      removeDir(logs.dataDir);
    }
  });
});

describe('Auth off', () => {
  it('lets every route of the table pass the edge without a key', async () => {
    for (const route of expandRoutes()) {
      const { path, body } = sample(route);
      const res = await call(open.url, route.method, path, body);
      assert.ok(res.status !== 401 && res.status !== 403, `${route.routeKey}: ${res.status} ${res.text}`);
    }
  });
});

describe('Key lifecycle (npm run keys)', () => {
  it('lists ids, roles, orgs and creation times, never a key', async () => {
    const listing = await keysCli(secured.dataDir, ['list']);
    assert.match(listing, /admin-seed\s+admin/);
    assert.match(listing, /\w{12}\s+reader/);
    assert.match(listing, /\w{12}\s+writer\s+acme/);
    for (const key of [ADMIN_KEY, keys.reader!, keys.writer!]) assert.ok(!listing.includes(key), 'a key appears in the listing');
    const json = JSON.parse(await keysCli(secured.dataDir, ['list', '--json']));
    for (const record of json) assert.deepEqual(Object.keys(record).sort(), ['created_at', 'key_id', 'org_id', 'role']);
  });

  it('revokes a key: it stops working at once (cache off), other keys go on', async () => {
    const made = keyCreated(await keysCli(secured.dataDir, ['create', '--role', 'writer']));
    const before = await call(secured.url, 'GET', '/api/v1/chains', undefined, { 'X-API-Key': made.key });
    assert.equal(before.status, 200);
    assert.match(await keysCli(secured.dataDir, ['revoke', made.id]), /Revoked/);
    assert.equal((await call(secured.url, 'GET', '/api/v1/chains', undefined, { 'X-API-Key': made.key })).status, 401);
    assert.equal((await call(secured.url, 'GET', '/api/v1/chains', undefined, { 'X-API-Key': keys.writer! })).status, 200);
    await assert.rejects(keysCli(secured.dataDir, ['revoke', made.id]), /No API key/);
  });

  it('refuses a role that does not exist', async () => {
    await assert.rejects(keysCli(secured.dataDir, ['create', '--role', 'root']), /--role must be one of reader, writer, admin/);
  });
});

describe('Logs', () => {
  it('log one JSON line per request with id, route, status, latency and key id, and never a key', async () => {
    const res = await call(secured.url, 'GET', '/api/ledger/chains/matrix/stats', undefined, { 'X-API-Key': keys.writer! });
    const id = res.headers.get('x-request-id')!;
    await new Promise((r) => setTimeout(r, 200));
    const lines = secured
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    const line = lines.find((l) => l.request_id === id && l.message === 'request');
    assert.ok(line, 'a log line for the request');
    assert.equal(line.route, 'GET /api/ledger/chains/{chain_name}/stats');
    assert.equal(line.status, 200);
    assert.equal(typeof line.latency_ms, 'number');
    assert.match(line.key_id, /^\w{12}$/);
    assert.equal(line.level, 'info');
    const everything = secured.output();
    for (const key of [ADMIN_KEY, keys.reader!, keys.writer!]) assert.ok(!everything.includes(key), 'a key appears in the logs');
  });
});
