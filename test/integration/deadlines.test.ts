/**
 * A DynamoDB that stops answering, behind the running local stack (a proxy in front of DynamoDB Local that
 * can hang: test/support/stall-proxy.ts). What a client notices: a 503 with Retry-After within seconds,
 * never a request held for the function's whole 29 s and then API Gateway's bare 500; nothing it was told
 * failed shows up later; the service recovers when DynamoDB does. And an instance that dies mid-request is
 * told, not silent: one structured error line naming the function, route and request id, and a count in
 * /metrics.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';
import { call, integrationFailureLine, startStack, stopAndRemove, type Stack } from '#test/support/stack';
import { startStallProxy, type StallProxy } from '#test/support/stall-proxy';

const CHAIN = 'stalled';
let dynamo: TestDynamo;
let proxy: StallProxy;
let stack: Stack;

before(async () => {
  dynamo = await startTestDynamo('deadlines');
  proxy = await startStallProxy(dynamo.endpoint);
  stack = await startStack({
    // One attempt gives up after 1 s (three attempts in all) instead of 5 s, to keep the test short.
    env: { SVC_DYNAMODB_ENDPOINT: proxy.endpoint, ...dynamo.tableEnv, SVC_DYNAMODB_ATTEMPT_TIMEOUT_MS: '1000' },
  });
  assert.equal((await call(stack.url, 'POST', `/api/v1/chains/${CHAIN}/create`)).status, 201);
  const events = Array.from({ length: 99 }, (_, i) => ({ entity_id: `e-${i}`, event_type: 'recorded', details: { n: i } }));
  for (let i = 0; i < 3; i += 1) assert.equal((await call(stack.url, 'POST', `/api/v1/chains/${CHAIN}/events/batch`, { events })).status, 200);
});

after(async () => {
  proxy?.resume();
  await stopAndRemove(stack);
  await proxy?.close();
  await dynamo?.stop();
});

async function timed(method: string, path: string, body?: unknown): Promise<{ status: number; ms: number; headers: Headers; json: any }> {
  const started = Date.now();
  const res = await fetch(`${stack.url}${path}`, {
    method,
    ...(body ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
  });
  const text = await res.text();
  return { status: res.status, ms: Date.now() - started, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

describe('a DynamoDB that stops answering', () => {
  it('is answered 503 with Retry-After within seconds, on reads, tiles and appends, and nothing told 503 lands later', async () => {
    const before = (await call(stack.url, 'GET', `/api/v1/chains/${CHAIN}/stats`)).body.total_blocks;
    proxy.stall();
    let answers;
    try {
      answers = await Promise.all([
        timed('GET', `/tlog/${CHAIN}/tile/0/000`),
        timed('GET', `/tlog/${CHAIN}/tile/entries/001.p/42`),
        timed('GET', `/api/v1/chains/${CHAIN}/blocks/7`),
        timed('POST', `/api/v1/chains/${CHAIN}/events`, { entity_id: 'never', event_type: 'told-503', details: {} }),
      ]);
    } finally {
      proxy.resume();
    }
    for (const answer of answers) {
      assert.equal(answer.status, 503, JSON.stringify(answer.json));
      assert.match(answer.json.detail, /DynamoDB/);
      assert.ok(Number(answer.headers.get('retry-after')) >= 1, 'Retry-After says when to come back');
      assert.equal(answer.json.request_id, answer.headers.get('x-request-id'), "the service's own answer, not API Gateway's");
      // Three 1 s attempts and their backoff, plus a cold start: seconds, not the function's 29 s.
      assert.ok(answer.ms < 10_000, `answered after ${answer.ms} ms`);
    }
    assert.doesNotMatch(stack.output(), /integration failed/, 'no request ran into its function’s timeout');

    // DynamoDB is back: the service answers again, and the append it answered 503 never landed.
    const stats = await call(stack.url, 'GET', `/api/v1/chains/${CHAIN}/stats`);
    assert.equal(stats.status, 200);
    assert.equal(stats.body.total_blocks, before, 'the refused append left nothing behind');
    const again = await call(stack.url, 'POST', `/api/v1/chains/${CHAIN}/events`, { entity_id: 'after', event_type: 'recorded', details: {} });
    assert.equal(again.status, 200, again.text);
    assert.equal((await fetch(`${stack.url}/tlog/${CHAIN}/tile/0/000`)).status, 200);
  });
});

describe('an instance that dies mid-request', () => {
  it('is answered with API Gateway’s 500, logged as one structured error line and counted in /metrics', async () => {
    // Hold a request inside the ledger function (DynamoDB not answering), then stop that instance abruptly.
    proxy.stall();
    let res: Response;
    try {
      const pending = fetch(`${stack.url}/api/v1/chains/${CHAIN}/stats`);
      await new Promise((r) => setTimeout(r, 500));
      process.kill(stack.pid, 'SIGUSR2');
      res = await pending;
    } finally {
      proxy.resume();
    }
    assert.equal(res.status, 500);
    assert.deepEqual(await res.json(), { message: 'Internal Server Error' });
    const requestId = res.headers.get('apigw-requestid');
    assert.ok(requestId);
    await new Promise((r) => setTimeout(r, 200));
    assert.match(stack.output(), /Fault injected: stopped a busy ledger instance/);
    const line = integrationFailureLine(stack, requestId);
    assert.ok(line, `a structured error line names the request:\n${stack.output().slice(-2_000)}`);
    assert.equal(line.level, 'error');
    assert.equal(line.function, 'ledger');
    assert.equal(line.route, 'GET /api/v1/chains/{chain_name}/stats');
    assert.equal(line.status, 500);
    assert.equal(line.cause.name, 'InstanceFailure');

    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    assert.match(metrics, /^gateway_integration_errors_total\{function="ledger"\} 1$/m);
  });
});
