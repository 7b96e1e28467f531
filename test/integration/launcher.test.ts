/**
 * `npm start` as a user meets it: clear messages instead of hangs, and nothing left running.
 */
import assert from 'node:assert/strict';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { startDynamoDbLocal } from '#infra/local/dynamodb-local';
import { freePort } from '#infra/local/ports';
import { startNpmCommand } from '#test/support/npm-command';
import { isLoopback, listeningSockets, processTree } from '#test/support/sockets';
import { call, dynamoConfigOf, expectStartFailure, isAlive, removeDir, startStack, tempDataDir } from '#test/support/stack';

describe('The local launcher (npm start)', () => {
  it('stops on a bad setting with a message naming it', async () => {
    const { code, output } = await expectStartFailure({ SVC_PORT: 'eighty' });
    assert.equal(code, 1);
    assert.match(output, /SVC_PORT/);
    assert.match(output, /eighty/);
  });

  it('npm run keys answers --help with its usage, and an unknown option with a plain message, not a stack trace', () => {
    const keys = (...args: string[]) =>
      spawnSync(process.execPath, ['bin/run.mjs', 'infra/local/keys.ts', ...args], { cwd: new URL('../../', import.meta.url).pathname, encoding: 'utf8' });
    const help = keys('--help');
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage:\n {2}npm run keys -- create --role/);
    const bogus = keys('list', '--bogus');
    assert.equal(bogus.status, 1);
    assert.match(bogus.stderr, /Unknown option '--bogus'[\s\S]*Usage:/);
    assert.doesNotMatch(bogus.stderr, /\n\s+at /, 'no stack trace');
  });

  it('says the port is in use instead of hanging', async () => {
    const port = await freePort();
    const blocker = createServer().listen(port, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    try {
      const dir = tempDataDir('busy');
      const { code, output } = await expectStartFailure({ SVC_PORT: String(port), SVC_DATA_DIR: dir });
      removeDir(dir);
      assert.equal(code, 1);
      assert.match(output, new RegExp(`port ${port}.*in use`, 'i'));
    } finally {
      blocker.close();
    }
  });

  it('says how to install Java when java is missing', async () => {
    const dir = tempDataDir('nojava');
    const { code, output } = await expectStartFailure({ PATH: '/nonexistent', SVC_DATA_DIR: dir });
    removeDir(dir);
    assert.equal(code, 1);
    assert.match(output, /Java was not found/);
    assert.match(output, /openjdk-17-jre-headless/);
  });

  it('waits for a stack starting on its data dir rather than start a DynamoDB Local beside it, and stops nothing', async () => {
    // What a stack holds while it starts: its DynamoDB Local on the data dir, run by a process still running (here,
    // this one), before the stack has written stack.json. \`npm run keys\` used to take that JVM for a killed launcher's
    // leftover and stop it; then it said so and gave up; one typed before the stack's JVM was up ran a second JVM on the
    // same file, and the key it made could be lost (newcomer pass, 2026-12-07).
    const dir = tempDataDir('starting');
    const jvm = await startDynamoDbLocal({ dataDir: join(dir, 'dynamodb') });
    let released = false;
    try {
      const keys = spawn(process.execPath, ['bin/run.mjs', 'infra/local/keys.ts', 'list'], {
        cwd: new URL('../../', import.meta.url).pathname,
        env: { ...process.env, SVC_DATA_DIR: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      keys.stderr.on('data', (chunk) => {
        stderr += chunk;
      });
      const exited = new Promise<number | null>((done) => keys.once('exit', (code) => done(code)));
      for (const until = Date.now() + 30_000; !/is run by another process/.test(stderr) && Date.now() < until; ) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.match(stderr, /DynamoDB Local on .* is run by another process, a stack starting or another command: waiting for it/);
      await new Promise((r) => setTimeout(r, 500));
      assert.ok(isAlive(jvm.pid), "the holder's JVM still runs while the command waits");
      await jvm.stop();
      released = true;
      // Its holder gone without a stack, the command goes on with a DynamoDB Local of its own, as before.
      assert.equal(await exited, 0, stderr);
    } finally {
      if (!released) await jvm.stop();
      removeDir(dir);
    }
  });

  it('listens on 127.0.0.1 only (the gateway, IPFS, DynamoDB Local, every function), and stops the JVM with it on SIGTERM', async () => {
    // A data dir every local user could enter (as `mkdir .data` makes it): the stack makes it its user's alone (red team).
    const parent = tempDataDir('launcher-modes');
    const dataDir = join(parent, 'data');
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const stack = await startStack({ ownDynamoDb: true, dataDir });
    try {
      assert.equal(statSync(dataDir).mode & 0o777, 0o700, 'the data dir');
      assert.equal(statSync(join(dataDir, 'stack.json')).mode & 0o777, 0o600, 'the file naming its ports');
      assert.ok(stack.dynamoPid && isAlive(stack.dynamoPid));
      // DynamoDB Local takes any credentials: another local user who finds its port (and signs with any key, as the
      // service's own `local` did) sees an empty database, not the stack's tables, where it could write an admin key.
      assert.equal(statSync(join(dataDir, 'dynamodb', 'access-key')).mode & 0o777, 0o600, 'the access key');
      const tablesSeenWith = async (accessKeyId: string) => {
        const client = new DynamoDBClient({ ...dynamoConfigOf(stack), credentials: { accessKeyId, secretAccessKey: 'x' } });
        try {
          return (await client.send(new ListTablesCommand({}))).TableNames ?? [];
        } finally {
          client.destroy();
        }
      };
      assert.deepEqual(await tablesSeenWith('local'), [], 'a stranger with the old shared key');
      assert.deepEqual(await tablesSeenWith('AKIAIOSFODNN7EXAMPLE'), [], 'a stranger with any key');
      assert.ok((await tablesSeenWith(stack.dynamoAccessKeyId)).includes(stack.tables.registry), "the data dir's own key sees the stack's tables");
      assert.equal((await call(stack.url, 'GET', '/api/ledger/health')).status, 200);
      // Every group's function started (its instances are the launcher's threads), then every socket the stack listens on.
      for (const path of ['/api/v1/chains', '/api/business/channels', '/api/admin/status', '/metrics', '/graphql?query=%7B__typename%7D'])
        assert.ok((await call(stack.url, 'GET', path)).status < 500, path);
      const listening = listeningSockets(processTree(stack.pid));
      // The probe sees what it must: the gateway's port, and DynamoDB Local's in the JVM (which listened on every interface).
      assert.ok(
        listening.some((s) => s.port === Number(new URL(stack.url).port)),
        JSON.stringify(listening),
      );
      assert.ok(
        listening.some((s) => s.pid === stack.dynamoPid && s.port === Number(new URL(stack.dynamoEndpoint).port)),
        JSON.stringify(listening),
      );
      assert.deepEqual(
        listening.filter((s) => !isLoopback(s.address)),
        [],
        'a socket reachable from outside the host',
      );
      // SVC_DYNAMODB_LOCAL_JIT's default: C1 only, which halved the JVM's CPU in a start and under a test run.
      const jvmArgs = readFileSync(`/proc/${stack.dynamoPid}/cmdline`, 'utf8').split('\0');
      assert.ok(jvmArgs.includes('-XX:TieredStopAtLevel=1'), jvmArgs.join(' '));
    } finally {
      assert.equal(await stack.stop(), 0);
      removeDir(parent);
    }
    assert.ok(!isAlive(stack.dynamoPid!), 'DynamoDB Local outlived the service');
  });

  it('stops everything when `npm start` itself is sent SIGTERM', async () => {
    const port = await freePort();
    const dir = tempDataDir('npm');
    const env = { ...process.env, SVC_PORT: String(port), SVC_DATA_DIR: dir, SVC_AUTH_ENABLED: 'true' };
    const started = startNpmCommand(['start', '--silent'], env);
    // A key made at once, as docs/settings.md has it (`npm start &`, then `npm run keys`): made in the stack's database,
    // whichever of the two claims the data dir first (newcomer pass: one key in three was lost to a second JVM).
    const creating = spawn(process.execPath, ['bin/run.mjs', 'infra/local/keys.ts', 'create', '--role', 'reader', '--key-only'], {
      cwd: new URL('../../', import.meta.url).pathname,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let made = '';
    creating.stdout.on('data', (chunk) => {
      made += chunk;
    });
    creating.stderr.on('data', (chunk) => {
      made += chunk;
    });
    const createdWith = new Promise<number | null>((done) => creating.once('exit', (code) => done(code)));
    try {
      assert.equal(await createdWith, 0, made);
      const key = made.trim().split('\n').at(-1)!;
      const output = await started.waitFor(/ready at/, 60_000);
      assert.match(output, /ready at http:\/\/127\.0\.0\.1:\d+/);
      const read = await fetch(`http://127.0.0.1:${port}/api/v1/chains`, { headers: { 'X-API-Key': key } });
      assert.equal(read.status, 200, 'the key made while the stack started is in its database');
      const jvm = Number(/DynamoDB Local, pid (\d+)/.exec(output)?.[1]);
      started.npm.kill('SIGTERM');
      const gone = Date.now() + 15_000;
      while (isAlive(jvm) && Date.now() < gone) await new Promise((r) => setTimeout(r, 100));
      assert.ok(!isAlive(jvm), 'DynamoDB Local outlived npm start');
      const refused = await fetch(`http://127.0.0.1:${port}/api/ledger/health`).then(
        () => false,
        () => true,
      );
      assert.ok(refused, 'the gateway outlived npm start');
    } finally {
      started.stopGroup();
      removeDir(dir);
    }
  });

  it('stops everything within seconds when the process that started it dies, right after it served appends', async () => {
    // A parent that starts the stack, appends, and exits without stopping it (its pipes close with it).
    const script = `
      import { call, startStack } from '#test/support/stack';
      const stack = await startStack({ ownDynamoDb: true });
      await call(stack.url, 'POST', '/api/v1/chains/orphan/create');
      await Promise.all(Array.from({ length: 20 }, (_, i) =>
        call(stack.url, 'POST', '/api/v1/chains/orphan/events', { entity_id: 'e' + i, event_type: 't', details: {} })));
      process.stdout.write(JSON.stringify({ launcher: stack.pid, jvm: stack.dynamoPid, dir: stack.dataDir }) + '\\n');
      process.exit(0);
    `;
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: new URL('../../', import.meta.url).pathname,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    parent.stdout.on('data', (c) => (output += c));
    await new Promise((resolve) => parent.once('exit', resolve));
    const { launcher, jvm, dir } = JSON.parse(output.trim().split('\n').at(-1)!) as { launcher: number; jvm: number; dir: string };
    const since = Date.now();
    while ((isAlive(launcher) || isAlive(jvm)) && Date.now() - since < 15_000) await new Promise((r) => setTimeout(r, 200));
    const ms = Date.now() - since;
    for (const pid of [launcher, jvm]) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    removeDir(dir);
    // About 1-3 s here. A launcher that turned each failed write to its dead parent's pipes into an uncaught
    // exception (whose report failed again) spun a core until its 10 s stop deadline: 12.7 s.
    assert.ok(ms < 6_000, `the launcher or its JVM was still running ${ms} ms after its parent died`);
  });
});
