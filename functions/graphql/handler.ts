/** The GraphQL function (/graphql): its composition root. The routes are declared in shared/api/routes/graphql.ts. */
import { GRAPHQL_ROUTES } from '#shared/api/routes/graphql';
import { createHttpHandler } from '#shared/http/chain';
import type { Core } from '#shared/wiring/core';
import { lambdaHandler } from '#shared/wiring/process';

export const createHandler = (core: Core) =>
  createHttpHandler({
    group: 'graphql',
    routes: GRAPHQL_ROUTES,
    edge: core.edge,
    deps: { ledgerFor: core.ledgerFor, production: core.settings.SVC_ENV === 'production' },
  });

export const handler = lambdaHandler(createHandler);
