/**
 * `ledger-verify` by pages on a chain of PROBE_BLOCKS blocks (30,000 by default) written through a single-process
 * stack in batches of 99 from 4 callers: three runs, one after the other. The first reads every page from its
 * records and keeps it; the later ones read the kept pages. Each run's blocks/s and the CPU of the service,
 * DynamoDB Local and the verifier, in % of a core, and where the service found the kept pages (its /metrics). COMPARE and TILES (below): an A/B pair of two verifiers on one chain,
 * by pages or by tiles.
 * `node --import tsx bench/probes/verify-pages.ts`
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { call, removeDir, startStack, tempDataDir } from '#test/support/stack';
import { loadMainProfile, monotonicUs, summarize, type Window } from '../profile.ts';
import { cpuSeconds } from '../resources.ts';
import { AS_DEPLOYED, flushInstances, metricsOf } from '../service.ts';

const dir = tempDataDir('verify-pages');
const BLOCKS = Number(process.env.PROBE_BLOCKS ?? 30_000);
// PROFILE=1: where the service's and the verifier's CPU went in the second run (V8's profiler).
const profileDir = process.env.PROFILE === '1' ? join(dir, 'profile') : undefined;
if (profileDir) mkdirSync(join(profileDir, 'verifier'), { recursive: true });
const stack = await startStack({
  dataDir: join(dir, 'data'),
  ...(profileDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
  env: { SVC_LOCAL_RUNTIME: 'single-process', SVC_LOG_LEVEL: 'warn', ...AS_DEPLOYED },
});
const ledgerVerify = join(import.meta.dirname, '..', '..', 'bin', 'ledger-verify.mjs');

// COMPARE=<another checkout>/bin/ledger-verify.mjs: the runs after the first alternate that verifier with this one's,
// four each (an A/B pair on one chain). TILES=1: every run audits the chain by tiles (--tiles), not by pages.
const compare = process.env.COMPARE;
const byTiles = process.env.TILES === '1' ? ['--tiles'] : [];

function verify(profile: boolean, extra: string[] = [], bin = ledgerVerify): Promise<{ seconds: number; cpu: Record<string, number> }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const flags = profile && profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, 'verifier')}`] : [];
    const child = spawn(process.execPath, [...flags, bin, '--url', stack.url, '--chain', 'r', ...byTiles, ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
    const pids = { service: stack.pid, dynamodb: stack.dynamoPid!, verifier: child.pid! };
    const from = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]));
    let last: Record<string, number> = from;
    // The verifier's CPU is read just before it exits (its /proc entry goes with it).
    const timer = setInterval(() => (last = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]))), 100);
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(timer);
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) return reject(new Error(`ledger-verify exited ${code}: ${err.slice(-500)}`));
      resolve({ seconds, cpu: Object.fromEntries(Object.keys(pids).map((name) => [name, Math.round(((last[name]! - from[name]!) / seconds) * 100)])) });
    });
  });
}

/**
 * What the service's /metrics says it served the pages from: kept pages held in memory, kept pages read from DynamoDB,
 * and its DynamoDB requests, made current first (flushInstances: one request, which reads no table, after the flush
 * interval).
 */
async function served(): Promise<{ pagesInMemory: number; pagesFromDynamo: number; dynamoRequests: number }> {
  await flushInstances(stack, 1, 5_000);
  const value = await metricsOf(stack);
  return {
    pagesInMemory: value('ledger_read_cache_hits_total{cache="page"}') || 0,
    pagesFromDynamo: value('ledger_read_cache_misses_total{cache="page"}') || 0,
    dynamoRequests: value('dynamodb_requests_total'),
  };
}

let window: Window | undefined;
try {
  await call(stack.url, 'POST', '/api/v1/chains/r/create');
  await Promise.all(
    [0, 1, 2, 3].map(async (lane) => {
      for (let i = lane; i < Math.ceil(BLOCKS / 99); i += 4) {
        const events = Array.from({ length: 99 }, (_, k) => ({ entity_id: `e-${i}-${k}`, event_type: 'recorded', details: { i, k, note: 'x'.repeat(200) } }));
        const answer = await call(stack.url, 'POST', '/api/v1/chains/r/events/batch', { events });
        if (answer.status >= 300) throw new Error(`a batch was answered ${answer.status}: ${answer.text}`);
      }
    }),
  );
  const total = (await call(stack.url, 'GET', '/api/v1/chains/r/stats')).body.total_blocks as number;
  // THREADS=0,2: the runs after the first alternate the verifier's --threads over these (default: its own choice).
  const threads = process.env.THREADS?.split(',') ?? [undefined];
  const runs = compare
    ? [`first run (${byTiles.length ? 'tiles' : 'pages'} kept)`, ...Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? 'compared' : 'this'))]
    : ['first run (pages kept)', 'second run', 'third run', ...(threads.length > 1 ? ['fourth run', 'fifth run'] : [])];
  for (const [n, name] of runs.entries()) {
    const t = n === 0 ? undefined : threads[(n - 1) % threads.length];
    const before = await served();
    const fromUs = monotonicUs();
    const bin = name === 'compared' ? compare : ledgerVerify;
    const { seconds, cpu } = await verify(name === 'second run', t === undefined ? [] : ['--threads', t], bin);
    if (name === 'second run') window = { name, fromUs, toUs: monotonicUs() };
    const label = t === undefined ? name : `${name}, --threads ${t}`;
    // Less the one request of served() itself: the flush of the counts.
    const after = await served();
    const pages = `kept pages from memory ${after.pagesInMemory - before.pagesInMemory}, from DynamoDB ${after.pagesFromDynamo - before.pagesFromDynamo}; DynamoDB requests ${after.dynamoRequests - before.dynamoRequests - 1}`;
    console.log(`${label}: ${Math.round(total / seconds)} blocks/s over ${total} blocks; CPU % of a core: ${JSON.stringify(cpu)}; ${pages}`);
  }
} finally {
  await stack.stop();
}
if (profileDir && window) {
  const service = loadMainProfile(profileDir);
  if (service) console.log('service', JSON.stringify(summarize(service, window, Number(process.env.PROFILE_TOP ?? 16)), null, 1));
  const [file] = readdirSync(join(profileDir, 'verifier'));
  const verifier = file ? loadMainProfile(join(profileDir, 'verifier')) : undefined;
  if (verifier) console.log('verifier', JSON.stringify(summarize(verifier, undefined, Number(process.env.PROFILE_TOP ?? 16)), null, 1));
}
removeDir(dir);
