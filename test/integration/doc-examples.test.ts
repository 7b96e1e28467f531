/**
 * The manual's curl examples, run in order against a fresh stack (auth off, as `npm start`), each
 * answer compared with what the page shows (test/support/doc-examples.ts says how the pages are read and
 * what "the same shape" means). So the examples cannot drift from the service again: a message that
 * names the wrong block, a count that ignores an earlier step, a member added or gone, fails here.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { assertShape, docSteps, parseShown } from '../support/doc-examples.ts';
import { ROOT } from '../../infra/bundling.ts';
import { type Stack, startStack, stopAndRemove } from '../support/stack.ts';

/** The pages, in the order a reader follows them (later pages use the chains earlier ones made). */
const PAGES = ['docs/api.md', 'docs/business.md', 'docs/realtime.md'];

describe('the reader of the shape checks', () => {
  it('reads … as members, items or the varying part of a string left out', () => {
    assert.deepEqual(parseShown('{"a":1,…,"b":[…],"c":"ab…"}'), { a: 1, __elided__: true, b: ['__elided__'], c: 'ab…' });
    const [step] = docSteps('x.md', '```bash\ncurl -s $B/x   # prose, not an answer\n# 201 {"id":"orders_…"} — then more prose\n```\n');
    assert.equal(step!.command, 'curl -s $B/x');
    assert.deepEqual(step!.expected, { status: 201, json: { id: 'orders_…' }, text: '201 {"id":"orders_…"} — then more prose' });
  });
});

/**
 * Runs the pages' steps in order in `cwd` against `stack`, each answer compared with what the page shows;
 * answers how many were compared. `localhost:2661` (where `npm start` listens) is the stack's address.
 */
function runPages(stack: Stack, pages: string[], cwd: string): number {
  const address = stack.url.replace(/^http:\/\//, '');
  const here = (text: string) => text.replaceAll('localhost:2661', address);
  const assignments: string[] = [];
  let compared = 0;
  for (const page of pages) {
    for (const step of docSteps(page, readFileSync(join(ROOT, page), 'utf8'))) {
      const command = here(step.command);
      if (/^[A-Z]+=/.test(command)) {
        assignments.push(command);
        continue;
      }
      // Each curl prints its status on a last line of its own.
      const script = [...assignments, 'curl() { command curl -w \'\\n%{http_code}\' "$@"; }', command].join('\n');
      const run = spawnSync('bash', ['-c', script], { cwd, encoding: 'utf8', timeout: 60_000 });
      assert.equal(run.status, 0, `${step.where}: ${command}\n${run.stdout}\n${run.stderr}`);
      if (!command.startsWith('curl')) continue;
      const out = run.stdout.replace(/\n$/, '');
      const cut = out.lastIndexOf('\n');
      const status = Number(out.slice(cut + 1));
      const body = out.slice(0, Math.max(cut, 0));
      const shown = step.expected;
      if (shown?.status !== undefined) assert.equal(status, shown.status, `${step.where}: ${command}\n${body}`);
      else assert.ok(status >= 200 && status < 300, `${step.where}: ${command} answered ${status}\n${body}`);
      if (shown?.json === undefined) continue;
      assertShape(JSON.parse(body.replaceAll(address, 'localhost:2661')), shown.json, step.where);
      compared += 1;
    }
  }
  return compared;
}

describe("The manual's curl examples, run in order against a fresh stack", () => {
  let stack: Stack;
  let readmeStack: Stack;
  let cwd: string;
  before(async () => {
    [stack, readmeStack] = await Promise.all([startStack(), startStack()]);
    cwd = mkdtempSync(join(tmpdir(), 'doc-examples-'));
  });
  after(async () => {
    await stopAndRemove(stack, readmeStack);
    rmSync(cwd, { recursive: true, force: true });
  });

  it('answer what the pages show (API by example, business group, GraphQL)', () => {
    const compared = runPages(stack, PAGES, cwd);
    assert.ok(compared >= 30, `only ${compared} answers were compared: the pages lost their examples?`);
  });

  it("answer what the README's taste of the API shows, and its chain verifies", () => {
    // In the repository: `npx ledger-verify` is this package's own command.
    const compared = runPages(readmeStack, ['README.md'], ROOT);
    assert.ok(compared >= 2, `only ${compared} answers were compared`);
  });
});
