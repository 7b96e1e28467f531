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
 * `cpuMs`: the CPU the run used, its children's included, when known. `cpuByFile`: each file's CPU (its process and
 * the stacks and commands it started; absolute path to ms), when known. `sharedCpu`: CPU of what the files shared
 * (the run's DynamoDB Local), named.
 */
export default async function* slowestFiles(source, { wallMs, cpuMs, cpuByFile = {}, sharedCpu = {} } = {}) {
  const files = [];
  const started = performance.now();
  for await (const event of source) {
    const data = event.data;
    if (event.type === 'test:complete' && data?.file && data.nesting === 0 && resolve(data.name) === data.file) {
      files.push({
        file: relative(process.cwd(), data.file),
        ms: Math.round(data.details?.duration_ms ?? 0),
        cpuMs: cpuByFile[data.file],
        passed: data.details?.passed !== false,
      });
    }
  }
  if (files.length === 0) return;
  files.sort((a, b) => b.ms - a.ms);
  const total = Math.round(wallMs ?? performance.now() - started);
  const sum = files.reduce((s, f) => s + f.ms, 0);
  const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
  const cpu = cpuMs === undefined ? '' : `, ${seconds(cpuMs)} of CPU`;
  let out = `\nSlowest test files (${files.length} files, ${seconds(sum)} of file time, ${seconds(total)} wall${cpu}):\n`;
  const cpuOf = (f) => (f.cpuMs === undefined ? '' : `${seconds(f.cpuMs).padStart(8)} CPU`);
  for (const f of files.slice(0, SHOWN)) out += `  ${seconds(f.ms).padStart(8)}${cpuOf(f)}  ${f.file}${f.passed ? '' : '  (failed)'}\n`;
  const byCpu = files.filter((f) => f.cpuMs !== undefined).sort((a, b) => b.cpuMs - a.cpuMs);
  if (byCpu.length > 0) {
    const shared = Object.entries(sharedCpu).map(([name, ms]) => `; ${name} ${seconds(ms)}`);
    out += `Most CPU: ${byCpu
      .slice(0, SHOWN)
      .map((f) => `${f.file.replace(/^test\//, '')} ${seconds(f.cpuMs)}`)
      .join(', ')}${shared.join('')}\n`;
  }
  if (process.env.SLOWEST_FILES_JSON) writeFileSync(process.env.SLOWEST_FILES_JSON, `${JSON.stringify({ wallMs: total, cpuMs, sharedCpu, files }, null, 1)}\n`);
  yield out;
}
