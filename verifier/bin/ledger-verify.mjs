#!/usr/bin/env node
// ledger-verify, as installed from the package: its one bundled file. Inside the repository it was built from (a clone,
// where this package is a workspace), the repository's own verifier runs instead, so that it is always today's sources.
// A clone is told by its root package's name, and by this file lying outside any node_modules: a package unpacked in a
// shared folder (`/tmp/package`) or installed beside another of the scope must not run what sits two folders up (red
// team, 2026-12-07).
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = realpathSync(fileURLToPath(import.meta.url));
const root = fileURLToPath(new URL('../../', pathToFileURL(here)));
const rootName = () => {
  try {
    return JSON.parse(readFileSync(`${root}package.json`, 'utf8')).name;
  } catch {
    return undefined;
  }
};
const insideClone = !here.split(/[\\/]/).includes('node_modules') && existsSync(`${root}shared/verify/cli.ts`) && rootName() === 'verifiable-ledger';
await import(insideClone ? pathToFileURL(`${root}bin/ledger-verify.mjs`).href : new URL('../dist/ledger-verify.mjs', import.meta.url).href);
