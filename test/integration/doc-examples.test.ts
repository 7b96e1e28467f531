/**
 * The manual, followed as a newcomer follows it: the README, then every page of its table in that order, each
 * command and program run as printed, against one stack on ports that are not the defaults. Each answer the
 * pages show is compared with the real one (test/support/doc-examples.ts says how pages are read and what
 * "the same shape" means). The service is started and restarted where the pages say `npm start` (the witness
 * of docs/clients.md, auth in docs/settings.md), on the same data directory, and the client's state file is
 * kept across: a node that changed its key at a restart fails the walk. Background commands (`… &`: the
 * witness, `npm run sim`) run until the end and are stopped by their process group.
 *
 * Everything reaches the service through `$LEDGER_URL` (set here as a reader on another port sets it); a
 * command that names port 2661 itself fails the walk. What is not run, and why, is listed in NOT_RUN.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '#infra/local/ports';
import { assertShape, type DocStep, docSteps, parseShown, printedAs } from '../support/doc-examples.ts';
import { ROOT } from '../../infra/bundling.ts';
import { removeDir, type Stack, startStack, tempDataDir } from '../support/stack.ts';

/** Commands a reader meets that the walk does not run, each with its reason. */
const NOT_RUN: [RegExp, string][] = [
  [/^npm ci\b/, 'the walk runs in the installed repository'],
  [/^npm (test|run check:cloud)\b/, 'the test suites themselves'],
  [/^aws /, 'the AWS CLI, against a QLDB ledger and S3: no AWS account here'],
  [/--export \.\/export\b|--chain my-ledger\b/, "a real QLDB export; docs/qldb-import.md's generated sample runs instead"],
];
/** Pages of the table the walk does not follow, each with its reason. */
const PAGES_NOT_WALKED: Record<string, string> = {
  'docs/deploy.md': 'AWS and LocalStack: no account and no Docker here (docs/sim.md runs the template locally instead)',
  'docs/performance.md': 'benchmark runs of many minutes; npm test runs the quick bench (test/integration/bench.test.ts)',
};

/** The pages in the order a reader meets them: the README, then its manual's table. */
function pagesInOrder(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const table = readme.slice(readme.indexOf('## Manual'));
  return ['README.md', ...[...table.matchAll(/^\| \[[^\]]+\]\((docs\/[a-z-]+\.md)\)/gm)].map((m) => m[1]!)];
}

/** `X=…`, `export X=…`, `A=…; B=…`: the names a line assigns, or none when it is not only assignments. */
function assignedNames(command: string): string[] | undefined {
  if (!/^(export\s+)?[A-Z_][A-Z0-9_]*=/.test(command) || /\bnpm\s+(start|run)\b/.test(command.replace(/\$\([^)]*\)/g, ''))) return undefined;
  return [...command.matchAll(/(?:^|;\s*)(?:export\s+)?([A-Z_][A-Z0-9_]*)=/g)].map((m) => m[1]!);
}

/** WALK_TIMING_JSON=<path>: each step's wall time and its commands' CPU, written there (where the walk's time goes). */
const timing: { where: string; command: string; wallMs: number; childCpuMs: number }[] | undefined = process.env.WALK_TIMING_JSON ? [] : undefined;
/** CPU of the children this process waited for so far (Linux; 0 elsewhere). */
function childrenCpuMs(): number {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    return Math.round(((Number(fields[13]) + Number(fields[14])) / 100) * 1000);
  } catch {
    return 0;
  }
}

const quote = (value: string) => `'${value.replaceAll("'", "'\\''")}'`;

describe('the reader of the shape checks', () => {
  it('reads … as members, items or the varying part of a string left out, and programs by their run line', () => {
    assert.deepEqual(parseShown('{"a":1,…,"b":[…],"c":"ab…"}'), { a: 1, __elided__: true, b: ['__elided__'], c: 'ab…' });
    const [step, program] = docSteps(
      'x.md',
      '```bash\ncurl -s $B/x   # prose, not an answer\n# 201 {"id":"orders_…"} — then more prose\n```\n```ts\n// a.mts: run it with npx tsx a.mts\nconsole.log(1);\n// 1\n```\n',
    );
    assert.equal(step!.command, 'curl -s $B/x');
    assert.deepEqual(step!.expected, { status: 201, json: { id: 'orders_…' }, text: '201 {"id":"orders_…"} — then more prose' });
    assert.deepEqual(program, {
      where: 'x.md:6',
      command: 'npx tsx a.mts',
      program: { file: 'a.mts', code: '// a.mts: run it with npx tsx a.mts\nconsole.log(1);\n// 1\n', prints: ['1'] },
    });
    assert.ok(printedAs('orders_2_0 4f0c81', 'orders_2_0 4f0c…'));
    assert.ok(!printedAs('orders_3_0 4f0c81', 'orders_2_0 4f0c…'));
  });
});

describe('The manual, followed in order by a newcomer, on other ports', () => {
  // The reader's folder for the examples' files (the README's `scratch/`): one level below the repository, as that is,
  // so that what the pages name as `../test/…` is the repository's.
  const walkDir = join(ROOT, `scratch-walk-${randomUUID().slice(0, 8)}`);
  const dataDir = tempDataDir('walk');
  const background: ChildProcess[] = [];
  // The pages make nothing at a fixed path in the shared /tmp (another local user could make it first, red team
  // 2026-12-07): the verifier's install goes to a folder of `mktemp -d` ($AUDIT), removed after.
  let stack: Stack | undefined;
  let ports: Record<string, string>;
  /** What the reader's shell holds: exported variables (children see them) and shell-only ones. */
  const exported: Record<string, string> = {};
  const shellOnly: Record<string, string> = {};

  /** A free port that is none of the defaults and none picked before. */
  const avoid = [2661, 2670, 2680];
  const pick = async () => {
    const port = await freePort(avoid);
    avoid.push(port);
    return String(port);
  };

  before(async () => {
    mkdirSync(walkDir, { recursive: true });
    ports = { SVC_PORT: await pick(), SVC_DYNAMODB_LOCAL_PORT: await pick(), SVC_IPFS_PORT: await pick() };
    // As a reader on other ports sets them; SVC_DATA_DIR so that `npm run keys` finds this walk's stack.
    Object.assign(exported, {
      LEDGER_URL: `http://localhost:${ports.SVC_PORT}`,
      WITNESS_PORT: await pick(),
      SIM_PORT: await pick(),
      SVC_DATA_DIR: dataDir,
    });
  });

  after(async () => {
    await stack?.stop();
    for (const child of background) {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await Promise.all(
      background.map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once('exit', r)) : undefined)),
    );
    removeDir(walkDir);
    removeDir(dataDir);
    if (exported.AUDIT?.startsWith(tmpdir())) rmSync(exported.AUDIT, { force: true, recursive: true });
  });

  /** The environment of a command: this process's, less the service's own settings, plus what the reader exported. */
  function environment(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('SVC_')) env[key] = value;
    return { ...env, ...exported, SVC_LOG_LEVEL: 'warn' };
  }

  /** A script for bash: the shell-only variables, then `body`. */
  const script = (body: string) => [...Object.entries(shellOnly).map(([k, v]) => `${k}=${quote(v)}`), body].join('\n');

  function sh(body: string, timeoutMs = 180_000) {
    return spawnSync('bash', ['-c', script(body)], { cwd: walkDir, env: environment(), encoding: 'utf8', timeout: timeoutMs });
  }

  /** `npm start`, as the page writes it (with its variables): the stack (re)started on the walk's data and ports. */
  async function startService(step: DocStep): Promise<void> {
    const line = step.command.replace(/\s*&$/, '');
    const printed = sh(line.replace(/\bnpm start\b.*$/, 'env -0'));
    assert.equal(printed.status, 0, `${step.where}: ${printed.stderr}`);
    const base = environment();
    const given: Record<string, string> = {};
    for (const entry of printed.stdout.split('\0').filter(Boolean)) {
      const eq = entry.indexOf('=');
      const [key, value] = [entry.slice(0, eq), entry.slice(eq + 1)];
      if (base[key] !== value && key !== '_' && key !== 'SHLVL' && key !== 'PWD' && key !== 'OLDPWD') given[key] = value;
    }
    await stack?.stop();
    stack = await startStack({ dataDir, env: { ...ports, ...given, SVC_CHECK_RESPONSES: 'true' } });
    assert.equal(stack.url, `http://127.0.0.1:${ports.SVC_PORT}`);
  }

  /** A command the page runs in the background (`… &`): started in its own process group, awaited until it says it is ready. */
  async function startBackground(step: DocStep): Promise<string> {
    const command = step.command.replace(/\s*&$/, '');
    const extra: Record<string, string> = {};
    if (/\bnpm run sim\b/.test(command)) {
      // The sim on its own data, with every port it takes set: it must honour them and say where it listens.
      Object.assign(extra, {
        SVC_DATA_DIR: join(walkDir, '.sim-data'),
        SVC_DYNAMODB_LOCAL_PORT: await pick(),
        SVC_IPFS_PORT: await pick(),
        SVC_SIM_AWS_PORT: await pick(),
      });
    }
    const child = spawn('bash', ['-c', script(command)], {
      cwd: walkDir,
      env: { ...environment(), ...extra },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    background.push(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${step.where}: not ready within 4 minutes: ${command}\n${output}`)), 240_000);
      child.stdout!.on('data', () => {
        if (/ready at/.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${step.where}: exited with ${code} before it was ready: ${command}\n${output}`));
      });
    });
    if (extra.SVC_DYNAMODB_LOCAL_PORT) {
      assert.match(output, new RegExp(`DynamoDB: http://127\\.0\\.0\\.1:${extra.SVC_DYNAMODB_LOCAL_PORT} `), output);
      assert.match(output, new RegExp(`IPFS: http://127\\.0\\.0\\.1:${extra.SVC_IPFS_PORT}`), output);
      assert.match(output, new RegExp(`AWS: http://127\\.0\\.0\\.1:${extra.SVC_SIM_AWS_PORT} `), output);
    }
    return output;
  }

  function runProgram(step: DocStep): void {
    const { file, code, prints } = step.program!;
    writeFileSync(join(walkDir, file), code);
    const run = sh(step.command);
    assert.equal(run.status, 0, `${step.where}: ${step.command}\n${run.stdout}\n${run.stderr}`);
    const lines = run.stdout.trimEnd().split('\n');
    let next = 0;
    for (const shown of prints) {
      while (next < lines.length && !printedAs(lines[next]!, shown)) next += 1;
      assert.ok(next < lines.length, `${step.where}: prints ${JSON.stringify(shown)}; it printed:\n${run.stdout}`);
      next += 1;
    }
  }

  function runShell(step: DocStep): number {
    const names = assignedNames(step.command);
    if (names) {
      // Run once; what it assigned is kept, exported or not, as the reader's shell keeps it.
      const run = sh(`${step.command}\nprintf '%s\\0' ${names.map((n) => `"$${n}"`).join(' ')}`);
      assert.equal(run.status, 0, `${step.where}: ${step.command}\n${run.stderr}`);
      const values = run.stdout.split('\0');
      names.forEach((name, i) => {
        const exportedHere = new RegExp(`(^|;\\s*)export\\s+${name}=`).test(step.command) || name in exported;
        (exportedHere ? exported : shellOnly)[name] = values[i]!;
        if (exportedHere) delete shellOnly[name];
      });
      return 0;
    }
    const isCurl = step.command.startsWith('curl ');
    // Each curl writes its status on a last line of its own, to stderr (its answer may go to a file).
    const body = isCurl ? `curl() { command curl -w '%{stderr}\\n%{http_code}\\n' "$@"; }\n${step.command}` : step.command;
    const run = sh(body);
    assert.equal(run.status, 0, `${step.where}: ${step.command}\n${run.stdout}\n${run.stderr}`);
    if (!isCurl) return 0;
    const status = Number(run.stderr.trimEnd().split('\n').at(-1));
    const answer = run.stdout;
    const shown = step.expected;
    if (shown?.status !== undefined) assert.equal(status, shown.status, `${step.where}: ${step.command}\n${answer}`);
    else assert.ok(status >= 200 && status < 300, `${step.where}: ${step.command} answered ${status}\n${answer}`);
    if (shown?.json === undefined) return 0;
    assertShape(JSON.parse(answer.replaceAll(`localhost:${ports.SVC_PORT}`, 'localhost:2661')), shown.json, step.where);
    return 1;
  }

  it('runs every command and program of the README and the manual, answering what the pages show', async (t) => {
    // Files the walk leaves in the repository beside its own folder (git's untracked files, ignored ones not listed):
    // a reader following the pages keeps the repository as cloned, everything of theirs in `scratch/`.
    const untracked = () =>
      new Set(
        spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: ROOT, encoding: 'utf8' })
          .stdout.split('\n')
          .filter((l) => l.startsWith('??')),
      );
    const untrackedBefore = untracked();
    const walked: string[] = [];
    let compared = 0;
    let programs = 0;
    let restarts = 0;
    for (const page of pagesInOrder()) {
      if (PAGES_NOT_WALKED[page]) continue;
      walked.push(page);
      const markdown = readFileSync(join(ROOT, page), 'utf8');
      // Every TypeScript example says how to run it.
      for (const [, first] of markdown.matchAll(/^```ts\n(.*)$/gm))
        assert.match(first!, /^\/\/ \S+\.m?ts: run it with /, `${page}: a TypeScript example that does not say how to run it`);
      for (const step of docSteps(page, markdown)) {
        const stepFrom = timing && { wall: performance.now(), cpu: childrenCpuMs() };
        // Only the one default, `${LEDGER_URL:-…}`, names the service's port.
        const text = step.program ? step.program.code.replace(/\?\? 'http:\/\/localhost:2661'/g, '') : step.command;
        assert.ok(
          !text.replace(/\$\{LEDGER_URL:-http:\/\/localhost:2661\}/g, '').includes('2661'),
          `${step.where}: names port 2661 instead of $LEDGER_URL: ${text}`,
        );
        if (NOT_RUN.some(([pattern]) => pattern.test(step.command))) continue;
        if (step.program) {
          runProgram(step);
          programs += 1;
        } else if (/(^|\s)npm start\b/.test(step.command)) {
          if (stack) restarts += 1;
          await startService(step);
        } else if (/\s&$/.test(step.command)) {
          await startBackground(step);
        } else {
          compared += runShell(step);
        }
        if (stepFrom)
          timing!.push({
            where: step.where,
            command: step.command.slice(0, 80),
            wallMs: Math.round(performance.now() - stepFrom.wall),
            childCpuMs: childrenCpuMs() - stepFrom.cpu,
          });
      }
    }
    if (timing) writeFileSync(process.env.WALK_TIMING_JSON!, JSON.stringify(timing, null, 1));
    t.diagnostic(`${walked.length} pages (${walked.join(', ')}); ${compared} answers compared, ${programs} programs run, ${restarts} restarts`);
    assert.deepEqual(walked.slice(0, 4), ['README.md', 'docs/api.md', 'docs/verification.md', 'docs/clients.md']);
    assert.ok(walked.includes('docs/sim.md') && walked.includes('docs/personal-data.md'), walked.join(', '));
    assert.ok(compared >= 40, `only ${compared} answers were compared: the pages lost their examples?`);
    assert.ok(programs >= 4, `only ${programs} programs ran`);
    assert.ok(restarts >= 1, 'the service was never restarted where the pages say');
    // The first start made the node's identity; the restarts kept it (the client's state file still verified).
    assert.doesNotMatch(stack!.output(), /TEMPORARY|Created the node identity/);
    // Quiet: no runtime warnings on the way.
    assert.doesNotMatch(stack!.output(), /Warning: /);
    const left = [...untracked()].filter((line) => !untrackedBefore.has(line));
    assert.deepEqual(left, [], "files the walk left in the repository, outside the reader's folder");
  });
});
