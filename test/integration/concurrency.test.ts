/**
 * Many writers on one chain at once: every acknowledged event lands exactly once, in a linear chain
 * with no gap and no fork. Within one process (group commit) and across two processes sharing one
 * DynamoDB (conditional writes), which is how Lambda instances meet in the cloud.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Block } from '#shared/ledger/types';
import { checkBlocks, readAllBlocks } from '#test/support/chain';
import { call, metricOf, sharedStack, startStack, stopAndRemove, type Stack } from '#test/support/stack';

const CLIENTS = 8;
const EVENTS_PER_CLIENT = 50;

let first: Stack;
let second: Stack;

before(async () => {
  // The run's shared stack (its chains' names are this file's own), or one of its own when this file runs alone.
  first = await sharedStack();
  assert.ok(first.dynamoEndpoint, 'the first stack names its DynamoDB endpoint');
  // The second gateway uses the first one's DynamoDB (and tables) instead of launching its own.
  second = await startStack({ env: first.dataEnv });
});

after(() => stopAndRemove(first, second));

/**
 * Runs `clients` writers, each posting `count` events in sequence; answers every acknowledged event id by the event it
 * was the answer to (`client/n`): each caller's own answer is checked against the chain, not only the set of them.
 */
async function writers(bases: string[], chain: string, clients: number, count: number): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      const base = bases[client % bases.length]!;
      for (let n = 0; n < count; n += 1) {
        const res = await call(base, 'POST', `/api/v1/chains/${chain}/events`, {
          entity_id: `client-${client}`,
          event_type: 'tick',
          details: { client, n },
        });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.success, true);
        ids.set(`${client}/${n}`, res.body.event_id);
      }
    }),
  );
  return ids;
}

function assertLinearChain(blocks: Block[], expected: number, answers: Map<string, string>): void {
  assert.equal(blocks.length, expected + 1, 'genesis plus one block per event');
  assert.equal(checkBlocks(blocks).forks, 0, 'every block links to the one before');
  const stored = blocks.flatMap((b) => b.events.map((e) => e.event_id));
  const acknowledged = [...answers.values()];
  assert.equal(acknowledged.length, expected);
  assert.equal(new Set(acknowledged).size, expected, 'no event id was acknowledged twice');
  assert.deepEqual([...stored].sort(), [...acknowledged].sort(), 'each acknowledged event is stored exactly once');
  // Each caller was answered with its own event: callers served together (one process, one round) were not
  // answered with each other's ids, which the set of ids alone would not show.
  const byId = new Map(blocks.flatMap((b) => b.events.map((e) => [e.event_id, e.details as { client: number; n: number }] as const)));
  for (const [caller, id] of answers) {
    const details = byId.get(id)!;
    assert.equal(`${details.client}/${details.n}`, caller, `the answer to ${caller} names the event stored for ${details.client}/${details.n}`);
  }
  const perClient = new Map<number, number[]>();
  for (const block of blocks.slice(1)) {
    const { client, n } = block.events[0]!.details as { client: number; n: number };
    perClient.set(client, [...(perClient.get(client) ?? []), n]);
  }
  for (const [client, ns] of perClient) {
    assert.deepEqual(
      ns,
      [...ns].sort((a, b) => a - b),
      `client ${client}'s events keep their order`,
    );
  }
}

describe('Concurrent appends on one chain', () => {
  it(`keeps ${CLIENTS} clients × ${EVENTS_PER_CLIENT} events linear through one gateway`, async () => {
    assert.equal((await call(first.url, 'POST', '/api/v1/chains/contended/create')).status, 201);
    const ids = await writers([first.url], 'contended', CLIENTS, EVENTS_PER_CLIENT);
    assertLinearChain(await readAllBlocks(first.url, 'contended', '/api/ledger'), CLIENTS * EVENTS_PER_CLIENT, ids);
    const stats = await call(first.url, 'GET', '/api/v1/chains/contended/stats');
    assert.equal(stats.body.total_events, CLIENTS * EVENTS_PER_CLIENT);
    assert.equal(stats.body.total_blocks, CLIENTS * EVENTS_PER_CLIENT + 1);
  });

  it(`keeps ${CLIENTS} clients × ${EVENTS_PER_CLIENT} events linear across two gateway processes`, async () => {
    assert.equal((await call(second.url, 'POST', '/api/v1/chains/shared/create')).status, 201);
    const ids = await writers([first.url, second.url], 'shared', CLIENTS, EVENTS_PER_CLIENT);
    const blocks = await readAllBlocks(second.url, 'shared', '/api/ledger');
    assertLinearChain(blocks, CLIENTS * EVENTS_PER_CLIENT, ids);
    const viaFirst = await readAllBlocks(first.url, 'shared', '/api/ledger');
    assert.deepEqual(
      viaFirst.map((b) => b.hash),
      blocks.map((b) => b.hash),
      'both processes read the same chain',
    );
  });

  it(`answers each of ${CLIENTS} callers with its own event when one process serves them all (SVC_LOCAL_RUNTIME=single-process)`, async () => {
    // Every function in the launcher: concurrent appends meet in one process and share its rounds, which Lambda's
    // single-request instances never do (and the simulation never runs). Which caller is answered with which event
    // is checked one by one.
    const oneProcess = await startStack({ env: { SVC_LOCAL_RUNTIME: 'single-process' } });
    try {
      assert.equal((await call(oneProcess.url, 'POST', '/api/v1/chains/together/create')).status, 201);
      const ids = await writers([oneProcess.url], 'together', CLIENTS, 25);
      assertLinearChain(await readAllBlocks(oneProcess.url, 'together', '/api/ledger'), CLIENTS * 25, ids);
      // They did share: fewer commits than events (group commit joined callers in one round).
      const [commits, events] = [await metricOf(oneProcess, 'ledger_append_commits_total'), await metricOf(oneProcess, 'ledger_events_appended_total')];
      assert.ok(commits > 0 && commits < events, `${commits} commits for ${events} events`);
    } finally {
      await stopAndRemove(oneProcess);
    }
  });
});
