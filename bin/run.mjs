#!/usr/bin/env node
// `node bin/run.mjs <entry.ts> [arguments]`: runs one of the repository's TypeScript commands (`npm run keys`,
// `identity`, `migrate`, `witness`, `import:qldb`, …) from a bundle of it kept as plain JavaScript
// (bin/bundle-cache.mjs, in node_modules/.cache/verifiable-ledger/commands; built at its first run and again when a
// source, Node or esbuild changed), or else from its sources through tsx. The command sees the arguments and its
// own path as if run as `node --import tsx <entry.ts> [arguments]`.
//
// Why: loading a command's TypeScript through tsx took about 1 s of CPU at every run here (0.2-0.3 s from the
// bundle), and the manual's walk and the tests run these commands many times.
import { relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { keptBundle } from './bundle-cache.mjs';

const [entry] = process.argv.splice(2, 1);
if (!entry) {
  process.stderr.write('Usage: node bin/run.mjs <entry.ts> [arguments]\n');
  process.exit(2);
}
const root = resolve(import.meta.dirname, '..');
const source = resolve(root, entry);
// The command's own path where a script reads it (its usage line, its "run me alone" check).
process.argv[1] = source;
const bundle = process.env.LEDGER_COMMANDS_FROM_SOURCE === '1' ? undefined : await keptBundle(relative(root, source), 'verifiable-ledger/commands');
if (bundle) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(source).href);
}
