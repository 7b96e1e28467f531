/**
 * The compiled main that binds DynamoDB Local to 127.0.0.1 (infra/local/java) is its source's: a change to the
 * .java without `npm run build:dynamodb-launcher` would leave the stack running the old class. javac's output is
 * the same bytes for the same source and compiler (17 built the kept class); with another javac, or none (a Java
 * runtime only), there is nothing to compare with.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { ROOT } from '#infra/bundling';
import { startDynamoDbLocal } from '#infra/local/dynamodb-local';

const DIR = join(ROOT, 'infra', 'local', 'java');
const JAR = join(ROOT, 'node_modules', 'amplify-dynamodb-simulator', 'emulator', 'DynamoDBLocal.jar');

it('the kept LoopbackDynamoDbLocal.class is compiled from its source', (t) => {
  const version = spawnSync('javac', ['-version'], { encoding: 'utf8' });
  const major = /javac (\d+)/.exec(`${version.stdout}${version.stderr}`)?.[1];
  if (version.status !== 0 || major !== '17') return t.skip(`javac 17 is not here (${major ? `javac ${major}` : 'no javac'})`);
  const out = mkdtempSync(join(tmpdir(), 'javac-'));
  try {
    const built = spawnSync('javac', ['--release', '8', '-Xlint:-options', '-cp', JAR, '-d', out, join(DIR, 'LoopbackDynamoDbLocal.java')], {
      encoding: 'utf8',
    });
    assert.equal(built.status, 0, built.stderr);
    const classes = readdirSync(out).sort();
    assert.deepEqual(
      classes,
      readdirSync(DIR)
        .filter((name) => name.endsWith('.class'))
        .sort(),
      'the same classes are kept',
    );
    for (const name of classes)
      assert.ok(
        readFileSync(join(out, name)).equals(readFileSync(join(DIR, name))),
        `infra/local/java/${name} differs from its source: run npm run build:dynamodb-launcher`,
      );
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

it("indexes DynamoDB Local's stream records by stream before it listens, and its streams still answer", async () => {
  // Unindexed, every write to a table with a stream read every stream record of the last 24 hours, of every table:
  // a test run's shared DynamoDB Local took 4.4 s of CPU for 40 batches when fresh and 67.6 s after five such loads.
  const dir = mkdtempSync(join(tmpdir(), 'ddbl-'));
  const dynamo = await startDynamoDbLocal({ dataDir: dir, inMemory: true });
  try {
    assert.equal(dynamo.streamsIndexed, true);
    const { DynamoDBClient, CreateTableCommand, PutItemCommand } = await import('@aws-sdk/client-dynamodb');
    const { DynamoDBStreamsClient, DescribeStreamCommand, GetShardIteratorCommand, GetRecordsCommand } = await import('@aws-sdk/client-dynamodb-streams');
    const config = { endpoint: dynamo.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
    const db = new DynamoDBClient(config);
    const streams = new DynamoDBStreamsClient(config);
    const tables = ['one', 'two'];
    const arns: string[] = [];
    for (const name of tables) {
      const made = await db.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: 'PAY_PER_REQUEST',
          KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
          AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
          StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
        }),
      );
      arns.push(made.TableDescription!.LatestStreamArn!);
    }
    for (let i = 0; i < 6; i += 1) await db.send(new PutItemCommand({ TableName: tables[i % 2], Item: { pk: { S: `k${i}` } } }));
    for (const [t, arn] of arns.entries()) {
      const shards = (await streams.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription!.Shards!;
      const keys: string[] = [];
      for (const shard of shards) {
        const { ShardIterator } = await streams.send(
          new GetShardIteratorCommand({ StreamArn: arn, ShardId: shard.ShardId!, ShardIteratorType: 'TRIM_HORIZON' }),
        );
        const { Records } = await streams.send(new GetRecordsCommand({ ShardIterator }));
        keys.push(...(Records ?? []).map((r) => r.dynamodb!.Keys!.pk!.S!));
      }
      assert.deepEqual(keys, t === 0 ? ['k0', 'k2', 'k4'] : ['k1', 'k3', 'k5'], `table ${tables[t]}'s stream, in order`);
    }
    db.destroy();
    streams.destroy();
  } finally {
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
