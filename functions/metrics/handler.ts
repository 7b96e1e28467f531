/** The metrics function (GET /metrics): its composition root. The route is declared in shared/api/routes/metrics.ts. */
import { METRICS_ROUTES } from '#shared/api/routes/metrics';
import { createHttpHandler } from '#shared/http/chain';
import type { Core } from '#shared/wiring/core';
import { lambdaHandler } from '#shared/wiring/process';

export const createHandler = (core: Core) => createHttpHandler({ group: 'metrics', routes: METRICS_ROUTES, edge: core.edge, deps: { metrics: core.metrics } });

export const handler = lambdaHandler(createHandler);
