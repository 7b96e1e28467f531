/**
 * The cloud stack, synthesized offline (CloudFormation validation off for speed). Generated from the
 * route table, the group table and the table definitions, so later routes, groups and tables are
 * covered without editing this file.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { before, describe, it } from 'node:test';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { LedgerStack } from '#infra/cdk/ledger-stack';
import { ROOT } from '#infra/bundling';
import { ALL_FUNCTIONS, SIGNERS } from '#infra/cdk/permissions';
import { EVENT_FUNCTIONS, GROUPS, expandRoutes } from '#infra/routes';
import { LAMBDA_NODE_MAJOR } from '#infra/sim/runtime';
import { allTableSpecs } from '#shared/storage/tables';

let template: Template;
let outdir: string;
const NAMES = { ledger: 'test-ledger', registry: 'test-registry', rateLimits: 'test-ratelimits', connections: 'test-connections' };

before(() => {
  const app = new App({ builtinCloudFormationValidation: false });
  template = Template.fromStack(new LedgerStack(app, 'Test', { env: { region: 'us-east-1' }, tablePrefix: 'test-' }));
  outdir = app.outdir;
});

type Resource = { Type: string; Properties: any };
const resources = () => template.toJSON().Resources as Record<string, Resource>;

/** The group a function serves, from the SVC_FUNCTION_GROUP the stack gives it. */
function functionGroup(logicalId: string): string {
  return resources()[logicalId]!.Properties.Environment.Variables.SVC_FUNCTION_GROUP;
}

function bundleOf(group: string): string {
  const [, fn] = Object.entries(resources()).find(([id]) => functionGroupSafe(id) === group)!;
  const assetHash = String(fn.Properties.Code.S3Key).replace(/\.zip$/, '');
  return join(outdir, `asset.${assetHash}`, 'index.mjs');
}

function functionGroupSafe(id: string): string | undefined {
  const r = resources()[id]!;
  return r.Type === 'AWS::Lambda::Function' ? r.Properties.Environment?.Variables?.SVC_FUNCTION_GROUP : undefined;
}

/** The secrets (logical ids) a function's SVC_SECRETS names, under any condition. */
function secretsRead(functionId: string): string[] {
  const value = JSON.stringify(resources()[functionId]!.Properties.Environment.Variables.SVC_SECRETS ?? '');
  return [...value.matchAll(/"Ref":"([^"]+)"/g)].map((m) => m[1]!).sort();
}

/** The secrets (logical ids) a function's role may read with secretsmanager:GetSecretValue, from any policy of it. */
function secretsGranted(functionId: string): string[] {
  const all = resources();
  const role = all[functionId]!.Properties.Role['Fn::GetAtt'][0];
  const found = Object.values(all)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((x: { Ref: string }) => x.Ref === role))
    .flatMap((r) => r.Properties.PolicyDocument.Statement)
    .filter((st: any) => st.Effect === 'Allow' && [st.Action].flat().some((a: string) => a.startsWith('secretsmanager:')))
    .flatMap((st: any) => {
      assert.deepEqual([st.Action].flat(), ['secretsmanager:GetSecretValue'], 'nothing but GetSecretValue');
      return [st.Resource].flat().map((res: { Ref?: string }) => res.Ref ?? JSON.stringify(res));
    });
  return [...new Set(found)].sort();
}

/** Calls a bundled handler as API Gateway's HTTP API would (payload 2.0). */
function invoke(
  handler: (event: unknown, context: unknown) => Promise<any>,
  request: {
    group: string;
    method: string;
    path: string;
    routeKey?: string;
    pathParameters?: Record<string, string>;
    headers?: Record<string, string>;
    body?: string;
  },
): Promise<any> {
  const routeKey = request.routeKey ?? `${request.method} ${request.path}`;
  return handler(
    {
      version: '2.0',
      routeKey,
      rawPath: request.path,
      rawQueryString: '',
      headers: request.headers ?? {},
      ...(request.body === undefined ? {} : { body: request.body }),
      ...(request.pathParameters ? { pathParameters: request.pathParameters } : {}),
      requestContext: { http: { method: request.method, path: request.path, sourceIp: '127.0.0.1' }, requestId: 'r', routeKey, stage: '$default' },
      isBase64Encoded: false,
    },
    { getRemainingTimeInMillis: () => 29_000, functionName: request.group, awsRequestId: 'r' },
  );
}

describe('Stack: LedgerStack (cdk synth)', () => {
  it("routes every path of the route table, aliases included, to its group's function", () => {
    const all = resources();
    const routes = Object.values(all).filter((r) => r.Type === 'AWS::ApiGatewayV2::Route' && r.Properties.ApiId?.Ref?.startsWith('HttpApi'));
    const keys = routes.map((r) => r.Properties.RouteKey).sort();
    assert.deepEqual(keys, [...expandRoutes().map((r) => r.routeKey), '$default'].sort());
    for (const route of expandRoutes()) {
      const resource = routes.find((r) => r.Properties.RouteKey === route.routeKey)!;
      const integrationId = resource.Properties.Target['Fn::Join'][1][1].Ref;
      const functionId = all[integrationId]!.Properties.IntegrationUri['Fn::GetAtt'][0];
      assert.equal(functionGroup(functionId), route.group, `${route.routeKey} reaches the ${route.group} function`);
    }
  });

  it("sends unmatched paths ($default) to a function that writes nothing of the ledger's and cannot use the key (red team)", () => {
    // Any path anyone sends reached the ledger function, the most privileged of all.
    const all = resources();
    const api = Object.entries(all).find(([, r]) => r.Type === 'AWS::ApiGatewayV2::Api' && r.Properties.ProtocolType === 'HTTP')![0];
    const fallback = Object.values(all).find(
      (r) => r.Type === 'AWS::ApiGatewayV2::Route' && r.Properties.ApiId?.Ref === api && r.Properties.RouteKey === '$default',
    )!;
    const integrationId = fallback.Properties.Target['Fn::Join'][1][1].Ref;
    const functionId = all[integrationId]!.Properties.IntegrationUri['Fn::GetAtt'][0];
    assert.equal(functionGroup(functionId), 'metrics');
    const role = all[functionId]!.Properties.Role['Fn::GetAtt'][0];
    const statements = Object.values(all)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((ref: { Ref: string }) => ref.Ref === role))
      .flatMap((r) => r.Properties.PolicyDocument.Statement)
      // The key's use by DynamoDB on the function's behalf (the tables are encrypted with it) is not a use of its own.
      .filter(
        (s: { Effect: string; Condition?: { StringEquals?: Record<string, unknown> } }) =>
          s.Effect === 'Allow' && !s.Condition?.StringEquals?.['kms:ViaService'],
      );
    const actions = statements.flatMap((s: { Action: string | string[] }) => [s.Action].flat());
    for (const forbidden of [
      'dynamodb:PutItem',
      'dynamodb:DeleteItem',
      'dynamodb:BatchWriteItem',
      'dynamodb:TransactWriteItems',
      'kms:Decrypt',
      'kms:GenerateDataKey',
    ]) {
      assert.ok(!actions.includes(forbidden), `the fallback's role may not ${forbidden}`);
    }
  });

  it('declares every table exactly as the local stack creates it, with PITR, SSE under the key, stream and TTL, and deletion protection', () => {
    for (const spec of Object.values(allTableSpecs(NAMES))) {
      const d = spec.definition;
      template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
        TableName: d.TableName,
        KeySchema: d.KeySchema,
        AttributeDefinitions: Match.arrayWith(d.AttributeDefinitions!.map((a) => Match.objectLike(a))),
        ...(d.GlobalSecondaryIndexes
          ? {
              GlobalSecondaryIndexes: d.GlobalSecondaryIndexes.map((i) =>
                Match.objectLike({ IndexName: i.IndexName, KeySchema: i.KeySchema, Projection: i.Projection }),
              ),
            }
          : {}),
        ...(d.StreamSpecification ? { StreamSpecification: { StreamViewType: d.StreamSpecification.StreamViewType } } : {}),
        ...(spec.ttlAttribute ? { TimeToLiveSpecification: { AttributeName: spec.ttlAttribute, Enabled: true } } : {}),
        SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
        Replicas: [
          Match.objectLike({
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
            SSESpecification: { KMSMasterKeyId: Match.anyValue() },
            // A DeleteTable by anyone fails until it is turned off on purpose (RETAIN guards the stack's own operations only).
            DeletionProtectionEnabled: true,
          }),
        ],
      });
    }
  });

  it('has one symmetric KMS key with rotation on', () => {
    template.resourceCountIs('AWS::KMS::Key', 1);
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
  });

  it('keeps the node identity through a destroy: the registry table that holds it and the KMS key that seals it are retained', () => {
    // The identity is made once in the registry table (SVC_IDENTITY_STORE=registry) and sealed under the key: a
    // stack deleted and deployed again over the same table must open it, or every client's pinned key breaks.
    template.hasResource('AWS::DynamoDB::GlobalTable', { Properties: Match.objectLike({ TableName: NAMES.registry }), DeletionPolicy: 'Retain' });
    template.hasResource('AWS::KMS::Key', { DeletionPolicy: 'Retain' });
    for (const [id, fn] of Object.entries(resources()).filter(([, r]) => r.Type === 'AWS::Lambda::Function')) {
      const store = fn.Properties.Environment?.Variables?.SVC_IDENTITY_STORE;
      if (store !== undefined) assert.equal(store, 'registry', id);
    }
    assert.ok(
      Object.values(resources()).some((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Environment?.Variables?.SVC_IDENTITY_STORE === 'registry'),
      'the functions that sign use the registry identity',
    );
  });

  it('gives each group one function on a supported Node.js runtime, arm64, production settings', () => {
    for (const group of Object.keys(GROUPS)) {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Architectures: ['arm64'],
        Environment: {
          Variables: Match.objectLike({
            SVC_FUNCTION_GROUP: group,
            SVC_ENV: 'production',
            SVC_AUTH_ENABLED: 'true',
            SVC_RATE_LIMIT_BACKEND: 'dynamodb',
            SVC_CORS_ORIGINS: { Ref: 'CorsOrigins' },
            SVC_IDENTITY_STORE: 'registry',
            SVC_SUBJECT_KEY_STORE: 'registry',
          }),
        },
      });
    }
    template.hasParameter('CorsOrigins', { Type: 'String' });
    template.hasParameter('LicenseKey', { NoEcho: true });
  });

  it('runs no function on a deprecated runtime, and every one on the Node the simulation runs its seeds on', () => {
    for (const [id, r] of Object.entries(resources())) {
      if (r.Type !== 'AWS::Lambda::Function') continue;
      const runtime = String(r.Properties.Runtime);
      const node = /^nodejs(\d+)\.x$/.exec(runtime);
      assert.ok(node && Number(node[1]) >= 22, `${id} runs ${runtime}`);
      assert.equal(Number(node[1]), LAMBDA_NODE_MAJOR, `${id} runs ${runtime}; infra/sim/runtime.ts says nodejs${LAMBDA_NODE_MAJOR}.x`);
    }
  });

  it('grants no DynamoDB or KMS action on `*`, but ListStreams, which IAM grants on nothing else', () => {
    for (const [id, r] of Object.entries(resources())) {
      if (r.Type !== 'AWS::IAM::Policy') continue;
      for (const statement of r.Properties.PolicyDocument.Statement) {
        const actions = [statement.Action].flat();
        // dynamodb:ListStreams is wildcard-only in IAM; Lambda's event source mapping checks the role for it.
        if (actions.length === 1 && actions[0] === 'dynamodb:ListStreams') continue;
        const sensitive = actions.some((a: string) => a.startsWith('dynamodb:') || a.startsWith('kms:'));
        if (!sensitive) continue;
        const targets = [statement.Resource].flat();
        assert.ok(!targets.includes('*'), `${id} grants ${actions.join(', ')} on *`);
      }
    }
  });

  it('gives the groups that use the key exactly GenerateDataKey and Decrypt on it, and the IPFS settings to those that use IPFS', () => {
    const all = resources();
    const keyId = Object.entries(all).find(([, r]) => r.Type === 'AWS::KMS::Key')![0];
    for (const [group, spec] of Object.entries(GROUPS) as [string, { usesKmsKey?: boolean; usesIpfs?: boolean }][]) {
      const [fnId, fn] = Object.entries(all).find(([id]) => functionGroupSafe(id) === group)!;
      const roleId = fn.Properties.Role['Fn::GetAtt'][0];
      const statements = Object.values(all)
        .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: any) => role.Ref === roleId))
        .flatMap((r) => r.Properties.PolicyDocument.Statement);
      // The key's direct use (envelope encryption), apart from its use through DynamoDB (a kms:ViaService condition).
      const kmsDataKey = statements.filter(
        (st: any) => !st.Condition && [st.Action].flat().includes('kms:GenerateDataKey') && JSON.stringify(st.Resource).includes(keyId),
      );
      const viaDynamo = statements.filter((st: any) => JSON.stringify(st.Condition ?? {}).includes('"kms:ViaService":"dynamodb.'));
      assert.equal(viaDynamo.length, 1, `${group}: the tables' key, through DynamoDB only`);
      assert.equal(kmsDataKey.length > 0, Boolean(spec.usesKmsKey), `${group} (${fnId}) KMS grant`);
      for (const st of kmsDataKey) assert.deepEqual([st.Action].flat().sort(), ['kms:Decrypt', 'kms:GenerateDataKey']);
      const env = fn.Properties.Environment.Variables;
      assert.equal(env.SVC_KMS_KEY_ID !== undefined, Boolean(spec.usesKmsKey), `${group} SVC_KMS_KEY_ID`);
      assert.deepEqual(env.SVC_IPFS_API_URL, spec.usesIpfs ? { Ref: 'IpfsApiUrl' } : undefined, `${group} SVC_IPFS_API_URL`);
    }
    template.hasParameter('IpfsApiAuth', { NoEcho: true });
  });

  it("lets only the functions that sign as the node unwrap the node identity's key (its own KMS scope): the rest are denied it (red team)", () => {
    // Who signs is who wires the node identity: a handler that imports shared/wiring/node.ts.
    const wiresIdentity = ALL_FUNCTIONS.filter((name) => /#shared\/wiring\/node'/.test(readFileSync(join(ROOT, 'functions', name, 'handler.ts'), 'utf8')));
    assert.deepEqual([...SIGNERS].sort(), [...wiresIdentity].sort(), 'SIGNERS (infra/cdk/permissions.ts) is who wires the node identity');
    const all = resources();
    for (const [id, fn] of Object.entries(all)) {
      const group = functionGroupSafe(id);
      if (!group) continue;
      const roleId = fn.Properties.Role['Fn::GetAtt'][0];
      const statements = Object.values(all)
        .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: any) => role.Ref === roleId))
        .flatMap((r) => r.Properties.PolicyDocument.Statement);
      const usesKey = fn.Properties.Environment.Variables.SVC_KMS_KEY_ID !== undefined;
      const denied = statements.filter(
        (st: any) =>
          st.Effect === 'Deny' && JSON.stringify(st.Condition ?? {}) === '{"StringEquals":{"kms:EncryptionContext:verifiable-ledger:scope":"identity"}}',
      );
      assert.equal(denied.length, usesKey && !SIGNERS.includes(group as never) ? 1 : 0, `${group}: denied the identity's scope`);
      for (const st of denied) assert.deepEqual([st.Action].flat().sort(), ['kms:Decrypt', 'kms:GenerateDataKey']);
    }
  });

  it('routes the WebSocket API ($connect, $disconnect, $default with a route response) to the ws function', () => {
    const all = resources();
    const routes = Object.values(all).filter((r) => r.Type === 'AWS::ApiGatewayV2::Route' && r.Properties.ApiId?.Ref?.startsWith('WebSocketApi'));
    assert.deepEqual(routes.map((r) => r.Properties.RouteKey).sort(), ['$connect', '$default', '$disconnect']);
    for (const route of routes) {
      const integrationId = route.Properties.Target['Fn::Join'][1][1].Ref;
      const uri = JSON.stringify(all[integrationId]!.Properties.IntegrationUri);
      const fnId = Object.keys(all).find((id) => functionGroupSafe(id) === 'ws')!;
      assert.ok(uri.includes(fnId), `${route.Properties.RouteKey} reaches the ws function`);
    }
    template.resourceCountIs('AWS::ApiGatewayV2::RouteResponse', 1);
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { StageName: 'live', AutoDeploy: true });
  });

  it('feeds the broadcaster from the ledger stream, in batches, bisecting on error, with a dead-letter queue', () => {
    const all = resources();
    const broadcastId = Object.keys(all).find((id) => functionGroupSafe(id) === 'broadcast')!;
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: broadcastId },
      EventSourceArn: Match.objectLike({ 'Fn::GetAtt': [Match.stringLikeRegexp('^LedgerTable'), 'StreamArn'] }),
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 3,
      StartingPosition: 'LATEST',
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      DestinationConfig: { OnFailure: { Destination: Match.objectLike({ 'Fn::GetAtt': [Match.stringLikeRegexp('^BroadcastDeadLetters'), 'Arn'] }) } },
    });
    assert.ok(JSON.stringify(all[broadcastId]!.Properties.Environment.Variables.SVC_WS_MANAGEMENT_ENDPOINT).includes('WebSocketApi'));
  });

  it('lets the broadcaster alone push through the management API, and the ws function alone ask about a connection', () => {
    const all = resources();
    const manage = Object.values(all)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap((r) =>
        r.Properties.PolicyDocument.Statement.filter((st: any) => [st.Action].flat().includes('execute-api:ManageConnections')).map((st: any) => ({
          role: r.Properties.Roles[0].Ref,
          method: /\/(GET|POST|DELETE|\*)\/@connections/.exec(JSON.stringify(st.Resource))?.[1],
        })),
      );
    const roleOf = (group: string) => all[Object.keys(all).find((id) => functionGroupSafe(id) === group)!]!.Properties.Role['Fn::GetAtt'][0];
    assert.deepEqual(
      manage.sort((a: any, b: any) => a.method.localeCompare(b.method)),
      [
        { role: roleOf('ws'), method: 'GET' },
        { role: roleOf('broadcast'), method: 'POST' },
      ],
    );
    const wsId = Object.keys(all).find((id) => functionGroupSafe(id) === 'ws')!;
    assert.ok(JSON.stringify(all[wsId]!.Properties.Environment.Variables.SVC_WS_MANAGEMENT_ENDPOINT).includes('WebSocketApi'));
  });

  it("keeps every secret setting out of the functions' environment: each reads its own from Secrets Manager, and may read no other (red team)", () => {
    const all = resources();
    const secrets = Object.entries(all).filter(([, r]) => r.Type === 'AWS::SecretsManager::Secret');
    const conditionOf = Object.fromEntries(secrets.map(([id, r]) => [id, (r as { Condition?: string }).Condition]));
    // The deployer's NoEcho parameters become secrets only when given (Secrets Manager refuses an empty one).
    assert.deepEqual(conditionOf, {
      [secrets.find(([id]) => id.startsWith('EdgeSecret'))![0]]: undefined,
      [secrets.find(([id]) => id.startsWith('IpfsApiAuthSecret'))![0]]: 'HasIpfsApiAuth',
      [secrets.find(([id]) => id.startsWith('LicenseKeySecret'))![0]]: 'HasLicenseKey',
    });
    const secretOf = (prefix: string) => secrets.find(([id]) => id.startsWith(prefix))![0];
    const expected: Record<string, string[]> = {};
    for (const [id, r] of Object.entries(all)) {
      const group = functionGroupSafe(id);
      if (!group) continue;
      const variables = r.Properties.Environment.Variables as Record<string, unknown>;
      for (const name of ['SVC_EDGE_SECRET', 'SVC_IPFS_API_AUTH', 'SVC_LICENSE_KEY', 'SVC_ADMIN_API_KEY'])
        assert.equal(variables[name], undefined, `${group}: ${name} is not in its environment`);
      assert.doesNotMatch(
        JSON.stringify(variables),
        /resolve:secretsmanager|"Ref":"(IpfsApiAuth|LicenseKey)"/,
        `${group}: no secret's value in its environment`,
      );
      const reads = [
        ...(group in GROUPS ? [secretOf('EdgeSecret')] : []),
        ...(([...Object.entries(GROUPS), ...Object.entries(EVENT_FUNCTIONS)].find(([g]) => g === group)![1] as { usesIpfs?: boolean }).usesIpfs
          ? [secretOf('IpfsApiAuthSecret')]
          : []),
        ...(group === 'admin' ? [secretOf('LicenseKeySecret')] : []),
      ].sort();
      expected[group] = reads;
      assert.deepEqual(secretsRead(id), reads, `${group}: SVC_SECRETS names exactly these`);
      assert.deepEqual(secretsGranted(id), reads, `${group}: its role may read exactly these`);
      // Raised, the revision changes every function's configuration: each starts afresh and reads its secrets again.
      assert.deepEqual(variables.SVC_SECRETS_REVISION, { Ref: 'SecretsRevision' }, group);
    }
    // And the distribution's, so that CloudFormation reads the edge secret into its header again.
    const [cdn] = Object.values(all).filter((r) => r.Type === 'AWS::CloudFront::Distribution');
    assert.match(JSON.stringify(cdn!.Properties.DistributionConfig.Comment), /"Ref":"SecretsRevision"/);
    assert.deepEqual(expected.ws, [], 'the WebSocket function reads no secret');
    assert.deepEqual(expected.sweep, []);
    // A conditional secret is named, and may be read, only under its condition: never a reference to a secret not made.
    for (const [id, r] of Object.entries(all)) {
      const text = JSON.stringify(r);
      for (const [secretId, condition] of Object.entries(conditionOf)) {
        if (!condition || id === secretId || !text.includes(`"Ref":"${secretId}"`)) continue;
        const guarded = (r as { Condition?: string }).Condition === condition || text.includes(`{"Fn::If":["${condition}",`);
        assert.ok(guarded, `${id} refers to ${secretId} outside its condition ${condition}`);
      }
    }
  });

  it('runs the sweep of unwritten rounds every hour (EventBridge may invoke it, nothing else), and alarms on its errors', () => {
    const all = resources();
    const sweepId = Object.keys(all).find((id) => functionGroupSafe(id) === 'sweep')!;
    assert.ok(sweepId, 'a sweep function');
    const rules = Object.entries(all).filter(([, r]) => r.Type === 'AWS::Events::Rule');
    assert.equal(rules.length, 1);
    const [ruleId, rule] = rules[0]!;
    assert.equal(rule.Properties.ScheduleExpression, 'rate(1 hour)', "well inside the 7 days a round's pending appends are kept");
    assert.deepEqual(
      rule.Properties.Targets.map((t: any) => t.Arn),
      [{ 'Fn::GetAtt': [sweepId, 'Arn'] }],
    );
    const permissions = Object.values(all).filter((r) => r.Type === 'AWS::Lambda::Permission' && r.Properties.Principal === 'events.amazonaws.com');
    assert.deepEqual(
      permissions.map((p) => [p.Properties.FunctionName, p.Properties.SourceArn]),
      [[{ 'Fn::GetAtt': [sweepId, 'Arn'] }, { 'Fn::GetAtt': [ruleId, 'Arn'] }]],
    );
    const errors = Object.values(all).filter((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties.MetricName === 'Errors');
    assert.deepEqual(
      errors.map((a) => a.Properties.Dimensions),
      [[{ Name: 'FunctionName', Value: { Ref: sweepId } }]],
    );
  });

  it("keeps every log as long as the deployer says (LogRetentionDays, 30 by default) and past a destroy; reserves the ledger function's concurrency only when asked (red team)", () => {
    const parameters = template.toJSON().Parameters as Record<string, { Default: unknown; AllowedValues?: string[] }>;
    assert.equal(parameters.LogRetentionDays!.Default, 30);
    assert.ok(parameters.LogRetentionDays!.AllowedValues!.includes('3653'));
    const logs = Object.entries(template.toJSON().Resources as Record<string, Resource & { DeletionPolicy?: string }>).filter(
      ([, r]) => r.Type === 'AWS::Logs::LogGroup',
    );
    assert.ok(logs.length >= 12, 'every function and the access log');
    for (const [id, r] of logs) {
      assert.deepEqual(r.Properties.RetentionInDays, { Ref: 'LogRetentionDays' }, id);
      assert.equal(r.DeletionPolicy, 'Retain', id);
    }
    assert.equal(parameters.LedgerReservedConcurrency!.Default, 0);
    const reserved = Object.entries(resources()).filter(
      ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.ReservedConcurrentExecutions !== undefined,
    );
    assert.deepEqual(
      reserved.map(([id]) => functionGroup(id)),
      ['ledger'],
    );
    assert.deepEqual(reserved[0]![1].Properties.ReservedConcurrentExecutions, {
      'Fn::If': ['ReservesLedgerConcurrency', { Ref: 'LedgerReservedConcurrency' }, { Ref: 'AWS::NoValue' }],
    });
  });

  it('alarms on 5xx, latency and throttles, and outputs the URL', () => {
    const alarms = Object.values(resources()).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    const metrics = alarms.map((a) => a.Properties.MetricName);
    assert.ok(metrics.includes('5xx'));
    assert.ok(metrics.includes('Latency'));
    assert.equal(metrics.filter((m) => m === 'Throttles').length, Object.keys(GROUPS).length + Object.keys(EVENT_FUNCTIONS).length);
    template.hasOutput('ApiUrl', {});
    template.hasOutput('WebSocketUrl', {});
    template.hasOutput('RegistryTableName', {});
  });

  describe('the CDN', () => {
    const distribution = () => {
      const found = Object.values(resources()).filter((r) => r.Type === 'AWS::CloudFront::Distribution');
      assert.equal(found.length, 1, 'one distribution');
      return found[0]!.Properties.DistributionConfig;
    };
    /** A cache policy's config, by the reference a behaviour holds (a managed policy is its id). */
    const cachePolicy = (ref: unknown) => {
      const id = (ref as { Ref?: string }).Ref;
      return id ? resources()[id]!.Properties.CachePolicyConfig : ref;
    };
    const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
    const ALL_VIEWER_EXCEPT_HOST_HEADER = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';

    it('sits in front of the HTTP API, over HTTPS only, and adds the edge header the functions know it by', () => {
      const config = distribution();
      assert.equal(config.Origins.length, 1);
      const origin = config.Origins[0];
      assert.equal(origin.CustomOriginConfig.OriginProtocolPolicy, 'https-only');
      assert.deepEqual(origin.CustomOriginConfig.OriginSSLProtocols, ['TLSv1.2']);
      const domain = JSON.stringify(origin.DomainName);
      assert.match(domain, /HttpApi/, 'the HTTP API is the origin');
      assert.match(domain, /execute-api/);
      const [header] = origin.OriginCustomHeaders;
      assert.equal(header.HeaderName, 'X-Ledger-Edge');
      const secretRef = JSON.stringify(header.HeaderValue);
      assert.match(secretRef, /resolve:secretsmanager/, 'the generated secret, resolved at deploy: never in the template');
      // Every function behind the HTTP API reads the same secret (from Secrets Manager, at a cold start), to believe the
      // viewer address of a request that carries it; the WebSocket, stream and schedule functions, which no request
      // through the CDN reaches, do not (red team).
      const edgeSecretId = /"Ref":"(EdgeSecret[^"]*)"/.exec(JSON.stringify(origin.OriginCustomHeaders))?.[1] ?? /(EdgeSecret[A-Z0-9]+)/.exec(secretRef)?.[1];
      assert.ok(edgeSecretId, `the header names the stack's edge secret: ${secretRef}`);
      const given: string[] = [];
      for (const [id, r] of Object.entries(resources())) {
        const group = functionGroupSafe(id);
        if (r.Type !== 'AWS::Lambda::Function' || !group) continue;
        if (secretsRead(id).includes(edgeSecretId)) given.push(group);
      }
      assert.deepEqual(given.sort(), ['admin', 'business', 'contracts', 'docs', 'graphql', 'ledger', 'metrics', 'tlog']);
      template.hasOutput('CdnUrl', {});
    });

    it('passes everything but /tlog/* through uncached, every method, every viewer header but Host, answers untouched', () => {
      const config = distribution();
      const fallback = config.DefaultCacheBehavior;
      assert.equal(fallback.CachePolicyId, CACHING_DISABLED);
      assert.equal(fallback.OriginRequestPolicyId, ALL_VIEWER_EXCEPT_HOST_HEADER);
      assert.deepEqual([...fallback.AllowedMethods].sort(), ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT']);
      assert.equal(fallback.ViewerProtocolPolicy, 'https-only', 'never a redirect, which would turn a POST into a GET');
      assert.equal(fallback.ResponseHeadersPolicyId, undefined, "the answer's own headers, intact");
    });

    it('caches /tlog/* as the answer says: no lifetime of its own, up to a year, keyed by path alone, GET and HEAD only', () => {
      const config = distribution();
      assert.deepEqual(
        config.CacheBehaviors.map((b: { PathPattern: string }) => b.PathPattern),
        ['/tlog/*'],
      );
      const tlog = config.CacheBehaviors[0];
      assert.deepEqual([...tlog.AllowedMethods].sort(), ['GET', 'HEAD', 'OPTIONS']);
      assert.equal(tlog.OriginRequestPolicyId, ALL_VIEWER_EXCEPT_HOST_HEADER, 'a miss still carries the API key');
      assert.equal(tlog.ResponseHeadersPolicyId, undefined);
      const policy = cachePolicy(tlog.CachePolicyId);
      assert.equal(policy.DefaultTTL, 0, 'an answer without Cache-Control is not kept');
      assert.equal(policy.MinTTL, 0, 'private and no-store answers are never kept');
      assert.equal(policy.MaxTTL, 365 * 24 * 3600, 'a full tile, immutable for a year, is kept a year');
      const key = policy.ParametersInCacheKeyAndForwardedToOrigin;
      assert.equal(key.HeadersConfig.HeaderBehavior, 'none', 'no API key in the cache key: only public answers are kept, the same for all');
      assert.equal(key.QueryStringsConfig.QueryStringBehavior, 'none');
      assert.equal(key.CookiesConfig.CookieBehavior, 'none');
    });

    it('answers only through itself when the deployer says so (CdnOnly, false by default), and takes a WAF web ACL (WebAclArn, none by default) (red team)', () => {
      // The API's own URL answered beside the CDN, around anything the edge enforces; nothing limited a client at the edge.
      const parameters = template.toJSON().Parameters as Record<string, { Default: unknown; AllowedValues?: string[]; AllowedPattern?: string }>;
      assert.equal(parameters.CdnOnly!.Default, 'false');
      assert.deepEqual(parameters.CdnOnly!.AllowedValues, ['false', 'true']);
      for (const [id, r] of Object.entries(resources())) {
        const group = functionGroupSafe(id);
        if (r.Type !== 'AWS::Lambda::Function' || !group) continue;
        const only = r.Properties.Environment.Variables.SVC_EDGE_ONLY;
        if (['ws', 'broadcast', 'sweep'].includes(group)) assert.equal(only, undefined, id);
        else assert.deepEqual(only, { Ref: 'CdnOnly' }, id);
      }
      assert.equal(parameters.WebAclArn!.Default, '');
      const pattern = new RegExp(parameters.WebAclArn!.AllowedPattern!);
      assert.ok(pattern.test(''), 'none');
      assert.ok(pattern.test('arn:aws:wafv2:us-east-1:123456789012:global/webacl/limits/0f1e2d3c-aaaa-bbbb-cccc-0123456789ab'));
      assert.ok(!pattern.test('arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/limits/x'), 'a regional web ACL cannot front CloudFront');
      const acl = distribution().WebACLId;
      assert.deepEqual(acl, { 'Fn::If': ['HasWebAcl', { Ref: 'WebAclArn' }, { Ref: 'AWS::NoValue' }] });
      assert.deepEqual(template.toJSON().Conditions.HasWebAcl, { 'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'WebAclArn' }, ''] }] });
    });

    it('has the logs answered to anyone (so public, so kept) only when the deployer says so: PublicTlog, false by default', () => {
      const parameter = (template.toJSON().Parameters as Record<string, { Default: string; AllowedValues: string[] }>).PublicTlog!;
      assert.equal(parameter.Default, 'false');
      assert.deepEqual(parameter.AllowedValues, ['false', 'true']);
      for (const [id, r] of Object.entries(resources())) {
        if (r.Type !== 'AWS::Lambda::Function' || !functionGroupSafe(id)) continue;
        assert.deepEqual(r.Properties.Environment.Variables.SVC_TLOG_PUBLIC, { Ref: 'PublicTlog' }, id);
      }
    });
  });
});

describe('Function bundles', () => {
  for (const group of [...Object.keys(GROUPS), ...Object.keys(EVENT_FUNCTIONS)]) {
    // Minified but with names kept (infra/bundling.ts), so errors keep their class names: under 2.5 MB, the entry and
    // the chunks it may load (code splitting) together.
    // Its load time is a benchmark's figure (bench/probes/cold-import.ts: 273-325 ms for the ledger function on Node 24
    // here); this bound only catches a bundle whose load went wrong (seconds): 500 ms failed twice on 2026-12-04 with
    // both cores busy (the docs bundle's best of three, 583 ms).
    it(`${group}: built by esbuild, under 2.5 MB, keeps class names, loads in a fresh Node process in under 1.5 s`, () => {
      const bundle = bundleOf(group);
      assert.ok(existsSync(bundle), bundle);
      const code = readdirSync(dirname(bundle))
        .filter((name) => name.endsWith('.mjs'))
        .map((name) => join(dirname(bundle), name));
      const size = code.reduce((sum, file) => sum + statSync(file).size, 0);
      assert.ok(size < 2.5 * 1024 * 1024, `${size} bytes`);
      // A domain error is named after its class, and GraphQL tells that name as the error's code.
      const text = code.map((file) => readFileSync(file, 'utf8')).join('\n');
      if (text.includes('NotFoundError')) {
        assert.ok(
          /\bChainNotFoundError\s*=\s*class extends NotFoundError\b|\bclass ChainNotFoundError extends NotFoundError\b/.test(text),
          'ChainNotFoundError keeps its name',
        );
      }
      /** One load of the bundle in a fresh Node process: its time, and what it exports as `handler`. */
      const load = () => {
        const probe = spawnSync(
          process.execPath,
          [
            '--input-type=module',
            '-e',
            `const t = performance.now(); const m = await import(${JSON.stringify(pathToFileURL(bundle).href)}); ` +
              `console.log(JSON.stringify({ ms: performance.now() - t, handler: typeof m.handler }));`,
          ],
          { encoding: 'utf8', env: { PATH: process.env.PATH } },
        );
        assert.equal(probe.status, 0, probe.stderr);
        return JSON.parse(probe.stdout.trim().split('\n').at(-1)!) as { ms: number; handler: string };
      };
      // The fastest of up to three loads: one load can stall behind other work on this shared machine, and a
      // bundle that grew too slow to load is slow every time.
      const loads = [load()];
      while (loads.at(-1)!.ms >= 1_500 && loads.length < 3) loads.push(load());
      assert.equal(loads[0]!.handler, 'function');
      const ms = Math.min(...loads.map((l) => l.ms));
      assert.ok(ms < 1_500, `loaded in ${loads.map((l) => l.ms.toFixed(0)).join(', ')} ms`);
    });
  }

  it("the metrics bundle answers an unmatched request ($default) with the contract's 404", async () => {
    process.env.SVC_LOG_LEVEL = 'warn';
    const { handler } = await import(pathToFileURL(bundleOf('metrics')).href);
    const result = await invoke(handler, { group: 'metrics', method: 'GET', path: '/api/v1/nowhere', routeKey: '$default' });
    assert.equal(result.statusCode, 404);
    assert.equal(result.headers['X-Frame-Options'], 'DENY');
    assert.match(JSON.parse(result.body).detail, /No route for GET \/api\/v1\/nowhere/);
  });

  it('the docs bundle serves the explorer and Swagger UI from the files copied beside it, and the WebSocket URL', async () => {
    process.env.SVC_LOG_LEVEL = 'warn';
    const bundle = bundleOf('docs');
    const staticDir = join(bundle, '..', 'static');
    assert.ok(existsSync(join(staticDir, 'explorer', 'index.html')), 'explorer copied into the bundle');
    const [docsId, docsFn] = Object.entries(resources()).find(([id]) => functionGroupSafe(id) === 'docs')!;
    assert.ok(docsId);
    assert.ok(docsFn.Properties.Environment.Variables.SVC_WS_PUBLIC_URL, 'the explorer is told the WebSocket stage URL');
    const { handler } = await import(pathToFileURL(bundle).href);
    const get = (path: string) => invoke(handler, { group: 'docs', method: 'GET', path });
    const page = await get('/explorer');
    assert.equal(page.statusCode, 200);
    const script = /src="\/explorer\/assets\/([^"]+\.js)"/.exec(page.body)?.[1];
    assert.ok(script, page.body);
    // A parameterised route: the handler reads the file name from the raw path.
    const asset = await invoke(handler, {
      group: 'docs',
      method: 'GET',
      path: `/explorer/assets/${script}`,
      routeKey: 'GET /explorer/assets/{file}',
      pathParameters: { file: script },
    });
    assert.equal(asset.statusCode, 200);
    assert.match(asset.headers['Content-Type'] ?? asset.headers['content-type'], /javascript/);
    const openapi = await get('/openapi.json');
    assert.equal(JSON.parse(openapi.body).openapi, '3.1.0');
  });

  it("the contracts bundle carries the sandbox's WebAssembly beside it; the business bundle, which runs no contract, does not", () => {
    // That the contracts bundle runs contracts from it, with its tables (a run takes a slot in the registry first), is
    // checked on the deployed artefact: test/cloud/sim.test.ts runs the smoke test's contracts against the template.
    assert.ok(existsSync(join(bundleOf('contracts'), '..', 'quickjs.wasm')), 'quickjs.wasm beside the contracts bundle');
    assert.ok(!existsSync(join(bundleOf('business'), '..', 'quickjs.wasm')), 'the business function runs no contract');
  });
});
