import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { describe, it } from 'node:test';
import { NotFoundError } from '#shared/errors';
import { loadGroupRoutes } from '#infra/local/functions';
import { pathParameters } from '#shared/http/router';
import { GROUPS, ROUTE_TABLE, expandRoutes } from '#infra/routes';

const SERVED_BY = await loadGroupRoutes();

describe('The route table (infra/routes.ts)', () => {
  const served = expandRoutes();

  it('serves every ledger route under both /api/ledger and /api/v1, and the admin group under /api/admin', () => {
    for (const spec of ROUTE_TABLE.filter((r) => r.group === 'ledger' && !r.onlyPrefixes)) {
      for (const prefix of ['/api/ledger', '/api/v1']) {
        assert.ok(
          served.some((r) => r.method === spec.method && r.path === `${prefix}${spec.path}`),
          `${spec.method} ${prefix}${spec.path} is not served`,
        );
      }
    }
    assert.deepEqual(GROUPS.ledger.prefixes, ['/api/ledger', '/api/v1']);
    assert.ok(served.some((r) => r.routeKey === 'POST /api/admin/ipfs/decode'));
  });

  it('has no route twice', () => {
    const keys = served.map((r) => r.routeKey);
    assert.equal(new Set(keys).size, keys.length);
  });

  it("has each route served by its own group's function, and each function serve only its group's routes", () => {
    for (const [group, routes] of Object.entries(SERVED_BY)) {
      assert.deepEqual(
        routes.map((r) => `${r.group} ${r.method} ${r.path}`),
        ROUTE_TABLE.filter((r) => r.group === group).map((r) => `${r.group} ${r.method} ${r.path}`),
        `the ${group} function serves other routes than the ${group} group declares`,
      );
    }
  });

  it('reads path parameters from the raw path, decoded once', () => {
    assert.deepEqual(pathParameters('/api/v1/entities/{entity_id}/trace', '/api/v1/entities/pkg%2017%2Fa/trace'), {
      entity_id: 'pkg 17/a',
    });
    assert.equal(pathParameters('/api/v1/chains/{chain_name}/stats', '/api/v1/chains/x/blocks'), undefined);
  });
});

describe('the documentation page’s files', () => {
  it('serves the two files of swagger-ui-dist the page loads, and none of the rest, wherever the folder is (red team)', async () => {
    const { DOCS_ROUTES } = await import('#shared/api/routes/docs');
    const route = DOCS_ROUTES.find((r) => r.path === '/docs/{file}')!;
    // The whole package's folder, as a function run from its sources finds it (the deployed one carries only the two).
    const dir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
    const deps = { swaggerDir: () => dir } as never;
    const serve = (file: string) => (route.handler as (request: unknown, deps: unknown) => Promise<{ contentType: string }>)({ params: { file } }, deps);
    for (const file of ['swagger-ui-bundle.js', 'swagger-ui.css']) assert.match((await serve(file)).contentType, /^text\//, file);
    for (const file of ['index.html', 'swagger-initializer.js', 'package.json', 'oauth2-redirect.html', 'swagger-ui-bundle.js.map'])
      await assert.rejects(serve(file), NotFoundError, file);
  });
});
