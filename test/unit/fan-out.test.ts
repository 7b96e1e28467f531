/**
 * The broadcaster's fan-out under what a burst of subscribers makes of it (red team, 2026-12-07, cost amplification):
 * each key's connections together get at most its push budget, a socket whose push fails costs no other socket its
 * messages, and a batch cut short at its deadline answers which blocks are left, so that only those are pushed again.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { steadyNow } from '#shared/clock';
import type { Block } from '#shared/ledger/types';
import { type ConnectionStore, fanOut, type Subscriber } from '#shared/realtime/realtime';
import { firstSequenceOf } from '#shared/storage/stream';
import type { Core } from '#shared/wiring/core';
import { createRealtimeWiring } from '#shared/wiring/realtime';
import { RateLimiterMemory } from 'rate-limiter-flexible';

const block = (index: number, events = 1, chain = 'orders'): Block => ({
  index,
  chain_name: chain,
  timestamp: index,
  previous_hash: '0'.repeat(64),
  hash: String(index).padStart(64, '0'),
  events: Array.from({ length: events }, (_, i) => ({
    event_id: `${chain}_${index}_${i}`,
    chain_name: chain,
    block_index: index,
    entity_id: 'e',
    event_type: 't',
    details: {},
    details_cid: null,
    details_nonce: null,
    details_metadata: null,
    timestamp: index,
    is_offchain: false,
  })),
});

/** Subscribers of `*`: for each key, its connections. */
function storeOf(keys: Record<string, string[]>): ConnectionStore & { forgotten: string[] } {
  const all: Subscriber[] = Object.entries(keys).flatMap(([key, ids]) =>
    ids.map((id) => ({ connection_id: id, key_id: key, role: 'reader' as const, org_id: null })),
  );
  const forgotten: string[] = [];
  return {
    subscribers: async (filter: string) => (filter === 'chain#*' ? all : []),
    disconnect: async (id: string) => void forgotten.push(id),
    forgotten,
  } as unknown as ConnectionStore & { forgotten: string[] };
}

describe('the fan-out of pushes', () => {
  it("fails nothing after its deadline: a revoked key's connection it could not forget is left for the next push (review)", async () => {
    const subscribers: Subscriber[] = [
      { connection_id: 'kept', key_id: 'k', role: 'reader', org_id: null },
      { connection_id: 'revoked', key_id: 'r', role: 'reader', org_id: null },
    ];
    const store = {
      subscribers: async (filter: string) => (filter === 'chain#*' ? subscribers : []),
      disconnect: async () => Promise.reject(new Error('aborted at the deadline')),
    } as unknown as ConnectionStore;
    const out = await fanOut(
      [block(1), block(2)],
      store,
      async () => 'sent',
      async (s) => (s.key_id === 'r' ? 'revoked' : true),
      { stopAt: steadyNow() - 1 },
    );
    assert.deepEqual(
      out.unfinished.map((b) => b.index),
      [1, 2],
      'every block left for the retry, and the batch not failed',
    );
    assert.deepEqual(out.revoked, ['revoked']);
  });

  it("gives a key's connections together no more than its budget, tells each of them once, and leaves other keys whole", async () => {
    // The attack: one reader key's many connections on `*` multiplied every append by their number.
    const store = storeOf({ greedy: ['g1', 'g2', 'g3'], other: ['o1'] });
    const sent: [string, string][] = [];
    const asked: [string, number][] = [];
    const budgets: Record<string, number> = { greedy: 5, other: 100 };
    const out = await fanOut(
      [block(1, 2), block(2, 2)],
      store,
      async (id, message) => {
        sent.push([id, JSON.parse(message).type]);
        return 'sent';
      },
      async () => true,
      {
        takePushes: async (key, count) => {
          asked.push([key, count]);
          return { granted: Math.min(count, budgets[key]!), reached: count > budgets[key]! };
        },
      },
    );
    assert.deepEqual(
      asked.sort(),
      [
        ['greedy', 18],
        ['other', 6],
      ],
      'each key asked once for its whole batch: 2 blocks x (1 block_added + 2 events) per connection',
    );
    const pushes = (prefix: string) => sent.filter(([id, type]) => id.startsWith(prefix) && type !== 'error').length;
    assert.equal(pushes('g'), 5, "the greedy key's connections together got its budget");
    assert.equal(pushes('o'), 6, 'the other key got every message');
    assert.deepEqual(out.limited.sort(), ['g1', 'g2', 'g3']);
    const told = sent.filter(([, type]) => type === 'error').map(([id]) => id);
    assert.deepEqual(told.sort(), ['g1', 'g2', 'g3'], 'each limited connection told once');
    assert.equal(out.sent, 11);
    // Each connection's messages stay in block order, whatever was cut.
    const o1 = sent.filter(([id]) => id === 'o1').map(([, type]) => type);
    assert.deepEqual(o1, ['block_added', 'event', 'event', 'block_added', 'event', 'event']);
    // The next batch of the minute: nothing granted, and nobody told again (told in the batch that reached the limit).
    sent.length = 0;
    const later = await fanOut(
      [block(3, 1)],
      store,
      async (id, message) => {
        sent.push([id, JSON.parse(message).type]);
        return 'sent';
      },
      async () => true,
      { takePushes: async (key, count) => (key === 'greedy' ? { granted: 0, reached: false } : { granted: count, reached: false }) },
    );
    assert.deepEqual(later.limited.sort(), ['g1', 'g2', 'g3']);
    assert.deepEqual(sent, [
      ['o1', 'block_added'],
      ['o1', 'event'],
    ]);
  });

  it("grants from a key's budget for the minute what is left of it, and says which batch reached it (the wiring's limiter)", async () => {
    const core = {
      settings: { SVC_WS_PUSHES_PER_MINUTE: 30 },
      pushLimiter: () => new RateLimiterMemory({ points: 30, duration: 60, keyPrefix: 'push-test' }),
    } as unknown as Core;
    const take = createRealtimeWiring(core).pushBudget()!;
    assert.deepEqual(await take('a', 100), { granted: 30, reached: true }, 'asked for more than the limit: the limit');
    assert.deepEqual(await take('a', 5), { granted: 0, reached: false }, 'spent: nothing, and not told again');
    assert.deepEqual(await take('b', 20), { granted: 20, reached: false });
    assert.deepEqual(await take('b', 20), { granted: 10, reached: true });
    assert.deepEqual(await take('', 50), { granted: 50, reached: false }, 'no key (auth off): not limited');
  });

  it("ends only the failing connection's share when its push fails, and throws nothing (the batch is not pushed again to everyone)", async () => {
    const store = storeOf({ a: ['ok1', 'bad', 'ok2'] });
    const sent: string[] = [];
    const out = await fanOut(
      [block(1, 1), block(2, 1)],
      store,
      async (id) => {
        if (id === 'bad') throw Object.assign(new Error('throttled'), { name: 'LimitExceededException' });
        sent.push(id);
        return 'sent';
      },
      async () => true,
    );
    assert.deepEqual(out.failed, ['bad']);
    assert.equal(sent.filter((id) => id === 'ok1').length, 4);
    assert.equal(sent.filter((id) => id === 'ok2').length, 4);
    assert.deepEqual(out.unfinished, []);
    assert.deepEqual(store.forgotten, [], 'a failed push is not a gone connection');
  });

  it("serves connections in parallel, none waiting for another's slow pushes; stopped, it answers from the first block one of them missed (review)", async () => {
    const store = storeOf({ a: ['fast', 'slow'] });
    const blocks = [block(1), block(2), block(3)];
    const order: string[] = [];
    const out = await fanOut(
      blocks,
      store,
      async (id, message) => {
        const parsed = JSON.parse(message);
        if (id === 'slow') await new Promise((r) => setTimeout(r, 250));
        order.push(`${id}:${parsed.type}:${parsed.type === 'event' ? parsed.event.block_index : parsed.block.index}`);
        return 'sent';
      },
      async () => true,
      { stopAt: steadyNow() + 600 },
    );
    const fastDone = order.lastIndexOf('fast:event:3');
    assert.ok(fastDone >= 0 && fastDone < order.indexOf('slow:event:1'), `the fast connection had its three blocks first: ${order.join(' ')}`);
    // The slow one got block 1 and part of block 2 by the deadline: the retry starts at block 2.
    assert.deepEqual(
      out.unfinished.map((b) => b.index),
      [2, 3],
    );
  });

  it('stops between blocks at its deadline and answers the blocks left, which name the record a retry starts from', async () => {
    const store = storeOf({ a: ['c1'] });
    const blocks = [block(1), block(2), block(3)];
    const pushed: number[] = [];
    // Each block is two messages of 300 ms: the first block ends at about 600 ms, the second at 1,200, past the deadline.
    const out = await fanOut(
      blocks,
      store,
      async (_id, message) => {
        const parsed = JSON.parse(message);
        if (parsed.type === 'block_added') pushed.push(parsed.block.index);
        await new Promise((r) => setTimeout(r, 300));
        return 'sent';
      },
      async () => true,
      { stopAt: steadyNow() + 1_000 },
    );
    assert.deepEqual(pushed, [1, 2], 'whole blocks, then it stopped');
    assert.deepEqual(
      out.unfinished.map((b) => b.index),
      [3],
    );
    assert.equal(out.sent, 4);
    const found = blocks.map((b, i) => ({ block: b, sequence: ['900', '1000', '1100'][i]! }));
    assert.equal(firstSequenceOf(found, out.unfinished), '1100');
    assert.equal(firstSequenceOf(found, [blocks[1]!, blocks[0]!]), '900', "compared as numbers: '1000' sorts before '900' as text");
    assert.equal(firstSequenceOf(found, []), undefined);
  });
});
