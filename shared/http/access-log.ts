/**
 * Per request, after everything else has shaped the answer: one structured log line, and the metrics.
 *
 * One structured line per request: request id, route, path (a private value's key left out), status, latency, key id
 * (never the key).
 * Registered right after the request id, so it runs after every other middleware has shaped the answer.
 */
import type { MiddlewareObj } from '@middy/core';
import { logger } from '../log.ts';
import type { CloudWatchMetrics } from '../metrics/cloudwatch.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

/** The longest path logged whole: API Gateway takes request lines of about 10 KB, each a log line anyone could send. */
export const LOGGED_PATH_MAX = 256;

/**
 * The path as logged: a private value's key (`…/private-data/{channel}/{collection}/{key}`) and a traced entity's id
 * (`…/entities/{id}/trace`) are left out, as `…`: either may be personal (an e-mail address, a patient number; an
 * erased subject's entity id is blinded on the chain), and logs outlive an erasure of its subject. Wherever the segment
 * is and however it is spelt (slashes percent-encoded too, a red team's `private-data%2Fch%2Fcol%2Fkey`): a path that
 * matches no route (`//api/…`, `/API/…`, a wrong base URL) is logged too. And at most LOGGED_PATH_MAX characters of it:
 * 250 requests without a key, each 401 or 429, had written 9 KB lines (red team, 2026-12-07).
 */
export function loggedPath(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  const masked = path
    .replace(/%2f/gi, '/')
    .replace(/(\/private-data\/[^/]*\/[^/]*\/).+$/i, '$1…')
    .replace(/(\/entities\/)[^/]+(\/trace)/i, '$1…$2');
  return masked.length <= LOGGED_PATH_MAX ? masked : `${masked.slice(0, LOGGED_PATH_MAX)}… (${masked.length - LOGGED_PATH_MAX} more)`;
}

export function accessLog(): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  const log = (request: { event: HttpEvent; context: ServiceContext; response: HttpResult | null }) => {
    const status = request.response?.statusCode ?? 500;
    logger.info('request', {
      request_id: request.context.requestId,
      method: request.event.requestContext?.http?.method,
      route: request.event.routeKey,
      path: loggedPath(request.event.rawPath),
      status,
      latency_ms: Math.round((performance.now() - request.context.startedAt) * 10) / 10,
      key_id: request.context.apiKey?.key_id ?? null,
      source_ip: request.event.requestContext?.http?.sourceIp,
    });
  };
  return { after: log, onError: log };
}

/**
 * Longest an answer waits for its metrics to reach the shared counters. The request is counted at once, in
 * the instance; only the flush to DynamoDB is waited for, and a slow one goes on without the answer (the
 * counts stay pending until a flush succeeds), so a DynamoDB that hangs never doubles every answer's latency.
 */
const METRICS_WAIT_MS = 500;

/**
 * Counts every answered request (status and latency) for /metrics and, when given, writes its CloudWatch
 * figures (one EMF line, at once: nothing waits for a later flush).
 */
export function requestMetrics(metrics: () => Metrics, cloudWatch?: CloudWatchMetrics): MiddlewareObj<HttpEvent, HttpResult, Error, ServiceContext> {
  const count = async (request: { context: ServiceContext; response: HttpResult | null }) => {
    const status = request.response?.statusCode ?? 500;
    const seconds = (performance.now() - request.context.startedAt) / 1000;
    try {
      cloudWatch?.request({ status, milliseconds: Math.round(seconds * 10_000) / 10, appends: request.context.appends === true });
    } catch (error) {
      logger.warn('CloudWatch metrics not written', { request_id: request.context.requestId, error });
    }
    const recorded = metrics()
      .record(status, seconds)
      .catch((error: unknown) => {
        // Metrics must never fail a request.
        logger.warn('metrics not recorded', { request_id: request.context.requestId, error });
      });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([recorded, new Promise<void>((resolve) => (timer = setTimeout(resolve, METRICS_WAIT_MS)))]);
    clearTimeout(timer);
  };
  return { after: count, onError: count };
}
