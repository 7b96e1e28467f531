/**
 * A key's WebSocket push budget on the limiter the cloud uses (SVC_RATE_LIMIT_BACKEND=dynamodb), built by the core as
 * every function builds it. The requests' limiter refuses a spent key from memory; had the push budget's done so, a
 * refusal would say nothing of what was consumed, and every batch after the budget was spent was granted whole
 * (28 pushes against a budget of 10: a review of 2026-12-07).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '#shared/config';
import { createCore } from '#shared/wiring/core';
import { createRealtimeWiring } from '#shared/wiring/realtime';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';

let dynamo: TestDynamo;
before(async () => {
  dynamo = await startTestDynamo('push-budget');
});
after(async () => {
  await dynamo?.stop();
});

describe("a key's push budget, shared by every instance through DynamoDB", () => {
  it('grants what is left of the minute, then nothing, however many batches come after', async () => {
    const settings = loadConfig({
      ...dynamo.tableEnv,
      SVC_DYNAMODB_ENDPOINT: dynamo.endpoint,
      SVC_RATE_LIMIT_BACKEND: 'dynamodb',
      SVC_WS_PUSHES_PER_MINUTE: '10',
    });
    // Two instances: each its own core, as two Lambda instances of the broadcaster.
    const budget = () => createRealtimeWiring(createCore(settings)).pushBudget()!;
    const one = budget();
    const two = budget();
    const grants = [];
    for (const take of [one, one, two, one, two]) grants.push(await take('key-1', 6));
    assert.deepEqual(
      grants.map((g) => g.granted),
      [6, 4, 0, 0, 0],
    );
    assert.deepEqual(
      grants.map((g) => g.reached),
      [false, true, false, false, false],
      'told once, in the batch that reached it',
    );
    assert.deepEqual(await two('key-2', 6), { granted: 6, reached: false }, 'another key has its own');
  });
});
