/** GET /metrics (docs/rules.md, "Health and metrics"): Prometheus text 0.0.4, for any valid key when auth is on. */
import type { Metrics } from '../../metrics/metrics.ts';
import { routesOf } from '../define.ts';

export interface MetricsDeps {
  metrics(): Metrics;
}

const route = routesOf<MetricsDeps>('metrics');

export const METRICS_ROUTES = [
  route({
    method: 'GET',
    path: '/metrics',
    summary: 'Prometheus metrics (text 0.0.4)',
    access: 'reader',
    handler: async (_, { metrics }) => {
      const { contentType, body } = await metrics().render();
      return { contentType, body };
    },
  }),
];
