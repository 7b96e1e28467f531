/**
 * What DynamoDB Local charges the two ways a round's records can be written: 99 records of about 1 KB (in the
 * by-entity index, as block records are) in one `TransactWriteItems`, or in four `BatchWriteItem`s of 25 at once
 * (what a leader writes for appends it sealed from other instances), and the same four sent one after another.
 * On disk (`-dbPath`, what `npm run bench` runs) and in memory. Alternating, five rounds each after a warm-up;
 * prints each way's p50 in ms for 99 records.
 */
import { randomBytes } from 'node:crypto';
import { BatchWriteCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { startDynamoDbLocal } from '#infra/local/dynamodb-local';
import { createDynamoBaseClient, createDynamoClient } from '#shared/storage/client';
import { allTableSpecs, ensureTables } from '#shared/storage/tables';
import { removeDir, tempDataDir } from '#test/support/stack';
import { percentile } from '../limits.ts';

const p50 = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return percentile(sorted, 50);
};
const RECORDS = 99;
let n = 0;
const record = () => {
  n += 1;
  return {
    pk: `HASH#${randomBytes(32).toString('hex')}`,
    sk: `BLOCK#${n}`,
    gsi_entity_pk: `ENTITY#probe#e-${n % 50}`,
    gsi_entity_sk: `${String(n).padStart(12, '0')}`,
    body: 'x'.repeat(900),
  };
};

for (const inMemory of [false, true]) {
  const dir = tempDataDir('write-paths');
  const dynamo = await startDynamoDbLocal({ dataDir: dir, inMemory });
  try {
    const options = { region: 'us-east-1', endpoint: dynamo.endpoint, accessKeyId: dynamo.accessKeyId };
    await ensureTables(
      createDynamoBaseClient(options),
      allTableSpecs({ ledger: 'ledger', registry: 'registry', rateLimits: 'ratelimits', connections: 'connections' }),
    );
    const client = createDynamoClient(options);
    const transaction = async () => {
      await client.send(new TransactWriteCommand({ TransactItems: Array.from({ length: RECORDS }, () => ({ Put: { TableName: 'ledger', Item: record() } })) }));
    };
    const chunks = () => {
      const items = Array.from({ length: RECORDS }, record);
      return Array.from({ length: Math.ceil(RECORDS / 25) }, (_, i) => items.slice(i * 25, i * 25 + 25));
    };
    const batch = (chunk: Record<string, unknown>[]) =>
      client.send(new BatchWriteCommand({ RequestItems: { ledger: chunk.map((Item) => ({ PutRequest: { Item } })) } }));
    const parallel = async () => {
      await Promise.all(chunks().map(batch));
    };
    const serial = async () => {
      for (const chunk of chunks()) await batch(chunk);
    };
    const ways = { 'one TransactWriteItems': transaction, 'four BatchWriteItems at once': parallel, 'four BatchWriteItems in turn': serial };
    const times: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
    for (let round = 0; round < 7; round++) {
      for (const [name, way] of Object.entries(ways)) {
        const t0 = performance.now();
        await way();
        if (round >= 2) times[name]!.push(performance.now() - t0);
      }
    }
    console.log(
      `${inMemory ? 'in memory' : 'on disk  '}: ${Object.entries(times)
        .map(([k, v]) => `${k} ${p50(v).toFixed(0)} ms`)
        .join(', ')}`,
    );
  } finally {
    await dynamo.stop();
    removeDir(dir);
  }
}
