/**
 * Whether a DynamoDB Local's writes grow dearer with every stream record it holds: one DynamoDB Local in memory (as the
 * test run shares one), then LOADS times a fresh stack over it writing the same 40 batches of 99 events to 4 new chains;
 * prints the CPU the JVM spent on each load, and on 20 s idle before and after. Unindexed stream records
 * (infra/local/java/LoopbackDynamoDbLocal.java) made each load dearer than the last: 4.4 s, 9.1 s, 14.8 s, 27.1 s,
 * 33.2 s, 67.6 s here; indexed, 3.8-5.2 s each. DROP=1 deletes each load's tables after it (it did not help: the
 * stream records outlive their tables).
 *
 *   node --import tsx bench/probes/stream-scan.ts
 */
import { readFileSync } from 'node:fs';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startDynamoDbLocal } from '#infra/local/dynamodb-local';
import { removeDir, startStack, stopAndRemove, tempDataDir } from '#test/support/stack';

const LOADS = Number(process.env.LOADS ?? 6);
const jvmMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const dir = tempDataDir('stream-scan');
const dynamo = await startDynamoDbLocal({ dataDir: dir, inMemory: true });
console.log(`DynamoDB Local, stream records indexed: ${dynamo.streamsIndexed}`);
process.env.LEDGER_TEST_DYNAMODB = dynamo.endpoint;
process.env.LEDGER_TEST_DYNAMODB_KEY = dynamo.accessKeyId;
const db = new DynamoDBClient({ endpoint: dynamo.endpoint, region: 'us-east-1', credentials: { accessKeyId: dynamo.accessKeyId, secretAccessKey: 'local' } });
const idle = await startStack();

async function idleFor(label: string): Promise<void> {
  await sleep(3_000);
  const before = jvmMs(dynamo.pid);
  await sleep(20_000);
  console.log(`${label}: the JVM ${jvmMs(dynamo.pid) - before} ms of CPU in 20 s idle (one idle stack)`);
}

try {
  await idleFor('fresh');
  for (let load = 0; load < LOADS; load += 1) {
    const stack = await startStack();
    for (let c = 0; c < 4; c += 1) await fetch(`${stack.url}/api/v1/chains/c${c}/create`, { method: 'POST' });
    const before = jvmMs(dynamo.pid);
    const started = performance.now();
    for (let i = 0; i < 40; i += 1) {
      const events = Array.from({ length: 99 }, (_, j) => ({ entity_id: `e${i}-${j}`, event_type: 't', details: { i, j } }));
      const res = await fetch(`${stack.url}/api/v1/chains/c${i % 4}/events/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
      if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
    }
    console.log(`load ${load + 1}: the JVM ${jvmMs(dynamo.pid) - before} ms of CPU, ${Math.round(performance.now() - started)} ms`);
    await stopAndRemove(stack);
    if (process.env.DROP === '1') for (const table of Object.values(stack.tables)) await db.send(new DeleteTableCommand({ TableName: table }));
  }
  await idleFor(`after ${LOADS} loads`);
} finally {
  await stopAndRemove(idle);
  db.destroy();
  await dynamo.stop();
  removeDir(dir);
}
