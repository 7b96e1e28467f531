/**
 * The repository's test commands (`npm test`, `npm run check:cloud`, `npm run test:reliability`) run on Lambda's Node
 * (24), as the functions they test do. Typed on an older Node, a command starts itself again on Lambda's (from the npm
 * registry, pinned in infra/sim/node24, which `npm ci` installs), with that Node first on the PATH of every command it
 * runs (`npm start`, `npx`, `ledger-verify`), and says so in one line; LEDGER_TEST_HOST_NODE names the Node it was typed
 * on. Where Node 24 cannot be had, it goes on here and says why. `LEDGER_TEST_ON_THIS_NODE=1` keeps it here (to try
 * another Node the service supports).
 *
 * Node 24 runs TypeScript itself (it strips the types: the project's sources use only syntax that can be erased,
 * `erasableSyntaxOnly` in tsconfig.json), so a command there runs without tsx's loader, and so do the test files it
 * starts: node:test gives each file's process its own flags. tsx's loader cost each process about 0.3-1 s of CPU
 * (its hooks run in a thread of their own and see every import, the AWS SDK's hundreds of modules too).
 *
 * Every Node process of a run (the runner, test files, stacks, their functions' instances, the commands the tests
 * type) keeps what V8 compiled in one compile cache (`NODE_COMPILE_CACHE`, node_modules/.cache/verifiable-ledger/
 * compile-cache-<checkout>, unless set): a process that loads the modules another one loaded before it (the AWS SDK,
 * the service's sources, npm itself) compiles them from the cache, not from their source. Node checks each entry
 * against its source, so an edited file is compiled again. The 49 unit files (the seeds aside) used 72 s of CPU with it
 * against 89 s without (three alternating runs).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { cacheFolder, ROOT } from '#infra/bundling';
import { chooseNode, LAMBDA_NODE_MAJOR } from '#infra/sim/runtime';

/** Runs this command again on Lambda's Node when it was typed on an older one, and exits with its status; else returns. */
export async function onLambdasNode(what: string): Promise<void> {
  if (!process.env.NODE_COMPILE_CACHE) process.env.NODE_COMPILE_CACHE = compileCache();
  if (process.env.LEDGER_TEST_ON_THIS_NODE === '1') return;
  if (Number(process.versions.node.split('.')[0]) >= LAMBDA_NODE_MAJOR) {
    // Here already: without the loader, when this Node strips types itself (a start of Node, about 0.1 s).
    if (stripsTypes() && withoutLoader(process.execArgv).length !== process.execArgv.length) await again(process.execPath, {});
    return;
  }
  let lambdas: { path: string; version: string } | undefined;
  try {
    lambdas = chooseNode(LAMBDA_NODE_MAJOR, { say: (line) => process.stderr.write(`${line}\n`) });
  } catch (error) {
    process.stderr.write(`Running ${what} on Node ${process.version}, not Lambda's ${LAMBDA_NODE_MAJOR}: ${(error as Error).message}\n`);
    return;
  }
  process.stderr.write(`Running ${what} on Lambda's Node, ${lambdas.version} (this is ${process.version})\n`);
  await again(lambdas.path, { PATH: `${dirname(lambdas.path)}${delimiter}${process.env.PATH ?? ''}`, LEDGER_TEST_HOST_NODE: process.execPath });
}

/** Past this, the run's compile cache is emptied before it starts (it fills again as the run compiles). */
const COMPILE_CACHE_MAX_BYTES = 256 * 1024 * 1024;

/**
 * The run's compile cache: node_modules/.cache/verifiable-ledger/compile-cache-<checkout>. Node keeps an entry per
 * module path; the tests' modules at temporary paths add new ones at every run (tens of megabytes a run), so a cache
 * grown past COMPILE_CACHE_MAX_BYTES is removed first.
 */
function compileCache(): string {
  const dir = cacheFolder('compile-cache');
  trimCompileCache(dir, COMPILE_CACHE_MAX_BYTES);
  return dir;
}

/** Removes `dir` when the files under it hold more than `maxBytes`. */
export function trimCompileCache(dir: string, maxBytes: number): void {
  const bytesUnder = (path: string): number =>
    readdirSync(path, { withFileTypes: true }).reduce(
      (sum, entry) =>
        sum + (entry.isDirectory() ? bytesUnder(join(path, entry.name)) : (statSync(join(path, entry.name), { throwIfNoEntry: false })?.size ?? 0)),
      0,
    );
  try {
    if (bytesUnder(dir) > maxBytes) rmSync(dir, { recursive: true, force: true });
  } catch {
    // not there yet, or another run's removal under way: nothing to trim
  }
}

/** Whether a Node strips TypeScript's types itself (22.18+, 23.6+; `process.features.typescript`). */
function stripsTypes(node = process.execPath): boolean {
  if (node === process.execPath) return Boolean((process.features as { typescript?: string | false }).typescript);
  return spawnSync(node, ['-p', 'Boolean(process.features.typescript)'], { encoding: 'utf8' }).stdout?.trim() === 'true';
}

/** Node's flags without tsx's loader (`--import tsx`, `--import=tsx`, `--loader tsx`, `--require tsx/cjs`...). */
export function withoutLoader(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    const isTsx = (value: string | undefined) => value !== undefined && /^tsx(\/|$)/.test(value);
    if (['--import', '--loader', '--experimental-loader', '--require', '-r'].includes(arg) && isTsx(execArgv[i + 1])) {
      i++;
      continue;
    }
    const eq = arg.indexOf('=');
    if (eq > 0 && ['--import', '--loader', '--experimental-loader', '--require'].includes(arg.slice(0, eq)) && isTsx(arg.slice(eq + 1))) continue;
    out.push(arg);
  }
  return out;
}

/** Runs this command again on `node` (without tsx's loader where that Node strips types), and exits with its status. */
async function again(node: string, env: Record<string, string>): Promise<never> {
  const flags = stripsTypes(node) ? withoutLoader(process.execArgv) : process.execArgv;
  const child = spawn(node, [...flags, process.argv[1]!, ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, ...env } });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal));
  const code = await new Promise<number>((done) => child.once('exit', (exitCode, signal) => done(exitCode ?? (signal ? 130 : 1))));
  process.exit(code);
}

/**
 * Runs test/`folder`/*.test.ts with node's test runner on this Node, one file at a time, its output as it comes (the
 * runners of check:cloud and test:reliability); answers the exit status. `env` is added to this process's.
 */
export function runTestFolder(folder: string, env: Record<string, string> = {}): number {
  const files = readdirSync(join(ROOT, 'test', folder))
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .map((f) => join('test', folder, f));
  const loader = stripsTypes() ? [] : ['--import', 'tsx'];
  const run = spawnSync(process.execPath, [...loader, '--test', '--test-reporter=spec', '--test-concurrency=1', ...files], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  return run.status ?? 1;
}
