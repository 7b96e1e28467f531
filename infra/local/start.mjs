// `npm start`: the local stack's launcher (infra/local/main.ts), run from a bundle of it kept as plain JavaScript
// (bin/bundle-cache.mjs, in node_modules/.cache/verifiable-ledger/launcher; built when missing or when a source, Node or
// esbuild changed), or else from its TypeScript sources through tsx.
//
// Why: loading the launcher's TypeScript through tsx took 1.1-1.2 s and 2.3 s of CPU at every start here, the bundle
// 0.15 s and 0.5 s (bench/probes/start-time.ts). The functions themselves always run from their own bundles.
//
// The sources run instead with SVC_LOCAL_RUNTIME=single-process (it imports the functions' TypeScript into this
// process, for a debugger), or when LEDGER_LAUNCHER_FROM_SOURCE=1.
import { pathToFileURL } from 'node:url';
import { keptBundle } from '../../bin/bundle-cache.mjs';

const fromSource = process.env.LEDGER_LAUNCHER_FROM_SOURCE === '1' || process.env.SVC_LOCAL_RUNTIME === 'single-process';
const bundle = fromSource ? undefined : await keptBundle('infra/local/main.ts', 'verifiable-ledger/launcher');
if (bundle) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./main.ts');
}
