/**
 * The ledger group's function (/api/ledger and /api/v1): its composition root. The routes are declared
 * in shared/api/routes/ledger.ts; this wires what their handlers use.
 */
import { LEDGER_ROUTES } from '#shared/api/routes/ledger';
import { createHttpHandler } from '#shared/http/chain';
import type { Core } from '#shared/wiring/core';
import { createNodeWiring } from '#shared/wiring/node';
import { lambdaHandler } from '#shared/wiring/process';

export function createHandler(core: Core) {
  const node = createNodeWiring(core);
  return createHttpHandler({
    group: 'ledger',
    routes: LEDGER_ROUTES,
    edge: core.edge,
    deps: { ledgerFor: core.ledgerFor, proofsFor: node.proofsFor, offchainFor: core.offchainFor, node: node.admin, health: core.health },
  });
}

export const handler = lambdaHandler(createHandler);
