/**
 * The client as it is published: `npm run build:client` compiles it to ESM with declarations, the built
 * entry loads in plain Node (no TypeScript loader) with its public API, and the main entry bundles for a
 * browser (no Node built-ins in it; the file store is a separate entry).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { build } from 'esbuild';
import { ROOT } from '../../infra/bundling.ts';

const CLIENT = join(ROOT, 'client');

describe('the client package', () => {
  it('builds to ESM with declarations, and the built entry loads in plain Node', () => {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(CLIENT, 'tsconfig.json')], { stdio: 'pipe' });
    for (const file of ['index.js', 'index.d.ts', 'file-store.js', 'file-store.d.ts', 'schema.d.ts']) {
      assert.ok(existsSync(join(CLIENT, 'dist', file)), `dist/${file} is built`);
    }
    const script = `
      import { LedgerClient, VerificationError, ApiError, MemoryStore } from '@verifiable-ledger/client';
      import { FileStore } from '@verifiable-ledger/client/file-store';
      const c = new LedgerClient({ baseUrl: 'http://127.0.0.1:9' });
      console.log([typeof LedgerClient, typeof VerificationError, typeof ApiError, typeof MemoryStore, typeof FileStore, c.verifying].join(' '));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(out.trim(), 'function function function function function true');
  });

  it('bundles for a browser: no Node built-ins in the main entry', async () => {
    const result = await build({
      entryPoints: [join(CLIENT, 'src/index.ts')],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      logLevel: 'silent',
    });
    assert.equal(result.errors.length, 0);
    assert.ok(result.outputFiles[0]!.text.length < 200_000, `the browser bundle is ${result.outputFiles[0]!.text.length} bytes`);
  });
});
