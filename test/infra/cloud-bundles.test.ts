/**
 * The kept Lambda assets (infra/cdk/bundles.ts): a synth deploys what the sources say now, never a bundle built
 * from an older version of them, and reuses the kept one only while every input is as it was.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, it } from 'node:test';
import { ROOT } from '#infra/bundling';
import { CLOUD_BUNDLE_CACHE, cloudBundle } from '#infra/cdk/bundles';

const name = `test-${process.pid}`;
const dir = join(ROOT, 'test-output', name);
mkdirSync(join(dir, 'static'), { recursive: true });
const entry = `test-output/${name}/entry.ts`;
const source = (text: string) =>
  writeFileSync(join(ROOT, entry), `import { word } from './word.ts';\nexport const handler = async () => word + ${JSON.stringify(text)};\n`);
writeFileSync(join(dir, 'word.ts'), "export const word: string = 'hello ';\n");
writeFileSync(join(dir, 'static', 'page.html'), '<p>one</p>');
const files = [{ from: join(dir, 'static'), as: 'static/pages' }];

after(() => {
  rmSync(dir, { recursive: true, force: true });
  for (const kept of readdirSync(CLOUD_BUNDLE_CACHE))
    if (kept.startsWith(`${name}-`) || kept.startsWith(`${name}.`)) rmSync(join(CLOUD_BUNDLE_CACHE, kept), { recursive: true, force: true });
});

const run = async (folder: string) => (await import(`${join(folder, 'index.mjs')}?${Math.random()}`)).handler();

describe('the kept Lambda assets', () => {
  it('are reused while the inputs are unchanged, and built again when the entry, an imported file or a file copied beside it changes', async () => {
    source('world');
    const first = cloudBundle(name, entry, 24, files);
    assert.equal(await run(first), 'hello world');
    assert.equal(readFileSync(join(first, 'static/pages/page.html'), 'utf8'), '<p>one</p>');
    assert.equal(cloudBundle(name, entry, 24, files), first, 'nothing changed: the kept folder');

    source('there');
    const second = cloudBundle(name, entry, 24, files);
    assert.notEqual(second, first);
    assert.equal(await run(second), 'hello there');
    assert.equal(await run(first), 'hello world', 'a kept folder is never changed in place');

    // An imported file rewritten with the same size: its modification time tells.
    writeFileSync(join(dir, 'word.ts'), "export const word: string = 'howdy ';\n");
    utimesSync(join(dir, 'word.ts'), new Date(), new Date(Date.now() + 5_000));
    const third = cloudBundle(name, entry, 24, files);
    assert.equal(await run(third), 'howdy there');

    writeFileSync(join(dir, 'static', 'page.html'), '<p>two</p>');
    const fourth = cloudBundle(name, entry, 24, files);
    assert.notEqual(fourth, third);
    assert.equal(readFileSync(join(fourth, 'static/pages/page.html'), 'utf8'), '<p>two</p>');
  });

  it('see a file added to a folder copied beside the bundle', () => {
    source('world');
    const before = cloudBundle(name, entry, 24, files);
    writeFileSync(join(dir, 'static', 'extra.txt'), 'x');
    const after = cloudBundle(name, entry, 24, files);
    assert.notEqual(after, before);
    assert.equal(readFileSync(join(after, 'static/pages/extra.txt'), 'utf8'), 'x');
    rmSync(join(dir, 'static', 'extra.txt'));
  });

  it('never remove a folder a synth was just handed, however long ago it was built', () => {
    source('world');
    const inUse = cloudBundle(name, entry, 24, files);
    // Built two hours ago, handed out again now: still in use.
    const twoHoursAgo = new Date(Date.now() - 7_200_000);
    utimesSync(inUse, twoHoursAgo, twoHoursAgo);
    assert.equal(cloudBundle(name, entry, 24, files), inUse);
    source('changed');
    assert.notEqual(cloudBundle(name, entry, 24, files), inUse);
    assert.ok(existsSync(join(inUse, 'index.mjs')), 'the folder handed out a moment ago is still whole');
  });

  it('are built the same from any working folder', async () => {
    source('from elsewhere');
    // A synth run from another folder (its own process: esbuild takes the folder it starts in).
    const tsx = pathToFileURL(createRequire(join(ROOT, 'package.json')).resolve('tsx')).href;
    const script = `import { cloudBundle } from ${JSON.stringify(join(ROOT, 'infra/cdk/bundles.ts'))}; console.log(cloudBundle(${JSON.stringify(name)}, ${JSON.stringify(entry)}, 24, ${JSON.stringify(files)}));`;
    const synth = spawnSync(process.execPath, ['--import', tsx, '--input-type=module', '-e', script], { cwd: tmpdir(), encoding: 'utf8' });
    assert.equal(synth.status, 0, synth.stderr);
    assert.match(await run(synth.stdout.trim().split('\n').at(-1)!), /from elsewhere$/);
  });

  it("carry a source map that names the TypeScript line of an error under Lambda's --enable-source-maps, without the sources' text", () => {
    writeFileSync(join(ROOT, entry), "import { word } from './word.ts';\nexport const handler = async () => {\n  throw new Error('boom ' + word);\n};\n");
    const folder = cloudBundle(name, entry, 24, files);
    const map = JSON.parse(readFileSync(join(folder, 'index.mjs.map'), 'utf8')) as { sources: string[]; sourcesContent?: unknown };
    assert.ok(
      map.sources.some((s) => s.endsWith(`${name}/entry.ts`)),
      map.sources.join(', '),
    );
    assert.equal(map.sourcesContent, undefined, "the map holds positions, not the sources' text (Node parses it at every cold start)");
    const script = `import(${JSON.stringify(join(folder, 'index.mjs'))}).then((m) => m.handler()).catch((e) => console.log(e.stack));`;
    const ran = spawnSync(process.execPath, ['--enable-source-maps', '--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(ran.status, 0, ran.stderr);
    assert.match(ran.stdout, new RegExp(`${name}/entry\\.ts:3:`), `the stack names entry.ts line 3:\n${ran.stdout}`);
  });

  it('are built again for another Node major', () => {
    source('world');
    const for24 = cloudBundle(name, entry, 24, files);
    const for22 = cloudBundle(name, entry, 22, files);
    assert.notEqual(for22, for24);
    assert.match(readFileSync(join(for22, 'index.mjs'), 'utf8'), /"world"/);
  });
});
