/**
 * The cloud stack (architecture.md, "The cloud stack"): the service's tables, declared from the same
 * definitions the local stack creates; a KMS key for table encryption, data keys and identity wrapping;
 * one Lambda per function group; an HTTP API whose routes come from infra/routes.ts (every prefix), with
 * `$default` answering the contract's 404; alarms (the service's in alarms.ts); outputs.
 *
 * Everything per group is generated from GROUPS: adding a group is one entry there, not a block here.
 * Off-chain payloads go to a Kubo the deployer runs (IpfsApiUrl, behind IpfsApiAuth): Kubo's RPC is an
 * admin API and must never be reachable without it.
 * The WebSocket API (routes to one function) and the stream fan-out (the broadcaster, the only
 * function allowed to use the management API) complete it (realtime.ts), with the CDN in front (cdn.ts).
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, type HttpMethod, HttpStage, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import {
  AttributeType,
  Billing,
  type ProjectionType,
  type StreamViewType,
  TableEncryptionV2,
  TableV2,
  type GlobalSecondaryIndexPropsV2,
} from 'aws-cdk-lib/aws-dynamodb';
import { Key } from 'aws-cdk-lib/aws-kms';
import { alarm, CLOUDWATCH_NAMESPACE, pascal, serviceAlarms } from './alarms.ts';
import { cdn } from './cdn.ts';
import { keptLogs, reserveConcurrency, stackParameters } from './parameters.ts';
import { realtime } from './realtime.ts';
import { type SecretSettingName, secretSettings } from './secrets.ts';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Architecture, Code, Function as LambdaFunctionResource, Runtime } from 'aws-cdk-lib/aws-lambda';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { TABLE_SETTINGS, allTableSpecs, type TableRole, type TableSpec } from '../../shared/storage/tables.ts';
import { DEFAULT_GROUP, EVENT_FUNCTIONS, GROUPS, expandRoutes, type GroupName, type GroupSpec } from '../routes.ts';
import { bundleFileSources } from '../bundling.ts';
import { CLOUD_HANDLER, cloudBundle } from './bundles.ts';
import {
  DYNAMODB_KEY_USE,
  type FunctionName,
  REGISTRY_KEYS_NO_FUNCTION_WRITES,
  SIGNERS,
  TABLE_ACCESS,
  type TableAction,
  WRITE_ACTIONS,
} from './permissions.ts';
import { SCOPE_CONTEXT_KEY } from '../../shared/offchain/key-providers.ts';

/** The HTTP API's stage-wide throttle (requests per second, and the burst), below the account's 10,000/s and 5,000 burst. */
export const HTTP_API_THROTTLE = { rateLimit: 2_000, burstLimit: 1_000 } as const;

export { CLOUDWATCH_NAMESPACE } from './alarms.ts';

/** Lambda's runtime for every function; its bundles are built for its Node major. */
const RUNTIME = Runtime.NODEJS_24_X;
const RUNTIME_NODE_MAJOR = Number(/^nodejs(\d+)\.x$/.exec(RUNTIME.name)![1]);

export interface LedgerStackProps extends StackProps {
  /** Table name prefix, so that several stages can share an account (default: the stack id and a hyphen). */
  tablePrefix?: string;
}

/** A DynamoDB table exactly as shared/storage/tables.ts defines it, plus PITR and SSE with the key. */
function tableFromSpec(scope: Construct, id: string, spec: TableSpec, key: Key): TableV2 {
  const { definition } = spec;
  const attribute = (name: string) => {
    const type = definition.AttributeDefinitions!.find((a) => a.AttributeName === name)!.AttributeType;
    return { name, type: type === 'S' ? AttributeType.STRING : type === 'N' ? AttributeType.NUMBER : AttributeType.BINARY };
  };
  const [hash, range] = definition.KeySchema!;
  const indexes: GlobalSecondaryIndexPropsV2[] = (definition.GlobalSecondaryIndexes ?? []).map((index) => {
    const [indexHash, indexRange] = index.KeySchema!;
    return {
      indexName: index.IndexName!,
      partitionKey: attribute(indexHash!.AttributeName!),
      ...(indexRange ? { sortKey: attribute(indexRange.AttributeName!) } : {}),
      projectionType: index.Projection!.ProjectionType as ProjectionType,
      ...(index.Projection!.NonKeyAttributes ? { nonKeyAttributes: index.Projection!.NonKeyAttributes } : {}),
    };
  });
  const stream = definition.StreamSpecification?.StreamEnabled ? (definition.StreamSpecification.StreamViewType as StreamViewType) : undefined;
  return new TableV2(scope, id, {
    tableName: definition.TableName!,
    partitionKey: attribute(hash!.AttributeName!),
    ...(range ? { sortKey: attribute(range.AttributeName!) } : {}),
    globalSecondaryIndexes: indexes,
    billing: Billing.onDemand(),
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: TableEncryptionV2.customerManagedKey(key),
    ...(stream ? { dynamoStream: stream } : {}),
    ...(spec.ttlAttribute ? { timeToLiveAttribute: spec.ttlAttribute } : {}),
    // A ledger's data outlives its stack: `cdk destroy` leaves the tables (see docs/deploy.md, tear down), and a
    // DeleteTable by anyone fails until deletion protection is turned off on purpose (RETAIN guards the stack's own
    // operations only; 2026-12-07 red team).
    removalPolicy: RemovalPolicy.RETAIN,
    deletionProtection: true,
  });
}

export class LedgerStack extends Stack {
  constructor(scope: Construct, id: string, props: LedgerStackProps = {}) {
    super(scope, id, props);
    const prefix = props.tablePrefix ?? `${id}-`;

    // What the deployer decides (infra/cdk/parameters.ts).
    const parameters = stackParameters(this);

    // The secret settings (the edge secret, the IPFS credential, the license key), read by the functions from Secrets
    // Manager at a cold start: never in their environment (infra/cdk/secrets.ts).
    const secrets = secretSettings(this, parameters);

    const key = new Key(this, 'DataKey', {
      description: 'Verifiable ledger: table encryption, data keys for off-chain payloads, node identity wrapping',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    const specs = allTableSpecs({
      ledger: `${prefix}ledger`,
      registry: `${prefix}registry`,
      rateLimits: `${prefix}ratelimits`,
      connections: `${prefix}connections`,
    });
    const tables = Object.fromEntries(
      (Object.entries(specs) as [TableRole, TableSpec][]).map(([role, spec]) => [role, tableFromSpec(this, `${pascal(role)}Table`, spec, key)]),
    ) as Record<TableRole, TableV2>;

    /** SVC_SECRETS for a function that reads these secret settings, its role allowed to read them; nothing when it reads none. */
    const secretsOf = (role: Role, reads: readonly SecretSettingName[]): Record<string, string> => {
      const value = secrets.forFunction(role, reads);
      return value === undefined ? {} : { SVC_SECRETS: value };
    };

    /** One Lambda, bundled locally, with the production settings and its own tables' grants only. */
    const makeFunction = (
      name: FunctionName,
      spec: Pick<GroupSpec, 'entry' | 'tables' | 'usesKmsKey' | 'usesIpfs' | 'bundleFiles'>,
      extraEnv: Record<string, string> = {},
    ) => {
      // Its own role, with no managed policy: what it may do is written here and checked (npm run check:cloud).
      const role = new Role(this, `${pascal(name)}Role`, {
        assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
        description: `Verifiable ledger: the ${name} function`,
      });
      const logGroup = new LogGroup(this, `${pascal(name)}Logs`, keptLogs(parameters));
      // Lambda writes the function's logs as its role: streams of its own log group, nothing else.
      logGroup.grantWrite(role);
      const fn = new LambdaFunctionResource(this, `${pascal(name)}Function`, {
        // Bundled locally by esbuild for the runtime's Node (no Docker), kept until a source changes: infra/cdk/bundles.ts.
        code: Code.fromAsset(cloudBundle(name, spec.entry, RUNTIME_NODE_MAJOR, bundleFileSources(spec))),
        handler: CLOUD_HANDLER,
        role,
        runtime: RUNTIME,
        architecture: Architecture.ARM_64,
        memorySize: 1024,
        timeout: Duration.seconds(29),
        logGroup,
        environment: {
          SVC_FUNCTION_GROUP: name,
          SVC_ENV: 'production',
          SVC_AUTH_ENABLED: 'true',
          SVC_CORS_ORIGINS: parameters.corsOrigins.valueAsString,
          SVC_RATE_LIMIT_BACKEND: 'dynamodb',
          SVC_RATE_LIMIT_RPM: parameters.rateLimit.valueAsString,
          // Request counts for the whole service, not one instance (flushed at the end of a request, at most every 5 s).
          SVC_METRICS_BACKEND: 'dynamodb',
          // Per-request CloudWatch metrics (embedded metric format on stdout): the alarms (alarms.ts) read them.
          SVC_CLOUDWATCH_METRICS_NAMESPACE: CLOUDWATCH_NAMESPACE,
          // One node identity for every instance, made on first use in the registry table.
          SVC_IDENTITY_STORE: 'registry',
          // Data subjects' keys in the registry table: one store for every instance (DynamoDB deletes for real).
          SVC_SUBJECT_KEY_STORE: 'registry',
          SVC_WITNESSES: parameters.witnesses.valueAsString,
          SVC_TLOG_PUBLIC: parameters.publicTlog.valueAsString,
          SVC_SECRETS_REVISION: parameters.secretsRevision.valueAsString,
          ...(name in GROUPS ? { SVC_EDGE_ONLY: parameters.cdnOnly.valueAsString } : {}),
          ...(spec.usesKmsKey ? { SVC_KMS_KEY_ID: key.keyArn } : {}),
          ...(spec.usesIpfs ? { SVC_IPFS_API_URL: parameters.ipfsApiUrl.valueAsString } : {}),
          // The secrets it reads at a cold start: the edge secret only behind the HTTP API, which the CDN fronts (the
          // WebSocket, stream and schedule functions never see a request through it); the license key only where the
          // node's status is answered (the admin function). Their revision: raised, every function starts afresh.
          ...secretsOf(
            role,
            (
              [
                [name in GROUPS, 'SVC_EDGE_SECRET'],
                [spec.usesIpfs, 'SVC_IPFS_API_AUTH'],
                [name === 'admin', 'SVC_LICENSE_KEY'],
              ] as const
            )
              .filter(([reads]) => reads)
              .map(([, setting]) => setting),
          ),
          ...Object.fromEntries(spec.tables.map((role) => [TABLE_SETTINGS[role], tables[role].tableName])),
          ...extraEnv,
          NODE_OPTIONS: '--enable-source-maps',
        },
      });
      // Least privilege: the DynamoDB actions infra/cdk/permissions.ts lists, on its own tables only (npm run check:cloud holds
      // them to what the function does). A write is never on an index; only a Query reads one.
      for (const [table, actions] of Object.entries(TABLE_ACCESS[name]) as [TableRole, readonly TableAction[]][]) {
        if (!spec.tables.includes(table)) throw new Error(`${name}: TABLE_ACCESS names the ${table} table, which its spec does not give it`);
        const onTable = actions.filter((a) => !a.startsWith('Query:')).map((a) => `dynamodb:${a}`);
        if (onTable.length) role.addToPolicy(new PolicyStatement({ actions: onTable, resources: [tables[table].tableArn] }));
        // Each index by name: no wildcard, and only the indexes the function queries.
        const indexes = actions.filter((a) => a.startsWith('Query:')).map((a) => a.slice('Query:'.length));
        for (const index of indexes) {
          if (!specs[table].definition.GlobalSecondaryIndexes?.some((i) => i.IndexName === index))
            throw new Error(`${name}: the ${table} table has no index ${index}`);
        }
        if (indexes.length) {
          role.addToPolicy(new PolicyStatement({ actions: ['dynamodb:Query'], resources: indexes.map((index) => `${tables[table].tableArn}/index/${index}`) }));
        }
      }
      // No function writes an API key, whatever it may write in the registry (permissions.ts).
      if (spec.tables.includes('registry')) {
        role.addToPolicy(
          new PolicyStatement({
            effect: Effect.DENY,
            actions: [...WRITE_ACTIONS],
            resources: [tables.registry.tableArn],
            conditions: { 'ForAnyValue:StringLike': { 'dynamodb:LeadingKeys': [...REGISTRY_KEYS_NO_FUNCTION_WRITES] } },
          }),
        );
      }
      // The tables are encrypted with the key: DynamoDB uses it on the caller's behalf, and only through DynamoDB
      // (the actions of the aws/dynamodb managed key's own policy for principals using DynamoDB, spelled out).
      role.addToPolicy(
        new PolicyStatement({
          actions: DYNAMODB_KEY_USE,
          resources: [key.keyArn],
          conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${this.region}.amazonaws.com` } },
        }),
      );
      // Envelope encryption needs exactly these two: a new data key, and unwrapping one.
      if (spec.usesKmsKey) role.addToPolicy(new PolicyStatement({ actions: ['kms:GenerateDataKey', 'kms:Decrypt'], resources: [key.keyArn] }));
      // The node identity's key is sealed under a scope of its own: only the functions that sign may unwrap (or make) it.
      if (spec.usesKmsKey && !SIGNERS.includes(name)) {
        role.addToPolicy(
          new PolicyStatement({
            effect: Effect.DENY,
            actions: ['kms:GenerateDataKey', 'kms:Decrypt'],
            resources: [key.keyArn],
            conditions: { StringEquals: { [`kms:EncryptionContext:${SCOPE_CONTEXT_KEY}`]: 'identity' } },
          }),
        );
      }
      alarm(this, `${pascal(name)}Throttles`, `${name} function throttled: raise its concurrency or find the burst`, {
        metric: fn.metricThrottles({ period: Duration.minutes(5) }),
        threshold: 1,
        evaluationPeriods: 1,
      });
      return fn;
    };

    const functions = Object.fromEntries(
      (Object.entries(GROUPS) as [GroupName, GroupSpec][]).map(([group, spec]) => [group, makeFunction(group, spec)]),
    ) as Record<GroupName, LambdaFunctionResource>;

    // The appends' function keeps what the deployer reserves for it, whatever floods the others (LedgerReservedConcurrency).
    reserveConcurrency(this, functions.ledger, parameters);

    const integrations = Object.fromEntries(
      (Object.entries(functions) as [GroupName, LambdaFunctionResource][]).map(([group, fn]) => [
        group,
        new HttpLambdaIntegration(`${pascal(group)}Integration`, fn),
      ]),
    ) as Record<GroupName, HttpLambdaIntegration>;

    // Unmatched requests reach a function too, so that even a 404 has the contract body and headers.
    const api = new HttpApi(this, 'HttpApi', { defaultIntegration: integrations[DEFAULT_GROUP], createDefaultStage: false });
    // The $default stage: an access log line per request, with API Gateway's own view of the integration (its
    // error message, status and latency: the only place a bare 500 or 503 of the gateway's own is explained), and
    // a stage-wide throttle below the account's 10,000 requests/s, so that one API cannot starve the others.
    const accessLogs = new LogGroup(this, 'HttpApiAccessLogs', keptLogs(parameters));
    new HttpStage(this, 'HttpApiDefaultStage', {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: HTTP_API_THROTTLE.rateLimit, burstLimit: HTTP_API_THROTTLE.burstLimit },
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            request_id: '$context.requestId',
            time: '$context.requestTime',
            source_ip: '$context.identity.sourceIp',
            route: '$context.routeKey',
            status: '$context.status',
            bytes: '$context.responseLength',
            latency_ms: '$context.responseLatency',
            integration_status: '$context.integrationStatus',
            integration_latency_ms: '$context.integrationLatency',
            integration_error: '$context.integrationErrorMessage',
            error: '$context.error.message',
          }),
        ),
      },
    });
    for (const route of expandRoutes()) {
      api.addRoutes({ path: route.path, methods: [route.method as HttpMethod], integration: integrations[route.group] });
    }

    // The CDN (docs/deploy.md, "The CDN"): CloudFront in front of the whole HTTP API. /tlog/* (tiles, entry
    // bundles, checkpoints: what C2SP clients fetch, and expect behind a CDN) is cached as each answer's
    // Cache-Control says (a full tile for a year, a checkpoint for seconds; `private` and `no-store` never);
    // everything else passes through uncached, every header but Host forwarded and every answer's headers intact.
    const distribution = cdn(this, api, secrets.edgeSecret, parameters);

    serviceAlarms(this, api, tables);

    // WebSocket (docs/rules.md, "WebSocket") and the broadcaster that pushes new blocks to its connections.
    const wsStage = realtime(this, { makeFunction, ledgerTable: tables.ledger });
    // The explorer is served by the HTTP API but listens on the WebSocket API: tell it where that is.
    functions.docs.addEnvironment('SVC_WS_PUBLIC_URL', wsStage.url);

    // The sweep of unwritten rounds (shared/ledger/sweep.ts): every hour, well inside the 7 days the pending
    // appends that hold a round's bodies are kept. Invoked asynchronously by EventBridge: a failed sweep is tried
    // again by Lambda (twice), then by the next hour's; its Errors raise the alarm, its log names each chain.
    const sweep = makeFunction('sweep', EVENT_FUNCTIONS.sweep);
    const sweepSchedule = new Rule(this, 'SweepSchedule', {
      description: "Verifiable ledger: finish rounds whose leaders left their records unwritten, before their pending appends' TTL",
      schedule: Schedule.rate(Duration.hours(1)),
      targets: [new LambdaFunction(sweep, { retryAttempts: 2, maxEventAge: Duration.hours(1) })],
    });
    Validations.of(sweepSchedule).acknowledge({
      id: 'Serverless::Serverless-EventBusDLQ',
      reason: "A scheduled event carries nothing to replay: the sweep keeps its place in the chain list in the table, and the next hour's goes on from there.",
    });
    alarm(this, 'SweepErrors', 'The sweep of unwritten rounds failed: its log names each chain and the cause', {
      metric: sweep.metricErrors({ period: Duration.hours(1) }),
      threshold: 1,
      evaluationPeriods: 1,
    });

    // What the best-practice packs (cdk-nag's AwsSolutions and Serverless, run on every synth by app.ts and by
    // test/cloud/nag.test.ts) ask and this stack answers otherwise, each with its reason.
    Validations.of(this).acknowledge(
      {
        id: 'AwsSolutions::AwsSolutions-APIG4',
        reason:
          "Authorization is the service's own, on every route: an API key (X-API-Key) checked by each function's middleware " +
          'against the registry, with roles and organizations (docs/authorization.md); health, docs and the explorer are public by design.',
      },
      {
        id: 'Serverless::Serverless-LambdaDLQ',
        reason:
          "API Gateway invokes the HTTP functions synchronously (errors go back to the client), and the stream's event source mapping has " +
          'its own on-failure destination (BroadcastDeadLetters). The sweep, invoked asynchronously by its schedule, keeps nothing a DLQ ' +
          "could replay: a failed sweep is retried, then the next hour's sweeps the same chains again, and its alarm says so.",
      },
      {
        id: 'Serverless::Serverless-LambdaTracing',
        reason:
          'Each request is one structured log line with its request id and latency, and CloudWatch metrics (EMF) with alarms; X-Ray would trace ' +
          'only the Lambda segment (the SDK clients are not instrumented), at $5 per million traces.',
      },
    );

    new CfnOutput(this, 'ApiUrl', { value: api.apiEndpoint, description: 'Base URL: ApiUrl/api/v1/health' });
    new CfnOutput(this, 'CdnUrl', { value: `https://${distribution.distributionDomainName}`, description: 'The same API through CloudFront: /tlog/* cached' });
    new CfnOutput(this, 'WebSocketUrl', { value: wsStage.url, description: 'Subscribe here: wss://…/live' });
    new CfnOutput(this, 'RegistryTableName', { value: tables.registry.tableName, description: 'For npm run keys -- … --aws' });
    new CfnOutput(this, 'LedgerTableName', { value: tables.ledger.tableName });
    new CfnOutput(this, 'DataKeyArn', { value: key.keyArn });
  }
}
