/**
 * What the bench's capacity meter costs the service: a single-process stack with SVC_CAPACITY_REPORT_DIR set
 * or not (METER=1), a 30,000-block chain written through the service, then 3,000 of its blocks read once
 * (after the cold path is compiled on another chain), then again for 5 s.
 * `METER=1 node --import tsx bench/probes/meter-cost.ts`
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { call, removeDir, startStack, tempDataDir } from '#test/support/stack';
import { loadMainProfile, monotonicUs, summarize, type Window } from '../profile.ts';
import { cpuSeconds } from '../resources.ts';

const dir = tempDataDir('meter-cost');
const BLOCKS = Number(process.env.PROBE_BLOCKS ?? 30_000);
const profileDir = join(dir, 'profile');
mkdirSync(profileDir, { recursive: true });
const windows: Window[] = [];
const stack = await startStack({
  ...(process.env.PROFILE === '1' ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
  dataDir: join(dir, 'data'),
  env: {
    SVC_LOCAL_RUNTIME: 'single-process',
    SVC_CHECK_RESPONSES: 'false',
    SVC_LOG_LEVEL: 'warn',
    ...(process.env.METER === '1' ? { SVC_CAPACITY_REPORT_DIR: join(dir, 'capacity') } : {}),
  },
});
try {
  for (const [chain, blocks] of [
    ['w', 2_000],
    ['r', BLOCKS],
  ] as const) {
    await call(stack.url, 'POST', `/api/v1/chains/${chain}/create`);
    await Promise.all(
      [0, 1, 2, 3].map(async (lane) => {
        for (let i = lane; i < Math.ceil(blocks / 99); i += 4) {
          const events = Array.from({ length: 99 }, (_, k) => ({ entity_id: `e-${i}-${k}`, event_type: 'recorded', details: { i, k, note: 'x'.repeat(200) } }));
          await call(stack.url, 'POST', `/api/v1/chains/${chain}/events/batch`, { events });
        }
      }),
    );
  }
  await new Promise((done) => setTimeout(done, 2_000));
  const idleFrom = cpuSeconds(stack.pid);
  await new Promise((done) => setTimeout(done, 5_000));
  console.log(`idle: service CPU ${Math.round(((cpuSeconds(stack.pid) - idleFrom) / 5) * 100)} % of a core`);
  const pass = async (name: string, chain: string, count: number, span: number, options: { amount?: number; duration?: number }) => {
    const indices = Array.from({ length: count }, (_, i) => 1 + ((i * 997) % span));
    let next = 0;
    const before = cpuSeconds(stack.pid);
    const from = monotonicUs();
    const result = await autocannon({
      url: stack.url,
      connections: 16,
      ...options,
      requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/api/v1/chains/${chain}/blocks/${indices[next++ % indices.length]}` }) }],
    });
    const cpuMs = (cpuSeconds(stack.pid) - before) * 1000;
    windows.push({ name, fromUs: from, toUs: monotonicUs() });
    console.log(
      `${name}: ${Math.round(result['2xx'] / result.duration)} reads/s, p50 ${result.latency.p50} ms, service CPU ${(cpuMs / result['2xx']).toFixed(2)} ms a read`,
    );
  };
  await pass('warm-up', 'w', 1_900, 1_990, { amount: 1_900 });
  await pass('cold', 'r', 3_000, BLOCKS - 10, { amount: 3_000 });
  await pass('warm', 'r', 3_000, BLOCKS - 10, { duration: 5 });
} finally {
  await stack.stop();
}
const profile = process.env.PROFILE === '1' ? loadMainProfile(profileDir) : undefined;
if (profile) for (const w of windows) console.log(w.name, JSON.stringify(summarize(profile, w, 20), null, 1));
removeDir(dir);
