#!/usr/bin/env node
// `npx ledger-verify`: the offline verifier (shared/verify). Run from a bundle of it kept as plain JavaScript
// (bin/bundle-cache.mjs: built at the first start and whenever its sources change), or else from its TypeScript
// sources through tsx.
import { pathToFileURL } from 'node:url';
import { cachedBundle } from './bundle-cache.mjs';

const bundle =
  process.env.LEDGER_VERIFY_FROM_SOURCE === '1' ? undefined : cachedBundle('shared/verify/cli.ts', { PAGE_WORKER_CODE: 'shared/verify/page-worker.ts' });
if (bundle) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../shared/verify/cli.ts');
}
