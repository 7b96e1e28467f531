/**
 * `npm ci`'s prepare step (after the explorer's build): what a first `npm start` would otherwise build before it
 * is ready, built once at install time: every function's bundle (about 10 s here), the same for Lambda's Node
 * (what every `cdk synth` would otherwise build again), the launcher's own
 * (infra/local/start.mjs) and the commands' that run through bin/run.mjs. A later change to a source builds again
 * only what it touches, at the next start or run. Nothing here is needed: a failure is said, and the first start
 * or run builds what is missing. Then Lambda's Node, as `npm run sim` installs it, with the seeds' bundle for it, and
 * all of the above again on it (`npm test` runs there).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keptBundle } from '../../bin/bundle-cache.mjs';
import { ROOT } from '../bundling.ts';
import { cloudBundles } from '../cdk/bundles.ts';
import { chooseNode, LAMBDA_NODE_MAJOR } from '../sim/runtime.ts';
import { functionBundles } from './bundles.ts';

/** The commands package.json's scripts run through bin/run.mjs. */
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
const COMMANDS = Object.values(scripts).flatMap((script) => /^node bin\/run\.mjs (\S+)/.exec(script)?.[1] ?? []);

const started = performance.now();
try {
  await Promise.all([
    functionBundles(),
    // The same functions for Lambda's Node, for every cdk synth (npm run sim, check:cloud, the infra tests).
    cloudBundles(LAMBDA_NODE_MAJOR),
    keptBundle('infra/local/main.ts', 'verifiable-ledger/launcher'),
    ...COMMANDS.map((entry) => keptBundle(entry, 'verifiable-ledger/commands')),
  ]);
  process.stdout.write(
    `Built the functions' bundles (local and Lambda's), the launcher's and the commands' in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
} catch (error) {
  process.stdout.write(`Could not build the functions' bundles now (${(error as Error).message}); npm start builds them at its first start\n`);
}

// Lambda's Node (from the npm registry, pinned in infra/sim/node24, when this Node is another major), which `npm run
// sim` and the tests' seeds run on, and the seeds' command bundle for it: installed at their first use otherwise,
// inside the first test run (about a minute of its simulation file in a fresh clone).
/** Lambda's Node installed, and this script's bundles built again on it. */
function onLambdasNode(): void {
  try {
    const lambdaNode = chooseNode(LAMBDA_NODE_MAJOR, { say: (line) => process.stdout.write(`${line}\n`) });
    if (lambdaNode.path === process.execPath) return;
    // `npm test`, `npm run sim` and the seeds run on that Node (test/run.ts): their stacks, launcher and commands (the
    // seeds' among them) use bundles kept per Node major, built here for it too rather than inside the first test run.
    const built = spawnSync(lambdaNode.path, ['--import', 'tsx', 'infra/local/prebuild.ts'], {
      cwd: ROOT,
      stdio: 'inherit',
      timeout: 300_000,
      env: { ...process.env, LEDGER_PREBUILD_BUNDLES_ONLY: '1' },
    });
    if (built.status !== 0) throw new Error(`building the bundles on Node ${lambdaNode.version} ended with ${built.status ?? built.signal}`);
    process.stdout.write(`Node ${lambdaNode.version} (Lambda's) ready for npm test, npm run sim and the simulation's seeds\n`);
  } catch (error) {
    process.stdout.write(
      `Could not install Node ${LAMBDA_NODE_MAJOR} now (${(error as Error).message}); npm test, npm run sim and the seeds install it at their first run\n`,
    );
  }
}

// LEDGER_PREBUILD_BUNDLES_ONLY: this script run again on Lambda's Node, for its bundles only.
if (process.env.LEDGER_PREBUILD_BUNDLES_ONLY !== '1') onLambdasNode();
