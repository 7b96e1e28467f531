/**
 * What the bench's capacity meter costs the service: a single-process stack with SVC_CAPACITY_REPORT_DIR set
 * (METER=1) or not, a 30,000-block chain (PROBE_BLOCKS) written through the service in batches of 99 from 4
 * callers; then the service's CPU idle for 5 s, and a read of 3,000 of its blocks by index, cold (after the
 * same reads of another chain compile the cold path) and warm (again, for 5 s).
 * `METER=1 node --import tsx bench/probes/meter-cost.ts`
 */
import { join } from 'node:path';
import { call, removeDir, startStack, tempDataDir } from '#test/support/stack';
import { cpuSeconds } from '../resources.ts';
import { readByIndex } from './chain.ts';

const dir = tempDataDir('meter-cost');
const BLOCKS = Number(process.env.PROBE_BLOCKS ?? 30_000);
const stack = await startStack({
  dataDir: join(dir, 'data'),
  env: {
    SVC_LOCAL_RUNTIME: 'single-process',
    SVC_CHECK_RESPONSES: 'false',
    SVC_LOG_LEVEL: 'warn',
    ...(process.env.METER === '1' ? { SVC_CAPACITY_REPORT_DIR: join(dir, 'capacity') } : {}),
  },
});
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
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
          const answer = await call(stack.url, 'POST', `/api/v1/chains/${chain}/events/batch`, { events });
          if (answer.status >= 300) throw new Error(`a batch was answered ${answer.status}: ${answer.text}`);
        }
      }),
    );
  }
  await sleep(2_000);
  const idleFrom = cpuSeconds(stack.pid);
  await sleep(5_000);
  console.log(`idle: service CPU ${Math.round(((cpuSeconds(stack.pid) - idleFrom) / 5) * 100)} % of a core`);
  const pass = async (name: string, chain: string, count: number, span: number, options: { amount?: number; duration?: number }) => {
    const indices = Array.from({ length: count }, (_, i) => 1 + ((i * 997) % span));
    const before = cpuSeconds(stack.pid);
    const result = await readByIndex(stack.url, chain, indices, options);
    const cpuMs = (cpuSeconds(stack.pid) - before) * 1000;
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
removeDir(dir);
