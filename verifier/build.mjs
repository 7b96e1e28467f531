// Builds dist/ledger-verify.mjs: the verifier (shared/verify/cli.ts, its page worker and the QLDB audit) as one file of
// plain JavaScript with no dependencies, which is all the package ships (`npm pack` runs this first).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from '../bin/bundle-cache.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { code } = build('shared/verify/cli.ts', { PAGE_WORKER_CODE: 'shared/verify/page-worker.ts' });
mkdirSync(join(here, 'dist'), { recursive: true });
writeFileSync(join(here, 'dist', 'ledger-verify.mjs'), code);
process.stdout.write(`verifier/dist/ledger-verify.mjs: ${(code.length / 1024).toFixed(0)} KiB\n`);
