/**
 * The launcher (infra/local/start.mjs) and the commands run through bin/run.mjs load kept bundles of their TypeScript
 * (bin/bundle-cache.mjs, keptBundle): each module keeps its own import.meta.url (paths found from where a module lives
 * are the same bundled or not), and only the expression is replaced, never the same words inside a string (the
 * functions' bundle banner is one such string); a command sees its arguments and its own path as under tsx; the
 * bundle is built once, and again when a source changed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { inputStamps, inputsUnchanged, keptBundle, stampedFiles } from '../../bin/bundle-cache.mjs';
import { ROOT, stamps, unchanged } from '#infra/bundling';

const ENTRY = 'test/support/fixtures/kept-bundle-entry.ts';
const SOURCE = join(ROOT, ENTRY);

function runCommand(env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, ['bin/run.mjs', ENTRY, 'create', '--role', 'x'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env } });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as { self: string; words: string; argv: string[]; script: string; main: boolean };
}

describe('kept bundles of TypeScript commands', () => {
  it('keeps each module where it lives, its strings as written, and the arguments and script path the command was given', () => {
    const bundled = runCommand();
    const fromSource = runCommand({ LEDGER_COMMANDS_FROM_SOURCE: '1' });
    assert.deepEqual(bundled, { self: SOURCE, words: 'import.meta.url', argv: ['create', '--role', 'x'], script: SOURCE, main: true });
    assert.deepEqual(bundled, fromSource, 'the same as run from its sources');
  });

  it('is built once, and again when a source changed', async () => {
    const bundle = (await keptBundle(ENTRY, 'verifiable-ledger/commands'))!;
    assert.ok(readFileSync(bundle, 'utf8').includes(JSON.stringify(`file://${SOURCE}`)), 'the source URL is written into the bundle');
    const builtAt = statSync(bundle).mtimeMs;
    assert.equal(await keptBundle(ENTRY, 'verifiable-ledger/commands'), bundle);
    assert.equal(statSync(bundle).mtimeMs, builtAt, 'a fresh bundle is not built again');
    const later = new Date(Date.now() + 2_000);
    utimesSync(SOURCE, later, later);
    assert.equal(await keptBundle(ENTRY, 'verifiable-ledger/commands'), bundle);
    assert.ok(statSync(bundle).mtimeMs > builtAt, 'a changed source is bundled again');
    // A record naming no inputs (planted, or cut short) is not taken as fresh for ever (red team).
    const record = bundle.replace(/\.mjs$/, '.json');
    writeFileSync(record, JSON.stringify({ ...JSON.parse(readFileSync(record, 'utf8')), inputs: {} }));
    const rebuiltAt = statSync(bundle).mtimeMs;
    assert.equal(await keptBundle(ENTRY, 'verifiable-ledger/commands'), bundle);
    assert.ok(statSync(bundle).mtimeMs > rebuiltAt, 'built again');
    assert.ok(Object.keys(JSON.parse(readFileSync(record, 'utf8')).inputs).includes(ENTRY));
  });

  it("stamps the repository's own inputs each, and those inside node_modules by their packages and npm's record of what it installed", () => {
    const installed = join(ROOT, 'node_modules', '.package-lock.json');
    const npmRecord = existsSync(installed) ? [installed] : [];
    const own = join(ROOT, 'package.json');
    const modules = join(ROOT, 'node_modules');
    assert.deepEqual(
      stampedFiles([
        own,
        join(modules, 'esbuild', 'lib', 'main.js'),
        join(modules, 'esbuild', 'package.json'),
        join(modules, '@smithy', 'core', 'dist-cjs', 'index.js'),
        join(modules, 'a', 'node_modules', '@b', 'c', 'd.js'),
      ]),
      // a/node_modules/@b/c is no package here (no package.json): its file is stamped itself.
      [
        own,
        join(modules, 'a', 'node_modules', '@b', 'c', 'd.js'),
        join(modules, '@smithy', 'core', 'package.json'),
        join(modules, 'esbuild', 'package.json'),
        ...npmRecord,
      ],
    );
    assert.deepEqual(stampedFiles([own]), [own], 'nothing from node_modules: nothing stands for it');
    // The functions' records (infra/bundling.ts): a new version of a package, or an `npm ci`, builds them again.
    const dependency = join(modules, '@smithy', 'core', 'dist-cjs', 'index.js');
    const recorded = stamps([own, dependency]);
    assert.deepEqual(Object.keys(recorded), [own, join(modules, '@smithy', 'core', 'package.json'), ...npmRecord]);
    assert.equal(unchanged(recorded), true);
    for (const key of Object.keys(recorded).slice(1))
      assert.equal(unchanged({ ...recorded, [key]: { ...recorded[key]!, mtimeMs: recorded[key]!.mtimeMs - 1 } }), false, `${key} changed`);
    // A record made file by file (before this) is built again once.
    const fileByFile = Object.fromEntries([own, dependency].map((path) => [path, { size: statSync(path).size, mtimeMs: statSync(path).mtimeMs }]));
    assert.equal(unchanged(fileByFile), false);
    // The launcher's and the commands' records (bin/bundle-cache.mjs): the same rule.
    const kept = inputStamps(['package.json', 'node_modules/@smithy/core/dist-cjs/index.js']);
    assert.deepEqual(Object.keys(kept), ['package.json', 'node_modules/@smithy/core/package.json', ...npmRecord.map(() => 'node_modules/.package-lock.json')]);
    assert.equal(inputsUnchanged(kept), true);
    assert.equal(inputsUnchanged({ ...kept, 'node_modules/@smithy/core/package.json': '1:2' }), false, 'another version of a package');
    assert.equal(inputsUnchanged({ 'package.json': kept['package.json']!, 'node_modules/@smithy/core/dist-cjs/index.js': 'x' }), false, 'stamped the old way');
  });
});
