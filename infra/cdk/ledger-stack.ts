/**
 * The cloud stack: the ledger table, one Lambda per function group, and an HTTP API whose routes come
 * from infra/routes.ts (every prefix included), with `$default` answering the contract's 404.
 *
 * Built so far: the ledger group behind API keys (registry table) and a shared rate limit (rate-limit
 * table). KMS keys, the connections table, the WebSocket API and the LocalStack deployment come with
 * issue #4 and the groups that need them.
 */
import { fileURLToPath } from 'node:url';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { HttpApi, HttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AttributeType, Billing, ProjectionType, StreamViewType, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Construct } from 'constructs';
import { allTableSpecs, ledgerTableDefinition, type TableSpec } from '../../shared/storage/tables.ts';
import { DEFAULT_GROUP, GROUPS, expandRoutes, type GroupName } from '../routes.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface LedgerStackProps extends StackProps {
  /** Table name prefix, so that several stages can share an account. */
  tablePrefix?: string;
  /** Origins allowed by CORS (SVC_CORS_ORIGINS); production refuses to start without them. */
  corsOrigins: string[];
}

/** A `pk`/`sk` or `key` table from its definition in shared/storage/tables.ts, TTL included. */
function simpleTable(scope: Construct, id: string, spec: TableSpec): TableV2 {
  const keys = spec.definition.KeySchema!;
  const key = (name: string) => ({ name, type: AttributeType.STRING });
  return new TableV2(scope, id, {
    tableName: spec.definition.TableName!,
    partitionKey: key(keys[0]!.AttributeName!),
    ...(keys[1] ? { sortKey: key(keys[1].AttributeName!) } : {}),
    billing: Billing.onDemand(),
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    ...(spec.ttlAttribute ? { timeToLiveAttribute: spec.ttlAttribute } : {}),
    removalPolicy: RemovalPolicy.RETAIN,
  });
}

/** The ledger table with exactly the keys and indexes of shared/storage/tables.ts. */
function ledgerTable(scope: Construct, tableName: string): TableV2 {
  const definition = ledgerTableDefinition(tableName);
  const type = (name: string) =>
    definition.AttributeDefinitions!.find((a) => a.AttributeName === name)!.AttributeType === 'S'
      ? AttributeType.STRING
      : AttributeType.NUMBER;
  const key = (name: string) => ({ name, type: type(name) });
  return new TableV2(scope, 'LedgerTable', {
    tableName,
    partitionKey: key('pk'),
    sortKey: key('sk'),
    billing: Billing.onDemand(),
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    dynamoStream: StreamViewType.NEW_IMAGE,
    removalPolicy: RemovalPolicy.RETAIN,
    globalSecondaryIndexes: definition.GlobalSecondaryIndexes!.map((index) => {
      const [hash, range] = index.KeySchema!;
      const projection = index.Projection!;
      return {
        indexName: index.IndexName!,
        partitionKey: key(hash!.AttributeName!),
        ...(range ? { sortKey: key(range.AttributeName!) } : {}),
        projectionType: projection.ProjectionType as ProjectionType,
        ...(projection.NonKeyAttributes ? { nonKeyAttributes: projection.NonKeyAttributes } : {}),
      };
    }),
  });
}

export class LedgerStack extends Stack {
  constructor(scope: Construct, id: string, props: LedgerStackProps) {
    super(scope, id, props);
    const prefix = props.tablePrefix ?? `${id}-`;
    const names = { ledger: `${prefix}ledger`, registry: `${prefix}registry`, rateLimits: `${prefix}ratelimits` };
    const table = ledgerTable(this, names.ledger);
    const [, registrySpec, rateLimitSpec] = allTableSpecs(names);
    const registry = simpleTable(this, 'RegistryTable', registrySpec!);
    const rateLimits = simpleTable(this, 'RateLimitTable', rateLimitSpec!);

    const functions = {} as Record<GroupName, NodejsFunction>;
    for (const [group, spec] of Object.entries(GROUPS) as [GroupName, (typeof GROUPS)[GroupName]][]) {
      const fn = new NodejsFunction(this, `${group[0]!.toUpperCase()}${group.slice(1)}Function`, {
        entry: `${ROOT}${spec.entry}`,
        handler: 'handler',
        runtime: Runtime.NODEJS_22_X,
        architecture: Architecture.ARM_64,
        memorySize: 1024,
        timeout: Duration.seconds(29),
        projectRoot: ROOT,
        depsLockFilePath: `${ROOT}package-lock.json`,
        environment: {
          SVC_ENV: 'production',
          SVC_AUTH_ENABLED: 'true',
          SVC_CORS_ORIGINS: props.corsOrigins.join(','),
          SVC_RATE_LIMIT_BACKEND: 'dynamodb',
          SVC_LEDGER_TABLE: table.tableName,
          SVC_REGISTRY_TABLE: registry.tableName,
          SVC_RATE_LIMIT_TABLE: rateLimits.tableName,
          NODE_OPTIONS: '--enable-source-maps',
        },
        bundling: {
          forceDockerBundling: false,
          format: OutputFormat.ESM,
          target: 'node22',
          minify: true,
          sourceMap: true,
          mainFields: ['module', 'main'],
          // Bundle the AWS SDK too: the deployed code runs the exact SDK version the tests ran,
          // not whichever one the Lambda runtime happens to ship.
          externalModules: [],
          // ESM bundles still meet CommonJS dependencies that call require().
          banner: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
        },
      });
      for (const t of [table, registry, rateLimits]) t.grantReadWriteData(fn);
      functions[group] = fn;
    }

    const integrations = Object.fromEntries(
      Object.entries(functions).map(([group, fn]) => [group, new HttpLambdaIntegration(`${group}-integration`, fn)]),
    ) as Record<GroupName, HttpLambdaIntegration>;

    // Unmatched requests reach a function too, so that even a 404 has the contract body and headers.
    const api = new HttpApi(this, 'HttpApi', { defaultIntegration: integrations[DEFAULT_GROUP] });
    for (const route of expandRoutes()) {
      api.addRoutes({ path: route.path, methods: [route.method as HttpMethod], integration: integrations[route.group] });
    }

    new CfnOutput(this, 'ApiUrl', { value: api.apiEndpoint });
    new CfnOutput(this, 'LedgerTableName', { value: table.tableName });
    new CfnOutput(this, 'RegistryTableName', { value: registry.tableName });
  }
}
