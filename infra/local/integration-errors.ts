/**
 * What the local gateway (and `npm run sim`) does when an integration fails, as API Gateway's own logs
 * and metrics would: the client gets a bare 500 or 503, so the cause must be told here or nowhere.
 *
 * - one structured error line: the function, the route, API Gateway's request id (the `apigw-requestid`
 *   the client got), the status and the cause;
 * - one count in /metrics: `gateway_integration_errors_total{function="…"}`, through the same counters the
 *   functions' request counts use (shared by every instance, or this process's in single-process mode).
 */
import { logger } from '#shared/log';
import type { IntegrationFailure } from './gateway.ts';

export interface IntegrationErrorCounter {
  recordIntegrationError(functionName: string): Promise<void>;
}

export function reportIntegrationErrors(counter: IntegrationErrorCounter | undefined): (failure: IntegrationFailure) => void {
  return ({ group, routeKey, requestId, status, error }) => {
    const cause = error instanceof Error ? { name: error.name, message: error.message } : { name: 'Error', message: String(error) };
    logger.error('integration failed', { function: group, route: routeKey, request_id: requestId, status, cause });
    counter?.recordIntegrationError(group).catch((failure: unknown) => {
      logger.error('integration failure not counted', { function: group, request_id: requestId, error: failure });
    });
  };
}
