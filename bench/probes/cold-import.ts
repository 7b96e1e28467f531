/**
 * What loading a function's bundle costs a Lambda cold start: the ledger function's Lambda asset (infra/cdk/bundles.ts,
 * for Node 24) imported by a fresh process RUNS times (default 5) with `--enable-source-maps`, as Lambda runs it
 * (infra/cdk/ledger-stack.ts sets it), and RUNS times without; then the same bundle with its sources' text put back
 * into its map, as it was built before 2026-12-04. Prints the median CPU and wall of each import.
 *
 *   node --import tsx bench/probes/cold-import.ts        # on this machine's Node; run it with Node 24 for Lambda's
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { cloudBundle } from '#infra/cdk/bundles';
import { GROUPS } from '#infra/routes';

const RUNS = Number(process.env.RUNS ?? 5);
const folder = cloudBundle('ledger', GROUPS.ledger.entry, 24, []);

// The same bundle, its maps given the sources' text again (what esbuild's sourcesContent put there).
const withSources = mkdtempSync(join(tmpdir(), 'cold-import-'));
cpSync(folder, withSources, { recursive: true, dereference: true });
for (const name of readdirSync(withSources).filter((n) => n.endsWith('.mjs.map'))) {
  const map = JSON.parse(readFileSync(join(withSources, name), 'utf8')) as { sources: string[]; sourcesContent?: string[] };
  map.sourcesContent = map.sources.map((source) => {
    try {
      return readFileSync(resolve(folder, source), 'utf8');
    } catch {
      return '';
    }
  });
  writeFileSync(join(withSources, name), JSON.stringify(map));
}

const script = (file: string) =>
  `const c = process.cpuUsage(); const t = performance.now(); await import(${JSON.stringify(file)}); const u = process.cpuUsage(c);` +
  'console.log(JSON.stringify({ cpu: (u.user + u.system) / 1000, wall: performance.now() - t }));';
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function measure(label: string, file: string, flags: string[]): void {
  const runs = Array.from({ length: RUNS }, () => {
    const run = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', script(file)], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(run.stderr);
    return JSON.parse(run.stdout) as { cpu: number; wall: number };
  });
  const dir = dirname(file);
  const kb = Math.round(
    readdirSync(dir)
      .filter((n) => n.endsWith('.mjs.map'))
      .reduce((sum, n) => sum + readFileSync(join(dir, n)).length, 0) / 1024,
  );
  console.log(`${label.padEnd(48)} ${Math.round(median(runs.map((r) => r.cpu)))} ms CPU, ${Math.round(median(runs.map((r) => r.wall)))} ms (maps ${kb} KB)`);
}

console.log(`the ledger function's bundle on Node ${process.versions.node}, medians of ${RUNS}`);
measure('--enable-source-maps (as Lambda runs it)', join(folder, 'index.mjs'), ['--enable-source-maps']);
measure('no source maps', join(folder, 'index.mjs'), []);
measure("--enable-source-maps, the sources' text in the map", join(withSources, 'index.mjs'), ['--enable-source-maps']);
rmSync(withSources, { recursive: true, force: true });
