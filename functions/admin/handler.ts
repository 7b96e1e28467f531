/**
 * The admin group's function (/api/admin): its composition root. The routes are declared in
 * shared/api/routes/admin.ts.
 */
import { ADMIN_ROUTES } from '#shared/api/routes/admin';
import { createHttpHandler } from '#shared/http/chain';
import type { Core } from '#shared/wiring/core';
import { createNodeWiring } from '#shared/wiring/node';
import { lambdaHandler } from '#shared/wiring/process';

export function createHandler(core: Core) {
  const node = createNodeWiring(core);
  return createHttpHandler({ group: 'admin', routes: ADMIN_ROUTES, edge: core.edge, deps: { admin: node.admin, offchainFor: core.offchainFor } });
}

export const handler = lambdaHandler(createHandler);
