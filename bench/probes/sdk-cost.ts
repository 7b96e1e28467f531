/**
 * What one `GetItem` costs the caller's CPU: through the service's own document client (its middlewares and
 * deadline-aware handler), through the SDK's plain document client, and as a bare HTTP request with no SDK (DynamoDB
 * Local checks no signature, so it is sent unsigned: SigV4 with a cached signing key would add some tens of µs).
 * One caller, sequential requests over DynamoDB Local in memory; three rounds.
 * `node --import tsx bench/probes/sdk-cost.ts`
 */
import http from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { startDynamoDbLocal } from '#infra/local/dynamodb-local';
import { createDynamoBaseClient, createDynamoClient } from '#shared/storage/client';
import { allTableSpecs, ensureTables } from '#shared/storage/tables';
import { removeDir, tempDataDir } from '#test/support/stack';

const ITEMS = 500;
const CALLS = 2_000;
const dir = tempDataDir('sdk-cost');
const dynamo = await startDynamoDbLocal({ dataDir: dir, inMemory: true });
const options = { region: 'us-east-1', endpoint: dynamo.endpoint, accessKeyId: dynamo.accessKeyId };
await ensureTables(
  createDynamoBaseClient(options),
  allTableSpecs({ ledger: 'ledger', registry: 'registry', rateLimits: 'ratelimits', connections: 'connections' }),
);
const ours = createDynamoClient(options);
const plain = DynamoDBDocumentClient.from(new DynamoDBClient({ ...options, credentials: { accessKeyId: dynamo.accessKeyId, secretAccessKey: 'local' } }));
const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
const { hostname, port } = new URL(dynamo.endpoint);
const key = (i: number) => ({ pk: `HASH#${i}`, sk: `BLOCK#${i}` });

function bare(i: number): Promise<unknown> {
  const body = JSON.stringify({ TableName: 'ledger', Key: { pk: { S: `HASH#${i}` }, sk: { S: `BLOCK#${i}` } }, ProjectionExpression: 'block_json' });
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: hostname,
        port,
        method: 'POST',
        path: '/',
        agent,
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'DynamoDB_20120810.GetItem',
          authorization: 'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00',
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

async function time(name: string, get: (i: number) => Promise<unknown>): Promise<void> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let k = 0; k < CALLS; k += 1) await get(k % ITEMS);
  const used = process.cpuUsage(cpu);
  console.log(
    `${name}: ${((used.user + used.system) / 1000 / CALLS).toFixed(3)} ms of CPU a request, ${((performance.now() - start) / CALLS).toFixed(3)} ms each`,
  );
}

try {
  for (let i = 0; i < ITEMS; i += 1) await ours.send(new PutCommand({ TableName: 'ledger', Item: { ...key(i), block_json: 'x'.repeat(500) } }));
  for (let round = 1; round <= 3; round += 1) {
    console.log(`round ${round}`);
    await time('  the service client', (i) => ours.send(new GetCommand({ TableName: 'ledger', Key: key(i), ProjectionExpression: 'block_json' })));
    await time('  the SDK document client', (i) => plain.send(new GetCommand({ TableName: 'ledger', Key: key(i), ProjectionExpression: 'block_json' })));
    await time('  bare HTTP, no SDK', bare);
  }
} finally {
  agent.destroy();
  await dynamo.stop();
  removeDir(dir);
}
