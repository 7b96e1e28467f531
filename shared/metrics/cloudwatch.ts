/**
 * CloudWatch metrics the AWS way: Powertools for AWS Lambda's Metrics, written as embedded metric format
 * (EMF) lines on stdout, which Lambda sends to CloudWatch Logs and CloudWatch turns into metrics. No API
 * call, no timer and nothing held across requests: each request's figures are written before its answer
 * leaves, so a frozen or reaped instance loses none. Off unless SVC_CLOUDWATCH_METRICS_NAMESPACE is set
 * (the cloud stack sets it; the stack's alarms read these metrics).
 *
 * Per request, with the dimensions `service` and `function` (the function group):
 * - `Requests` (Count 1), `ServerErrors` (1 for a 5xx answer, else 0), `Latency` (Milliseconds);
 * - `AppendLatency` (Milliseconds) for the routes that append events (the Idempotency-Key routes);
 * - `ColdStart` (Count 1) on an instance's first request (Powertools' own cold-start metric).
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

export const CLOUDWATCH_SERVICE = 'verifiable-ledger';

export interface CloudWatchMetrics {
  /** Writes one request's figures as one EMF line. */
  request(figures: { status: number; milliseconds: number; appends: boolean }): void;
}

export function createCloudWatchMetrics(options: { namespace: string; functionGroup: string }): CloudWatchMetrics {
  const metrics = new Metrics({
    namespace: options.namespace,
    serviceName: CLOUDWATCH_SERVICE,
    defaultDimensions: { function: options.functionGroup },
    // The cold-start metric is written with the function's name as its dimension.
    functionName: options.functionGroup,
  });
  let first = true;
  return {
    request({ status, milliseconds, appends }) {
      if (first) {
        first = false;
        metrics.captureColdStartMetric();
      }
      metrics.addMetric('Requests', MetricUnit.Count, 1);
      metrics.addMetric('ServerErrors', MetricUnit.Count, status >= 500 ? 1 : 0);
      metrics.addMetric('Latency', MetricUnit.Milliseconds, milliseconds);
      if (appends) metrics.addMetric('AppendLatency', MetricUnit.Milliseconds, milliseconds);
      metrics.publishStoredMetrics();
    },
  };
}
