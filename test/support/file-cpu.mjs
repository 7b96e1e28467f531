/**
 * Preloaded into every Node process of a test run (test/run.ts sets it in NODE_OPTIONS with LEDGER_TEST_CPU_DIR): a
 * test file's process writes, as it exits, the CPU it used, its reaped children's included (its stacks, the commands
 * it ran), so that the run can print each file's CPU beside its time. Other processes (stacks, commands) write nothing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.LEDGER_TEST_CPU_DIR;
const file = process.argv[1];
if (dir && file?.endsWith('.test.ts')) {
  process.once('exit', () => {
    try {
      const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
      const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
      writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify({ file, cpuMs: Math.round(ticks * 10) }));
    } catch {
      // not Linux: no figure
    }
  });
}
