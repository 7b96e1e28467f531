/**
 * `npm run check:cloud`: test/cloud/*.test.ts (cdk-nag on the template; the synthesized template served by `npm run
 * sim`, its calls held to the roles) with node's test runner, one file at a time, on Lambda's Node (24): typed on an
 * older Node, it starts itself again there (test/support/lambda-node.ts).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '#infra/bundling';
import { onLambdasNode } from '../support/lambda-node.ts';

await onLambdasNode('check:cloud');
const files = readdirSync(join(ROOT, 'test', 'cloud'))
  .filter((f) => f.endsWith('.test.ts'))
  .sort()
  .map((f) => join('test', 'cloud', f));
const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=1', ...files], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
});
process.exit(run.status ?? 1);
