/**
 * Contention: 64 clients append to one chain through two service processes sharing one DynamoDB (as two
 * Lambda instances would) for 60 s (15 s with CI=true). Nothing forks, nothing is lost, the chain verifies,
 * and the only 5xx allowed is a 503 that says when to come back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { serverLinesFor, startStack, stopAndRemove, type Stack } from '#test/support/stack';
import { AS_NPM_START, CI, readWholeChain, reconcile, report } from './support.ts';

const CLIENTS = 64;
const SECONDS = CI ? 15 : 60;

let first: Stack;
let second: Stack;

before(async () => {
  first = await startStack({ env: AS_NPM_START });
  assert.ok(first.dynamoEndpoint);
  second = await startStack({ env: { ...first.dataEnv, ...AS_NPM_START } });
});

after(() => stopAndRemove(first, second));

describe('Contention on one chain', () => {
  it(`${CLIENTS} clients for ${SECONDS} s: no fork, no gap, no lost event, 503 only with Retry-After`, async (t) => {
    const res = await fetch(`${first.url}/api/v1/chains/hot/create`, { method: 'POST' });
    assert.equal(res.status, 201);
    const acknowledged = new Map<string, string>();
    const statuses = new Map<number, number>();
    let unexpected5xx = 0;
    let retryAfterMissing = 0;
    // What the stacks printed about each answer the test did not expect, so a CI failure names its cause.
    const unexpected: string[] = [];
    const deadline = Date.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        const base = client % 2 === 0 ? first.url : second.url;
        for (let n = 0; Date.now() < deadline; n += 1) {
          const key = `${client}/${n}`;
          const answer = await fetch(`${base}/api/ledger/chains/hot/events`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ entity_id: `client-${client}`, event_type: 'tick', details: { key } }),
          });
          const text = await answer.text();
          const body = JSON.parse(text) as { event_id?: string; request_id?: string };
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          const said = () =>
            `${answer.status} ${text}\n${serverLinesFor(client % 2 === 0 ? first : second, body.request_id ?? answer.headers.get('apigw-requestid') ?? undefined)}`;
          if (answer.status === 200) acknowledged.set(key, body.event_id!);
          else if (answer.status === 503) {
            if (!answer.headers.get('retry-after')) {
              retryAfterMissing += 1;
              unexpected.push(said());
            }
            await new Promise((r) => setTimeout(r, Number(answer.headers.get('retry-after') ?? 1) * 100));
          } else if (answer.status >= 500) {
            unexpected5xx += 1;
            unexpected.push(said());
          }
        }
      }),
    );
    const { blocks, forks } = await readWholeChain(first.url, 'hot');
    const { lost, duplicated } = reconcile(blocks, acknowledged);
    const total = [...statuses.values()].reduce((a, b) => a + b, 0);
    report(t, {
      area: 'load',
      what: `contention: ${CLIENTS} clients, one chain, 2 processes`,
      tried: `${total} appends in ${SECONDS} s (${Math.round(acknowledged.size / SECONDS)}/s acknowledged), statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
      lost,
      forks,
      unexpected5xx,
      notes: `${blocks.length} blocks, ${duplicated} duplicated events, ${retryAfterMissing} 503 without Retry-After`,
    });
    assert.equal(forks, 0);
    assert.equal(lost, 0, 'every acknowledged event is on the chain under its id');
    assert.equal(duplicated, 0, 'no event twice');
    assert.equal(unexpected5xx, 0, unexpected.slice(0, 5).join('\n'));
    assert.equal(retryAfterMissing, 0, unexpected.slice(0, 5).join('\n'));
    assert.equal(blocks.length - 1, acknowledged.size, 'the chain holds exactly the acknowledged events');
    assert.ok(acknowledged.size > CLIENTS, 'the load was real');
  });
});
