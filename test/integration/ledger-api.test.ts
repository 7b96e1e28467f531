/**
 * The ledger group over HTTP against the running local stack (DynamoDB Local underneath): every
 * endpoint on both prefixes, and every error status with the contract's body.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashBlock, ZERO_HASH } from '#shared/ledger/hashing';
import { blockHashesRoot } from '#shared/ledger/merkle';
import { UUID, assertEdgeHeaders, assertError } from '#test/support/contract';
import { call, removeDir, startStack, type Stack } from '#test/support/stack';

const PREFIXES = ['/api/ledger', '/api/v1'] as const;

let stack: Stack;
let base: string;

before(async () => {
  stack = await startStack();
  base = stack.url;
});

after(async () => {
  await stack?.stop();
  if (stack) removeDir(stack.dataDir);
});

describe('Ledger group over HTTP, both prefixes', () => {
  it('answers health on both prefixes', async () => {
    for (const prefix of PREFIXES) {
      const res = await call(base, 'GET', `${prefix}/health`);
      assert.equal(res.status, 200);
      assertEdgeHeaders(res.headers);
      assert.equal(res.body.status, 'healthy');
      assert.equal(res.body.service, 'ledger');
      assert.equal(res.body.checks.dynamodb, 'ok');
      assert.match(res.body.version, /^\d+\.\d+\.\d+/);
    }
  });

  it('lists no chains before the first Sub-Chain', async () => {
    for (const prefix of PREFIXES) {
      const res = await call(base, 'GET', `${prefix}/chains`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, []);
    }
  });

  it('creates a Sub-Chain, and the Main Chain with the first one', async () => {
    const res = await call(base, 'POST', '/api/ledger/chains/orders/create');
    assert.equal(res.status, 201);
    assert.equal(res.body.success, true);
    assert.equal(res.body.chain_name, 'orders');
    assert.equal(typeof res.body.message, 'string');
    const second = await call(base, 'POST', '/api/v1/chains/returns/create');
    assert.equal(second.status, 201);
    assert.equal(second.body.chain_name, 'returns');

    const chains = await call(base, 'GET', '/api/v1/chains');
    assert.deepEqual(
      chains.body.map((c: any) => [c.name, c.type, c.block_count]),
      [
        ['main', 'main', 1],
        ['orders', 'sub', 1],
        ['returns', 'sub', 1],
      ],
    );
    for (const chain of chains.body) assert.match(chain.latest_block_hash, /^[0-9a-f]{64}$/);
  });

  it('answers 409 when the Sub-Chain already exists, on either prefix', async () => {
    for (const prefix of PREFIXES) {
      assertError(await call(base, 'POST', `${prefix}/chains/orders/create`), 409, /already exists/);
    }
  });

  it('adds events on both prefixes, each closing its own block', async () => {
    const first = await call(base, 'POST', '/api/ledger/chains/orders/events', {
      entity_id: 'pkg-17',
      event_type: 'created',
      details: { carrier: 'ups', weight_kg: 2.5 },
      details_metadata: { source: 'test' },
    });
    assert.equal(first.status, 200);
    assertEdgeHeaders(first.headers);
    assert.deepEqual({ success: first.body.success, event_id: first.body.event_id }, { success: true, event_id: 'orders_1_0' });
    assert.equal(typeof first.body.message, 'string');

    // The spec's off-chain example spells the type `event`.
    const second = await call(base, 'POST', '/api/v1/chains/orders/events', { entity_id: 'pkg-17', event: 'shipped' });
    assert.equal(second.status, 200);
    assert.equal(second.body.event_id, 'orders_2_0');

    const third = await call(base, 'POST', '/api/v1/chains/returns/events', { entity_id: 'pkg-17', event_type: 'returned' });
    assert.equal(third.body.event_id, 'returns_1_0');
    const other = await call(base, 'POST', '/api/ledger/chains/orders/events', { entity_id: 'pkg-99', event_type: 'created' });
    assert.equal(other.body.event_id, 'orders_3_0');
  });

  it('stores what was sent, with a server timestamp and an empty details when none was sent', async () => {
    const before = Date.now() / 1000;
    const res = await call(base, 'GET', '/api/v1/chains/orders/blocks/2');
    const [event] = res.body.events;
    assert.equal(event.event_type, 'shipped');
    assert.deepEqual(event.details, {});
    assert.equal(event.is_offchain, false);
    assert.equal(event.details_cid, null);
    assert.ok(event.timestamp > before - 120 && event.timestamp <= Date.now() / 1000 + 1);
    assert.equal(Math.round(event.timestamp * 1000) / 1000, event.timestamp, 'millisecond precision');
    const first = await call(base, 'GET', '/api/v1/chains/orders/blocks/1');
    assert.deepEqual(first.body.events[0].details, { carrier: 'ups', weight_kg: 2.5 });
    assert.deepEqual(first.body.events[0].details_metadata, { source: 'test' });
  });

  it('pages blocks in index order, each linked to the one before and hashed as the contract says', async () => {
    const res = await call(base, 'GET', '/api/ledger/chains/orders/blocks');
    assert.equal(res.status, 200);
    assert.equal(res.body.chain_name, 'orders');
    assert.equal(res.body.total, 4);
    assert.equal(res.body.limit, 10);
    assert.equal(res.body.offset, 0);
    const blocks = res.body.blocks;
    assert.deepEqual(
      blocks.map((b: any) => b.index),
      [0, 1, 2, 3],
    );
    assert.equal(blocks[0].previous_hash, ZERO_HASH);
    assert.deepEqual(blocks[0].events, []);
    for (let i = 0; i < blocks.length; i += 1) {
      assert.equal(hashBlock(blocks[i]), blocks[i].hash, `block ${i} hash recomputes`);
      if (i > 0) assert.equal(blocks[i].previous_hash, blocks[i - 1].hash);
      for (const [position, event] of blocks[i].events.entries()) {
        assert.equal(event.event_id, `orders_${i}_${position}`);
        assert.equal(event.block_index, i);
      }
    }
    const page = await call(base, 'GET', '/api/v1/chains/orders/blocks?limit=2&offset=1');
    assert.deepEqual(
      page.body.blocks.map((b: any) => b.index),
      [1, 2],
    );
    assert.equal(page.body.total, 4);
    const desc = await call(base, 'GET', '/api/v1/chains/orders/blocks?limit=2&order=desc');
    assert.deepEqual(
      desc.body.blocks.map((b: any) => b.index),
      [3, 2],
    );
    const past = await call(base, 'GET', '/api/v1/chains/orders/blocks?offset=50');
    assert.equal(past.status, 200);
    assert.deepEqual(past.body.blocks, []);
  });

  it('reads one block by index and by hash, the same block either way', async () => {
    const byIndex = await call(base, 'GET', '/api/ledger/chains/orders/blocks/1');
    assert.equal(byIndex.status, 200);
    const byHash = await call(base, 'GET', `/api/v1/chains/orders/blocks/${byIndex.body.hash}`);
    assert.equal(byHash.status, 200);
    assert.deepEqual(byHash.body, byIndex.body);
    const upper = await call(base, 'GET', `/api/v1/chains/orders/blocks/${byIndex.body.hash.toUpperCase()}`);
    assert.deepEqual(upper.body, byIndex.body);
  });

  it('answers 404 for a block not on that chain, and 422 for an address that is neither', async () => {
    assertError(await call(base, 'GET', '/api/ledger/chains/orders/blocks/99'), 404, /not found/);
    // Indexes past what a block's storage key holds (12 digits) were a 500 (red team): no block, as any other.
    for (const index of ['1000000000000', '999999999999999']) {
      assertError(await call(base, 'GET', `/api/v1/chains/orders/blocks/${index}`), 404, /not found/);
      assertError(await call(base, 'GET', `/api/ledger/chains/nowhere/blocks/${index}`), 404, /[Cc]hain/);
    }
    const returnsBlock = await call(base, 'GET', '/api/ledger/chains/returns/blocks/1');
    assertError(await call(base, 'GET', `/api/ledger/chains/orders/blocks/${returnsBlock.body.hash}`), 404);
    assertError(await call(base, 'GET', `/api/v1/chains/orders/blocks/${'0'.repeat(64)}`), 404);
    const bad = await call(base, 'GET', '/api/v1/chains/orders/blocks/latest');
    assertError(bad, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['path', 'index_or_hash']);
  });

  it('reports statistics of Sub-Chains and the Main Chain', async () => {
    const sub = await call(base, 'GET', '/api/ledger/chains/orders/stats');
    assert.equal(sub.status, 200);
    assert.deepEqual(sub.body, {
      chain_name: 'orders',
      total_blocks: 4,
      total_events: 3,
      proof_count: 0,
      registered_sub_chains: null,
    });
    const main = await call(base, 'GET', '/api/v1/chains/main/stats');
    assert.deepEqual(main.body, {
      chain_name: 'main',
      total_blocks: 1,
      total_events: 0,
      proof_count: 0,
      registered_sub_chains: 2,
    });
  });

  it('anchors a Sub-Chain in the Main Chain with the RFC 6962 root of its block hashes', async () => {
    const res = await call(base, 'POST', '/api/ledger/chains/orders/submit-proof');
    assert.equal(res.status, 200);
    assert.equal(res.body.success, true);
    assert.equal(res.body.proof_id, 'orders_1');

    const blocks = (await call(base, 'GET', '/api/v1/chains/orders/blocks')).body.blocks;
    const anchor = await call(base, 'GET', '/api/v1/chains/main/blocks/1');
    const [event] = anchor.body.events;
    assert.equal(event.event_type, 'sub_chain_proof');
    assert.equal(event.entity_id, 'orders');
    assert.deepEqual(event.details, {
      sub_chain: 'orders',
      head_index: 3,
      head_hash: blocks[3].hash,
      tree_size: 4,
      merkle_root: blockHashesRoot(blocks.map((b: any) => b.hash)),
    });
    assert.equal(hashBlock(anchor.body), anchor.body.hash);
  });

  it('answers the existing proof when nothing was added since', async () => {
    const again = await call(base, 'POST', '/api/v1/chains/orders/submit-proof');
    assert.equal(again.status, 200);
    assert.equal(again.body.success, true);
    assert.equal(again.body.proof_id, 'orders_1');
    assert.match(again.body.message, /since the last proof/i);
    const main = await call(base, 'GET', '/api/ledger/chains/main/stats');
    assert.equal(main.body.total_blocks, 2, 'no second anchor block');
    assert.equal(main.body.proof_count, 1);
    const sub = await call(base, 'GET', '/api/ledger/chains/orders/stats');
    assert.equal(sub.body.proof_count, 1);
  });

  it('anchors again after new events', async () => {
    await call(base, 'POST', '/api/v1/chains/orders/events', { entity_id: 'pkg-17', event_type: 'delivered' });
    const res = await call(base, 'POST', '/api/v1/chains/orders/submit-proof');
    assert.equal(res.body.proof_id, 'orders_2');
    const anchor = await call(base, 'GET', '/api/v1/chains/main/blocks/2');
    assert.equal(anchor.body.events[0].details.tree_size, 5);
    assert.equal(anchor.body.previous_hash, (await call(base, 'GET', '/api/v1/chains/main/blocks/1')).body.hash);
  });

  it('traces an entity across every chain, in time order', async () => {
    const res = await call(base, 'GET', '/api/ledger/entities/pkg-17/trace');
    assert.equal(res.status, 200);
    assert.equal(res.body.entity_id, 'pkg-17');
    assert.deepEqual(res.body.chains, ['orders', 'returns']);
    assert.deepEqual(
      res.body.events.map((e: any) => e.event_id),
      ['orders_1_0', 'orders_2_0', 'returns_1_0', 'orders_4_0'],
    );
    const times = res.body.events.map((e: any) => e.timestamp);
    assert.deepEqual(
      [...times].sort((a, b) => a - b),
      times,
    );
  });

  it('traces within one chain when chain_name is given', async () => {
    const res = await call(base, 'GET', '/api/v1/entities/pkg-17/trace?chain_name=returns');
    assert.deepEqual(res.body.chains, ['returns']);
    assert.deepEqual(
      res.body.events.map((e: any) => e.event_id),
      ['returns_1_0'],
    );
  });

  it('answers an empty trace for an entity never seen, and 404 for an unknown chain filter', async () => {
    const none = await call(base, 'GET', '/api/v1/entities/nobody/trace');
    assert.equal(none.status, 200);
    assert.deepEqual(none.body, { entity_id: 'nobody', chains: [], events: [], next_cursor: null }, 'the last page, and the first');
    assertError(await call(base, 'GET', '/api/ledger/entities/pkg-17/trace?chain_name=nope'), 404, /nope/);
  });

  it('answers every read identically on both prefixes', async () => {
    const hash = (await call(base, 'GET', '/api/v1/chains/orders/blocks/2')).body.hash;
    const paths = [
      '/chains',
      '/chains/orders/stats',
      '/chains/main/stats',
      '/chains/orders/blocks?limit=3&offset=1',
      '/chains/main/blocks',
      '/chains/orders/blocks/2',
      `/chains/orders/blocks/${hash}`,
      '/entities/pkg-17/trace',
      '/entities/pkg-17/trace?chain_name=orders',
    ];
    for (const path of paths) {
      const [a, b] = await Promise.all(PREFIXES.map((prefix) => call(base, 'GET', `${prefix}${path}`)));
      assert.equal(a!.status, 200, path);
      assert.equal(a!.text, b!.text, `${path} differs between prefixes`);
    }
  });
});

describe('Ledger group errors (docs/rules.md, "Errors")', () => {
  it('400 for a chain name outside [A-Za-z0-9_-], too long, or reserved', async () => {
    for (const name of ['bad%20name', 'semi%3Bcolon', 'dot.ted', 'x'.repeat(65), 'main', 'channel-sales']) {
      for (const prefix of PREFIXES) {
        assertError(await call(base, 'POST', `${prefix}/chains/${name}/create`), 400);
      }
    }
    const longest = await call(base, 'POST', `/api/v1/chains/${'x'.repeat(64)}/create`);
    assert.equal(longest.status, 201);
  });

  it('400 for a body that is not JSON', async () => {
    for (const prefix of PREFIXES) {
      const res = await call(base, 'POST', `${prefix}/chains/orders/events`, '{"entity_id": "x",');
      assertError(res, 400, /JSON/);
    }
  });

  it('400 for events added to the Main Chain and for a proof of the Main Chain', async () => {
    assertError(await call(base, 'POST', '/api/ledger/chains/main/events', { entity_id: 'e', event_type: 't' }), 400);
    assertError(await call(base, 'POST', '/api/v1/chains/main/submit-proof'), 400);
  });

  it('404 for an unknown chain on every chain route', async () => {
    for (const prefix of PREFIXES) {
      assertError(await call(base, 'POST', `${prefix}/chains/ghost/events`, { entity_id: 'e', event_type: 't' }), 404, /ghost/);
      assertError(await call(base, 'POST', `${prefix}/chains/ghost/submit-proof`), 404);
      assertError(await call(base, 'GET', `${prefix}/chains/ghost/stats`), 404);
      assertError(await call(base, 'GET', `${prefix}/chains/ghost/blocks`), 404);
      assertError(await call(base, 'GET', `${prefix}/chains/ghost/blocks/0`), 404);
    }
  });

  it('404 for an unknown route, with the contract body and the edge headers', async () => {
    for (const path of ['/api/ledger/nope', '/api/v1/chains/orders', '/nothing/here', '/']) {
      assertError(await call(base, 'GET', path), 404);
    }
    assertError(await call(base, 'DELETE', '/api/v1/chains/orders/create'), 404);
  });

  it('422 for a bad limit or offset', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'offset=-1', 'offset=x', 'resolve_cid=maybe', 'order=up']) {
      const res = await call(base, 'GET', `/api/ledger/chains/orders/blocks?${query}`);
      assertError(res, 422);
      assert.equal(res.body.detail[0].loc[0], 'query', query);
      assert.equal(res.body.detail[0].loc[1], query.split('=')[0], query);
    }
    const ok = await call(base, 'GET', '/api/ledger/chains/orders/blocks?limit=100&offset=0');
    assert.equal(ok.status, 200);
  });

  it('422 for a missing or mistyped field, FastAPI style', async () => {
    const missing = await call(base, 'POST', '/api/v1/chains/orders/events', { event_type: 'x' });
    assertError(missing, 422);
    assert.deepEqual(missing.body.detail, [{ loc: ['body', 'entity_id'], msg: 'Required', type: 'missing' }]);
    const empty = await call(base, 'POST', '/api/v1/chains/orders/events');
    assertError(empty, 422);
    const typed = await call(base, 'POST', '/api/ledger/chains/orders/events', { entity_id: 'e', event_type: 't', details: 'text' });
    assertError(typed, 422);
    assert.deepEqual(typed.body.detail[0].loc, ['body', 'details']);
    const alias = await call(base, 'POST', '/api/ledger/chains/orders/events', { entity_id: 'e', event_type: 'a', event: 'b' });
    assertError(alias, 422);
    const notObject = await call(base, 'POST', '/api/ledger/chains/orders/events', [1, 2]);
    assertError(notObject, 422);
  });

  it('echoes a client X-Request-ID that is a UUID, and replaces one that is not', async () => {
    const mine = '3f2c1e8a-9b7d-4c6e-8a5f-1d2e3c4b5a69';
    const echoed = await call(base, 'GET', '/api/v1/chains', undefined, { 'X-Request-ID': mine });
    assert.equal(echoed.headers.get('x-request-id'), mine);
    const failed = await call(base, 'GET', '/api/v1/chains/ghost/stats', undefined, { 'X-Request-ID': mine });
    assert.equal(failed.body.request_id, mine);
    const replaced = await call(base, 'GET', '/api/v1/chains', undefined, { 'X-Request-ID': 'not-a-uuid' });
    assert.match(replaced.headers.get('x-request-id') ?? '', UUID);
  });
});
