/**
 * How long `npm start` takes to be ready, and where the time goes: the launcher (infra/local/start.mjs, as `npm start`
 * runs it) started RUNS times (default 5) on a fresh data dir (a first start: tables, master key and node identity
 * made) and RUNS times again on that same data dir (a restart), each stopped once ready. Prints each start's time to
 * its ready line, the CPU the launcher and its JVM had used by then, and the launcher's own phases (what it prints at
 * SVC_LOG_LEVEL=debug: each phase's end in ms since the process started); then the medians.
 *
 *   node --import tsx bench/probes/start-time.ts            # RUNS=10 for more, SHARED=1 to use one DynamoDB Local as npm test does
 *
 * The bundles (the functions' and the launcher's own) are built once before the runs, as `npm ci` builds them.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { keptBundle } from '../../bin/bundle-cache.mjs';
import { functionBundles } from '#infra/local/bundles';
import { type DynamoDbLocal, startDynamoDbLocal } from '#infra/local/dynamodb-local';
import { freePort } from '#infra/local/ports';
import { ROOT } from '#infra/bundling';
import { removeDir, tempDataDir } from '#test/support/stack';

const RUNS = Number(process.env.RUNS ?? 5);

/** CPU seconds a process (and the children it already reaped) used so far, from /proc. */
function cpuOf(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0;
  }
}

interface Start {
  readyMs: number;
  cpu: number;
  phases: string;
}

async function start(dataDir: string, env: Record<string, string>): Promise<Start> {
  const port = await freePort();
  const began = performance.now();
  const child = spawn(process.execPath, ['infra/local/start.mjs'], {
    cwd: ROOT,
    env: { ...process.env, ...env, SVC_PORT: String(port), SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'debug' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr.on('data', () => undefined);
  const exited = new Promise((done) => child.once('exit', done));
  const readyMs = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += chunk;
      if (/ready at/.test(output)) resolve(performance.now() - began);
    });
    void exited.then(() => reject(new Error(`the launcher exited before it was ready:\n${output}`)));
  });
  const jvm = Number(/DynamoDB Local, pid (\d+)/.exec(output)?.[1]) || undefined;
  const cpu = cpuOf(child.pid) + cpuOf(jvm);
  child.kill('SIGTERM');
  await exited;
  return { readyMs, cpu, phases: /Start phases \(ms since the process started\): (.*)/.exec(output)?.[1] ?? '' };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

await Promise.all([functionBundles(), keptBundle('infra/local/main.ts', 'verifiable-ledger/launcher')]);
let shared: DynamoDbLocal | undefined;
const sharedDir = tempDataDir('start-time-dynamodb');
if (process.env.SHARED === '1') shared = await startDynamoDbLocal({ dataDir: sharedDir, inMemory: true });

const report = (label: string, starts: Start[]) => {
  for (const s of starts) process.stdout.write(`${label}: ready in ${Math.round(s.readyMs)} ms, ${s.cpu.toFixed(2)} s of CPU; ${s.phases}\n`);
  process.stdout.write(
    `${label}: median ${Math.round(median(starts.map((s) => s.readyMs)))} ms to ready, ${median(starts.map((s) => s.cpu)).toFixed(2)} s of CPU (${starts.length} starts)\n\n`,
  );
};

const first: Start[] = [];
const again: Start[] = [];
for (let i = 0; i < RUNS; i += 1) {
  const dir = tempDataDir('start-time');
  const env: Record<string, string> = shared
    ? {
        SVC_DYNAMODB_ENDPOINT: shared.endpoint,
        SVC_DYNAMODB_ACCESS_KEY_ID: shared.accessKeyId,
        SVC_LEDGER_TABLE: `s${i}.ledger`,
        SVC_REGISTRY_TABLE: `s${i}.registry`,
        SVC_RATE_LIMIT_TABLE: `s${i}.ratelimits`,
        SVC_CONNECTIONS_TABLE: `s${i}.connections`,
      }
    : {};
  try {
    first.push(await start(dir, env));
    again.push(await start(dir, env));
  } finally {
    removeDir(dir);
  }
}
await shared?.stop();
removeDir(sharedDir);
report('first start', first);
report('restart', again);
