/**
 * The test run's slots (test/support/file-slots.ts, with the preload test/support/file-cpu.mjs): two files at a time,
 * a third only while cores stand idle, a slot freed however its file's process ends, and the processes a file starts
 * never asking for one (a file that started a `.test.ts` of its own would otherwise wait on itself).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ROOT } from '#infra/bundling';
import { SLOTS_ENV, startFileSlots } from '#test/support/file-slots';

const dir = mkdtempSync(join(tmpdir(), 'file-slots-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A file's process asking for its slot: resolves 'go' when granted. */
function ask(path: string, file: string): { socket: Socket; granted: Promise<'go'> } {
  const socket = connect(path);
  socket.once('connect', () => socket.write(`${process.pid} ${file}\n`));
  const granted = new Promise<'go'>((resolve) => socket.once('data', () => resolve('go')));
  return { socket, granted };
}
const soon = <T>(promise: Promise<T>, ms = 1_500) =>
  Promise.race([promise, new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), ms).unref())]);

describe('the test run’s file slots', () => {
  it('hold this file too, when test/run.ts runs it', (t) => {
    if (!process.env.LEDGER_TEST_CPU_DIR) return t.skip('run alone, not by test/run.ts');
    if (process.argv.includes('--serial')) return t.skip('a serial run has no slots');
    const slot = (globalThis as Record<symbol, unknown>)[Symbol.for('verifiable-ledger.test-slot')] as Socket | undefined;
    assert.ok(slot && !slot.destroyed, 'this process holds its slot');
    assert.equal(process.env[SLOTS_ENV], undefined, 'and hides the address from what it starts');
  });

  it('runs two files at once and the third when one ends, in the order they asked, with the wait counted', async () => {
    const slots = await startFileSlots({ path: join(dir, 'a.sock'), base: 2, max: 4, idleCores: () => 0 });
    try {
      const a = ask(slots.path, '/a.test.ts');
      assert.equal(await soon(a.granted), 'go');
      const b = ask(slots.path, '/b.test.ts');
      assert.equal(await soon(b.granted), 'go');
      const c = ask(slots.path, '/c.test.ts');
      await new Promise((r) => setTimeout(r, 100));
      const d = ask(slots.path, '/d.test.ts');
      assert.equal(await soon(c.granted, 1_200), 'waiting', 'no core idle: the third file waits');
      // A process that dies frees its slot as surely as one that ends well.
      a.socket.destroy();
      assert.equal(await soon(c.granted), 'go', 'the first to ask gets the slot');
      assert.equal(await soon(d.granted, 600), 'waiting');
      b.socket.end();
      assert.equal(await soon(d.granted), 'go');
      assert.ok(slots.waitedMs['/c.test.ts']! >= 1_000, `c waited ${slots.waitedMs['/c.test.ts']} ms`);
      assert.ok(slots.waitedMs['/a.test.ts']! < 1_000);
      assert.equal(slots.extraStarts(), 0);
      for (const s of [c, d]) s.socket.destroy();
    } finally {
      await slots.close();
    }
  });

  it('starts one more file while cores stand idle, one at a time, up to the most', async () => {
    let idle = 1;
    const slots = await startFileSlots({ path: join(dir, 'b.sock'), base: 1, max: 2, idleCores: () => idle, extraGapMs: 500 });
    try {
      const a = ask(slots.path, '/a.test.ts');
      assert.equal(await soon(a.granted), 'go');
      const b = ask(slots.path, '/b.test.ts');
      assert.equal(await soon(b.granted), 'go', 'a core idle: a second file beside the first');
      const c = ask(slots.path, '/c.test.ts');
      assert.equal(await soon(c.granted), 'waiting', 'never past the most');
      assert.equal(slots.extraStarts(), 1);
      idle = 0;
      b.socket.destroy();
      assert.equal(await soon(c.granted), 'waiting', 'one running is the base: the next waits for idle cores');
      idle = 1;
      assert.equal(await soon(c.granted, 3_000), 'go', 'and starts once they stand idle again');
      for (const s of [a, c]) s.socket.destroy();
    } finally {
      await slots.close();
    }
  });

  it("holds a test file's process before its first import until it has its slot; what it starts asks for none", async () => {
    const slots = await startFileSlots({ path: join(dir, 'c.sock'), base: 1, max: 1, idleCores: () => 0 });
    const children: ChildProcess[] = [];
    try {
      const holder = ask(slots.path, '/holder.test.ts');
      assert.equal(await soon(holder.granted), 'go');
      // A test file that prints, once it runs, whether the slot's address reached it, then starts a `.test.ts` of its own.
      const file = join(dir, 'probe.test.ts');
      const inner = join(dir, 'inner.test.ts');
      writeFileSync(inner, "console.log('inner ran');\n");
      writeFileSync(
        file,
        `const { execFileSync } = require('node:child_process');\nconsole.log('ran', process.env.${SLOTS_ENV} ?? 'none');\nprocess.stdout.write(execFileSync(process.execPath, [${JSON.stringify(inner)}], { encoding: 'utf8' }));\n`,
      );
      // As the run starts it: the preload in NODE_OPTIONS, which every process it starts inherits.
      const child = spawn(process.execPath, [file], {
        env: { ...process.env, [SLOTS_ENV]: slots.path, NODE_OPTIONS: `--import=${join(ROOT, 'test', 'support', 'file-cpu.mjs')}` },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      let out = '';
      child.stdout!.on('data', (chunk) => (out += chunk));
      const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal(out, '', 'the file has not run: its slot is held');
      holder.socket.destroy();
      assert.equal(await soon(exited, 20_000), 0);
      assert.equal(out, 'ran none\ninner ran\n', 'it ran once granted; the file it started neither saw the slots nor waited');
      assert.equal(Object.keys(slots.waitedMs).length, 2);
    } finally {
      for (const child of children) child.kill('SIGKILL');
      await slots.close();
    }
  });

  it('stops a file that runs past its deadline, counted from its slot', async () => {
    const stopped: string[] = [];
    const slots = await startFileSlots({
      path: join(dir, 'd.sock'),
      base: 1,
      max: 1,
      idleCores: () => 0,
      deadlineMs: 1_000,
      onDeadline: (f) => stopped.push(f),
    });
    try {
      const file = join(dir, 'hangs.test.ts');
      writeFileSync(file, 'setInterval(() => {}, 1_000);\n');
      const child = spawn(process.execPath, [file], {
        env: { ...process.env, [SLOTS_ENV]: slots.path, NODE_OPTIONS: `--import=${join(ROOT, 'test', 'support', 'file-cpu.mjs')}` },
        stdio: 'ignore',
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('close', (_code, signal) => resolve(signal)));
      assert.equal(await soon(exited, 15_000), 'SIGKILL');
      assert.deepEqual(stopped, [file]);
    } finally {
      await slots.close();
    }
  });

  it('kills only a process it started: a pid named wrongly is left alone at the deadline', async () => {
    const stopped: string[] = [];
    const slots = await startFileSlots({ path: join(dir, 'e.sock'), base: 1, max: 1, idleCores: () => 0, deadlineMs: 300, onDeadline: (f) => stopped.push(f) });
    // A process that is not a child of this one (its shell parent has exited).
    const orphan = Number(execFileSync('sh', ['-c', 'sleep 30 >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' }).trim());
    try {
      const socket = connect(slots.path);
      socket.once('connect', () => socket.write(`${orphan} /not-mine.test.ts\n`));
      await new Promise((resolve) => socket.once('data', resolve));
      await new Promise((r) => setTimeout(r, 800));
      assert.deepEqual(stopped, ['/not-mine.test.ts'], 'its deadline passed');
      // Still running (a killed orphan stays a zombie until its new parent reaps it: its state, not kill(pid, 0)).
      const state = readFileSync(`/proc/${orphan}/stat`, 'utf8').split(') ')[1]!.split(' ')[0];
      assert.ok(state !== 'Z' && state !== 'X', `and the process it named still runs (state ${state})`);
      socket.destroy();
    } finally {
      try {
        process.kill(orphan, 'SIGKILL');
      } catch {
        // gone
      }
      await slots.close();
    }
  });
});
