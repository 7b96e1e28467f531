/**
 * `ledger-verify` runs from a bundle of its code kept as plain JavaScript (bin/bundle-cache.mjs): the bundle carries
 * its page worker's code, so an audit with worker threads loads no TypeScript and bundles nothing; a bundle whose sources
 * changed, or that another esbuild made, is built again; and without a bundle the verifier still runs from its
 * sources. The CLI, run as a user runs it, against a node served from memory here.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cachedBundle } from '../../bin/bundle-cache.mjs';
import { signedChain } from '#test/support/signed-chain';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = ['shared/verify/cli.ts', { PAGE_WORKER_CODE: 'shared/verify/page-worker.ts' }] as const;
/** More blocks than the CLI checks in its own thread (page-workers.ts, minBlocks): its workers are started. */
const SIZE = 2_600;

const { answer, publicKeyHex } = signedChain(SIZE);

let server: Server;
let url: string;

before(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer(new URL(req.url ?? '/', 'http://unit'))));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

/** `ledger-verify` as a user runs it (its bin), with `env` added: its exit code and what it printed. */
function ledgerVerify(env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'ledger-verify.mjs'), '--url', url, '--chain', 'main', '--public-key', publicKeyHex, '--threads', '2'],
      { cwd: ROOT, env: { ...process.env, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

const recordOf = (bundle: string) => bundle.replace(/\.mjs$/, '.json');

describe('ledger-verify from its kept bundle', () => {
  it('verifies with worker threads from the bundle alone', async () => {
    const bundle = cachedBundle(...CLI);
    assert.ok(bundle, 'a bundle is built and kept');
    const record = JSON.parse(readFileSync(recordOf(bundle), 'utf8')) as { inputs: Record<string, string> };
    assert.ok('shared/verify/page-worker.ts' in record.inputs, "the worker's sources are among the bundle's");
    const builtAt = statSync(bundle).mtimeMs;
    // Were the worker's code not in the bundle, the pool would bundle it from a source beside the kept file, where
    // there is none, and fail to start.
    const run = await ledgerVerify({});
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, new RegExp(`verified: 'main', ${SIZE} blocks`));
    assert.equal(statSync(bundle).mtimeMs, builtAt, 'the kept bundle ran: it was not built again');
  });

  it('is built again when a source changed, or another esbuild made it; kept as it is otherwise', () => {
    const bundle = cachedBundle(...CLI)!;
    const builtAt = statSync(bundle).mtimeMs;
    assert.equal(cachedBundle(...CLI), bundle);
    assert.equal(statSync(bundle).mtimeMs, builtAt, 'a fresh bundle is not built again');

    const record = JSON.parse(readFileSync(recordOf(bundle), 'utf8')) as { versions: string; inputs: Record<string, string> };
    const truth = record.inputs['shared/verify/pages.ts'];
    writeFileSync(recordOf(bundle), JSON.stringify({ ...record, inputs: { ...record.inputs, 'shared/verify/pages.ts': '0:0' } }));
    assert.equal(cachedBundle(...CLI), bundle);
    const rebuilt = JSON.parse(readFileSync(recordOf(bundle), 'utf8')) as typeof record;
    assert.equal(rebuilt.inputs['shared/verify/pages.ts'], truth, 'rebuilt from the source as it is');
    assert.ok(statSync(bundle).mtimeMs > builtAt, 'the bundle itself was written again');

    const again = statSync(bundle).mtimeMs;
    writeFileSync(recordOf(bundle), JSON.stringify({ ...rebuilt, versions: 'node v0, esbuild 0.0.0' }));
    cachedBundle(...CLI);
    assert.equal((JSON.parse(readFileSync(recordOf(bundle), 'utf8')) as typeof record).versions, record.versions);
    assert.ok(statSync(bundle).mtimeMs > again, 'built again by this esbuild');
  });

  it('runs from its TypeScript sources when asked (or when no bundle can be kept)', async () => {
    const run = await ledgerVerify({ LEDGER_VERIFY_FROM_SOURCE: '1' });
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, new RegExp(`verified: 'main', ${SIZE} blocks`));
  });
});

describe('ledger-verify, given a bad argument', () => {
  it('says a URL it cannot use and exits 2, never a stack trace (found by the red-team pass)', async () => {
    for (const bad of ['ht!tp://x', 'not a url', 'file:///etc/passwd']) {
      const run = await new Promise<{ code: number; out: string }>((resolve) => {
        execFile(
          process.execPath,
          [join(ROOT, 'bin', 'ledger-verify.mjs'), '--url', bad, '--chain', 'main'],
          { cwd: ROOT, timeout: 60_000 },
          (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
        );
      });
      assert.equal(run.code, 2, run.out);
      assert.match(run.out, new RegExp(`--url must be an http or https URL, not '${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'`));
      assert.doesNotMatch(run.out, /\n\s+at /, 'no stack trace');
    }
  });
});
