import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadGroupRoutes } from '#infra/local/functions';
import { findHandler, pathParameters } from '#shared/http/router';
import type { RouteHandlers } from '#shared/http/types';
import { GROUPS, ROUTE_TABLE, expandRoutes, type GroupName } from '#infra/routes';

const HANDLERS: Record<GroupName, RouteHandlers> = await loadGroupRoutes();

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

  it('names a handler for every served route, and the handler that route means', () => {
    for (const route of served) {
      const found = findHandler(HANDLERS[route.group], route.routeKey);
      assert.ok(found, `no handler for ${route.routeKey}`);
      assert.equal(found.handler, HANDLERS[route.group][route.relativeKey], `${route.routeKey} resolves to another handler`);
    }
  });

  it('serves every handler a group defines (no handler without a route)', () => {
    for (const [group, handlers] of Object.entries(HANDLERS)) {
      for (const key of Object.keys(handlers)) {
        assert.ok(
          served.some((r) => r.group === group && r.relativeKey === key),
          `${group}: ${key} has no route`,
        );
      }
    }
  });

  it('reads path parameters from the raw path, decoded once', () => {
    assert.deepEqual(pathParameters('/api/v1/entities/{entity_id}/trace', '/api/v1/entities/pkg%2017%2Fa/trace'), {
      entity_id: 'pkg 17/a',
    });
    assert.equal(pathParameters('/api/v1/chains/{chain_name}/stats', '/api/v1/chains/x/blocks'), undefined);
  });
});
