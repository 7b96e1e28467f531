/**
 * Preloaded into every Node process of a test run (test/run.ts sets it in NODE_OPTIONS). In a test file's own process
 * (and no other: stacks, instances and commands pass through):
 * - it waits for the run's slot before the file's first import (LEDGER_TEST_SLOTS, test/support/file-slots.ts), and
 *   keeps the slot until the process ends; the processes the file starts do not ask for one;
 * - it writes, as the process exits, the CPU it used, its reaped children's included (its stacks, the commands it ran),
 *   so that the run can print each file's CPU beside its time (LEDGER_TEST_CPU_DIR).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';

const file = process.argv[1];
if (file?.endsWith('.test.ts')) {
  const slots = process.env.LEDGER_TEST_SLOTS;
  if (slots) {
    delete process.env.LEDGER_TEST_SLOTS;
    await new Promise((resolve) => {
      const socket = connect(slots);
      socket.once('connect', () => socket.write(`${process.pid} ${file}\n`));
      socket.once('data', () => {
        // Held (unreferenced: it keeps nothing alive) until the process ends, whatever way it ends.
        socket.unref();
        globalThis[Symbol.for('verifiable-ledger.test-slot')] = socket;
        resolve(undefined);
      });
      // No runner to answer (it is gone): the file runs, as it would alone.
      socket.once('error', () => resolve(undefined));
      socket.once('close', () => resolve(undefined));
    });
  }
  const dir = process.env.LEDGER_TEST_CPU_DIR;
  if (dir) {
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
}
