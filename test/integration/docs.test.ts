/**
 * What the service says about itself: GET /openapi.json validates as OpenAPI 3.1 and lists every route of
 * the route table under every prefix it is served at, with the handlers' own schemas; /docs and /explorer
 * serve their pages and every file those pages load, from this origin.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { validate } from '@readme/openapi-parser';
import { GROUPS, ROUTE_TABLE } from '#shared/api/routes';
import { buildOpenApi } from '#shared/api/openapi';
import { call, sharedStack, stopAndRemove, type Stack } from '#test/support/stack';

type Doc = { openapi: string; paths: Record<string, Record<string, any>> };

/** Every (method, full path) the route table serves that the document does not describe. */
function missingRoutes(doc: Doc): string[] {
  const missing: string[] = [];
  for (const spec of ROUTE_TABLE) {
    const prefixes: readonly string[] = spec.onlyPrefixes ?? GROUPS[spec.group].prefixes;
    for (const prefix of prefixes) {
      if (!doc.paths[`${prefix}${spec.path.replace(/\+\}/g, '}')}`]?.[spec.method.toLowerCase()]) missing.push(`${spec.method} ${prefix}${spec.path}`);
    }
  }
  return missing;
}

let stack: Stack;
let served: Doc;
before(async () => {
  stack = await sharedStack();
  const res = await call(stack.url, 'GET', '/openapi.json');
  assert.equal(res.status, 200);
  served = res.body;
});
after(() => stopAndRemove(stack));

describe('GET /openapi.json', () => {
  it('validates as OpenAPI 3.1', async () => {
    assert.equal(served.openapi, '3.1.0');
    const result = await validate(structuredClone(served) as never);
    assert.equal(result.valid, true, JSON.stringify((result as { errors?: unknown }).errors ?? result, null, 2).slice(0, 2000));
  });

  it('lists every route of the route table under each of its prefixes', () => {
    assert.deepEqual(missingRoutes(served), []);
    // Both twins of each group, spelled out, so that a prefix dropped from GROUPS is noticed too.
    for (const path of [
      '/api/ledger/chains/{chain_name}/events',
      '/api/v1/chains/{chain_name}/events',
      '/api/business/channels',
      '/api/v2/channels',
      '/api/admin/status',
    ]) {
      assert.ok(served.paths[path], path);
    }
    // The twins name each other, so that the /docs page shows each route once and says where else it is served.
    assert.deepEqual(served.paths['/api/ledger/chains/{chain_name}/events']!.post['x-aliases'], ['/api/v1/chains/{chain_name}/events']);
    assert.equal(served.paths['/api/v1/chains/{chain_name}/events']!.post['x-alias-of'], '/api/ledger/chains/{chain_name}/events');
    assert.ok(Object.values(served.paths['/api/v2/channels']!).every((op) => op['x-alias-of'] === '/api/business/channels'));
    assert.equal(served.paths['/api/admin/status']!.get['x-aliases'], undefined, 'a route served once has no twin');
  });

  it('declares what /graphql answers when it refuses a query: the GraphQL errors list, as it is sent', async () => {
    const declared = (served.paths['/graphql'] as any).post.responses['4XX'].content['application/json'].schema;
    assert.deepEqual(declared, { $ref: '#/components/schemas/GraphqlErrors' });
    const refused = await call(stack.url, 'POST', '/graphql', { query: '{ nope }' });
    assert.equal(refused.status, 400);
    assert.ok(Array.isArray(refused.body.errors) && typeof refused.body.errors[0].message === 'string');
    assert.deepEqual((served as any).components.schemas.GraphqlErrors.required, ['errors']);
  });

  it('notices a route missing from the document', () => {
    const doc = structuredClone(served);
    delete doc.paths['/api/v2/contracts/execute'];
    delete doc.paths['/api/v1/chains/{chain_name}/stats']!.get;
    assert.deepEqual(missingRoutes(doc), ['GET /api/v1/chains/{chain_name}/stats', 'POST /api/v2/contracts/execute']);
  });

  it('carries the schemas the handlers validate with', () => {
    const events = served.paths['/api/v1/chains/{chain_name}/events']!.post;
    const body = events.requestBody.content['application/json'].schema;
    assert.deepEqual(body.required, ['entity_id']); // event_type or its alias `event`, checked by a refinement
    for (const field of ['entity_id', 'event_type', 'event', 'details', 'details_cid', 'details_nonce']) assert.ok(body.properties[field], field);
    const blocks = served.paths['/api/v1/chains/{chain_name}/blocks']!.get;
    const limit = blocks.parameters.find((p: { name: string }) => p.name === 'limit');
    assert.equal(limit.in, 'query');
    assert.equal(limit.required, false);
    assert.match('10', new RegExp(limit.schema.pattern));
    assert.doesNotMatch('ten', new RegExp(limit.schema.pattern));
    // The API key scheme uses the configured header; health and docs need none.
    assert.equal((served as any).components.securitySchemes.ApiKey.name, 'X-API-Key');
    assert.deepEqual(served.paths['/api/v1/health']!.get.security, []);
    assert.equal(served.paths['/api/v1/chains']!.get.security, undefined);
    // The logs take a key, or none where the operator opened them (SVC_TLOG_PUBLIC).
    assert.deepEqual(served.paths['/tlog/{chain_name}/checkpoint']!.get.security, [{ ApiKey: [] }, {}]);
  });

  it('is the document the code builds (nothing hand-written to drift)', () => {
    const built = buildOpenApi({ version: (served as any).info.version, apiKeyHeader: 'X-API-Key' });
    assert.deepEqual(JSON.parse(JSON.stringify(built)), served);
  });
});

describe('GET /docs and /explorer', () => {
  /** The page, and every same-origin script and stylesheet it names, answer 200 with the right type. */
  async function assertPageLoads(path: string): Promise<string> {
    const page = await call(stack.url, 'GET', path);
    assert.equal(page.status, 200, path);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    const refs = [...page.text.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!);
    assert.ok(refs.length >= 2, `${path} names its files`);
    assert.doesNotMatch(page.text, /https?:\/\//, 'no CDN');
    for (const ref of refs) {
      const res = await fetch(`${stack.url}${ref}`);
      assert.equal(res.status, 200, ref);
      assert.match(res.headers.get('content-type') ?? '', ref.endsWith('.css') ? /^text\/css/ : /^text\/javascript/, ref);
      assert.ok((await res.arrayBuffer()).byteLength > 100, ref);
    }
    return page.text;
  }

  it('serves the Swagger UI page from the npm package', async () => {
    const html = await assertPageLoads('/docs');
    assert.match(html, /swagger-ui-bundle\.js/);
    // A key typed into "Authorize" (often an admin's) stays for the page's life only: Swagger UI's persistAuthorization
    // kept it in the origin's localStorage for good (2026-12-06 red team); the explorer keeps keys per session.
    const init = await (await fetch(`${stack.url}/docs/init.js`)).text();
    assert.match(init, /SwaggerUIBundle\(/);
    assert.doesNotMatch(init, /persistAuthorization/);
  });

  it('serves the built explorer and tells it where the WebSocket is', async () => {
    await assertPageLoads('/explorer');
    const config = await call(stack.url, 'GET', '/explorer/config.json');
    assert.equal(config.status, 200);
    assert.deepEqual(config.body, { ws_url: null, api_key_header: 'X-API-Key', witnesses: [] });
  });

  it('sends /explorer/ and /docs/ (a trailing slash, as people type them) on to the pages, keeping the query; nothing else', async () => {
    for (const [typed, page] of [
      ['/explorer/', '/explorer'],
      ['/docs/', '/docs'],
      ['/explorer/?chain=orders', '/explorer?chain=orders'],
    ] as const) {
      const res = await fetch(`${stack.url}${typed}`, { redirect: 'manual' });
      assert.equal(res.status, 308, typed);
      assert.equal(res.headers.get('location'), page, typed);
      assert.equal(res.headers.get('cache-control'), 'no-store', `${typed}: says how it may be cached`);
      // Followed, as a browser does: the page itself.
      const followed = await fetch(`${stack.url}${typed}`);
      assert.equal(followed.status, 200, typed);
      assert.match(followed.headers.get('content-type') ?? '', /^text\/html/);
    }
    for (const [method, path] of [
      ['POST', '/explorer/'],
      ['GET', '/api/v1/chains/'],
      ['GET', '/explorer//'],
    ] as const) {
      const res = await call(stack.url, method, path);
      assert.equal(res.status, 404, `${method} ${path}`);
    }
  });

  it('answers 404 in the contract shape for files that are not there, and never leaves the folder', async () => {
    // `/explorer/assets` is the build's folder: it had been read as a file, a 500 anyone could ask for (red team).
    for (const path of [
      '/explorer/nothing.js',
      '/explorer/assets/nothing.js',
      '/docs/..%2F..%2Fpackage.json',
      '/explorer/..%2Fvite.config.ts',
      '/explorer/assets',
    ]) {
      const res = await call(stack.url, 'GET', path);
      assert.equal(res.status, 404, path);
      assert.equal(typeof res.body?.detail, 'string', path);
    }
  });
});
