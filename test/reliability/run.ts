/**
 * `npm run test:reliability`: runs test/reliability/*.test.ts with node's test runner (its summary is
 * printed as usual), then the table of what they held: load, faults injected and survived, inputs tried,
 * events lost, forks and unexpected 5xx.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { onLambdasNode } from '../support/lambda-node.ts';
import { FIGURES_FILE, type Figures } from './support.ts';

// On Lambda's Node (24), as the functions it tests are: typed on an older Node, the suite starts itself again there.
await onLambdasNode('the reliability suite');

const ROOT = new URL('../../', import.meta.url).pathname;
rmSync(FIGURES_FILE, { force: true });
const files = readdirSync(join(ROOT, 'test', 'reliability'))
  .filter((f) => f.endsWith('.test.ts'))
  .sort()
  .map((f) => join('test', 'reliability', f));
const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=1', ...files], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', RELIABILITY_FIGURES: FIGURES_FILE },
});

const rows: Figures[] = existsSync(FIGURES_FILE)
  ? readFileSync(FIGURES_FILE, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Figures)
  : [];
const headers = ['area', 'what', 'held / injected / tried', 'lost', 'forks', '5xx*'];
const cells = rows.map((r) => [r.area, r.what, r.tried, String(r.lost), String(r.forks), String(r.unexpected5xx)]);
const widths = headers.map((h, i) => Math.min(i === 2 ? 90 : 60, Math.max(h.length, ...cells.map((c) => c[i]!.length))));
const line = (c: string[]) => c.map((v, i) => (v.length > widths[i]! ? `${v.slice(0, widths[i]! - 1)}…` : v.padEnd(widths[i]!))).join('  ');
process.stdout.write(`\nReliability\n${line(headers)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${cells.map(line).join('\n')}\n`);
const totals = rows.reduce((s, r) => ({ lost: s.lost + r.lost, forks: s.forks + r.forks, x: s.x + r.unexpected5xx }), { lost: 0, forks: 0, x: 0 });
process.stdout.write(`events lost: ${totals.lost}, forks: ${totals.forks}, 5xx outside documented 503s: ${totals.x}  (*) details in ${FIGURES_FILE}\n`);
process.exit(run.status ?? 1);
