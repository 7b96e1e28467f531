#!/usr/bin/env node
// `npx ledger-verify`: the offline verifier (shared/verify), run from its TypeScript source through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../shared/verify/cli.ts');
