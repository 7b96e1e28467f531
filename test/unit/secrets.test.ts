/**
 * A deployed function's secret settings, read from Secrets Manager at its cold start (shared/wiring/secrets.ts): what
 * SVC_SECRETS may name, every named secret read into the settings or none, and a clear 503 within the deadline when
 * Secrets Manager does not answer. The deployed path (IAM, the sim's Secrets Manager) is in test/cloud/sim.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '#shared/config';
import { DependencyUnavailableError } from '#shared/errors';
import type { Core } from '#shared/wiring/core';
import { lambdaHandler } from '#shared/wiring/process';
import { readSecretSettings, secretSources } from '#shared/wiring/secrets';

const ARN = (name: string) => `arn:aws:secretsmanager:eu-west-1:123456789012:secret:${name}-AbCdEf`;

describe('secret settings from Secrets Manager', () => {
  it('reads each named secret into its setting, which the settings then hold', async () => {
    const env: NodeJS.ProcessEnv = { SVC_SECRETS: `SVC_EDGE_SECRET=${ARN('edge')}  SVC_LICENSE_KEY=${ARN('license')}`, SVC_EDGE_ONLY: 'true' };
    const asked: string[] = [];
    await readSecretSettings(env, async (arn) => {
      asked.push(arn);
      return arn.includes('edge') ? 'edge-secret-value-0123456789' : 'license-1';
    });
    assert.deepEqual(asked.sort(), [ARN('edge'), ARN('license')]);
    const settings = loadConfig(env);
    assert.equal(settings.SVC_EDGE_SECRET, 'edge-secret-value-0123456789');
    assert.equal(settings.SVC_LICENSE_KEY, 'license-1');
    assert.equal(settings.SVC_EDGE_ONLY, true);
  });

  it('does nothing without SVC_SECRETS (the local stack)', async () => {
    const env: NodeJS.ProcessEnv = {};
    await readSecretSettings(env, async () => assert.fail('nothing to read'));
    assert.deepEqual(env, {});
  });

  it('refuses a name that is not a secret setting, a value that is not a secret ARN, a name given twice or also in the environment', () => {
    const problems = (env: NodeJS.ProcessEnv) => {
      try {
        secretSources(env);
      } catch (error) {
        assert.ok(error instanceof ConfigError);
        return error.problems;
      }
      return [];
    };
    assert.match(problems({ SVC_SECRETS: `SVC_AUTH_ENABLED=${ARN('a')}` })[0]!, /'SVC_AUTH_ENABLED' is not a secret setting/);
    assert.match(problems({ SVC_SECRETS: 'SVC_EDGE_SECRET=edge' })[0]!, /SVC_EDGE_SECRET needs the ARN of a Secrets Manager secret/);
    assert.match(problems({ SVC_SECRETS: `SVC_EDGE_SECRET=${ARN('a')} SVC_EDGE_SECRET=${ARN('b')}` })[0]!, /named twice/);
    const both = problems({ SVC_SECRETS: `SVC_EDGE_SECRET=${ARN('a')}`, SVC_EDGE_SECRET: 'a-plain-value-in-the-environment' });
    assert.match(both[0]!, /given both in the environment and in SVC_SECRETS/);
    assert.ok(!both.join(' ').includes('a-plain-value'), 'never echoes a secret');
  });

  it('sets none when one cannot be read, and answers 503 with Retry-After naming Secrets Manager, not its error', async () => {
    const env: NodeJS.ProcessEnv = { SVC_SECRETS: `SVC_EDGE_SECRET=${ARN('edge')} SVC_LICENSE_KEY=${ARN('license')}` };
    const error = await readSecretSettings(env, async (arn) => {
      if (arn.includes('license')) throw Object.assign(new Error('User: arn:aws:sts::123:assumed-role/x is not authorized'), { name: 'AccessDeniedException' });
      return 'edge-secret-value-0123456789';
    }).catch((e: unknown) => e);
    assert.ok(error instanceof DependencyUnavailableError);
    assert.equal(error.statusCode, 503);
    assert.equal(error.headers['Retry-After'], '2');
    assert.equal(error.message, 'Secrets Manager is unavailable; retry later');
    assert.equal(env.SVC_EDGE_SECRET, undefined, 'nothing set');
    assert.equal(env.SVC_LICENSE_KEY, undefined);
  });

  it('gives up at its deadline, even on a read that never answers and ignores its signal', async () => {
    const env: NodeJS.ProcessEnv = { SVC_SECRETS: `SVC_EDGE_SECRET=${ARN('edge')}` };
    const started = Date.now();
    const error = await readSecretSettings(env, () => new Promise<string>(() => undefined), 50).catch((e: unknown) => e);
    assert.ok(error instanceof DependencyUnavailableError);
    assert.ok(Date.now() - started < 2_000, 'ended at its deadline, not never');
  });
});

describe("a function's start (lambdaHandler)", () => {
  const http = (requestId?: string) => ({
    routeKey: 'GET /api/v1/chains',
    rawPath: '/api/v1/chains',
    headers: requestId ? { 'x-request-id': requestId } : {},
    requestContext: { http: { method: 'GET', path: '/api/v1/chains' }, requestId: 'gw' },
  });
  const core = () => ({}) as Core;

  it('answers an HTTP request 503 in the contract shape while its secrets cannot be read, then reads them again at the next one', async () => {
    let reads = 0;
    const handler = lambdaHandler(() => async () => ({ statusCode: 200, headers: {}, body: 'ok' }), {
      readSecrets: async () => {
        reads += 1;
        if (reads === 1) throw new DependencyUnavailableError('Secrets Manager');
      },
      core,
    }) as (event: unknown, context: unknown) => Promise<any>;
    const id = '0b9d6d2e-6a3c-4f56-9e1e-6f1f7b3c2a10';
    const first = await handler(http(id), {});
    assert.equal(first.statusCode, 503);
    assert.deepEqual(JSON.parse(first.body), { detail: 'Secrets Manager is unavailable; retry later', request_id: id });
    assert.equal(first.headers['Retry-After'], '2');
    assert.equal(first.headers['Cache-Control'], 'no-store');
    assert.equal(first.headers['X-Request-ID'], id, "the client's request id, as every answer echoes it");
    assert.equal(first.headers['Access-Control-Allow-Origin'], undefined, 'no origin is allowed unless SVC_CORS_ORIGINS names it');
    assert.equal((await handler(http(), {})).body, 'ok');
    assert.equal(reads, 2);
  });

  it('answers that 503 with the CORS headers every answer carries, for an allowed origin only (a browser shown none reads a network error)', async () => {
    const handler = lambdaHandler(() => async () => ({ statusCode: 200, headers: {}, body: 'ok' }), {
      readSecrets: async () => {
        throw new DependencyUnavailableError('Secrets Manager');
      },
      core,
      env: { SVC_CORS_ORIGINS: 'https://app.example.com' },
    }) as (event: unknown, context: unknown) => Promise<any>;
    const from = (origin: string) => ({ ...http(), headers: { origin } });
    const allowed = await handler(from('https://app.example.com'), {});
    assert.equal(allowed.statusCode, 503);
    assert.equal(allowed.headers['Access-Control-Allow-Origin'], 'https://app.example.com');
    assert.match(allowed.headers['Access-Control-Expose-Headers'], /Retry-After/);
    assert.equal(allowed.headers['Retry-After'], '2');
    const foreign = await handler(from('https://evil.example'), {});
    assert.equal(foreign.statusCode, 503);
    assert.notEqual(foreign.headers['Access-Control-Allow-Origin'], 'https://evil.example');
  });

  it('reads its secrets once: a handler that failed to build after them is built again without reading them again', async () => {
    // Read twice, the second read found the settings it had set and refused them as given twice: the instance never recovered.
    let reads = 0;
    let builds = 0;
    const handler = lambdaHandler(
      () => {
        builds += 1;
        if (builds === 1) throw new Error('a setting is wrong');
        return async () => 'served';
      },
      {
        readSecrets: async () => {
          reads += 1;
        },
        core,
      },
    ) as (event: unknown, context: unknown) => Promise<any>;
    assert.equal((await handler(http(), {})).statusCode, 500);
    assert.equal(await handler(http(), {}), 'served');
    assert.equal(reads, 1);
    assert.equal(builds, 2);
  });

  it('fails any other event, for its source to retry', async () => {
    const handler = lambdaHandler(() => async () => 'never', {
      readSecrets: async () => Promise.reject(new DependencyUnavailableError('Secrets Manager')),
      core,
    });
    await assert.rejects(handler({ Records: [] } as never, {} as never), /Secrets Manager is unavailable/);
  });
});
