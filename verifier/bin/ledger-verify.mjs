#!/usr/bin/env node
// ledger-verify, as installed from the package: its one bundled file. Inside the repository it was built from (a clone,
// where this package is a workspace), the repository's own verifier runs instead, so that it is always today's sources.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const inRepository = fileURLToPath(new URL('../../bin/ledger-verify.mjs', import.meta.url));
const insideClone = existsSync(fileURLToPath(new URL('../../shared/verify/cli.ts', import.meta.url)));
await import(insideClone ? pathToFileURL(inRepository).href : new URL('../dist/ledger-verify.mjs', import.meta.url).href);
