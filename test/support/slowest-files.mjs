/**
 * A node:test reporter that prints, once the run ends, the ten slowest test files and the run's total,
 * so that a suite's growth is seen when it starts (`npm test` runs it beside the spec reporter).
 *
 * A file's time is the runner's own: from the start of its process to its end, imports, hooks and
 * stacks included (the `test:complete` event the runner emits for the file itself). With
 * SLOWEST_FILES_JSON=<path> every file's time is also written there, slowest first.
 */
import { writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';

const SHOWN = 10;

/**
 * `wallMs`: the run's wall time, when the events are handed over after the run (test/run.ts); else measured here.
 * `cpuMs`: the CPU the run used, its children's included, when known.
 */
export default async function* slowestFiles(source, { wallMs, cpuMs } = {}) {
  const files = [];
  const started = performance.now();
  for await (const event of source) {
    const data = event.data;
    if (event.type === 'test:complete' && data?.file && data.nesting === 0 && resolve(data.name) === data.file) {
      files.push({ file: relative(process.cwd(), data.file), ms: Math.round(data.details?.duration_ms ?? 0), passed: data.details?.passed !== false });
    }
  }
  if (files.length === 0) return;
  files.sort((a, b) => b.ms - a.ms);
  const total = Math.round(wallMs ?? performance.now() - started);
  const sum = files.reduce((s, f) => s + f.ms, 0);
  const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
  const cpu = cpuMs === undefined ? '' : `, ${seconds(cpuMs)} of CPU`;
  let out = `\nSlowest test files (${files.length} files, ${seconds(sum)} of file time, ${seconds(total)} wall${cpu}):\n`;
  for (const f of files.slice(0, SHOWN)) out += `  ${seconds(f.ms).padStart(8)}  ${f.file}${f.passed ? '' : '  (failed)'}\n`;
  if (process.env.SLOWEST_FILES_JSON) writeFileSync(process.env.SLOWEST_FILES_JSON, `${JSON.stringify({ wallMs: total, cpuMs, files }, null, 1)}\n`);
  yield out;
}
