/**
 * The business group's function (/api/business and /api/v2): its composition root. The routes are
 * declared in shared/api/routes/business.ts.
 */
import { BUSINESS_ROUTES } from '#shared/api/routes/business';
import { createHttpHandler } from '#shared/http/chain';
import { createBusinessWiring } from '#shared/wiring/business';
import type { Core } from '#shared/wiring/core';
import { lambdaHandler } from '#shared/wiring/process';

export function createHandler(core: Core) {
  const { business } = createBusinessWiring(core);
  return createHttpHandler({ group: 'business', routes: BUSINESS_ROUTES, edge: core.edge, deps: { business, health: core.health } });
}

export const handler = lambdaHandler(createHandler);
