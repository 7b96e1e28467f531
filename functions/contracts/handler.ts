/**
 * The contracts group's function (publishing and running contracts, under /api/business and /api/v2): its
 * composition root. The routes are declared in shared/api/routes/contracts.ts.
 */
import { CONTRACTS_ROUTES } from '#shared/api/routes/contracts';
import { createHttpHandler } from '#shared/http/chain';
import { createBusinessWiring } from '#shared/wiring/business';
import type { Core } from '#shared/wiring/core';
import { lambdaHandler } from '#shared/wiring/process';

export function createHandler(core: Core) {
  const { business } = createBusinessWiring(core, { runsContracts: true });
  return createHttpHandler({ group: 'contracts', routes: CONTRACTS_ROUTES, edge: core.edge, deps: { business } });
}

export const handler = lambdaHandler(createHandler);
