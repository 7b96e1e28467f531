/**
 * Builds and runs test/interop/tlog (Go's golang.org/x/mod/sumdb/note and /tlog auditing a chain).
 * Needs Debian's golang-go and golang-golang-x-mod-dev (`.ci/run` installs them); built in GOPATH mode.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cacheFolder } from '../../infra/bundling.ts';

const run = promisify(execFile);
const SOURCE = new URL('../interop/tlog/', import.meta.url).pathname;
const GOPATH = '/usr/share/gocode';

/**
 * Go's build cache: this checkout's, under node_modules/.cache. Go trusts whatever its cache folder holds, and one at a
 * fixed path in the shared /tmp could be made by another local user first, who would then choose the code the tests
 * build and run (red team, 2026-12-07, supply chain).
 */
export const GO_BUILD_CACHE = cacheFolder('go-build');

export const GO_MISSING = 'Go and golang.org/x/mod are needed for the interop test: apt-get install -y golang-go golang-golang-x-mod-dev (.ci/run does)';

/** Builds the checker; throws GO_MISSING's advice when Go or x/mod is not installed. */
export async function buildTlogCheck(): Promise<string> {
  if (!existsSync(join(GOPATH, 'src/golang.org/x/mod/sumdb/tlog'))) throw new Error(GO_MISSING);
  const out = join(mkdtempSync(join(tmpdir(), 'tlogcheck-')), 'tlogcheck');
  try {
    await run('go', ['build', '-o', out, '.'], { cwd: SOURCE, env: { ...process.env, GO111MODULE: 'off', GOPATH, GOCACHE: GO_BUILD_CACHE, GOFLAGS: '' } });
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error(GO_MISSING);
    throw new Error(`go build failed: ${e.stderr ?? e.message}`);
  }
  return out;
}

/** Runs the checker: exit code, its JSON line (when it passed) and what it printed on stderr. */
export async function runTlogCheck(binary: string, args: string[]): Promise<{ code: number; result: Record<string, unknown> | undefined; stderr: string }> {
  try {
    const { stdout, stderr } = await run(binary, args, { timeout: 120_000 });
    return { code: 0, result: JSON.parse(stdout.trim()), stderr };
  } catch (error) {
    const e = error as { code?: number; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, result: undefined, stderr: e.stderr ?? String(error) };
  }
}
