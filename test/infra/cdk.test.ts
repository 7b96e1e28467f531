/**
 * The cloud stack, synthesized offline: every route of infra/routes.ts reaches API Gateway, unmatched
 * requests reach a function, and the table has exactly the keys and indexes the code uses.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { before, describe, it } from 'node:test';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { LedgerStack } from '#infra/cdk/ledger-stack';
import { expandRoutes } from '#infra/routes';
import { ledgerTableDefinition } from '#shared/storage/tables';

let template: Template;
let outdir: string;

before(() => {
  const app = new App();
  template = Template.fromStack(new LedgerStack(app, 'Test', { env: { region: 'us-east-1' }, tablePrefix: 'test-', corsOrigins: ['https://app.example.com'] }));
  outdir = app.outdir;
});

describe('Stack: LedgerStack (cdk synth)', () => {
  it('routes every path of the route table, aliases included, and nothing else', () => {
    const routes = template.findResources('AWS::ApiGatewayV2::Route');
    const keys = Object.values(routes).map((r: any) => r.Properties.RouteKey).sort();
    const expected = [...expandRoutes().map((r) => r.routeKey), '$default'].sort();
    assert.deepEqual(keys, expected);
    assert.ok(keys.includes('POST /api/v1/chains/{chain_name}/events'));
    assert.ok(keys.includes('POST /api/ledger/chains/{chain_name}/events'));
  });

  it('creates the ledger table with the keys, indexes and stream the code expects', () => {
    const want = ledgerTableDefinition('test-ledger');
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      TableName: 'test-ledger',
      KeySchema: want.KeySchema,
      StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
      GlobalSecondaryIndexes: Match.arrayWith(
        want.GlobalSecondaryIndexes!.map((index) =>
          Match.objectLike({ IndexName: index.IndexName, KeySchema: index.KeySchema, Projection: index.Projection }),
        ),
      ),
    });
  });

  it('runs the ledger function on a supported Node.js runtime, keys on, shared rate limit, CORS listed', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Environment: {
        Variables: Match.objectLike({
          SVC_LEDGER_TABLE: Match.anyValue(),
          SVC_REGISTRY_TABLE: Match.anyValue(),
          SVC_RATE_LIMIT_TABLE: Match.anyValue(),
          SVC_ENV: 'production',
          SVC_AUTH_ENABLED: 'true',
          SVC_RATE_LIMIT_BACKEND: 'dynamodb',
          SVC_CORS_ORIGINS: 'https://app.example.com',
        }),
      },
    });
  });

  it('creates the registry and rate-limit tables with their keys and TTL', () => {
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      TableName: 'test-registry',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }, { AttributeName: 'sk', KeyType: 'RANGE' }],
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
    });
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      TableName: 'test-ratelimits',
      KeySchema: [{ AttributeName: 'key', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'expire', Enabled: true },
    });
  });

  it('bundles a ledger function that runs: the artifact answers an API Gateway event', async () => {
    const fn = Object.values(template.findResources('AWS::Lambda::Function')).find(
      (r: any) => r.Properties.Environment?.Variables?.SVC_LEDGER_TABLE,
    ) as any;
    const assetHash = String(fn.Properties.Code.S3Key).replace(/\.zip$/, '');
    const bundle = join(outdir, `asset.${assetHash}`, 'index.mjs');
    assert.ok(existsSync(bundle), `bundle at ${bundle}`);
    const { handler } = await import(pathToFileURL(bundle).href);
    const result = await handler(
      {
        version: '2.0',
        routeKey: '$default',
        rawPath: '/api/v1/nowhere',
        rawQueryString: '',
        headers: {},
        requestContext: { http: { method: 'GET', path: '/api/v1/nowhere' }, requestId: 'r', routeKey: '$default', stage: '$default' },
        isBase64Encoded: false,
      },
      { getRemainingTimeInMillis: () => 29_000, functionName: 'ledger', awsRequestId: 'r' },
    );
    assert.equal(result.statusCode, 404);
    assert.equal(result.headers['X-Frame-Options'], 'DENY');
    assert.match(JSON.parse(result.body).detail, /No route for GET \/api\/v1\/nowhere/);
  });
});
