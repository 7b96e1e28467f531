/**
 * Where a verified read's time goes: on a single-process stack under V8's profiler, a chain of 20,000 blocks
 * (the newest 20 appended one by one, so their metadata is on the head), then one caller's sequential reads of random blocks: a plain block read, evidence at a fixed tree size, and
 * evidence with its blocks; each's p50 and where the service's CPU went.
 * `node --import tsx bench/probes/evidence-profile.ts`
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { removeDir, startStack, tempDataDir } from '#test/support/stack';
import { fillChain } from './chain.ts';
import { loadMainProfile, monotonicUs, summarize, type Window } from '../profile.ts';

const BLOCKS = Number(process.env.PROBE_BLOCKS ?? 20_000);
const CALLS = 300;
const dir = tempDataDir('evidence-profile');
const profileDir = join(dir, 'profile');
mkdirSync(profileDir, { recursive: true });
const stack = await startStack({
  dataDir: join(dir, 'data'),
  env: { SVC_LOCAL_RUNTIME: 'single-process', SVC_CHECK_RESPONSES: 'false', SVC_LOG_LEVEL: 'warn', SVC_METRICS_FLUSH_MS: '0' },
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`],
});
const windows: Window[] = [];
try {
  await fillChain(stack.url, 'r', BLOCKS, 20);
  const size = BLOCKS;
  const indices = Array.from({ length: CALLS }, () => Math.floor(Math.random() * size));
  const counters = async () => {
    const text = await (await fetch(`${stack.url}/metrics`)).text();
    const out: Record<string, number> = {};
    for (const line of text.split('\n')) {
      const m = /^((?:dynamodb_requests_total|ledger_read_cache_misses_total)\S*) (\S+)$/.exec(line);
      if (m) out[m[1]!] = Number(m[2]);
    }
    return out;
  };
  const pass = async (name: string, path: (i: number) => string) => {
    const ms: number[] = [];
    const before = await counters();
    const from = monotonicUs();
    for (let i = 0; i < CALLS; i += 1) {
      const start = performance.now();
      const response = await fetch(`${stack.url}${path(indices[i]!)}`);
      if (!response.ok) throw new Error(`${name}: ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
      ms.push(performance.now() - start);
    }
    windows.push({ name, fromUs: from, toUs: monotonicUs() });
    ms.sort((a, b) => a - b);
    const after = await counters();
    const per = (k: string) => ((after[k] ?? 0) - (before[k] ?? 0)) / CALLS;
    console.log(
      `${name}: p50 ${ms[CALLS >> 1]!.toFixed(2)} ms, p90 ${ms[Math.floor(CALLS * 0.9)]!.toFixed(2)} ms;`,
      `a call: ${per('dynamodb_requests_total').toFixed(2)} DynamoDB requests,`,
      `cache misses ${Object.keys(after)
        .filter((k) => k.startsWith('ledger_read_cache_misses_total'))
        .map((k) => `${k.slice(31)} ${per(k).toFixed(2)}`)
        .join(' ')}`,
    );
  };
  for (const round of [1, 2]) {
    await pass(`block ${round}`, (i) => `/api/v1/chains/r/blocks/${i}`);
    await pass(`evidence ${round}`, (i) => `/api/v1/chains/r/evidence?leaves=${i}&tree_size=${size}`);
    await pass(`evidence+blocks ${round}`, (i) => `/api/v1/chains/r/evidence?leaves=${i}&tree_size=${size}&blocks=true`);
  }
} finally {
  await stack.stop();
}
const profile = loadMainProfile(profileDir);
if (profile) for (const w of windows.slice(3)) console.log(w.name, JSON.stringify(summarize(profile, w, 14), null, 1));
removeDir(dir);
