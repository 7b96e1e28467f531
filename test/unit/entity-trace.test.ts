/**
 * An entity's trace across chains, offline (createLedger over the in-memory repository): the entity index has a
 * partition for the chains any reader reads and one for each channel's chain, and a trace reads only the scopes its
 * caller reads, merged in trace order (time, chain, index). Paged with any limit, every event of those scopes comes
 * once and in order, and a scope the caller does not read is never queried (red team, auth on: one partition for all
 * chains answered a cursor after 100 hidden entries, where an unknown entity answers none).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UnprocessableError } from '#shared/errors';
import { ChainAppender } from '#shared/ledger/appender';
import { createLedger, TRACE_CHANNELS_MAX, traceScanMax } from '#shared/ledger/ledger';
import { eventDraft } from '../support/drafts.ts';
import { createMemoryLedgerRepository } from '../support/memory-ledger-repository.ts';

const CHAINS = ['open', 'channel-a', 'channel-b'];

async function world() {
  const repository = createMemoryLedgerRepository();
  let t = 1_800_000_000;
  const now = () => t;
  const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 99, now }), now });
  await ledger.createSubChain('open');
  await ledger.createSubChain('channel-a', { allowChannel: true });
  await ledger.createSubChain('channel-b', { allowChannel: true });
  // 45 events of `x` spread over the three chains, two at a time sharing a millisecond (ordered by chain, then index).
  for (let i = 0; i < 45; i += 1) {
    if (i % 2 === 0) t += 0.001;
    await ledger.appendEvent(CHAINS[(i * 7) % 3]!, eventDraft('x', { i }));
    if (i % 5 === 0) await ledger.appendEvent(CHAINS[i % 3]!, eventDraft('y', { i }));
  }
  const scopes: (string | null)[] = [];
  const read: number[] = [];
  const query = repository.queryEntityPage.bind(repository);
  repository.queryEntityPage = async (entityId, page) => {
    scopes.push(page.scope);
    const answer = await query(entityId, page);
    read.push(answer.read);
    return answer;
  };
  return { ledger, scopes, read };
}

type Ledger = Awaited<ReturnType<typeof world>>['ledger'];

/** Every page of the trace with `limit`, its events' `i` in the order answered, and the pages' count. */
async function pages(ledger: Ledger, limit: number, channels: string[], chainName?: string) {
  const order: number[] = [];
  let cursor: string | undefined;
  let count = 0;
  do {
    const page = await ledger.traceEntity('x', chainName, { limit, cursor, channels });
    order.push(...page.events.map((e) => (e.details as { i: number }).i));
    cursor = page.next_cursor ?? undefined;
    count += 1;
    assert.ok(count < 100, 'pages end');
  } while (cursor);
  return { order, count };
}

/** The trace order of `x`'s events on these chains: by time (two a millisecond), then chain name, then index. */
const expected = (chains: string[]) =>
  Array.from({ length: 45 }, (_, i) => ({ i, ms: Math.floor(i / 2), chain: CHAINS[(i * 7) % 3]! }))
    .filter(({ chain }) => chains.includes(chain))
    .sort((a, b) => a.ms - b.ms || (a.chain < b.chain ? -1 : a.chain > b.chain ? 1 : 0) || a.i - b.i)
    .map(({ i }) => i);

describe("an entity's trace across the scopes its caller reads", () => {
  it('answers every event of the scopes read, once and in trace order, with any page size, and never queries another scope', async () => {
    const { ledger, scopes } = await world();
    for (const channels of [[], ['channel-a'], ['channel-a', 'channel-b']]) {
      for (const limit of [1, 2, 7, 100]) {
        scopes.length = 0;
        const { order, count } = await pages(ledger, limit, channels);
        assert.deepEqual(order, expected(['open', ...channels]), `channels ${channels}, limit ${limit}`);
        assert.equal(count, Math.max(1, Math.ceil(order.length / limit)), `channels ${channels}, limit ${limit}: no empty last page`);
        assert.deepEqual([...new Set(scopes)].sort(), [null, ...channels].sort(), 'only the scopes read are queried');
      }
    }
  });

  it("reads a named chain's own scope, filtered to it", async () => {
    const { ledger, scopes } = await world();
    assert.deepEqual((await pages(ledger, 4, [], 'channel-b')).order, expected(['channel-b']));
    assert.deepEqual([...new Set(scopes)], ['channel-b']);
    scopes.length = 0;
    assert.deepEqual((await pages(ledger, 4, [], 'open')).order, expected(['open']));
    assert.deepEqual([...new Set(scopes)], [null]);
  });

  it('keeps a page within its read cap, looking at each scope once first, and refuses more channels than a trace reads', async () => {
    const { ledger, read } = await world();
    await ledger.traceEntity('x', undefined, { limit: 1, channels: ['channel-a', 'channel-b'] });
    assert.ok(read.reduce((a, b) => a + b, 0) <= traceScanMax(1) + 3, `read ${read}`);
    assert.deepEqual(read.slice(0, 3), [1, 1, 1], 'each scope looked at with one entry');
    const many = Array.from({ length: TRACE_CHANNELS_MAX + 1 }, (_, i) => `channel-c${i}`);
    await assert.rejects(ledger.traceEntity('x', undefined, { channels: many }), (error: Error) => {
      assert.ok(error instanceof UnprocessableError);
      assert.match(error.message, /reads the index of each channel this key reads: 1001, more than 1000; name a chain/);
      return true;
    });
  });

  it('goes on past more entries it may not answer than a page reads: a chain filter, a channel left since (the cursor is where every scope was read to)', async () => {
    const repository = createMemoryLedgerRepository();
    let t = 1_800_000_000;
    const now = () => t;
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 99, now }), now });
    for (const name of ['open', 'other']) await ledger.createSubChain(name);
    await ledger.createSubChain('channel-left', { allowChannel: true });
    // 'z' on three chains: every 300th event on 'open', the rest on 'other' and on a channel the caller has left.
    const kept: number[] = [];
    for (let i = 0; i < 480; i += 1) {
      t += 0.001;
      const chain = i % 300 === 7 ? 'open' : i % 2 ? 'other' : 'channel-left';
      if (chain === 'open') kept.push(i);
      await ledger.appendEvent(chain, eventDraft('z', { i }));
    }
    const visible = async (chain: string) => chain !== 'channel-left';
    for (const [chainName, channels] of [
      ['open', []],
      [undefined, ['channel-left']],
    ] as const) {
      for (const limit of [1, 3]) {
        const order: number[] = [];
        let cursor: string | undefined;
        let count = 0;
        do {
          const page = await ledger.traceEntity('z', chainName, { limit, cursor, channels: [...channels], visible });
          order.push(...page.events.map((e) => (e.details as { i: number }).i).filter((i) => chainName !== undefined || kept.includes(i) || i % 2 === 1));
          cursor = page.next_cursor ?? undefined;
          assert.ok((count += 1) < 400);
        } while (cursor);
        const want = chainName === 'open' ? kept : Array.from({ length: 480 }, (_, i) => i).filter((i) => kept.includes(i) || i % 2 === 1);
        assert.deepEqual(order, want, `${chainName ?? 'across chains'}, limit ${limit}`);
      }
    }
  });
});
