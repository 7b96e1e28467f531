/**
 * The stack's alarms on the service as a whole: 5xx answers, p99 latency of the API and of appends (the functions'
 * own figures, in EMF), and throttled reads and writes on each table. Each function's throttles and the sweep's
 * errors are alarmed where those functions are made (ledger-stack.ts).
 */
import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { Alarm, type AlarmProps, ComparisonOperator, Metric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { CLOUDWATCH_SERVICE } from '../../shared/metrics/cloudwatch.ts';

/** The CloudWatch namespace of the functions' own metrics (SVC_CLOUDWATCH_METRICS_NAMESPACE). */
export const CLOUDWATCH_NAMESPACE = 'VerifiableLedger';

/** An alarm at or over its threshold (unless it says otherwise); no data is not a breach. */
export function alarm(scope: Construct, id: string, alarmDescription: string, props: Omit<AlarmProps, 'alarmDescription'>): Alarm {
  return new Alarm(scope, id, {
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: TreatMissingData.NOT_BREACHING,
    alarmDescription,
    ...props,
  });
}

/** A construct id's word: `ledger` → `Ledger`. */
export const pascal = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);

export function serviceAlarms(scope: Construct, api: HttpApi, tables: Record<string, TableV2>): void {
  alarm(scope, 'Api5xx', "The API answered 5xx: see the functions' logs by request id", {
    metric: api.metricServerError({ period: Duration.minutes(5), statistic: 'Sum' }),
    threshold: 5,
    evaluationPeriods: 1,
  });
  alarm(scope, 'ApiLatencyP99', 'p99 latency over 2 s for 15 minutes', {
    metric: api.metricLatency({ period: Duration.minutes(5), statistic: 'p99' }),
    threshold: 2_000,
    evaluationPeriods: 3,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
  });
  // The functions' own figures (shared/metrics/cloudwatch.ts, Powertools Metrics in EMF): appends as the client waits for them.
  alarm(scope, 'AppendLatencyP99', 'p99 append latency (the ledger function, request to answer) over 1 s for 15 minutes: see docs/capacity.md', {
    metric: new Metric({
      namespace: CLOUDWATCH_NAMESPACE,
      metricName: 'AppendLatency',
      dimensionsMap: { service: CLOUDWATCH_SERVICE, function: 'ledger' },
      statistic: 'p99',
      period: Duration.minutes(5),
    }),
    threshold: 1_000,
    evaluationPeriods: 3,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
  });
  // A hot partition throttles even an on-demand table: appends to one chain meet on its head's partition.
  for (const [role, table] of Object.entries(tables)) {
    for (const kind of ['Read', 'Write'] as const) {
      alarm(
        scope,
        `${pascal(role)}Table${kind}Throttles`,
        `${role} table: ${kind.toLowerCase()} requests throttled (a hot partition, or the account's table limits)`,
        {
          metric: table.metric(`${kind}ThrottleEvents`, { period: Duration.minutes(5), statistic: 'Sum' }),
          threshold: 1,
          evaluationPeriods: 1,
        },
      );
    }
  }
}
