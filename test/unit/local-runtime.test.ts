/**
 * The local stand-ins for Lambda and API Gateway end every wait and say why: an instance that never loads
 * its bundle, an invocation that never gets a free instance, an integration that never answers. Each fails
 * in bounded time with a cause the gateway reports (one structured line, one count in /metrics). Real
 * worker threads run small bundles written here; the gateway is the real one, on a free port.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '#infra/bundling';
import { buildKey, carryChunksOver, instanceWorkerBundle, isCurrent } from '#infra/local/bundles';
import { type IntegrationFailure, startGateway } from '#infra/local/gateway';
import { InstanceFailure, InstancePool } from '#infra/local/instance-pool';
import { chooseNode, LAMBDA_NODE_MAJOR } from '#infra/sim/runtime';
import { createMetrics, emptyTotals, type SharedCounters, type Totals, addTotals } from '#shared/metrics/metrics';

const dir = mkdtempSync(join(tmpdir(), 'local-runtime-'));
let worker: string;

function bundle(name: string, source: string): string {
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, source);
  return file;
}

before(async () => {
  worker = await instanceWorkerBundle();
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the instance pool', () => {
  it('builds a cached bundle again when it was built from another checkout (worktrees sharing node_modules)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bundle-cache-'));
    try {
      const input = join(dir, 'input.ts');
      writeFileSync(input, 'export {};');
      writeFileSync(join(dir, 'index.mjs'), '');
      const record = (build: string) => {
        const { size, mtimeMs } = statSync(input);
        writeFileSync(join(dir, 'inputs.json'), JSON.stringify({ build, inputs: { [input]: { size, mtimeMs } } }));
      };
      record(buildKey());
      assert.equal(isCurrent(dir), true, 'built here, inputs unchanged: current');
      record(buildKey('/another/checkout/'));
      assert.equal(isCurrent(dir), false, "another checkout's bundle is not this one's");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps the chunks of the build it replaces (a running instance imports them later), for a week', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bundle-chunks-'));
    try {
      const [old, next] = [join(dir, 'ledger'), join(dir, 'ledger.tmp')];
      for (const folder of [old, next]) mkdirSync(folder);
      for (const name of ['chunk-OLD.mjs', 'chunk-OLD.mjs.map', 'chunk-SAME.mjs', 'chunk-STALE.mjs', 'index.mjs'])
        writeFileSync(join(old, name), `old ${name}`);
      const eightDaysAgo = new Date(Date.now() - 8 * 24 * 3_600_000);
      utimesSync(join(old, 'chunk-STALE.mjs'), eightDaysAgo, eightDaysAgo);
      for (const name of ['chunk-NEW.mjs', 'chunk-SAME.mjs', 'index.mjs']) writeFileSync(join(next, name), `new ${name}`);
      carryChunksOver(old, next);
      assert.deepEqual(readdirSync(next).sort(), ['chunk-NEW.mjs', 'chunk-OLD.mjs', 'chunk-OLD.mjs.map', 'chunk-SAME.mjs', 'index.mjs']);
      assert.equal(readFileSync(join(next, 'chunk-OLD.mjs'), 'utf8'), 'old chunk-OLD.mjs');
      assert.equal(readFileSync(join(next, 'index.mjs'), 'utf8'), 'new index.mjs', "the new build's own files are its own");
      assert.equal(readFileSync(join(next, 'chunk-SAME.mjs'), 'utf8'), 'new chunk-SAME.mjs');
      carryChunksOver(join(dir, 'never-built'), next); // a first build: nothing to carry
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("keeps another Node major's bundles beside these: `npm run sim` on Lambda's Node never builds over a running stack's", () => {
    // The sim's Node (Lambda's major, or this one when it cannot be had: then there is nothing to tell apart).
    const other = chooseNode(LAMBDA_NODE_MAJOR, { allowMismatch: true });
    if (other.path === process.execPath) return;
    const before = statSync(worker);
    const built = spawnSync(
      other.path,
      ['--import', 'tsx', '--input-type=module', '-e', "process.stdout.write(await (await import('#infra/local/bundles')).instanceWorkerBundle())"],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(built.status, 0, built.stderr);
    assert.notEqual(built.stdout, worker, `Node ${other.version} built its own: ${built.stdout}`);
    const after = statSync(worker);
    assert.equal(after.ino, before.ino, "this Node's bundle was not replaced");
    assert.equal(after.mtimeMs, before.mtimeMs);
    assert.equal(isCurrent(join(worker, '..')), true, 'and it is still current for this Node');
  });

  it("runs a function the way Lambda's runtime does: none of the launcher's node flags", () => {
    // A pool in a process started with node flags of its own, as the launcher run from its sources is (tsx's loader;
    // here `--no-deprecation`): a worker thread takes the flags its parent started with unless told otherwise.
    const script = `
      const { InstancePool } = await import('#infra/local/instance-pool');
      const pool = new InstancePool({ functionName: 'flags', bundle: ${JSON.stringify(bundle('flags', 'export const handler = async () => ({ execArgv: process.execArgv });'))},
        workerFile: ${JSON.stringify(worker)}, maxInstances: 1, timeoutMs: 5_000 });
      try {
        process.stdout.write(JSON.stringify({ parent: process.execArgv, instance: await pool.invoke({}) }));
      } finally {
        await pool.close();
      }`;
    const loader = (process.features as { typescript?: unknown }).typescript ? [] : ['--import', 'tsx'];
    const run = spawnSync(process.execPath, ['--no-deprecation', ...loader, '--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const { parent, instance } = JSON.parse(run.stdout) as { parent: string[]; instance: { execArgv: string[] } };
    assert.ok(parent.includes('--no-deprecation'), `the parent has flags: ${parent.join(' ')}`);
    assert.deepEqual(instance, { execArgv: [] });
  });

  it("fails an invocation whose instance does not load its bundle within Lambda's init limit, and stops that instance", async () => {
    const pool = new InstancePool({
      functionName: 'stuck-init',
      // Top-level await on a promise that never settles: the module never finishes loading.
      bundle: bundle('stuck-init', 'await new Promise(() => setInterval(() => undefined, 1_000));\nexport const handler = async () => ({});'),
      workerFile: worker,
      maxInstances: 2,
      timeoutMs: 5_000,
      initTimeoutMs: 300,
    });
    try {
      const started = Date.now();
      await assert.rejects(pool.invoke({}), (e: unknown) => e instanceof InstanceFailure && /did not load its bundle within 300 ms/.test(e.message));
      assert.ok(Date.now() - started < 2_000);
      assert.equal(pool.stats.instances, 0, 'the stuck instance was stopped');
    } finally {
      await pool.close();
    }
  });

  it('fails an invocation that waited for a free instance as long as an invocation may run', async () => {
    const pool = new InstancePool({
      functionName: 'busy',
      bundle: bundle('busy', 'export const handler = async (event) => { await new Promise((r) => setTimeout(r, event.ms)); return { ok: true }; };'),
      workerFile: worker,
      maxInstances: 1,
      timeoutMs: 1_000,
    });
    try {
      await pool.invoke({ ms: 0 }); // warm: the timings below are the handler's, not a cold start's
      const first = pool.invoke({ ms: 700 });
      const second = pool.invoke({ ms: 700 });
      const started = Date.now();
      const third = pool.invoke({ ms: 0 });
      await assert.rejects(third, (e: unknown) => e instanceof InstanceFailure && /no instance was free within 1000 ms/.test(e.message));
      const waited = Date.now() - started;
      assert.ok(waited >= 950 && waited < 1_400, `gave up after ${waited} ms`);
      assert.deepEqual(await first, { ok: true });
      assert.deepEqual(await second, { ok: true }, 'the one handed the instance in time still runs');
      assert.equal(pool.stats.waiting, 0);
    } finally {
      await pool.close();
    }
  });
});

describe('the gateway, when an integration fails', () => {
  it('answers 503 once the integration timeout has passed, 500 when the function failed, and reports each with its cause', async () => {
    const failures: IntegrationFailure[] = [];
    const gateway = await startGateway({
      host: '127.0.0.1',
      port: 0,
      routes: [
        { method: 'GET', path: '/slow', routeKey: 'GET /slow', group: 'slow' },
        { method: 'GET', path: '/crash', routeKey: 'GET /crash', group: 'crash' },
      ],
      handlers: {
        slow: () => new Promise(() => undefined),
        crash: async () => {
          throw new InstanceFailure('crash instance exited (1)');
        },
        fallback: async () => ({ statusCode: 404 }),
      },
      defaultGroup: 'fallback',
      integrationTimeoutMs: 300,
      onIntegrationError: (failure) => failures.push(failure),
    });
    try {
      const started = Date.now();
      const slow = await fetch(`${gateway.url}/slow`);
      // An HTTP API's answer to an integration that outlives its timeout.
      assert.equal(slow.status, 503);
      assert.deepEqual(await slow.json(), { message: 'Service Unavailable' });
      assert.ok(Date.now() - started < 1_500);
      const crash = await fetch(`${gateway.url}/crash`);
      assert.equal(crash.status, 500);
      assert.deepEqual(await crash.json(), { message: 'Internal Server Error' }, 'API Gateway tells the client nothing of the cause');

      assert.equal(failures.length, 2);
      assert.deepEqual(
        failures.map(({ group, routeKey, status }) => ({ group, routeKey, status })),
        [
          { group: 'slow', routeKey: 'GET /slow', status: 503 },
          { group: 'crash', routeKey: 'GET /crash', status: 500 },
        ],
      );
      assert.equal(failures[0]!.requestId, slow.headers.get('apigw-requestid'), 'the reported request id is the one the client got');
      assert.equal(failures[1]!.requestId, crash.headers.get('apigw-requestid'));
      assert.match(String((failures[1]!.error as Error).message), /exited/);
    } finally {
      await gateway.close();
    }
  });

  it('logs a failure as one structured error line and counts it in /metrics, by function', () => {
    // In a process of its own: the service's logger writes to file descriptor 2 directly, as in Lambda.
    const script = `
      const { reportIntegrationErrors } = await import('#infra/local/integration-errors');
      const report = reportIntegrationErrors({ recordIntegrationError: async (fn) => console.log('counted ' + fn) });
      const error = Object.assign(new Error('tlog timed out after 29000 ms'), { name: 'InstanceFailure' });
      report({ group: 'tlog', routeKey: 'GET /tlog/{chain_name}/tile/{tile_path+}', requestId: 'req-1', status: 500, error });
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, SVC_LOG_LEVEL: 'warn' },
    });
    assert.equal(child.status, 0, child.stderr);
    const line = child.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .find((l) => l.message === 'integration failed');
    assert.ok(line, `an error line was written: ${child.stderr}`);
    assert.equal(line.level, 'error');
    assert.equal(line.function, 'tlog');
    assert.equal(line.route, 'GET /tlog/{chain_name}/tile/{tile_path+}');
    assert.equal(line.request_id, 'req-1');
    assert.equal(line.status, 500);
    assert.deepEqual(line.cause, { name: 'InstanceFailure', message: 'tlog timed out after 29000 ms' });
    assert.equal(child.stdout.trim(), 'counted tlog');
  });

  it('shows the counts in the Prometheus text, summed across whoever counted them', async () => {
    let stored: Totals = emptyTotals();
    const shared: SharedCounters = {
      shards: 4,
      add: async (_shard, delta) => void (stored = addTotals(stored, delta)),
      read: async () => stored,
    };
    const gateway = createMetrics({ shared, flushMs: 1_000, coldStart: false });
    await gateway.recordIntegrationError('tlog');
    await gateway.recordIntegrationError('tlog');
    await gateway.recordIntegrationError('ledger');
    const { body } = await createMetrics({ shared, flushMs: 1_000 }).render();
    assert.match(body, /^gateway_integration_errors_total\{function="tlog"\} 2$/m);
    assert.match(body, /^gateway_integration_errors_total\{function="ledger"\} 1$/m);
    assert.match(body, /^lambda_cold_starts_total 1$/m, "the gateway's counts are not a cold start; the scraping instance's first request is");
  });
});
