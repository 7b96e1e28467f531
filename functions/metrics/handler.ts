/** GET /metrics (docs/rules.md, "Health and metrics"): Prometheus text 0.0.4, for any valid key when auth is on. */
import { createHttpHandler } from '#shared/http/chain';
import type { RouteHandlers } from '#shared/http/types';
import { getMetrics } from '#shared/runtime';

export const routes: RouteHandlers = {
  'GET /metrics': async () => {
    const { contentType, body } = await getMetrics().render();
    return { statusCode: 200, contentType, body };
  },
};

export const handler = createHttpHandler(routes, { group: 'metrics' });
