/** The metrics function (GET /metrics): its composition root. The route is declared in shared/api/routes/metrics.ts. */
import { METRICS_ROUTES } from '#shared/api/routes/metrics';
import { createHttpHandler } from '#shared/http/chain';
import { getMetrics } from '#shared/runtime';

export const handler = createHttpHandler({ group: 'metrics', routes: METRICS_ROUTES, deps: { metrics: getMetrics } });
