/**
 * Group commit (issue 11): concurrent appends to one chain in one process share transactions, and the
 * chain stays linear. Against DynamoDB Local, with failures injected into the commit path: an event is
 * acknowledged only when its transaction committed, and a transaction that failed leaves nothing behind.
 * Then the same over HTTP with 32 clients and the batch endpoint.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ChainAppender } from '#shared/ledger/appender';
import { createLedger, type Ledger } from '#shared/ledger/ledger';
import type { LedgerRepository } from '#shared/ledger/repository';
import type { Block } from '#shared/ledger/types';
import { checkBlocks, readAllBlocks } from '#test/support/chain';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';
import { call, serverLinesFor, sharedStack, stopAndRemove, type Stack } from '#test/support/stack';

const CLIENTS = 32;

let storage: TestDynamo;
let repo: LedgerRepository;

before(async () => {
  storage = await startTestDynamo('group-commit');
  repo = storage.repository;
});

after(() => storage?.stop());

class InjectedFailure extends Error {}

/**
 * The real repository, with commits that fail on purpose: `before` ones never reach DynamoDB; `after`
 * ones commit and then report an error, as a timeout after the write would (the outcome is unknown).
 */
function faulty(real: LedgerRepository, plan: (commit: number) => 'ok' | 'before' | 'after') {
  const log = { commits: 0, blocksPerCommit: [] as number[], failedBefore: [] as Block[][], failedAfter: [] as Block[][] };
  const repository: LedgerRepository = {
    ...real,
    async commitRound(commit) {
      log.commits += 1;
      const fate = plan(log.commits);
      if (fate === 'before') {
        log.failedBefore.push(commit.blocks);
        throw new InjectedFailure('injected: the transaction never reached DynamoDB');
      }
      const result = await real.commitRound(commit);
      if (result.status === 'committed') log.blocksPerCommit.push(commit.blocks.length);
      if (fate === 'after' && result.status === 'committed') {
        log.failedAfter.push(commit.blocks);
        throw new InjectedFailure('injected: committed, but the answer was lost');
      }
      return result;
    },
  };
  return { repository, log };
}

function ledgerOver(repository: LedgerRepository): { ledger: Ledger; appender: ChainAppender } {
  const appender = new ChainAppender(repository, { maxAttempts: 8, batchMax: 25 });
  return { ledger: createLedger({ repository, appender }), appender };
}

/** Every block of the chain, checked to be one linear hash chain from genesis to the head. */
async function linearChain(chain: string): Promise<Block[]> {
  const head = await repo.getHead(chain);
  assert.ok(head);
  const blocks = await repo.getBlockRange(chain, 0, head.headIndex + 5, false);
  assert.deepEqual(
    blocks.map((b) => b.index),
    Array.from({ length: head.headIndex + 1 }, (_, i) => i),
    'indices are contiguous from 0 to the head, and nothing lies past the head',
  );
  assert.equal(checkBlocks(blocks).forks, 0, 'every block links to the one before');
  assert.equal(head.headHash, blocks[blocks.length - 1]!.hash);
  assert.equal(
    head.eventCount,
    blocks.reduce((n, b) => n + b.events.length, 0),
    'the head counts the events on chain',
  );
  return blocks;
}

const key = (details: Record<string, unknown>) => `${details.client}/${details.n}`;

describe('Group commit under injected failures (DynamoDB Local)', () => {
  it('keeps one chain linear under 32 concurrent clients and acknowledges only committed events', async () => {
    // Commits 3, 8, 13… never reach DynamoDB; commits 5, 10, 15… commit but report a failure.
    const { repository, log } = faulty(repo, (n) => (n % 5 === 3 ? 'before' : n % 5 === 0 ? 'after' : 'ok'));
    const { ledger, appender } = ledgerOver(repository);
    await ledger.createSubChain('linear');
    const acknowledged = new Map<string, string>(); // client/n → event_id
    let failed = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        for (let n = 0; n < 12; n += 1) {
          try {
            const { event_id, block } = await ledger.appendEvent('linear', {
              entity_id: `client-${client}`,
              event_type: 'tick',
              details: { client, n },
              details_cid: null,
              details_nonce: null,
              details_metadata: null,
              is_offchain: false,
            });
            assert.equal(event_id, block.events[0]!.event_id);
            acknowledged.set(`${client}/${n}`, event_id);
          } catch (error) {
            assert.ok(error instanceof InjectedFailure, String(error));
            failed += 1;
          }
        }
      }),
    );
    assert.ok(log.failedBefore.length > 0 && log.failedAfter.length > 0, 'both kinds of failure were injected');
    // A failed commit is settled by reading the head: one that landed is acknowledged, one that did not is tried again.
    assert.equal(failed, 0, 'no append failed: every injected failure was settled');
    assert.equal(acknowledged.size, CLIENTS * 12, 'every request was acknowledged');

    const blocks = await linearChain('linear');
    const onChain = new Map<string, string[]>();
    for (const block of blocks.slice(1)) {
      const event = block.events[0]!;
      const ids = onChain.get(key(event.details)) ?? [];
      ids.push(event.event_id);
      onChain.set(key(event.details), ids);
    }
    for (const [k, eventId] of acknowledged) {
      assert.deepEqual(onChain.get(k), [eventId], `acknowledged event ${k} is on chain exactly once, under its id`);
    }
    for (const lost of log.failedBefore.flat()) {
      const k = key(lost.events[0]!.details);
      assert.equal(onChain.get(k)?.length, 1, `event ${k} of a transaction that never reached DynamoDB was committed once, by a retry`);
      assert.equal(acknowledged.get(k), onChain.get(k)![0], `event ${k} is acknowledged under the id it has on chain`);
    }
    for (const unknown of log.failedAfter.flat()) {
      const k = key(unknown.events[0]!.details);
      assert.equal(
        acknowledged.get(k),
        unknown.events[0]!.event_id,
        `event ${k} whose commit landed but answered an error was acknowledged (the head said it landed)`,
      );
      assert.equal(onChain.get(k)?.length, 1, `event ${k} committed once despite the lost answer`);
    }
    // Transactions were shared: fewer commits than blocks, and some carried many blocks.
    assert.ok(appender.counters.commits < appender.counters.blocksAppended, JSON.stringify(appender.counters));
    assert.ok(Math.max(...log.blocksPerCommit) >= 8, `largest commit held ${Math.max(...log.blocksPerCommit)} blocks`);
  });

  it('commits a batch all together or not at all, and never interleaves another caller inside it', async () => {
    let failing = false;
    const { repository } = faulty(repo, () => (failing ? 'before' : 'ok'));
    const { ledger } = ledgerOver(repository);
    await ledger.createSubChain('atomic');
    const draft = (n: number, who: string) => ({
      entity_id: who,
      event_type: 'tick',
      details: { client: who, n },
      details_cid: null,
      details_nonce: null,
      details_metadata: null,
      is_offchain: false,
    });
    failing = true;
    await assert.rejects(
      ledger.appendEvents(
        'atomic',
        Array.from({ length: 60 }, (_, n) => draft(n, 'batch')),
      ),
      InjectedFailure,
    );
    failing = false;
    assert.equal((await linearChain('atomic')).length, 1, 'the failed batch left only genesis');

    // Batches and single events at once: each batch's blocks stay consecutive and in order.
    const results = await Promise.all([
      ledger.appendEvents(
        'atomic',
        Array.from({ length: 40 }, (_, n) => draft(n, 'a')),
      ),
      ...Array.from({ length: 10 }, (_, n) => ledger.appendEvent('atomic', draft(n, 'single')).then((r) => [r])),
      ledger.appendEvents(
        'atomic',
        Array.from({ length: 99 }, (_, n) => draft(n, 'b')),
      ),
    ]);
    const blocks = await linearChain('atomic');
    assert.equal(blocks.length, 1 + 40 + 10 + 99);
    for (const batch of [results[0]!, results[results.length - 1]!]) {
      const indices = batch.map((r) => r.block.index);
      assert.deepEqual(
        indices,
        indices.map((_, i) => indices[0]! + i),
        'a batch occupies consecutive blocks in its order',
      );
      batch.forEach((r, i) => assert.equal(blocks[r.block.index]!.events[0]!.details.n, i));
    }
  });

  it('refuses a batch that could not commit in one transaction', async () => {
    const { ledger } = ledgerOver(repo);
    await ledger.createSubChain('toolarge');
    const draft = { entity_id: 'e', event_type: 't', details: {}, details_cid: null, details_nonce: null, details_metadata: null, is_offchain: false };
    await assert.rejects(
      ledger.appendEvents(
        'toolarge',
        Array.from({ length: 100 }, () => draft),
      ),
      /at most 99 events/,
    );
    const bulky = { ...draft, details: { text: 'x'.repeat(60_000) } };
    await assert.rejects(
      ledger.appendEvents(
        'toolarge',
        Array.from({ length: 30 }, () => bulky),
      ),
      /commit atomically/,
    );
    assert.equal((await linearChain('toolarge')).length, 1);
  });
});

describe('Group commit over HTTP', () => {
  let stack: Stack;

  /** Every block of the chain through the API, checked to be one linear hash chain. */
  async function blocksOverHttp(chain: string): Promise<Block[]> {
    const blocks = await readAllBlocks(stack.url, chain);
    assert.equal(checkBlocks(blocks).forks, 0, 'every block links to the one before');
    return blocks;
  }

  before(async () => {
    stack = await sharedStack();
  });
  after(() => stopAndRemove(stack));

  it('32 clients and batch writers on one chain: every acknowledged event once, the chain verifies', async () => {
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/busy/create')).status, 201);
    const acknowledged: string[] = [];
    const statuses = new Map<number, number>();
    const refused: string[] = [];
    await Promise.all([
      ...Array.from({ length: CLIENTS }, async (_, client) => {
        for (let n = 0; n < 10; n += 1) {
          const res = await call(stack.url, 'POST', '/api/ledger/chains/busy/events', { entity_id: `c${client}`, event_type: 'tick', details: { client, n } });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 200) acknowledged.push(res.body.event_id);
          else refused.push(res.body?.request_id);
        }
      }),
      ...Array.from({ length: 2 }, async (_, writer) => {
        for (let round = 0; round < 3; round += 1) {
          const events = Array.from({ length: 50 }, (_, n) => ({ entity_id: `b${writer}`, event_type: 'bulk', details: { writer, round, n } }));
          const res = await call(stack.url, 'POST', '/api/v1/chains/busy/events/batch', { events });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          assert.equal(res.status, 200, `${res.text}\n${serverLinesFor(stack, res.body?.request_id)}`);
          assert.equal(res.body.event_ids.length, 50);
          acknowledged.push(...res.body.event_ids);
        }
      }),
    ]);
    assert.deepEqual(
      [...statuses.keys()],
      [200],
      `every request succeeded: ${JSON.stringify([...statuses])}\n${refused.map((id) => serverLinesFor(stack, id)).join('\n')}`,
    );
    const blocks = await blocksOverHttp('busy');
    const ids = blocks.slice(1).map((b) => b.events[0]!.event_id);
    assert.equal(new Set(ids).size, ids.length, 'no event id twice');
    assert.deepEqual([...acknowledged].sort(), [...ids].sort(), 'the chain holds exactly the acknowledged events');
    const verify = await call(stack.url, 'GET', '/api/v1/chains/busy/verify');
    assert.equal(verify.body.valid, true, verify.text);
  });

  it('answers the batch with its ids in order, and the contract errors for bad batches', async () => {
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/ordered/create')).status, 201);
    const events = Array.from({ length: 5 }, (_, n) => ({ entity_id: 'o', event: 'step', details: { n } }));
    const res = await call(stack.url, 'POST', '/api/v1/chains/ordered/events/batch', { events });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      res.body.event_ids,
      [1, 2, 3, 4, 5].map((i) => `ordered_${i}_0`),
    );
    for (const [i, id] of res.body.event_ids.entries()) {
      const block = await call(stack.url, 'GET', `/api/v1/chains/ordered/blocks/${i + 1}`);
      assert.equal(block.body.events[0].event_id, id);
      assert.deepEqual(block.body.events[0].details, { n: i });
    }

    const tooMany = await call(stack.url, 'POST', '/api/v1/chains/ordered/events/batch', {
      events: Array.from({ length: 100 }, () => ({ entity_id: 'o', event_type: 't' })),
    });
    assert.equal(tooMany.status, 422);
    assert.deepEqual(tooMany.body.detail[0].loc, ['body', 'events']);

    const badOne = await call(stack.url, 'POST', '/api/v1/chains/ordered/events/batch', {
      events: [{ entity_id: 'o', event_type: 't' }, { entity_id: 'o' }],
    });
    assert.equal(badOne.status, 422);
    assert.deepEqual(badOne.body.detail[0].loc, ['body', 'events', 1, 'event_type'], 'the error names the event');

    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/ordered/events/batch', { events: [] })).status, 422);
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/ghost/events/batch', { events })).status, 404);
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/main/events/batch', { events })).status, 400);
    const stats = await call(stack.url, 'GET', '/api/v1/chains/ordered/stats');
    assert.equal(stats.body.total_events, 5, 'refused batches added nothing');
  });
});
