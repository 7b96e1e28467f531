/**
 * THE route list: every route of every group, each declared once (shared/api/routes/<group>.ts). The
 * cloud stack and the local gateway route from it (infra/routes.ts), GET /openapi.json describes it, the
 * edge checks its access, and each group's function dispatches on it. A group is served under each of
 * its prefixes (the ledger group under /api/ledger and /api/v1).
 */
import type { AnyRoute } from './define.ts';
import { type Route, servedRoutes } from './served.ts';
import { ADMIN_ROUTES } from './routes/admin.ts';
import { BUSINESS_ROUTES } from './routes/business.ts';
import { CONTRACTS_ROUTES } from './routes/contracts.ts';
import { DOCS_ROUTES } from './routes/docs.ts';
import { GRAPHQL_ROUTES } from './routes/graphql.ts';
import { LEDGER_ROUTES } from './routes/ledger.ts';
import { METRICS_ROUTES } from './routes/metrics.ts';
import { TLOG_ROUTES } from './routes/tlog.ts';

export * from './groups.ts';
export type { AnyRoute, HttpMethod } from './define.ts';
export type { Route } from './served.ts';

/** Every route, group by group. */
export const ROUTE_TABLE: readonly AnyRoute[] = [
  ...LEDGER_ROUTES,
  ...BUSINESS_ROUTES,
  ...CONTRACTS_ROUTES,
  ...GRAPHQL_ROUTES,
  ...METRICS_ROUTES,
  ...DOCS_ROUTES,
  ...TLOG_ROUTES,
  ...ADMIN_ROUTES,
] as readonly AnyRoute[];

/** Every served route: each route under each prefix of its group. */
export const expandRoutes = (table: readonly AnyRoute[] = ROUTE_TABLE): Route[] => servedRoutes(table);
