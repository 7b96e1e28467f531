/**
 * Every request's DynamoDB reads are capped (shared/read-allowance.ts): the service's own DynamoDB client counts the
 * items each read brings back, over a request handler that answers as DynamoDB would (no network).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { outsideDeadline } from '#shared/deadline';
import { ReadLimitExceededError, TooManyRequestsError } from '#shared/errors';
import { allowReads, chargeFetched, itemsRead, PAYLOAD_FETCH_ITEMS, withReadAllowance } from '#shared/read-allowance';
import { createDynamoClient } from '#shared/storage/client';

/**
 * A DynamoDB that answers every Query with `items` items, every GetItem with one, and counts what it was sent; each
 * item padded to `itemBytes` bytes when given, the answer's Content-Length its size as DynamoDB sends it.
 */
function fakeDynamo(items: number, itemBytes = 0) {
  const sent: string[] = [];
  const handler = {
    async handle(request: { headers: Record<string, string> }) {
      const target = String(request.headers['x-amz-target']).split('.')[1]!;
      sent.push(target);
      const item = (i: number) => ({ pk: { S: `P#${i}` }, sk: { S: 'X' }, ...(itemBytes ? { pad: { S: 'x'.repeat(itemBytes) } } : {}) });
      const body =
        target === 'Query'
          ? { Items: Array.from({ length: items }, (_, i) => item(i)), Count: items, ScannedCount: items }
          : target === 'GetItem'
            ? { Item: item(0) }
            : {};
      const bytes = Buffer.from(JSON.stringify(body));
      return { response: { statusCode: 200, headers: { 'content-type': 'application/x-amz-json-1.0', 'content-length': String(bytes.length) }, body: bytes } };
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
  };
  const client = createDynamoClient({ region: 'us-east-1', endpoint: 'http://dynamodb.test', requestHandler: handler as never, sign: false });
  return { client, sent };
}

const query = new QueryCommand({ TableName: 't', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'P' } });

describe("a request's reads are capped", () => {
  it('counts the items each read brings back, refuses the read that would go past the cap, and sends no read after it', async () => {
    const { client, sent } = fakeDynamo(40);
    const refused = await withReadAllowance(100, async () => {
      await client.send(query);
      await client.send(query);
      assert.equal(itemsRead(), 80);
      await client.send(new GetCommand({ TableName: 't', Key: { pk: 'P#0', sk: 'X' } }));
      assert.equal(itemsRead(), 81);
      // The third page takes the request to 121: it fails, and nothing more is read for it.
      const third = await client.send(query).catch((error: unknown) => error);
      const after = await client.send(query).catch((error: unknown) => error);
      return { third, after };
    });
    assert.ok(refused.third instanceof ReadLimitExceededError, String(refused.third));
    assert.equal(refused.third.statusCode, 422);
    assert.match(refused.third.message, /more than 100 items from storage.*ask for less/);
    assert.ok(refused.after instanceof ReadLimitExceededError);
    assert.deepEqual(sent, ['Query', 'Query', 'GetItem', 'Query'], 'the read after the cap was never sent');
  });

  it('counts a large answer by its size, one per started 4 KB, as DynamoDB bills reads: a few whole blocks are not a few items (red team)', async () => {
    const { client } = fakeDynamo(3, 40_000);
    await withReadAllowance(100, async () => {
      await client.send(query);
      // 3 items of 40 KB: about 117 KB, 29 units, not 3.
      assert.ok(itemsRead() >= 29 && itemsRead() <= 30, `${itemsRead()} counted`);
      await client.send(new GetCommand({ TableName: 't', Key: { pk: 'P#0', sk: 'X' } }));
      assert.ok(itemsRead() >= 39 && itemsRead() <= 40, `${itemsRead()} counted after one 40 KB item`);
      await client.send(query);
      await client.send(query);
      assert.ok(itemsRead() >= 97, `${itemsRead()} counted after three pages and an item`);
      await assert.rejects(client.send(query), ReadLimitExceededError, 'a fourth page of blocks goes past 100: refused');
    });
    // Small items still count one each.
    const small = fakeDynamo(40);
    await withReadAllowance(100, async () => {
      await small.client.send(query);
      assert.equal(itemsRead(), 40);
    });
  });

  it('counts no writes, and nothing outside a request or in work that serves later requests (a chain queue)', async () => {
    const { client } = fakeDynamo(400);
    await withReadAllowance(100, async () => {
      for (let i = 0; i < 5; i += 1) await client.send(new PutCommand({ TableName: 't', Item: { pk: `P#${i}`, sk: 'X' } }));
      assert.equal(itemsRead(), 0);
      // Started by this request, serving others: outside its allowance.
      await outsideDeadline(async () => {
        await client.send(query);
        assert.equal(itemsRead(), 0);
      });
      await assert.rejects(client.send(query), ReadLimitExceededError, 'the request itself is still capped');
    });
    await client.send(query);
    await client.send(query);
  });

  it('keeps two requests in one process apart', async () => {
    const { client } = fakeDynamo(60);
    const results = await Promise.allSettled([
      withReadAllowance(100, async () => {
        await client.send(query);
        await client.send(query);
      }),
      withReadAllowance(100, async () => {
        await client.send(query);
        return itemsRead();
      }),
    ]);
    assert.equal(results[0].status, 'rejected');
    assert.deepEqual(results[1], { status: 'fulfilled', value: 60 }, "the other request's reads are its own");
  });

  it('lets a route that must read more by what it is (an audit of a whole chain) raise its own allowance, and no other request', async () => {
    const { client } = fakeDynamo(400);
    await withReadAllowance(100, async () => {
      allowReads(1_000);
      await client.send(query);
      await client.send(query);
      assert.equal(itemsRead(), 800);
    });
    await withReadAllowance(100, async () => {
      await assert.rejects(client.send(query), ReadLimitExceededError);
    });
  });

  it("pays for each further allowance from the caller's budget before reading it, once for reads sent together; a spent budget is the limiter's 429 (red team)", async () => {
    const { client, sent } = fakeDynamo(20);
    let payments = 0;
    const budget = 5;
    const topUp = async () => {
      payments += 1;
      if (payments >= budget) throw new TooManyRequestsError(30);
    };
    const outcome = await withReadAllowance(20, async () => {
      allowReads(1_000, topUp, 100);
      await client.send(query);
      assert.equal(payments, 0, 'its own allowance first');
      // Four reads sent together past it: one payment for all of them (each had paid its own), the debt paid before the next.
      await Promise.all(Array.from({ length: 4 }, () => client.send(query)));
      assert.equal(payments, 1);
      assert.equal(itemsRead(), 100);
      return client.send(query).catch((error: unknown) => error);
    });
    assert.ok(outcome instanceof TooManyRequestsError, `${(outcome as Error)?.name}: ${(outcome as Error)?.message} ${JSON.stringify(outcome)}`);
    assert.equal(outcome.statusCode, 429, 'the client is told 429, not a 500 or a retry');
    assert.equal(payments, budget);
    assert.equal(sent.length, 5, 'the read it could not pay for was never sent');
  });

  it("never lets a request read more than a whole minute of its caller's budget could pay for: past it, the 422 that says so", async () => {
    const { client } = fakeDynamo(20);
    let payments = 0;
    const outcome = await withReadAllowance(20, async () => {
      allowReads(1_000, async () => void (payments += 1), 3);
      for (let page = 0; page < 3; page += 1) await client.send(query);
      return client.send(query).catch((error: unknown) => error);
    });
    assert.ok(outcome instanceof ReadLimitExceededError, String(outcome));
    assert.match(outcome.message, /more than 60 items/);
    assert.equal(payments, 2, 'three allowances: its own and two paid');
  });

  it('prices an off-chain payload fetched at PAYLOAD_FETCH_ITEMS at least, its bytes past that (red team: 1,000 small payloads for 430 items)', async () => {
    await withReadAllowance(10_000, async () => {
      chargeFetched(100);
      assert.equal(itemsRead(), PAYLOAD_FETCH_ITEMS);
      chargeFetched(1_000_000);
      assert.equal(itemsRead(), PAYLOAD_FETCH_ITEMS + 245);
    });
    // A request's default allowance (10,000) now fetches at most 625 payloads, however small.
    const refused = await withReadAllowance(10_000, async () => {
      for (let i = 0; i < 1_000; i += 1) chargeFetched(200);
    }).catch((e: unknown) => e);
    assert.ok(refused instanceof ReadLimitExceededError);
  });
});
