/**
 * The simulator's reading of a cloud assembly, offline, on a small hand-written template shaped like
 * what CDK synthesizes: what it serves, and that what it cannot serve stops it with the resource's
 * logical id and what is missing.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig, settingsSchema } from '#shared/config';
import { TABLE_SETTINGS } from '#shared/storage/tables';
import { SimTemplateError, checkEnvironment, modelFromTemplate, simKeyId, type Template } from '#infra/sim/template';
import { createPermissionChecker } from '#infra/sim/permissions';
import { dynamoCalls } from '#infra/sim/aws-endpoint';

const dir = mkdtempSync(join(tmpdir(), 'sim-template-'));
mkdirSync(join(dir, 'asset.aaa'));
writeFileSync(join(dir, 'asset.aaa', 'index.mjs'), 'export const handler = async () => ({ statusCode: 200 });\n');
mkdirSync(join(dir, 'asset.empty'));
const assets = { 'aaa.zip': join(dir, 'asset.aaa'), 'empty.zip': join(dir, 'asset.empty') };
const mapping = { region: 'us-east-1', parameters: { Cors: 'http://127.0.0.1:9' }, webSocketUrl: 'ws://127.0.0.1:9/ws', managementUrl: 'http://127.0.0.1:9' };

function template(): Template {
  const integration = (fn: string) => ({
    Type: 'AWS::ApiGatewayV2::Integration',
    Properties: { ApiId: { Ref: 'Http' }, IntegrationType: 'AWS_PROXY', IntegrationUri: { 'Fn::GetAtt': [fn, 'Arn'] } },
  });
  const route = (key: string, target: string, api = 'Http') => ({
    Type: 'AWS::ApiGatewayV2::Route',
    Properties: { ApiId: { Ref: api }, RouteKey: key, Target: { 'Fn::Join': ['', ['integrations/', { Ref: target }]] } },
  });
  return {
    // CDK writes a Number parameter's default as a JSON number; CloudFormation hands it on as a string.
    Parameters: { Cors: { Type: 'String' }, Limit: { Type: 'Number', Default: 100 } },
    Resources: {
      Key: {
        Type: 'AWS::KMS::Key',
        Properties: {
          KeyPolicy: {
            Statement: [
              {
                Effect: 'Allow',
                Principal: { AWS: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':root']] } },
                Action: 'kms:*',
                Resource: '*',
              },
            ],
          },
        },
      },
      ApiRole: {
        Type: 'AWS::IAM::Role',
        Properties: {
          AssumeRolePolicyDocument: { Statement: [{ Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }] },
          Policies: [
            {
              PolicyName: 'logs',
              PolicyDocument: {
                Statement: [{ Effect: 'Allow', Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Resource: { 'Fn::GetAtt': ['ApiLogs', 'Arn'] } }],
              },
            },
          ],
        },
      },
      ApiRolePolicy: {
        Type: 'AWS::IAM::Policy',
        Properties: {
          Roles: [{ Ref: 'ApiRole' }],
          PolicyName: 'data',
          PolicyDocument: {
            Statement: [
              {
                Effect: 'Allow',
                Action: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem'],
                Resource: [{ 'Fn::GetAtt': ['Ledger', 'Arn'] }, { 'Fn::Join': ['', [{ 'Fn::GetAtt': ['Ledger', 'Arn'] }, '/index/*']] }],
              },
              { Effect: 'Allow', Action: ['kms:Decrypt', 'kms:GenerateDataKey*'], Resource: { 'Fn::GetAtt': ['Key', 'Arn'] } },
            ],
          },
        },
      },
      ApiLogs: { Type: 'AWS::Logs::LogGroup', Properties: { RetentionInDays: 30 } },
      Ledger: {
        Type: 'AWS::DynamoDB::GlobalTable',
        Properties: {
          TableName: 'stack-ledger',
          KeySchema: [
            { AttributeName: 'pk', KeyType: 'HASH' },
            { AttributeName: 'sk', KeyType: 'RANGE' },
          ],
          AttributeDefinitions: [
            { AttributeName: 'pk', AttributeType: 'S' },
            { AttributeName: 'sk', AttributeType: 'S' },
            { AttributeName: 'h', AttributeType: 'S' },
          ],
          GlobalSecondaryIndexes: [{ IndexName: 'by-hash', KeySchema: [{ AttributeName: 'h', KeyType: 'HASH' }], Projection: { ProjectionType: 'KEYS_ONLY' } }],
          StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
          TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
        },
      },
      Api: {
        Type: 'AWS::Lambda::Function',
        Properties: {
          Code: { S3Bucket: 'b', S3Key: 'aaa.zip' },
          Handler: 'index.handler',
          Runtime: 'nodejs22.x',
          Role: { 'Fn::GetAtt': ['ApiRole', 'Arn'] },
          LoggingConfig: { LogGroup: { Ref: 'ApiLogs' } },
          Timeout: 29,
          MemorySize: 1024,
          Environment: {
            Variables: {
              SVC_LEDGER_TABLE: { Ref: 'Ledger' },
              SVC_KMS_KEY_ID: { 'Fn::GetAtt': ['Key', 'Arn'] },
              SVC_CORS_ORIGINS: { Ref: 'Cors' },
              SVC_RATE_LIMIT_RPM: { Ref: 'Limit' },
              SVC_PEER_TIMEOUT_MS: 3000,
              SVC_WS_PUBLIC_URL: { 'Fn::Join': ['', ['wss://', { Ref: 'Ws' }, '.execute-api.us-east-1.', { Ref: 'AWS::URLSuffix' }, '/live']] },
            },
          },
        },
      },
      Http: { Type: 'AWS::ApiGatewayV2::Api', Properties: { ProtocolType: 'HTTP' } },
      Ws: { Type: 'AWS::ApiGatewayV2::Api', Properties: { ProtocolType: 'WEBSOCKET' } },
      WsStage: { Type: 'AWS::ApiGatewayV2::Stage', Properties: { ApiId: { Ref: 'Ws' }, StageName: 'live' } },
      ApiIntegration: integration('Api'),
      GetChains: route('GET /api/v1/chains', 'ApiIntegration'),
      GetTile: route('GET /tlog/{chain}/tile/{path+}', 'ApiIntegration'),
      Default: route('$default', 'ApiIntegration'),
      WsConnect: route('$connect', 'ApiIntegration', 'Ws'),
      Stream: {
        Type: 'AWS::Lambda::EventSourceMapping',
        Properties: { EventSourceArn: { 'Fn::GetAtt': ['Ledger', 'StreamArn'] }, FunctionName: { Ref: 'Api' }, BatchSize: 50 },
      },
    },
  } as unknown as Template;
}

const refusal = (change: (t: any) => void, pattern: RegExp, logicalId: string) => {
  const t = template();
  change(t);
  assert.throws(
    () => modelFromTemplate(t, assets, mapping),
    (e: unknown) => e instanceof SimTemplateError && e.logicalId === logicalId && pattern.test(e.message),
  );
};

describe('the simulator reads a cloud assembly', () => {
  it('serves the functions from their assets with the declared environment, the routes, tables and streams', () => {
    const model = modelFromTemplate(template(), assets, mapping);
    const fn = model.functions.Api!;
    assert.equal(fn.file, join(dir, 'asset.aaa', 'index.mjs'));
    assert.equal(fn.exportName, 'handler');
    assert.equal(fn.runtime, 'nodejs22.x');
    assert.equal(fn.logGroup, 'local-ApiLogs');
    assert.deepEqual(fn.environment, {
      SVC_LEDGER_TABLE: 'stack-ledger',
      // The sim's KMS answers for the template's key, under an ARN of its own account and region.
      SVC_KMS_KEY_ID: `arn:aws:kms:us-east-1:000000000000:key/${simKeyId('Key')}`,
      SVC_CORS_ORIGINS: 'http://127.0.0.1:9',
      SVC_RATE_LIMIT_RPM: '100',
      SVC_PEER_TIMEOUT_MS: '3000',
      SVC_WS_PUBLIC_URL: 'ws://127.0.0.1:9/ws',
    });
    // Every value a string, as CloudFormation gives a Lambda its environment, so the settings read it as they would there.
    assert.ok(Object.values(fn.environment).every((v) => typeof v === 'string'));
    assert.deepEqual(
      model.http.routes.map((r) => [r.routeKey, r.path, r.functionId]),
      [
        ['GET /api/v1/chains', '/api/v1/chains', 'Api'],
        ['GET /tlog/{chain}/tile/{path+}', '/tlog/{chain}/tile/{path+}', 'Api'],
      ],
    );
    assert.equal(model.http.defaultFunction, 'Api');
    assert.deepEqual(model.webSocket, { routes: { $connect: 'Api' }, stage: 'live' });
    assert.deepEqual(
      model.tables.map((t) => [t.name, t.ttlAttribute, t.streamViewType, t.indexes.length]),
      [['stack-ledger', 'ttl', 'NEW_IMAGE', 1]],
    );
    assert.deepEqual(model.streams, [{ logicalId: 'Stream', table: 'stack-ledger', functionId: 'Api', batchSize: 50 }]);
  });

  it("reads each function's role with every policy attached to it, intrinsics resolved, and the keys' key policies", () => {
    const model = modelFromTemplate(template(), assets, mapping);
    const role = model.roles[model.functions.Api!.roleId]!;
    assert.equal(role.arn, 'arn:aws:iam::000000000000:role/ApiRole');
    assert.deepEqual(
      role.policies.map((p) => p.name),
      ['logs', 'ApiRolePolicy'],
    );
    assert.deepEqual((role.policies[0]!.document.Statement as any[])[0].Resource, 'arn:aws:logs:us-east-1:000000000000:log-group:local-ApiLogs:*');
    assert.deepEqual((role.policies[1]!.document.Statement as any[])[0].Resource, [
      'arn:aws:dynamodb:us-east-1:000000000000:table/stack-ledger',
      'arn:aws:dynamodb:us-east-1:000000000000:table/stack-ledger/index/*',
    ]);
    assert.deepEqual(
      model.keys.map((k) => [k.logicalId, k.arn, (k.policy.Statement as any[])[0].Principal.AWS]),
      [['Key', `arn:aws:kms:us-east-1:000000000000:key/${simKeyId('Key')}`, 'arn:aws:iam::000000000000:root']],
    );
    refusal((t) => delete t.Resources.Api.Properties.Role, /its role \(undefined\) is not a role of this template/, 'Api');
  });

  it('stops at a missing bundle, an unresolvable Ref, a route to something not a function, and an unknown intrinsic', () => {
    refusal((t) => (t.Resources.Api.Properties.Code.S3Key = 'empty.zip'), /bundle is missing: no index\.mjs/, 'Api');
    refusal((t) => (t.Resources.Api.Properties.Code.S3Key = 'gone.zip'), /not an asset of the assembly/, 'Api');
    refusal(
      (t) => (t.Resources.Api.Properties.Environment.Variables.SVC_LEDGER_TABLE = { Ref: 'Nope' }),
      /refers to 'Nope'/,
      'Api (environment SVC_LEDGER_TABLE)',
    );
    refusal(
      (t) => {
        t.Parameters.Needed = { Type: 'String' };
        t.Resources.Api.Properties.Environment.Variables.SVC_LICENSE_KEY = { Ref: 'Needed' };
      },
      /needs the parameter 'Needed', which has no default and no local value/,
      'Api (environment SVC_LICENSE_KEY)',
    );
    refusal(
      (t) => (t.Resources.ApiIntegration.Properties = { ApiId: { Ref: 'Http' }, IntegrationType: 'HTTP_PROXY', IntegrationUri: 'https://example.com' }),
      /HTTP_PROXY integration; the simulator serves Lambda proxy integrations only/,
      'ApiIntegration',
    );
    refusal(
      (t) =>
        (t.Resources.Bucket = { Type: 'AWS::S3::Bucket' }) &&
        (t.Resources.GetChains.Properties.Target = { 'Fn::Join': ['', ['integrations/', { Ref: 'Bucket' }]] }),
      /Bucket \(AWS::S3::Bucket\), whose Ref the simulator does not resolve/,
      'GetChains',
    );
    refusal((t) => (t.Resources.Api.Properties.Environment.Variables.X = { 'Fn::FindInMap': ['m', 'a', 'b'] }), /uses Fn::FindInMap/, 'Api (environment X)');
    refusal(
      (t) => (t.Resources.Api.Properties.Environment.Variables.X = { 'Fn::If': ['Nope', 'a', 'b'] }),
      /names the condition 'Nope'/,
      'Api (environment X)',
    );
  });

  it("makes a resource only where its condition holds, and evaluates Fn::If by the deployer's parameters, as CloudFormation does", () => {
    const conditional = (given: string) => {
      const t = template() as any;
      t.Parameters.Token = { Type: 'String', Default: '' };
      t.Conditions = {
        HasToken: { 'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'Token' }, ''] }] },
        Both: { 'Fn::And': [{ Condition: 'HasToken' }, { 'Fn::Equals': ['a', 'a'] }] },
      };
      t.Resources.TokenSecret = { Type: 'AWS::SecretsManager::Secret', Condition: 'HasToken', Properties: { SecretString: { Ref: 'Token' } } };
      t.Resources.EdgeSecret = { Type: 'AWS::SecretsManager::Secret', Properties: { GenerateSecretString: {} } };
      t.Resources.TokenRead = {
        Type: 'AWS::IAM::Policy',
        Condition: 'Both',
        Properties: {
          PolicyName: 'read',
          Roles: [{ Ref: 'ApiRole' }],
          PolicyDocument: { Statement: [{ Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: { Ref: 'TokenSecret' } }] },
        },
      };
      t.Resources.Api.Properties.Environment.Variables.X = {
        'Fn::If': ['HasToken', { 'Fn::Join': ['', ['T=', { Ref: 'TokenSecret' }]] }, { Ref: 'AWS::NoValue' }],
      };
      return modelFromTemplate(t, assets, { ...mapping, parameters: { ...mapping.parameters, ...(given ? { Token: given } : {}) } });
    };
    const arn = (id: string) => `arn:aws:secretsmanager:${mapping.region}:000000000000:secret:${id}`;
    const without = conditional('');
    assert.deepEqual(Object.keys(without.secrets), [arn('EdgeSecret')], 'no secret for an empty parameter');
    assert.match(without.secrets[arn('EdgeSecret')]!, /^[0-9a-f]{48}$/, 'a generated one');
    assert.equal(without.functions.Api!.environment.X, '', 'the AWS::NoValue branch: nothing');
    assert.ok(!without.roles.ApiRole!.policies.some((p) => p.name === 'TokenRead'), 'a policy whose condition fails is not attached');
    const given = conditional('s3cr3t');
    assert.equal(given.secrets[arn('TokenSecret')], 's3cr3t');
    assert.equal(given.functions.Api!.environment.X, `T=${arn('TokenSecret')}`);
    assert.ok(given.roles.ApiRole!.policies.some((p) => p.name === 'TokenRead'));
  });

  it('runs a rate(…) schedule on its target function only when the function lets that rule invoke it', () => {
    const scheduled = (t: any, permitted = true) => {
      t.Resources.Hourly = {
        Type: 'AWS::Events::Rule',
        Properties: { ScheduleExpression: 'rate(1 hour)', State: 'ENABLED', Targets: [{ Arn: { 'Fn::GetAtt': ['Api', 'Arn'] }, Id: 'Target0' }] },
      };
      if (permitted) {
        t.Resources.HourlyPermission = {
          Type: 'AWS::Lambda::Permission',
          Properties: {
            Action: 'lambda:InvokeFunction',
            FunctionName: { 'Fn::GetAtt': ['Api', 'Arn'] },
            Principal: 'events.amazonaws.com',
            SourceArn: { 'Fn::GetAtt': ['Hourly', 'Arn'] },
          },
        };
      }
      return t;
    };
    const model = modelFromTemplate(scheduled(template()), assets, mapping);
    assert.deepEqual(model.schedules, [{ logicalId: 'Hourly', expression: 'rate(1 hour)', everyMs: 3_600_000, functionId: 'Api' }]);
    refusal((t) => scheduled(t, false), /resource policy does not let this rule invoke it/, 'Hourly');
    refusal((t) => (scheduled(t).Resources.Hourly.Properties.ScheduleExpression = 'cron(0 * * * ? *)'), /rate\(…\) schedules only/, 'Hourly');
  });

  it('stops at an environment the function cannot run with', () => {
    const model = modelFromTemplate(template(), assets, mapping);
    const settings = {
      known: Object.keys(settingsSchema.shape),
      tableSettings: Object.values(TABLE_SETTINGS),
      validate: (env: Record<string, string>) => void loadConfig(env),
    };
    const env = { ...model.functions.Api!.environment };
    assert.doesNotThrow(() => checkEnvironment({ logicalId: 'Api' }, env, ['stack-ledger'], settings));
    const renamed = { ...env, SVC_LEDGER_TABLE_NAME: env.SVC_LEDGER_TABLE! };
    delete (renamed as Record<string, string>).SVC_LEDGER_TABLE;
    assert.throws(
      () => checkEnvironment({ logicalId: 'Api' }, renamed, ['stack-ledger'], settings),
      /Api: environment: SVC_LEDGER_TABLE_NAME is not a setting of the service/,
    );
    assert.throws(
      () => checkEnvironment({ logicalId: 'Api' }, { ...env, SVC_LEDGER_TABLE: 'other' }, ['stack-ledger'], settings),
      /names table 'other', which the template does not define/,
    );
    assert.throws(
      () => checkEnvironment({ logicalId: 'Api' }, { ...env, SVC_ENV: 'production', SVC_CORS_ORIGINS: '' }, ['stack-ledger'], settings),
      /SVC_CORS_ORIGINS: must list the allowed origins/,
    );
  });
});

describe("the sim's IAM check, on that template", () => {
  const model = modelFromTemplate(template(), assets, mapping);
  const checker = createPermissionChecker(model);
  const table = 'arn:aws:dynamodb:us-east-1:000000000000:table/stack-ledger';
  const key = model.keys[0]!.arn;
  const logStream = 'arn:aws:logs:us-east-1:000000000000:log-group:local-ApiLogs:log-stream:2026/11/25/[$LATEST]abc';
  const ask = async (action: string, resource: string) => (await checker.authorize({ function: 'Api', action, resource })).allowed;

  it("allows exactly what the function's role grants, and the key's key policy lets IAM grant", async () => {
    assert.equal(await ask('dynamodb:GetItem', table), true);
    assert.equal(await ask('dynamodb:Query', `${table}/index/by-hash`), true);
    assert.equal(await ask('dynamodb:DeleteItem', table), false, 'not granted');
    assert.equal(await ask('dynamodb:GetItem', 'arn:aws:dynamodb:us-east-1:000000000000:table/other'), false, 'another table');
    assert.equal(await ask('kms:Decrypt', key), true);
    assert.equal(await ask('kms:GenerateDataKey', key), true, 'kms:GenerateDataKey* covers it');
    assert.equal(await ask('kms:Encrypt', key), false);
    assert.equal(await ask('logs:PutLogEvents', logStream), true);
    assert.equal(await ask('logs:PutLogEvents', logStream.replace('local-ApiLogs', 'other')), false);
    const refused = await checker.authorize({ function: 'Api', action: 'dynamodb:TransactWriteItems', resource: table });
    assert.equal(refused.allowed, false);
    assert.match(refused.reason ?? '', /simulator refused/, 'not an IAM action: the request itself is refused, never allowed');
  });

  it('denies a KMS key its key policy does not open to IAM policies, whatever the role says', async () => {
    const t = template() as any;
    t.Resources.Key.Properties.KeyPolicy.Statement[0].Principal.AWS = 'arn:aws:iam::111111111111:root';
    const strict = createPermissionChecker(modelFromTemplate(t, assets, mapping));
    assert.equal((await strict.authorize({ function: 'Api', action: 'kms:Decrypt', resource: key })).allowed, false);
  });

  it("lists what the role grants and no call used, its wildcards expanded from AWS's service reference", async () => {
    const unused = await checker.unusedGrants([
      { function: 'Api', action: 'dynamodb:GetItem', resource: table },
      { function: 'Api', action: 'dynamodb:Query', resource: `${table}/index/by-hash` },
      { function: 'Api', action: 'kms:Decrypt', resource: key },
      { function: 'Api', action: 'logs:CreateLogStream', resource: logStream },
      { function: 'Api', action: 'logs:PutLogEvents', resource: logStream },
    ]);
    const names = unused.map((u) => `${u.action} ${u.resource.replace(/.*:table\//, 'table/').replace(/.*:key\/.*/, 'key')}`);
    assert.ok(names.includes('dynamodb:PutItem table/stack-ledger'));
    assert.ok(names.includes('dynamodb:GetItem table/stack-ledger/index/*'), 'an index grant no call used');
    assert.ok(names.includes('dynamodb:Query table/stack-ledger'), 'Query was used on the index only');
    assert.ok(!names.includes('dynamodb:GetItem table/stack-ledger'));
    assert.deepEqual(names.filter((n) => n.startsWith('kms:')).sort(), [
      'kms:GenerateDataKey key',
      'kms:GenerateDataKeyPair key',
      'kms:GenerateDataKeyPairWithoutPlaintext key',
      'kms:GenerateDataKeyWithoutPlaintext key',
    ]);
    assert.ok(!names.some((n) => n.startsWith('logs:')));
  });

  it('counts a conditioned grant as used only by a call that meets its condition (kms:ViaService)', async () => {
    const t = template() as any;
    t.Resources.ApiRolePolicy.Properties.PolicyDocument.Statement.push({
      Effect: 'Allow',
      Action: 'kms:Decrypt',
      Resource: { 'Fn::GetAtt': ['Key', 'Arn'] },
      Condition: { StringEquals: { 'kms:ViaService': 'dynamodb.us-east-1.amazonaws.com' } },
    });
    const viaDynamo = createPermissionChecker(modelFromTemplate(t, assets, mapping));
    const direct = { function: 'Api', action: 'kms:Decrypt', resource: key };
    const conditioned = (unused: { action: string; resource: string }[]) => unused.filter((u) => u.action === 'kms:Decrypt').length;
    assert.equal(conditioned(await viaDynamo.unusedGrants([direct])), 1, 'a direct Decrypt does not use the statement for calls through DynamoDB');
    assert.equal(conditioned(await viaDynamo.unusedGrants([{ ...direct, context: { 'kms:ViaService': 'dynamodb.us-east-1.amazonaws.com' } }])), 0);
  });

  it('turns each DynamoDB request into the IAM actions and resources AWS authorizes it by', () => {
    const arns = {
      table: (name: string) => `arn:t/${name}`,
      stream: (arn: string) => arn.replace('ddblocal', 'us-east-1'),
      iterator: (it: string) => (it === 'it-1' ? 'arn:s' : undefined),
    };
    assert.deepEqual(
      dynamoCalls(
        'TransactWriteItems',
        {
          TransactItems: [{ Put: { TableName: 'a' } }, { Update: { TableName: 'b' } }, { Delete: { TableName: 'a' } }, { ConditionCheck: { TableName: 'c' } }],
        },
        arns,
      ),
      [
        { action: 'dynamodb:PutItem', resource: 'arn:t/a' },
        { action: 'dynamodb:UpdateItem', resource: 'arn:t/b' },
        { action: 'dynamodb:DeleteItem', resource: 'arn:t/a' },
        { action: 'dynamodb:ConditionCheckItem', resource: 'arn:t/c' },
      ],
    );
    assert.deepEqual(dynamoCalls('Query', { TableName: 'a', IndexName: 'i' }, arns), [{ action: 'dynamodb:Query', resource: 'arn:t/a/index/i' }]);
    assert.deepEqual(dynamoCalls('BatchGetItem', { RequestItems: { a: {}, b: {} } }, arns), [
      { action: 'dynamodb:BatchGetItem', resource: 'arn:t/a' },
      { action: 'dynamodb:BatchGetItem', resource: 'arn:t/b' },
    ]);
    assert.deepEqual(dynamoCalls('TransactGetItems', { TransactItems: [{ Get: { TableName: 'a' } }] }, arns), [
      { action: 'dynamodb:GetItem', resource: 'arn:t/a' },
    ]);
    assert.deepEqual(dynamoCalls('GetRecords', { ShardIterator: 'it-1' }, arns), [{ action: 'dynamodb:GetRecords', resource: 'arn:s' }]);
    assert.deepEqual(dynamoCalls('DescribeStream', { StreamArn: 'arn:aws:dynamodb:ddblocal:0:table/a/stream/1' }, arns), [
      { action: 'dynamodb:DescribeStream', resource: 'arn:aws:dynamodb:us-east-1:0:table/a/stream/1' },
    ]);
    assert.throws(() => dynamoCalls('ExecuteStatement', {}, arns), /DynamoDB ExecuteStatement/);
    assert.throws(() => dynamoCalls('GetRecords', { ShardIterator: 'unknown' }, arns), /shard iterator/);
  });
});
