/**
 * The local journal of acknowledged writes against DynamoDB Local: what is journaled before the answer, and
 * what a replay puts back. A lost write is made by undoing it with journaling stopped (what DynamoDB Local
 * does when it is killed a moment after answering; the reliability suite kills it for real).
 */
import assert from 'node:assert/strict';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoBaseClient, createDynamoClient, journalDynamoWrites } from '#shared/storage/client';
import { journalWrites, replayJournal } from '#shared/storage/journal';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';
import { removeDir, tempDataDir } from '#test/support/stack';

let storage: TestDynamo;
let dir: string;
let run = 0;

before(async () => {
  storage = await startTestDynamo('journal');
});

beforeEach(() => {
  dir = tempDataDir(`journal-${(run += 1)}`);
});

after(async () => {
  journalDynamoWrites(undefined);
  await storage?.stop();
});

const options = () => storage.options;
const get = async (pk: string, sk = 'X') =>
  (await createDynamoClient(options()).send(new GetCommand({ TableName: storage.tables.ledger, Key: { pk, sk }, ConsistentRead: true }))).Item;
const journalLines = () => readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n').filter(Boolean));

describe('Local journal of acknowledged writes', () => {
  it('journals each transaction before it is answered, and a replay restores one that was lost, once', async () => {
    const stop = journalWrites(dir, storage.tables.ledger);
    const client = createDynamoClient(options());
    const put = (pk: string, extra: Record<string, unknown> = {}) =>
      client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: storage.tables.ledger,
                Item: { pk, sk: 'X', data: Buffer.from([1, 2, 3]), ...extra },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
          ],
        }),
      );
    await put('J#kept');
    await put('J#lost', { note: 'acknowledged, then lost' });
    const files = readdirSync(dir);
    assert.equal(files.length, 1);
    assert.equal(journalLines().length, 2, 'both journaled by the time they were answered');
    stop();
    // DynamoDB Local comes back without the last commit; the journal also ends in a line cut short.
    await client.send(new DeleteCommand({ TableName: storage.tables.ledger, Key: { pk: 'J#lost', sk: 'X' } }));
    appendFileSync(join(dir, files[0]!), '{"t":1,"items":[{"Put"');
    const report = await replayJournal(dir, createDynamoBaseClient(options()));
    assert.deepEqual(report, { entries: 2, replayed: 1, restored: 1, failed: 0 });
    const back = await get('J#lost');
    assert.equal(back?.note, 'acknowledged, then lost');
    assert.deepEqual([...(back!.data as Uint8Array)], [1, 2, 3], 'binary values survive the journal');
    assert.deepEqual(readdirSync(dir), [], 'the journal is cleared once replayed');
    assert.deepEqual(await replayJournal(dir, createDynamoBaseClient(options())), { entries: 0, replayed: 0, restored: 0, failed: 0 });
    removeDir(dir);
  });

  it('restores lost single-item and batch writes to the ledger table in order, and applies none twice', async () => {
    const stop = journalWrites(dir, storage.tables.ledger);
    const client = createDynamoClient(options());
    // An append's body (put if absent), the head's commit (an update on its version), a round's records (a batch).
    await client.send(
      new PutCommand({ TableName: storage.tables.ledger, Item: { pk: 'S#body', sk: 'X', drafts: 'one' }, ConditionExpression: 'attribute_not_exists(pk)' }),
    );
    await client.send(new PutCommand({ TableName: storage.tables.ledger, Item: { pk: 'S#head', sk: 'X', version: 1 } }));
    for (const version of [1, 2]) {
      await client.send(
        new UpdateCommand({
          TableName: storage.tables.ledger,
          Key: { pk: 'S#head', sk: 'X' },
          UpdateExpression: 'SET version = :next',
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: { ':v': version, ':next': version + 1 },
        }),
      );
    }
    await client.send(
      new BatchWriteCommand({
        RequestItems: {
          [storage.tables.ledger]: [
            { PutRequest: { Item: { pk: 'S#rec', sk: '1', body: 'a' } } },
            { PutRequest: { Item: { pk: 'S#rec', sk: '2', body: 'b' } } },
          ],
        },
      }),
    );
    // A counter (an unconditional ADD) is not journaled: applied again it would count twice.
    await client.send(
      new UpdateCommand({
        TableName: storage.tables.ledger,
        Key: { pk: 'S#count', sk: 'X' },
        UpdateExpression: 'ADD n :one',
        ExpressionAttributeValues: { ':one': 1 },
      }),
    );
    // A write to another table is not journaled either (only transactions are, there).
    await client.send(new PutCommand({ TableName: storage.tables.registry, Item: { pk: 'S#other', sk: 'X' } }));
    assert.equal(journalLines().length, 5, 'the body, the head put, two commits and the batch, each before its answer');
    stop();

    // DynamoDB Local comes back without the last commit and the batch.
    await client.send(
      new UpdateCommand({
        TableName: storage.tables.ledger,
        Key: { pk: 'S#head', sk: 'X' },
        UpdateExpression: 'SET version = :v',
        ExpressionAttributeValues: { ':v': 2 },
      }),
    );
    await client.send(new DeleteCommand({ TableName: storage.tables.ledger, Key: { pk: 'S#rec', sk: '1' } }));
    await client.send(new DeleteCommand({ TableName: storage.tables.ledger, Key: { pk: 'S#rec', sk: '2' } }));

    const report = await replayJournal(dir, createDynamoBaseClient(options()));
    // The body had landed: its condition fails, so it is not applied twice. The head's unconditional put is
    // written again, and both commits after it follow, in order, to the same end.
    assert.deepEqual(report, { entries: 5, replayed: 4, restored: 0, failed: 0 });
    assert.equal((await get('S#head'))?.version, 3, 'the lost commit is back, after the one before it');
    assert.equal((await get('S#rec', '1'))?.body, 'a');
    assert.equal((await get('S#rec', '2'))?.body, 'b');
    assert.equal((await get('S#body'))?.drafts, 'one');
    assert.equal((await get('S#count'))?.n, 1, 'the counter counted once');
    assert.deepEqual(readdirSync(dir), []);
    removeDir(dir);
  });

  it('leaves the journal a running process writes alone: a replay at start clears only earlier runs', async () => {
    const earlier = journalWrites(dir, storage.tables.ledger);
    const client = createDynamoClient(options());
    await client.send(new PutCommand({ TableName: storage.tables.ledger, Item: { pk: 'R#earlier', sk: 'X' } }));
    earlier();
    const current = journalWrites(dir, storage.tables.ledger);
    await client.send(new PutCommand({ TableName: storage.tables.ledger, Item: { pk: 'R#now', sk: 'X' } }));
    const report = await replayJournal(dir, createDynamoBaseClient(options()));
    assert.equal(report.entries, 1, "the earlier run's write only");
    await client.send(new PutCommand({ TableName: storage.tables.ledger, Item: { pk: 'R#after', sk: 'X' } }));
    const lines = journalLines();
    current();
    assert.ok(lines.length >= 2, 'this run still journals to a file that is there');
    assert.ok(lines.some((l) => l.includes('R#now')) && lines.some((l) => l.includes('R#after')));
    removeDir(dir);
  });
});
