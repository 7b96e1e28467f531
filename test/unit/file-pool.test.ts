/**
 * The test run's file pool (test/support/file-pool.ts): every file's report whole and in one block, one summary for the
 * run, and a file beyond the base started only while the cores stand idle.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ROOT } from '#infra/bundling';
import type { PoolOptions } from '#test/support/file-pool';

const dir = join(ROOT, 'test-output', `file-pool-${process.pid}`);
mkdirSync(dir, { recursive: true });
after(() => rmSync(dir, { recursive: true, force: true }));

/** A test file that records when it ran (into `<name>.times`), waits `ms`, and passes or fails. */
function testFile(name: string, ms: number, passes = true): string {
  const file = join(dir, `${name}.test.mjs`);
  writeFileSync(
    file,
    `import { it } from 'node:test';\nimport { appendFileSync } from 'node:fs';\n` +
      `it('${name} a', async () => {\n  appendFileSync(${JSON.stringify(join(dir, `${name}.times`))}, Date.now() + ' ');\n` +
      `  await new Promise((r) => setTimeout(r, ${ms}));\n  appendFileSync(${JSON.stringify(join(dir, `${name}.times`))}, String(Date.now()));\n` +
      `  if (!${passes}) throw new Error('${name} failed on purpose');\n});\nit('${name} b', () => {});\n`,
  );
  return file;
}
const ran = (name: string) =>
  readFileSync(join(dir, `${name}.times`), 'utf8')
    .split(' ')
    .map(Number) as [number, number];
const overlap = (a: [number, number], b: [number, number]) => a[0] < b[1] && b[0] < a[1];

/**
 * The pool's events over `files`, from a process of its own: node:test runs no files from inside a test file (its
 * NODE_TEST_CONTEXT says it is one), so the pool runs as test/run.ts runs it, in a process that is not.
 */
function collect(files: string[], options: PoolOptions): { type: string; data?: { file?: string; message?: string; name?: string } }[] {
  const script =
    `import { runFiles } from ${JSON.stringify(join(ROOT, 'test/support/file-pool.ts'))};\n` +
    `for await (const e of runFiles(${JSON.stringify(files)}, ${JSON.stringify(options)})) ` +
    'console.log(JSON.stringify({ type: e.type, data: { file: e.data?.file, message: e.data?.message, name: e.data?.name } }));';
  // A file, not `-e`: node:test gives the files' processes its own flags, and `--input-type` would reach them.
  const driver = join(dir, 'driver.mts');
  writeFileSync(driver, script);
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const child = spawnSync(process.execPath, ['--import', 'tsx', driver], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(child.status, 0, child.stderr);
  return child.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
}

describe('the test run’s file pool', () => {
  it("hands over each file's events together, and sums node:test's summaries into one", () => {
    const files = [testFile('one', 300), testFile('two', 50, false), testFile('three', 50)];
    const events = collect(files, { base: 2, max: 2, timeoutMs: 30_000 });
    // Each file's events are one run: no other file's event inside it.
    const order = events.filter((e) => e.data?.file).map((e) => e.data!.file);
    const blocks = order.filter((file, i) => file !== order[i - 1]);
    assert.equal(blocks.length, 3, `one block a file: ${blocks.join(', ')}`);
    const summary = Object.fromEntries(
      events.filter((e) => e.type === 'test:diagnostic' && !e.data?.file).map((e) => e.data!.message!.split(' ') as [string, string]),
    );
    assert.deepEqual([summary.tests, summary.pass, summary.fail], ['6', '5', '1']);
    assert.equal(events.filter((e) => e.type === 'test:diagnostic' && /^tests /.test(e.data?.message ?? '')).length, 1, 'one summary');
    assert.ok(events.some((e) => e.type === 'test:fail' && e.data?.name === 'two a'));
  });

  it('starts a file beyond the base only while the cores stand idle', () => {
    // Idle enough always (above -1): the second file starts beside the first.
    collect([testFile('busy-a', 1_500), testFile('busy-b', 200)], { base: 1, max: 2, timeoutMs: 30_000, idleAbove: -1, sampleMs: 50, settleMs: 0 });
    assert.ok(overlap(ran('busy-a'), ran('busy-b')), 'ran side by side');
    // Never idle enough (above 1): one at a time, whatever `max` allows.
    collect([testFile('calm-a', 600), testFile('calm-b', 200)], { base: 1, max: 2, timeoutMs: 30_000, idleAbove: 1, sampleMs: 50, settleMs: 0 });
    assert.ok(!overlap(ran('calm-a'), ran('calm-b')), 'one after the other');
  });
});
