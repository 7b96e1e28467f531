/**
 * `npm ci`'s prepare step (after the explorer's build): what a first `npm start` would otherwise build before it
 * is ready, built once at install time: every function's bundle (about 10 s here), the same for Lambda's Node
 * (what every `cdk synth` would otherwise build again), the launcher's own
 * (infra/local/start.mjs) and the commands' that run through bin/run.mjs. A later change to a source builds again
 * only what it touches, at the next start or run. Nothing here is needed: a failure is said, and the first start
 * or run builds what is missing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keptBundle } from '../../bin/bundle-cache.mjs';
import { ROOT } from '../bundling.ts';
import { cloudBundles } from '../cdk/bundles.ts';
import { LAMBDA_NODE_MAJOR } from '../sim/runtime.ts';
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
