/**
 * The verifier as anyone installs it (issue 71): `npm pack` of the workspace @verifiable-ledger/verify makes a tarball of
 * one bundled file and no dependencies, which installs into an empty folder outside the repository and runs there, on
 * its own code (never this repository's sources): a chain verified plainly and as a C2SP log (`--tiles`), a changed
 * block refused, and `--qldb` answered by the QLDB audit the bundle carries.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '#infra/bundling';
import { call, sharedStack, stopAndRemove, type Stack } from '#test/support/stack';

let stack: Stack;
const work = mkdtempSync(join(tmpdir(), 'ledger-verify-package-'));
const installed = join(work, 'elsewhere');
const chain = `pkg-${process.pid}`;

const run = (command: string, args: string[], cwd: string) => {
  const out = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: 120_000 });
  return { code: out.status, out: `${out.stdout}${out.stderr}`, stdout: out.stdout };
};
/** `npx @verifiable-ledger/verify …` in the folder it was installed in, as its README says. */
const verify = (...args: string[]) => run('npx', ['--offline', '@verifiable-ledger/verify', '--url', stack.url, '--chain', chain, ...args], installed);
/** The same command through the bin npm linked there (without npx's own start, about a second each). */
const verifyBin = (...args: string[]) =>
  run(join(installed, 'node_modules', '.bin', 'ledger-verify'), ['--url', stack.url, '--chain', chain, ...args], installed);

before(async () => {
  stack = await sharedStack();
  assert.equal((await call(stack.url, 'POST', `/api/v1/chains/${chain}/create`)).status < 300, true);
  for (let i = 0; i < 5; i += 1) await call(stack.url, 'POST', `/api/v1/chains/${chain}/events`, { entity_id: `e${i}`, event_type: 'moved', details: { i } });
});

after(async () => {
  await stopAndRemove(stack);
  rmSync(work, { recursive: true, force: true });
});

describe('@verifiable-ledger/verify, packed and installed elsewhere', () => {
  it('packs one bundled file, no dependencies, and installs offline into an empty folder', () => {
    const packed = run('npm', ['pack', '-w', '@verifiable-ledger/verify', '--pack-destination', work, '--json'], ROOT);
    assert.equal(packed.code, 0, packed.out);
    const [{ filename, files }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as [{ filename: string; files: { path: string }[] }];
    assert.deepEqual(files.map((f) => f.path).sort(), ['README.md', 'bin/ledger-verify.mjs', 'dist/ledger-verify.mjs', 'package.json']);
    assert.equal(run('mkdir', ['-p', installed], work).code, 0);
    assert.equal(run('npm', ['init', '-y'], installed).code, 0);
    const install = run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(work, filename)], installed);
    assert.equal(install.code, 0, install.out);
    const manifest = JSON.parse(readFileSync(join(installed, 'node_modules', '@verifiable-ledger', 'verify', 'package.json'), 'utf8'));
    assert.equal(manifest.dependencies, undefined, 'no dependencies');
    assert.ok(!lstatSync(join(installed, 'node_modules', '@verifiable-ledger', 'verify')).isSymbolicLink(), 'a copy, not a link to the repository');
  });

  it('verifies a chain, plainly and as a transparency log, on its own bundled code', () => {
    const plain = verify();
    assert.equal(plain.code, 0, plain.out);
    assert.match(plain.out, new RegExp(`verified: '${chain}', 6 blocks`));
    const tiles = verifyBin('--tiles');
    assert.equal(tiles.code, 0, tiles.out);
    assert.match(tiles.out, new RegExp(`verified: '${chain}', 6 entries`));
    const usage = verifyBin('--help');
    assert.match(usage.out, /^Usage: ledger-verify --url URL --chain NAME/m);
    assert.match(usage.out, /never npx ledger-verify outside a clone/);
  });

  it("runs its own bundle, not what another package of the scope put two folders up, where a clone's sources would be (red team)", () => {
    // Inside node_modules, `../../` of the bin is node_modules/@verifiable-ledger: another package of the scope could
    // have shipped shared/verify/cli.ts and bin/ledger-verify.mjs there, and the bin took itself for a clone's.
    const scope = join(installed, 'node_modules', '@verifiable-ledger');
    mkdirSync(join(scope, 'shared', 'verify'), { recursive: true });
    mkdirSync(join(scope, 'bin'), { recursive: true });
    writeFileSync(join(scope, 'shared', 'verify', 'cli.ts'), '');
    writeFileSync(join(scope, 'bin', 'ledger-verify.mjs'), 'console.log("PLANTED"); process.exit(0);\n');
    writeFileSync(join(scope, 'package.json'), JSON.stringify({ name: 'verifiable-ledger' }));
    try {
      const usage = verifyBin('--help');
      assert.doesNotMatch(usage.out, /PLANTED/);
      assert.match(usage.out, /^Usage: ledger-verify --url URL --chain NAME/m);
    } finally {
      for (const planted of ['shared', 'bin', 'package.json']) rmSync(join(scope, planted), { recursive: true, force: true });
    }
  });

  it('answers --qldb with the QLDB audit it carries, and a wrong key as not verified', () => {
    const qldb = verifyBin('--qldb');
    assert.equal(qldb.code, 1, qldb.out);
    assert.match(qldb.out, /NOT VERIFIED: block 1 of .*carries no QLDB provenance: it is not part of an import/);
    const wrongKey = verifyBin('--public-key', 'ab'.repeat(32));
    assert.equal(wrongKey.code, 1, wrongKey.out);
    assert.match(wrongKey.out, /NOT VERIFIED/);
  });
});
