/**
 * The local journal of acknowledged transactions against DynamoDB Local: what is journaled before the
 * answer, and what a replay puts back. A lost commit is made by deleting what a transaction wrote (what
 * DynamoDB Local does when it is killed a moment after answering; the reliability suite kills it for real).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteCommand, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoBaseClient, createDynamoClient, journalDynamoTransactions } from '#shared/storage/client';
import { journalTransactions, replayJournal } from '#shared/storage/journal';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';
import { removeDir, tempDataDir } from '#test/support/stack';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

let storage: TestDynamo;
const dir = tempDataDir('journal');

before(async () => {
  storage = await startTestDynamo('journal');
});

after(async () => {
  journalDynamoTransactions(undefined);
  await storage?.stop();
  removeDir(dir);
});

describe('Local journal of acknowledged transactions', () => {
  it('journals each transaction before it is answered, and a replay restores one that was lost, once', async () => {
    journalTransactions(dir);
    const options = { region: 'us-east-1', endpoint: storage.endpoint };
    const client = createDynamoClient(options);
    const put = (pk: string, extra: Record<string, unknown> = {}) =>
      client.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: 'ledger', Item: { pk, sk: 'X', data: Buffer.from([1, 2, 3]), ...extra }, ConditionExpression: 'attribute_not_exists(pk)' } },
          ],
        }),
      );
    await put('J#kept');
    await put('J#lost', { note: 'acknowledged, then lost' });
    const files = readdirSync(dir);
    assert.equal(files.length, 1);
    assert.equal(readFileSync(join(dir, files[0]!), 'utf8').trim().split('\n').length, 2, 'both journaled by the time they were answered');
    // DynamoDB Local comes back without the last commit; the journal also ends in a line cut short.
    await client.send(new DeleteCommand({ TableName: 'ledger', Key: { pk: 'J#lost', sk: 'X' } }));
    appendFileSync(join(dir, files[0]!), '{"t":1,"items":[{"Put"');
    const report = await replayJournal(dir, createDynamoBaseClient(options));
    assert.deepEqual(report, { entries: 2, replayed: 1, failed: 0 });
    const back = (await client.send(new GetCommand({ TableName: 'ledger', Key: { pk: 'J#lost', sk: 'X' }, ConsistentRead: true }))).Item;
    assert.equal(back?.note, 'acknowledged, then lost');
    assert.deepEqual([...(back!.data as Uint8Array)], [1, 2, 3], 'binary values survive the journal');
    assert.deepEqual(readdirSync(dir), [], 'the journal is cleared once replayed');
    assert.deepEqual(await replayJournal(dir, createDynamoBaseClient(options)), { entries: 0, replayed: 0, failed: 0 });
  });
});
