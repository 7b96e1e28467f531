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
import { SimTemplateError, checkEnvironment, modelFromTemplate, type Template } from '#infra/sim/template';

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
      Key: { Type: 'AWS::KMS::Key', Properties: {} },
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
    assert.deepEqual(fn.kmsVariables, ['SVC_KMS_KEY_ID'], 'the KMS key is left to the local master key');
    assert.deepEqual(fn.environment, {
      SVC_LEDGER_TABLE: 'stack-ledger',
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
        (t.Resources.Queue = { Type: 'AWS::SQS::Queue' }) &&
        (t.Resources.GetChains.Properties.Target = { 'Fn::Join': ['', ['integrations/', { Ref: 'Queue' }]] }),
      /Queue \(AWS::SQS::Queue\), whose Ref the simulator does not resolve/,
      'GetChains',
    );
    refusal((t) => (t.Resources.Api.Properties.Environment.Variables.X = { 'Fn::If': ['c', 'a', 'b'] }), /uses Fn::If/, 'Api (environment X)');
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
