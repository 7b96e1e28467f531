/**
 * `npm ci`'s prepare step (after the explorer's build): what a first `npm start` would otherwise build before it
 * is ready, built once at install time: every function's bundle (about 10 s here) and the launcher's own
 * (infra/local/start.mjs). A later change to a source builds again only what it touches, at the next start.
 * Nothing here is needed: a failure is said, and the first start builds what is missing.
 */
import { keptBundle } from '../../bin/bundle-cache.mjs';
import { functionBundles } from './bundles.ts';

const started = performance.now();
try {
  await Promise.all([functionBundles(), keptBundle('infra/local/main.ts', 'verifiable-ledger/launcher')]);
  process.stdout.write(`Built the functions' and the launcher's bundles in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
} catch (error) {
  process.stdout.write(`Could not build the functions' bundles now (${(error as Error).message}); npm start builds them at its first start\n`);
}
