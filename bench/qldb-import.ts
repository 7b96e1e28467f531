/**
 * `npm run bench:qldb-import [-- --revisions N --per-block K --format ION_TEXT|ION_BINARY|JSON --blocks-per-object B]`
 *
 * Imports a generated QLDB journal export of N document revisions (100,000 by default; made by
 * test/support/qldb-journal.ts, whose hashing the real QLDB block and the Ion Hash vectors check) into a fresh
 * local stack with `npm run import:qldb`, and reports: the export's size, the verification pass alone (`--verify-only`,
 * on this export and on one a fifth its size, with each one's peak memory), the import (revisions/s, the importer's
 * peak memory), and `ledger-verify --qldb` over the imported chain.
 * Ratios within one run are what to compare: this machine's absolute speed drifts from day to day.
 * Writes bench/results/<date>-qldb-import.json.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as ion from 'ion-js';
import { cryptoHasherProvider, makeHashReader } from 'ion-hash-js';
import { ionHash } from '#shared/qldb/hashing';
import { type ExportFormat, digestFile, strandBlocks, writeExport } from '#test/support/qldb-journal';
import { startStack } from '#test/support/stack';

const { values } = parseArgs({
  options: {
    revisions: { type: 'string', default: '100000' },
    'per-block': { type: 'string', default: '5' },
    format: { type: 'string', default: 'ION_TEXT' },
    'blocks-per-object': { type: 'string', default: '500' },
  },
});
const revisions = Number(values.revisions);
const perBlock = Number(values['per-block']);
const format = values.format as ExportFormat;
const count = Math.ceil(revisions / perBlock);
const ROOT = new URL('../', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'bench-qldb-'));

function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  return total;
}

function run(script: string, args: string[]): Promise<{ code: number | null; out: string; ms: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => {
    out += c;
    process.stderr.write(c);
  });
  return new Promise((done) => child.once('exit', (code) => done({ code, out, ms: performance.now() - started })));
}

const t0 = performance.now();
const dir = join(work, 'export');
// A JSON Lines export of plain JSON types only, which binds every revision's data to its hash (one of the default
// documents, with timestamps and blobs, is refused unless told: docs/qldb-import.md).
const plainData = format === 'JSON';
const made = writeExport(dir, { count, revisionsPerBlock: perBlock, mixed: true, plainData, format, blocksPerObject: Number(values['blocks-per-object']) });
writeFileSync(join(work, 'digest.json'), digestFile(made.digest, made.strandId, count - 1));
const generateMs = performance.now() - t0;
const bytes = sizeOf(dir);
console.log(
  `export: ${made.blocks} blocks, ${made.revisions} revisions, ${made.objects.length} data objects, ${(bytes / 1e6).toFixed(1)} MB (${format}), made in ${(generateMs / 1000).toFixed(1)} s`,
);

// Verification alone, as `--verify-only` runs it, on this export and on one a fifth its size: the peak memory
// should not grow with the export (one data object, one block's values at a time).
const small = writeExport(join(work, 'small'), {
  count: Math.ceil(count / 5),
  revisionsPerBlock: perBlock,
  mixed: true,
  plainData,
  format,
  blocksPerObject: Number(values['blocks-per-object']),
});
const verifyOnly = async (exportDir: string, what: string, revisionsIn: number) => {
  const checked = await run('shared/qldb/cli.ts', ['--export', exportDir, '--verify-only']);
  if (checked.code !== 0) throw new Error(`verification failed:\n${checked.out}`);
  const peak = Number(/peak memory (\d+) MB/.exec(checked.out)?.[1]);
  console.log(
    `verification alone, ${what}: ${(checked.ms / 1000).toFixed(1)} s, ${Math.round(revisionsIn / (checked.ms / 1000))} revisions/s, peak memory ${peak} MB`,
  );
  return { seconds: checked.ms / 1000, revisions_per_second: revisionsIn / (checked.ms / 1000), peak_mb: peak, revisions: revisionsIn };
};
// The Ion Hash itself: ours (shared/qldb/ion-hash.ts) against ion-hash-js on the same values, in this run.
const hashed: ion.dom.Value[] = [];
for (const block of strandBlocks({ count: Math.min(count, 2_000), revisionsPerBlock: perBlock, mixed: true })) {
  const value = ion.load(block.ion)!;
  hashed.push(value.get('transactionInfo')!);
  for (const r of value.get('revisions') as unknown as Iterable<ion.dom.Value>)
    for (const part of [r.get('metadata'), r.get('data')]) if (part) hashed.push(part);
}
const timeHashing = (hash: (v: ion.dom.Value) => unknown) => {
  const started = performance.now();
  for (const v of hashed) hash(v);
  return hashed.length / ((performance.now() - started) / 1000);
};
const theirs = timeHashing((v) => {
  const reader = makeHashReader(ion.makeReader(ion.dumpBinary(v)), cryptoHasherProvider('sha256'));
  reader.next();
  reader.next();
  return reader.digest();
});
const ours = timeHashing((v) => ionHash(v));
console.log(`Ion Hash of ${hashed.length} values: ${Math.round(ours)}/s here, ${Math.round(theirs)}/s with ion-hash-js (${(ours / theirs).toFixed(1)}×)`);

const verifyFull = await verifyOnly(dir, `${made.revisions} revisions`, made.revisions);
const verifySmall = await verifyOnly(join(work, 'small'), `${small.revisions} revisions`, small.revisions);

const stack = await startStack();
let result: Record<string, unknown> = {};
try {
  const imported = await run('shared/qldb/cli.ts', ['--url', stack.url, '--export', dir, '--chain', 'qldb-bench', '--digest', join(work, 'digest.json')]);
  if (imported.code !== 0) throw new Error(`the import failed:\n${imported.out}`);
  const peakMb = Number(/peak memory (\d+) MB/.exec(imported.out)?.[1]);
  console.log(
    `import: ${(imported.ms / 1000).toFixed(1)} s, ${Math.round(made.revisions / (imported.ms / 1000))} revisions/s, importer's peak memory ${peakMb} MB`,
  );
  const verified = await run('shared/verify/cli.ts', ['--url', stack.url, '--chain', 'qldb-bench', '--qldb']);
  if (verified.code !== 0) throw new Error(`ledger-verify --qldb failed:\n${verified.out}`);
  console.log(`ledger-verify --qldb: ${(verified.ms / 1000).toFixed(1)} s, ${Math.round(made.revisions / (verified.ms / 1000))} revisions/s`);
  result = {
    date: new Date().toISOString(),
    command: `npm run bench:qldb-import -- --revisions ${revisions} --per-block ${perBlock} --format ${format}`,
    export: { blocks: made.blocks, revisions: made.revisions, objects: made.objects.length, bytes, format },
    ion_hash: { values: hashed.length, per_second: ours, ion_hash_js_per_second: theirs, ratio: ours / theirs },
    verify_only: verifyFull,
    verify_only_fifth: verifySmall,
    import: { seconds: imported.ms / 1000, revisions_per_second: made.revisions / (imported.ms / 1000), importer_peak_mb: peakMb },
    ledger_verify_qldb: { seconds: verified.ms / 1000, revisions_per_second: made.revisions / (verified.ms / 1000) },
  };
} finally {
  await stack.stop();
  rmSync(stack.dataDir, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
}
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
const file = join(ROOT, `bench/results/${new Date().toISOString().slice(0, 10)}-qldb-import.json`);
writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
console.log(`written to ${file}`);
