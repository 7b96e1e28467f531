/**
 * The compiled main that binds DynamoDB Local to 127.0.0.1 (infra/local/java) is its source's: a change to the
 * .java without `npm run build:dynamodb-launcher` would leave the stack running the old class. javac's output is
 * the same bytes for the same source and compiler (17 built the kept class); with another javac, or none (a Java
 * runtime only), there is nothing to compare with.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { ROOT } from '#infra/bundling';
import { DataDirInUseError, startDynamoDbLocal } from '#infra/local/dynamodb-local';

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
  // On disk, to see which database the index is in: the one under the stack's access key (the main had indexed a
  // database named "shared" of its own, and said "indexed", once DynamoDB Local ran without -sharedDb).
  const dynamo = await startDynamoDbLocal({ dataDir: dir });
  try {
    assert.equal(dynamo.streamsIndexed, true);
    assert.ok(readFileSync(join(dir, `${dynamo.accessKeyId}_us-east-1.db`)).includes('us_by_stream'), "the index is in the key's database");
    assert.deepEqual(
      readdirSync(dir).filter((name) => name.endsWith('.db') && !name.startsWith(dynamo.accessKeyId)),
      [],
      'no database of another name',
    );
    const { DynamoDBClient, CreateTableCommand, PutItemCommand } = await import('@aws-sdk/client-dynamodb');
    const { DynamoDBStreamsClient, DescribeStreamCommand, GetShardIteratorCommand, GetRecordsCommand } = await import('@aws-sdk/client-dynamodb-streams');
    const config = { endpoint: dynamo.endpoint, region: 'us-east-1', credentials: { accessKeyId: dynamo.accessKeyId, secretAccessKey: 'local' } };
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

it('keeps its database under an access key of its own: any other key sees an empty one; the key and the data last across starts; a -sharedDb database is taken over once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ddbl-key-'));
  const { DynamoDBClient, CreateTableCommand, ListTablesCommand } = await import('@aws-sdk/client-dynamodb');
  const tablesOf = async (endpoint: string, accessKeyId: string) => {
    const db = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId, secretAccessKey: 'x' } });
    try {
      return (await db.send(new ListTablesCommand({}))).TableNames ?? [];
    } finally {
      db.destroy();
    }
  };
  const notices: string[] = [];
  const start = () => startDynamoDbLocal({ dataDir: dir, region: 'us-east-1', onNotice: (m) => notices.push(m) });
  try {
    let dynamo = await start();
    const key = dynamo.accessKeyId;
    assert.match(key, /^[0-9A-F]{40}$/);
    assert.equal(statSync(join(dir, 'access-key')).mode & 0o777, 0o600);
    const db = new DynamoDBClient({ endpoint: dynamo.endpoint, region: 'us-east-1', credentials: { accessKeyId: key, secretAccessKey: 'x' } });
    await db.send(
      new CreateTableCommand({
        TableName: 'kept',
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      }),
    );
    db.destroy();
    assert.deepEqual(await tablesOf(dynamo.endpoint, key), ['kept']);
    assert.deepEqual(await tablesOf(dynamo.endpoint, 'local'), [], 'the key every caller used with -sharedDb');
    await dynamo.stop();

    dynamo = await start();
    assert.equal(dynamo.accessKeyId, key, 'the same key at the next start');
    assert.deepEqual(await tablesOf(dynamo.endpoint, key), ['kept']);
    await dynamo.stop();

    // The layout of a data dir made before: one database every caller shared, and no key yet.
    renameSync(join(dir, `${key}_us-east-1.db`), join(dir, 'shared-local-instance.db'));
    rmSync(join(dir, 'access-key'));
    for (const name of readdirSync(dir)) if (name.endsWith('.db') && name !== 'shared-local-instance.db') rmSync(join(dir, name));
    dynamo = await start();
    assert.notEqual(dynamo.accessKeyId, key, 'a key of its own made');
    assert.deepEqual(await tablesOf(dynamo.endpoint, dynamo.accessKeyId), ['kept'], 'the shared database is now under it');
    assert.deepEqual(await tablesOf(dynamo.endpoint, 'local'), []);
    assert.ok(!existsSync(join(dir, 'shared-local-instance.db')));
    assert.match(notices.join('\n'), /kept under this data dir's own access key from now on/);
    await dynamo.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('runs one DynamoDB Local on a data dir at a time: a second JVM is refused the data dir its lock holds, however the two were started', async () => {
  // Two JVMs on one SQLite file each wrote into it (npm start &, then npm run keys at once, before the stack had written
  // its pid file): a key made then was lost (newcomer pass, 2026-12-07). The lock is the JVM's own, let go when it ends.
  const dir = mkdtempSync(join(tmpdir(), 'ddb-lock-'));
  const first = await startDynamoDbLocal({ dataDir: dir });
  try {
    // As if the first had not written its pid file yet: only the JVM's own lock stands between them.
    rmSync(join(dir, 'dynamodb-local.pid'), { force: true });
    const second = await startDynamoDbLocal({ dataDir: dir }).catch((error: unknown) => error);
    assert.ok(second instanceof DataDirInUseError, String(second));
    assert.match((second as Error).message, /data dir .* is in use by another DynamoDB Local/);
    // A start that may wait (npm start's, for a local command's) goes on once the holder lets go.
    const notices: string[] = [];
    const waiting = startDynamoDbLocal({ dataDir: dir, waitForHolderMs: 30_000, onNotice: (line) => notices.push(line) });
    for (const until = Date.now() + 20_000; notices.length === 0 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
    assert.match(notices.join('\n'), /in use by another DynamoDB Local: waiting up to \d+ s for it/);
    await first.stop();
    const third = await waiting;
    await third.stop();
  } finally {
    await first.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

it('ends with the process that started it, even killed while DynamoDB Local starts: no JVM is left holding the data dir', async () => {
  // A launcher killed with SIGKILL before its JVM listened left a JVM no later start could find, holding the data
  // dir's lock: every later start on it failed (review, 2026-12-07). The JVM reads its standard input, a pipe from its
  // starter, and ends with it.
  const dir = mkdtempSync(join(tmpdir(), 'ddb-orphan-'));
  try {
    const script = `import { startDynamoDbLocal } from ${JSON.stringify(join(ROOT, 'infra/local/dynamodb-local.ts'))};
      await startDynamoDbLocal({ dataDir: ${JSON.stringify(dir)}, onSpawn: (h) => { process.stdout.write(h.pid + '\\n'); process.kill(process.pid, 'SIGKILL'); } });`;
    const starter = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    assert.equal(starter.signal, 'SIGKILL', starter.stderr);
    const jvm = Number(starter.stdout.trim());
    assert.ok(jvm > 0, starter.stdout);
    let alive = true;
    for (const until = Date.now() + 15_000; alive && Date.now() < until; ) {
      try {
        process.kill(jvm, 0);
        await new Promise((r) => setTimeout(r, 100));
      } catch {
        alive = false;
      }
    }
    assert.ok(!alive, 'the JVM outlived its starter');
    const next = await startDynamoDbLocal({ dataDir: dir });
    await next.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
