/**
 * The local stand-in for the stream's event source mapping (infra/local/stream-poller.ts) keeps the cloud mapping's
 * promises, on DynamoDB Local's real stream: a batch is taken up again from the record its handler names failed, and
 * a batch that keeps failing is passed over after its retries rather than stopping every later push.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BatchWriteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { RETRY_ATTEMPTS, type StreamPoller, startStreamPoller } from '#infra/local/stream-poller';
import { createDynamoBaseClient, localCredentials } from '#shared/storage/client';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';

interface StreamRecord {
  dynamodb: { SequenceNumber: string; Keys: { pk: { S: string } } };
}

let dynamo: TestDynamo;
before(async () => {
  dynamo = await startTestDynamo('stream-poller');
});
after(async () => {
  await dynamo?.stop();
});

/** A poller on the test's ledger table whose handler is `handle`, and a way to write items to the table. */
async function poll(handle: (records: StreamRecord[]) => Promise<unknown>, discards: string[] = []) {
  const admin = createDynamoBaseClient(dynamo.options);
  const poller: StreamPoller = await startStreamPoller({
    admin,
    region: dynamo.options.region,
    endpoint: dynamo.endpoint,
    credentials: localCredentials(dynamo.accessKeyId),
    tableName: dynamo.tables.ledger,
    intervalMs: 50,
    handler: async (event) => handle(event.Records as StreamRecord[]),
    onDiscard: (message) => discards.push(message),
  });
  const item = (pk: string) => ({ pk: { S: pk }, sk: { S: 'S' } });
  return {
    poller,
    async writeTogether(pks: string[]) {
      await admin.send(new BatchWriteItemCommand({ RequestItems: { [dynamo.tables.ledger]: pks.map((pk) => ({ PutRequest: { Item: item(pk) } })) } }));
      poller.nudge();
    },
    async write(pk: string) {
      await admin.send(new PutItemCommand({ TableName: dynamo.tables.ledger, Item: item(pk) }));
      poller.nudge();
    },
    async stop() {
      await poller.stop();
      admin.destroy();
    },
  };
}

async function until(done: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the local stream poller, as the cloud mapping', () => {
  it('takes a batch up again from the first record its handler names in batchItemFailures, and only from there', async () => {
    const batches: string[][] = [];
    let failedOnce = false;
    const p = await poll(async (records) => {
      batches.push(records.map((r) => r.dynamodb.Keys.pk.S));
      const third = records.find((r) => r.dynamodb.Keys.pk.S === 'named-3');
      if (third && !failedOnce) {
        failedOnce = true;
        return { batchItemFailures: [{ itemIdentifier: third.dynamodb.SequenceNumber }] };
      }
      return { batchItemFailures: [] };
    });
    try {
      await p.writeTogether(['named-1', 'named-2', 'named-3', 'named-4', 'named-5']);
      const seen = () => batches.flat();
      await until(() => seen().filter((pk) => pk === 'named-3').length === 2 && seen().includes('named-5'), 'named-3 again');
      await new Promise((r) => setTimeout(r, 300));
      const count = (pk: string) => seen().filter((s) => s === pk).length;
      assert.equal(count('named-3'), 2, `named-3 again, after its failure: ${JSON.stringify(batches)}`);
      const again = batches.find((b, i) => i > 0 && b[0] === 'named-3');
      assert.ok(again, `the batch taken up again starts at the record named: ${JSON.stringify(batches)}`);
      assert.equal(count('named-1'), 1, 'what came before it is not pushed again');
      assert.equal(count('named-2'), 1, 'what came before it is not pushed again');
      for (const pk of ['named-4', 'named-5']) assert.ok(count(pk) >= 1, `${pk} delivered`);
    } finally {
      await p.stop();
    }
  });

  it('takes the whole batch up again when its handler names any failure that is no record of it, as Lambda reads it (a review)', async () => {
    const batches: string[][] = [];
    const p = await poll(async (records) => {
      batches.push(records.map((r) => r.dynamodb.Keys.pk.S));
      // One record of the batch named, and one that is none: the whole batch again, not from the one named.
      const last = records.at(-1)!.dynamodb.SequenceNumber;
      return batches.length === 1 ? { batchItemFailures: [{ itemIdentifier: last }, { itemIdentifier: 'no such record' }] } : { batchItemFailures: [] };
    });
    try {
      await p.writeTogether(['whole-1', 'whole-2']);
      await until(() => batches.flat().filter((pk) => pk === 'whole-1').length === 2, 'the batch again');
      assert.deepEqual(batches[1]?.[0], 'whole-1', 'from its first record');
    } finally {
      await p.stop();
    }
  });

  it(`passes a batch that always fails over after ${RETRY_ATTEMPTS} retries, says so, and delivers what follows it`, async () => {
    const tries: string[] = [];
    const discards: string[] = [];
    const p = await poll(async (records) => {
      const pks = records.map((r) => r.dynamodb.Keys.pk.S);
      tries.push(...pks);
      if (pks.includes('poison')) throw new Error('this record cannot be pushed');
      return { batchItemFailures: [] };
    }, discards);
    try {
      await p.write('poison');
      await until(() => discards.length === 1, 'the batch passed over');
      await p.write('after-poison');
      await until(() => tries.includes('after-poison'), 'the record after the poison batch');
      assert.equal(tries.filter((pk) => pk === 'poison').length, RETRY_ATTEMPTS + 1, 'its first try and its retries');
      assert.match(discards[0]!, /a batch of 1 records .* failed 4 times and was passed over.*this record cannot be pushed/);
    } finally {
      await p.stop();
    }
  });
});
