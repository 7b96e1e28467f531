/** The GraphQL function (/graphql): its composition root. The routes are declared in shared/api/routes/graphql.ts. */
import { GRAPHQL_ROUTES } from '#shared/api/routes/graphql';
import { getConfig } from '#shared/config';
import { createHttpHandler } from '#shared/http/chain';
import { ledgerFor } from '#shared/runtime';

export const handler = createHttpHandler({
  group: 'graphql',
  routes: GRAPHQL_ROUTES,
  deps: { ledgerFor, production: getConfig().SVC_ENV === 'production' },
});
