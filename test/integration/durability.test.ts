/**
 * Stop the service and start it again on the same data dir: every chain and block is still there and
 * still links, and appends continue where they stopped. A round whose records DynamoDB refused is
 * finished by the scheduled sweep, not left to expire with its pending appends.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { hashBlock } from '#shared/ledger/hashing';
import { appendWithRecordsRefused } from '#test/support/refused-round';
import { call, isAlive, removeDir, startStack, stopAndRemove, tempDataDir } from '#test/support/stack';

const dataDir = tempDataDir('durable');
after(() => removeDir(dataDir));

async function snapshot(base: string) {
  const chains = (await call(base, 'GET', '/api/v1/chains')).body;
  const blocks: Record<string, any[]> = {};
  for (const chain of chains) {
    blocks[chain.name] = (await call(base, 'GET', `/api/v1/chains/${chain.name}/blocks?limit=100`)).body.blocks;
  }
  return { chains, blocks };
}

describe('Durability across a restart', () => {
  it('keeps every chain and block, linked, after stop and start on the same data dir', async () => {
    // Its own DynamoDB Local on the data dir: what is tested is what the JVM keeps on disk, and that it stops.
    const first = await startStack({ dataDir, ownDynamoDb: true });
    let before;
    try {
      for (const name of ['orders', 'returns']) {
        assert.equal((await call(first.url, 'POST', `/api/v1/chains/${name}/create`)).status, 201);
        for (let i = 0; i < 5; i += 1) {
          await call(first.url, 'POST', `/api/v1/chains/${name}/events`, { entity_id: `e${i}`, event_type: 'made', details: { i } });
        }
      }
      assert.equal((await call(first.url, 'POST', '/api/v1/chains/orders/submit-proof')).status, 200);
      before = await snapshot(first.url);
    } finally {
      assert.equal(await first.stop(), 0, 'the service exits cleanly on SIGTERM');
    }
    assert.ok(first.dynamoPid && !isAlive(first.dynamoPid), 'DynamoDB Local stopped with the service');

    const second = await startStack({ dataDir, ownDynamoDb: true });
    try {
      assert.doesNotMatch(second.output(), /Created tables/, 'the tables were already there');
      const after = await snapshot(second.url);
      assert.deepEqual(after, before);
      for (const blocks of Object.values(after.blocks)) {
        blocks.forEach((b, i) => {
          assert.equal(hashBlock(b), b.hash);
          if (i > 0) assert.equal(b.previous_hash, blocks[i - 1].hash);
        });
      }
      const appended = await call(second.url, 'POST', '/api/v1/chains/orders/events', { entity_id: 'e9', event_type: 'late' });
      assert.equal(appended.body.event_id, 'orders_6_0');
      const block = (await call(second.url, 'GET', '/api/v1/chains/orders/blocks/6')).body;
      assert.equal(block.previous_hash, before.blocks.orders!.at(-1).hash);
    } finally {
      await second.stop();
    }
  });

  it('runs the sweep on its schedule: a round whose records DynamoDB refused gets them before its pending appends could expire', async () => {
    const stack = await startStack({ dataDir: tempDataDir('sweep'), env: { SVC_SWEEP_INTERVAL_MS: '500' } });
    let close: (() => void) | undefined;
    try {
      assert.equal((await call(stack.url, 'POST', '/api/v1/chains/orders/create')).status, 201);
      assert.equal((await call(stack.url, 'POST', '/api/v1/chains/orders/events', { entity_id: 'e', event_type: 'first' })).status, 200);
      // A writer whose round's records are refused: its commit lands, its caller is told it failed, and nobody
      // appends to the chain again. (With SVC_SWEEP_INTERVAL_MS=0 this test fails: nothing writes the record.)
      const refused = await appendWithRecordsRefused(
        { endpoint: stack.dynamoEndpoint, accessKeyId: stack.dynamoAccessKeyId, tableName: stack.tables.ledger, sweepRuns: true },
        'orders',
        'refused',
      );
      close = refused.close;
      const { repository } = refused;
      let head = await repository.getHead('orders');
      for (const end = Date.now() + 15_000; Date.now() < end && !head?.recentFlushed; ) {
        await new Promise((r) => setTimeout(r, 200));
        head = await repository.getHead('orders');
      }
      assert.equal(head?.recentFlushed, true, `the sweep finished the round:\n${stack.output().slice(-2_000)}`);
      assert.equal((await repository.getRecords('orders', [{ index: 2, hash: head!.headHash }], true)).size, 1, 'its record is written');
      const block = await call(stack.url, 'GET', '/api/v1/chains/orders/blocks/2');
      assert.equal(block.body.events?.[0]?.event_type, 'refused', block.text);
      assert.equal((await call(stack.url, 'GET', '/api/v1/chains/orders/verify')).body.valid, true);
    } finally {
      close?.();
      await stopAndRemove(stack);
    }
  });
});
