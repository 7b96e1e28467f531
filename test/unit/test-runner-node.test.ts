/**
 * `npm test` runs on Lambda's Node (24), as the functions it tests do: typed on an older Node it starts itself again
 * on Lambda's, with that Node first on the PATH of the commands the tests run, and says so (test/run.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as nodeModule from 'node:module';
import { delimiter, dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from '#infra/bundling';
import { LAMBDA_NODE_MAJOR } from '#infra/sim/runtime';
import { trimCompileCache, withoutLoader } from '#test/support/lambda-node';

/** The Node `npm test` was typed on (test/run.ts names it when it moved), else this one. */
const typedOn = process.env.LEDGER_TEST_HOST_NODE ?? process.execPath;
const versionOf = (node: string) => spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();

describe("npm test on Lambda's Node", () => {
  it('runs here on Node 24, and, typed on an older Node, moves there and says so; the commands it runs find that Node first', (t) => {
    if (process.env.LEDGER_TEST_PRINT_PATH_NODE === '1') return t.skip('inside the run below');
    assert.equal(Number(process.versions.node.split('.')[0]), LAMBDA_NODE_MAJOR, `this file runs on ${process.version}`);
    const typedVersion = versionOf(typedOn);
    if (Number(typedVersion.slice(1).split('.')[0]) >= LAMBDA_NODE_MAJOR) return t.skip(`typed on ${typedVersion}: nothing to move from`);
    // A run of one file that prints the Node its commands find on the PATH, from the Node it was typed on.
    const run = spawnSync(typedOn, ['--import', 'tsx', 'test/run.ts', 'test/unit/test-runner-node.test.ts'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      // The PATH as typed: without the directory of the Node this run moved to.
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_TEST_CONTEXT')),
        LEDGER_TEST_PRINT_PATH_NODE: '1',
        PATH: (process.env.PATH ?? '')
          .split(delimiter)
          .filter((dir) => dir !== dirname(process.execPath))
          .join(delimiter),
      },
    });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(
      run.stderr,
      new RegExp(`^Running the tests on Lambda's Node, v${LAMBDA_NODE_MAJOR}\\.\\d+\\.\\d+ \\(this is ${typedVersion.replaceAll('.', '\\.')}\\)`, 'm'),
    );
    assert.match(run.stdout, new RegExp(`node on the PATH: v${LAMBDA_NODE_MAJOR}\\.`));
  });

  it("runs its files without tsx's loader where Node strips the types itself (Node 24), keeps every other flag, and shares V8's compile cache", (t) => {
    if (!process.env.LEDGER_TEST_CPU_DIR) return t.skip('run alone, not by test/run.ts');
    if (process.env.LEDGER_TEST_ON_THIS_NODE === '1') return t.skip('kept on the Node it was typed on');
    assert.ok((process.features as { typescript?: unknown }).typescript, `${process.version} strips types`);
    assert.deepEqual(
      process.execArgv.filter((flag) => flag.includes('tsx')),
      [],
      `this file's flags: ${process.execArgv.join(' ')}`,
    );
    assert.deepEqual(withoutLoader(['--import', 'tsx', '--stack-size=2000', '--import=tsx', '--require', 'tsx/cjs', '--import', './x.mjs', '--loader=tsx']), [
      '--stack-size=2000',
      '--import',
      './x.mjs',
    ]);
    if (process.env.NODE_DISABLE_COMPILE_CACHE) return;
    // Node 22.1+ (this project's typings are Node 20's).
    const cacheDir = (nodeModule as { getCompileCacheDir?: () => string | undefined }).getCompileCacheDir?.();
    const expected = process.env.NODE_COMPILE_CACHE;
    assert.ok(expected, 'the runner names a compile cache (node_modules/.cache/verifiable-ledger/ unless set)');
    assert.equal(cacheDir?.startsWith(resolve(expected)), true, `cache: ${cacheDir}`);
  });

  it('empties a compile cache grown past its limit, and keeps one within it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'compile-cache-'));
    try {
      mkdirSync(join(dir, 'v24'));
      writeFileSync(join(dir, 'v24', 'a'), Buffer.alloc(600));
      writeFileSync(join(dir, 'v24', 'b'), Buffer.alloc(600));
      trimCompileCache(dir, 2_000);
      assert.ok(existsSync(join(dir, 'v24', 'a')), 'kept: 1,200 bytes of 2,000');
      trimCompileCache(dir, 1_000);
      assert.equal(existsSync(dir), false, 'removed: 1,200 bytes of 1,000');
      trimCompileCache(dir, 1_000); // nothing there: nothing to do
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('(the inner run of the test above) prints the Node the PATH finds', (t) => {
    if (process.env.LEDGER_TEST_PRINT_PATH_NODE !== '1') return t.skip('only inside the run above');
    t.diagnostic(`node on the PATH: ${versionOf('node')}`);
  });

  it('check:cloud and test:reliability move the same way (test/support/lambda-node.ts)', (t) => {
    if (process.env.LEDGER_TEST_PRINT_PATH_NODE === '1') return t.skip('inside the run above');
    const typedVersion = versionOf(typedOn);
    if (Number(typedVersion.slice(1).split('.')[0]) >= LAMBDA_NODE_MAJOR) return t.skip(`typed on ${typedVersion}: nothing to move from`);
    const run = spawnSync(typedOn, ['--import', 'tsx', 'test/support/print-node.ts'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stderr, new RegExp(`^Running print-node on Lambda's Node, v${LAMBDA_NODE_MAJOR}\\.`, 'm'));
    assert.match(run.stdout, new RegExp(`^node v${LAMBDA_NODE_MAJOR}\\.`, 'm'));
    const scripts = (JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { scripts: Record<string, string> }).scripts;
    for (const [script, runner] of [
      ['check:cloud', 'test/cloud/run.ts'],
      ['test:reliability', 'test/reliability/run.ts'],
    ] as const) {
      assert.ok(scripts[script]!.includes(runner), `${script} runs ${runner}`);
      assert.match(readFileSync(`${ROOT}/${runner}`, 'utf8'), /^await onLambdasNode\(/m, `${runner} moves to Lambda's Node first`);
    }
  });

  it("shows the AWS SDK's warning on a Node it will stop supporting (older than 22), and none on Lambda's", (t) => {
    if (process.env.LEDGER_TEST_PRINT_PATH_NODE === '1') return t.skip('inside the run above');
    // The service's own DynamoDB client, made as every command and function makes it: the SDK warns when it is made.
    const make = (node: string) =>
      spawnSync(
        node,
        [
          '--import',
          'tsx',
          '--input-type=module',
          '-e',
          "const { createDynamoBaseClient } = await import('./shared/storage/client.ts'); createDynamoBaseClient({ region: 'eu-west-1', endpoint: 'http://127.0.0.1:9' });",
        ],
        { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH } },
      );
    // Nothing of the project hides it: no entry point, command, bench or test sets the SDK's switch.
    const switchName = ['AWS_SDK_JS_NODE_VERSION_SUPPORT', 'WARNING_DISABLED'].join('_');
    const setting = spawnSync('git', ['grep', '-l', switchName, '--', 'infra', 'shared', 'functions', 'bin', 'bench', 'test', 'localstack', '.ci'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    assert.equal(setting.stdout.trim(), '', `set in: ${setting.stdout}`);
    const onLambdas = make(process.execPath);
    assert.equal(onLambdas.status, 0, onLambdas.stderr);
    assert.doesNotMatch(onLambdas.stderr, /NodeVersionSupportWarning/);
    const typedVersion = versionOf(typedOn);
    if (Number(typedVersion.slice(1).split('.')[0]) >= 22) return t.skip(`typed on ${typedVersion}: a Node the SDK supports`);
    // Hidden (the switch set by the project's commands), a user on Node 20 was never told.
    const onTyped = make(typedOn);
    assert.equal(onTyped.status, 0, onTyped.stderr);
    assert.match(onTyped.stderr, /NodeVersionSupportWarning: The AWS SDK for JavaScript \(v3\)[\s\S]*require node >=22/);
  });
});
