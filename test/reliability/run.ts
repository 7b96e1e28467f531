/**
 * `npm run test:reliability`: runs test/reliability/*.test.ts with node's test runner (its summary is
 * printed as usual), then the table of what they held: load, faults injected and survived, inputs tried,
 * events lost, forks and unexpected 5xx.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { onLambdasNode, runTestFolder } from '../support/lambda-node.ts';
import { FIGURES_FILE, type Figures } from './support.ts';

// On Lambda's Node (24), as the functions it tests are: typed on an older Node, the suite starts itself again there.
await onLambdasNode('the reliability suite');

rmSync(FIGURES_FILE, { force: true });
const status = runTestFolder('reliability', { RELIABILITY_FIGURES: FIGURES_FILE });

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
process.exit(status);
