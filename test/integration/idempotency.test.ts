/**
 * Idempotency-Key over HTTP, as a client that retries would use it: the same key and body answer the
 * first result and append nothing; another body is 422; a malformed key is 400; a key still being
 * appended is 409. Run against the Lambda-faithful stack (each request on its own instance).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, sharedStack, stopAndRemove, type Stack } from '#test/support/stack';

let stack: Stack;

before(async () => {
  stack = await sharedStack();
  assert.equal((await call(stack.url, 'POST', '/api/v1/chains/retries/create')).status, 201);
});

after(() => stopAndRemove(stack));

const event = (n: number) => ({ entity_id: 'order-1', event_type: 'paid', details: { n } });

describe('Idempotency-Key on appends', () => {
  it('answers a retried event with the first answer and appends it once, on either prefix', async () => {
    const before = await call(stack.url, 'GET', '/api/v1/chains/retries/stats');
    const headers = { 'Idempotency-Key': `pay-${Date.now()}` };
    const first = await call(stack.url, 'POST', '/api/v1/chains/retries/events', event(1), headers);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const again = await call(stack.url, 'POST', '/api/ledger/chains/retries/events', event(1), headers);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, first.body, 'the same answer, the same event id');
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const after = await call(stack.url, 'GET', '/api/v1/chains/retries/stats');
    assert.equal(after.body.total_events - before.body.total_events, 1, 'one event appended for two requests');
  });

  it('answers a retried batch with the first event ids', async () => {
    const headers = { 'Idempotency-Key': `batch-${Date.now()}` };
    const body = { events: [event(10), event(11), event(12)] };
    const first = await call(stack.url, 'POST', '/api/v1/chains/retries/events/batch', body, headers);
    assert.equal(first.status, 200, first.text);
    const again = await call(stack.url, 'POST', '/api/v1/chains/retries/events/batch', body, headers);
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
  });

  it('takes a batch of 98 events with a key, and refuses 99 with a 422 that says why (the key takes an item of the transaction)', async () => {
    const before = await call(stack.url, 'GET', '/api/v1/chains/retries/stats');
    const events = (k: number) => ({ events: Array.from({ length: k }, (_, i) => event(1000 + i)) });
    const refused = await call(stack.url, 'POST', '/api/v1/chains/retries/events/batch', events(99), { 'Idempotency-Key': `big-${Date.now()}` });
    assert.equal(refused.status, 422, refused.text);
    assert.match(refused.text, /with an Idempotency-Key holds at most 98 events/);
    const taken = await call(stack.url, 'POST', '/api/v1/chains/retries/events/batch', events(98), { 'Idempotency-Key': `big-${Date.now()}-98` });
    assert.equal(taken.status, 200, taken.text);
    assert.equal(taken.body.event_ids.length, 98);
    const unkeyed = await call(stack.url, 'POST', '/api/v1/chains/retries/events/batch', events(99));
    assert.equal(unkeyed.status, 200, unkeyed.text);
    const after = await call(stack.url, 'GET', '/api/v1/chains/retries/stats');
    assert.equal(after.body.total_events - before.body.total_events, 98 + 99);
  });

  it('refuses the same key with another body (422) and keeps the first answer', async () => {
    const headers = { 'Idempotency-Key': `reuse-${Date.now()}` };
    const first = await call(stack.url, 'POST', '/api/v1/chains/retries/events', event(20), headers);
    const other = await call(stack.url, 'POST', '/api/v1/chains/retries/events', event(21), headers);
    assert.equal(other.status, 422, other.text);
    assert.match(other.body.detail, /Idempotency-Key was already used with a different request/);
    const again = await call(stack.url, 'POST', '/api/v1/chains/retries/events', event(20), headers);
    assert.deepEqual(again.body, first.body);
  });

  it('refuses a malformed key with 400 and appends nothing', async () => {
    const before = (await call(stack.url, 'GET', '/api/v1/chains/retries/stats')).body.total_events;
    for (const bad of ['k'.repeat(256), 'tab\there', '']) {
      const res = await call(stack.url, 'POST', '/api/v1/chains/retries/events', event(30), { 'Idempotency-Key': bad });
      assert.equal(res.status, 400, `${JSON.stringify(bad)}: ${res.text}`);
      assert.match(res.body.detail, /Idempotency-Key must be 1 to 255 printable ASCII characters/);
    }
    assert.equal((await call(stack.url, 'GET', '/api/v1/chains/retries/stats')).body.total_events, before);
    const ok = await call(stack.url, 'POST', '/api/v1/chains/retries/events', event(31), { 'Idempotency-Key': 'k'.repeat(255) });
    assert.equal(ok.status, 200, '255 characters are fine');
  });

  it('answers 409 while a request with the same key is being appended, then the first answer', async () => {
    // Concurrent requests with one key: each lands on its own instance; exactly one appends.
    const headers = { 'Idempotency-Key': `race-${Date.now()}` };
    const before = (await call(stack.url, 'GET', '/api/v1/chains/retries/stats')).body.total_events;
    const answers = await Promise.all(Array.from({ length: 6 }, () => call(stack.url, 'POST', '/api/v1/chains/retries/events', event(40), headers)));
    const statuses = answers.map((a) => a.status);
    assert.ok(
      statuses.every((s) => s === 200 || s === 409),
      statuses.join(),
    );
    for (const refused of answers.filter((a) => a.status === 409)) assert.match(refused.body.detail, /still in progress/);
    assert.equal(new Set(answers.filter((a) => a.status === 200).map((a) => a.body.event_id)).size, 1);
    assert.equal((await call(stack.url, 'GET', '/api/v1/chains/retries/stats')).body.total_events - before, 1);
    const later = await call(stack.url, 'POST', '/api/v1/chains/retries/events', event(40), headers);
    assert.equal(later.status, 200);
    assert.equal(later.body.event_id, answers.find((a) => a.status === 200)!.body.event_id);
  });

  it('declares the header in the OpenAPI document and lets browsers send it', async () => {
    const doc = (await call(stack.url, 'GET', '/openapi.json')).body;
    const params = doc.paths['/api/v1/chains/{chain_name}/events'].post.parameters as { name: string; in: string }[];
    assert.ok(params.some((p) => p.name === 'Idempotency-Key' && p.in === 'header'));
  });
});
