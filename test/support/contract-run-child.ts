/**
 * A process that runs one contract of about 0.25 s of CPU on a pool whose CPU limit is 2 s, saying `running` first
 * and its outcome and wall time last: test/unit/contract-pool.test.ts stops it (SIGSTOP) meanwhile.
 */
import { createContractPool } from '#shared/business/contract-pool';

const pool = createContractPool({
  limits: { timeoutMs: 2_000, memoryBytes: 32 * 1024 * 1024, stackBytes: 256 * 1024, maxResultBytes: 1024 * 1024 },
  workers: 1,
  queue: 1,
});
await pool.check('function execute() { return 1 }');
console.log('running');
const t0 = performance.now();
const out = await pool.run('function execute() { let x = 0; for (let i = 0; i < 4e6; i++) x += i % 7; return x }', {}, {}).then(
  (value) => ({ ok: true, value }),
  (error: Error) => ({ ok: false, message: error.message }),
);
console.log(JSON.stringify({ ...out, wallMs: performance.now() - t0 }));
await pool.close();
