/**
 * Where a block read's CPU goes in the service, cold and warm: a single-process stack under V8's profiler,
 * a chain of 2,000 blocks, 1,000 of them read once (cold; after the same reads of another chain, so that the
 * cold path is compiled), then again for 5 s (warm).
 * `node --import tsx bench/probes/read-profile.ts`
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { call, removeDir, startStack, tempDataDir } from '#test/support/stack';
import { loadMainProfile, monotonicUs, summarize, type Window } from '../profile.ts';
import { readByIndex } from './chain.ts';

const dir = tempDataDir('read-profile');
const profileDir = join(dir, 'profile');
mkdirSync(profileDir, { recursive: true });
const stack = await startStack({
  dataDir: join(dir, 'data'),
  env: { SVC_LOCAL_RUNTIME: 'single-process', SVC_CHECK_RESPONSES: 'false', SVC_LOG_LEVEL: 'warn' },
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`],
});
const windows: Window[] = [];
try {
  for (const chain of ['w', 'r']) {
    await call(stack.url, 'POST', `/api/v1/chains/${chain}/create`);
    for (let i = 0; i < 20; i += 1) {
      const events = Array.from({ length: 99 }, (_, k) => ({ entity_id: `e-${i}-${k}`, event_type: 'recorded', details: { i, k, note: 'x'.repeat(200) } }));
      await call(stack.url, 'POST', `/api/v1/chains/${chain}/events/batch`, { events });
    }
  }
  const indices = Array.from({ length: 1000 }, (_, i) => 1 + ((i * 997) % 1980));
  const pass = async (name: string, chain: string, options: { amount?: number; duration?: number }) => {
    const from = monotonicUs();
    const result = await readByIndex(stack.url, chain, indices, options);
    windows.push({ name, fromUs: from, toUs: monotonicUs() });
    console.log(`${name}: ${Math.round(result['2xx'] / result.duration)} reads/s, p50 ${result.latency.p50} ms`);
  };
  // The cold path compiled first, on another chain (as npm run bench warms it): cold is then of the cache, not the JIT.
  await pass('warm-up', 'w', { amount: 1000 });
  await pass('cold', 'r', { amount: 1000 });
  await pass('warm', 'r', { duration: 5 });
} finally {
  await stack.stop();
}
const profile = loadMainProfile(profileDir);
if (profile) for (const w of windows) console.log(w.name, JSON.stringify(summarize(profile, w, 14), null, 1));
removeDir(dir);
