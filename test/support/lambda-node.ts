/**
 * The repository's test commands (`npm test`, `npm run check:cloud`, `npm run test:reliability`) run on Lambda's Node
 * (24), as the functions they test do. Typed on an older Node, a command starts itself again on Lambda's (from the npm
 * registry, pinned in infra/sim/node24, which `npm ci` installs), with that Node first on the PATH of every command it
 * runs (`npm start`, `npx`, `ledger-verify`), and says so in one line; LEDGER_TEST_HOST_NODE names the Node it was typed
 * on. Where Node 24 cannot be had, it goes on here and says why. `LEDGER_TEST_ON_THIS_NODE=1` keeps it here (to try
 * another Node the service supports).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { ROOT } from '#infra/bundling';
import { chooseNode, LAMBDA_NODE_MAJOR } from '#infra/sim/runtime';

/** Runs this command again on Lambda's Node when it was typed on an older one, and exits with its status; else returns. */
export async function onLambdasNode(what: string): Promise<void> {
  if (Number(process.versions.node.split('.')[0]) >= LAMBDA_NODE_MAJOR || process.env.LEDGER_TEST_ON_THIS_NODE === '1') return;
  let lambdas: { path: string; version: string } | undefined;
  try {
    lambdas = chooseNode(LAMBDA_NODE_MAJOR, { say: (line) => process.stderr.write(`${line}\n`) });
  } catch (error) {
    process.stderr.write(`Running ${what} on Node ${process.version}, not Lambda's ${LAMBDA_NODE_MAJOR}: ${(error as Error).message}\n`);
    return;
  }
  process.stderr.write(`Running ${what} on Lambda's Node, ${lambdas.version} (this is ${process.version})\n`);
  const child = spawn(lambdas.path, [...process.execArgv, process.argv[1]!, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, PATH: `${dirname(lambdas.path)}${delimiter}${process.env.PATH ?? ''}`, LEDGER_TEST_HOST_NODE: process.execPath },
  });
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
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=1', ...files], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  return run.status ?? 1;
}
