/**
 * `npm test` (unit, CDK and integration suites), `npm run test:unit`, `npm run test:integration`: node:test over the
 * suites' files, run so that the whole loop fits in minutes on a 2-core machine.
 *
 * - Two files at a time (each in its own process, as node:test runs them), the files known to take longest first, so
 *   that no long file starts last. No file asserts a timing against this machine's speed (the quick benchmarks check
 *   counts and shapes, not rates), so none needs the machine to itself.
 * - One DynamoDB Local for the whole run (in memory), which every stack that does not choose its own DynamoDB uses
 *   with tables of its own (test/support/stack.ts): a JVM a stack cost 1.5 s and 3.3 s of CPU here.
 * - Every file has a deadline (FILE_DEADLINE_MS): one that hangs fails, and the run goes on.
 * - At the end, the ten slowest files, the run's wall time and the CPU it used, its children's included
 *   (test/support/slowest-files.mjs), so that growth is seen when it starts; SLOWEST_FILES_JSON=<path> writes every
 *   file's time.
 *
 * Arguments: suites (`unit`, `infra`, `integration`) or files; none means all three suites. `--serial` runs every
 * file alone (to find a test that depends on an idle machine). LEDGER_TEST_FILES_AT_ONCE=N runs N files at a time
 * (3 here: 766 s against 790 s for 2, within this machine's drift, with the longest file twice as long).
 */
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { type DynamoDbLocal, startDynamoDbLocal } from '#infra/local/dynamodb-local';
import { ROOT } from '#infra/bundling';
import { onLambdasNode } from './support/lambda-node.ts';
import slowestFiles from './support/slowest-files.mjs';
import { removeDir, SHARED_STACK_ENV, type SharedStackFile, type Stack, startStack, tempDataDir } from './support/stack.ts';

const SUITES = ['unit', 'infra', 'integration'] as const;

// On Lambda's Node (24), as the functions it tests are: typed on an older Node, the run starts itself again there.
await onLambdasNode('the tests');

/**
 * The files that take longest (as the run's own list of the slowest shows them), started first: a long file started
 * last would keep the run going with one core idle. The rest follow in name order.
 */
const LONGEST_FIRST = [
  'test/integration/doc-examples.test.ts',
  'test/unit/simulation.test.ts',
  'test/integration/bench.test.ts',
  'test/integration/admin.test.ts',
  'test/integration/authorization.test.ts',
  'test/integration/auth.test.ts',
  'test/integration/metrics.test.ts',
  'test/integration/edge.test.ts',
  'test/integration/explorer.test.ts',
  'test/integration/smoke.test.ts',
  'test/integration/client.test.ts',
];

/** Files run at once (LEDGER_TEST_FILES_AT_ONCE, default 2). */
const FILES_AT_ONCE = Number(process.env.LEDGER_TEST_FILES_AT_ONCE ?? 2);

/** Longest a file may run: a hang fails its file, never the whole CI run (90 minutes). */
const FILE_DEADLINE_MS = 10 * 60_000;

const args = process.argv.slice(2);
const serial = args.includes('--serial');
const named = args.filter((a) => !a.startsWith('--'));

function suiteFiles(suite: string): string[] {
  const dir = join(ROOT, 'test', suite);
  return readdirSync(dir)
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => `test/${suite}/${name}`);
}

const files = (named.length === 0 ? [...SUITES] : named).flatMap((arg) => {
  if ((SUITES as readonly string[]).includes(arg)) return suiteFiles(arg);
  const path = relative(ROOT, resolve(arg));
  if (!existsSync(join(ROOT, path))) throw new Error(`no such test file or suite: ${arg} (suites: ${SUITES.join(', ')})`);
  return [path];
});
const rank = (file: string) => {
  const i = LONGEST_FIRST.indexOf(file);
  return i === -1 ? LONGEST_FIRST.length : i;
};
const ordered = [...files].sort((a, b) => rank(a) - rank(b));

// One DynamoDB Local for the run, when a suite that starts stacks is in it.
let dynamo: DynamoDbLocal | undefined;
const dynamoDir = tempDataDir('test-dynamodb');
const stopDynamo = async () => {
  await dynamo?.stop().catch(() => dynamo?.killNow());
  removeDir(dynamoDir);
};
const killShared = () => {
  try {
    if (shared) process.kill(shared.pid, 'SIGKILL');
  } catch {
    // already gone
  }
};
process.on('exit', () => {
  killShared();
  dynamo?.killNow();
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    killShared();
    dynamo?.killNow();
    process.exit(130);
  });
}
if (files.some((f) => !f.startsWith('test/unit/'))) {
  dynamo = await startDynamoDbLocal({ dataDir: dynamoDir, inMemory: true, jit: process.env.SVC_DYNAMODB_LOCAL_JIT === 'full' ? 'full' : 'quick' });
  process.env.LEDGER_TEST_DYNAMODB = dynamo.endpoint;
  process.env.LEDGER_TEST_DYNAMODB_KEY = dynamo.accessKeyId;
  // Unindexed, every stack's writes read every stream record the run wrote before them (LoopbackDynamoDbLocal.java).
  if (!dynamo.streamsIndexed)
    process.stdout.write('Warning: the shared DynamoDB Local has no index of its stream records: the run will slow down as it goes\n');
}

/**
 * One stack for the integration files that need no settings of their own (sharedStack() in test/support/stack.ts): started
 * once, beside the first files (which do not use it), so that its instances are warm for every file after the first.
 * A stack start and its functions' cold starts cost 3-4 s of CPU a file here. Its file names it once it is ready.
 */
let shared: Stack | undefined;
let sharedStarting: Promise<unknown> = Promise.resolve();
const sharedDir = tempDataDir('test-shared');
if (files.some((f) => f.startsWith('test/integration/'))) {
  const descriptor = join(sharedDir, 'stack.json');
  const logFile = join(sharedDir, 'output.log');
  process.env[SHARED_STACK_ENV] = descriptor;
  const write = (value: SharedStackFile | { error: string }) => {
    writeFileSync(`${descriptor}.tmp`, JSON.stringify(value), { mode: 0o600 });
    renameSync(`${descriptor}.tmp`, descriptor);
  };
  sharedStarting = startStack({ dataDir: join(sharedDir, 'shared-stack'), logFile }).then(
    (stack) => {
      shared = stack;
      const { url, pid, dataDir, dynamoEndpoint, dynamoAccessKeyId, tables, dataEnv } = stack;
      write({ url, pid, dataDir, dynamoEndpoint, dynamoAccessKeyId, tables, dataEnv, logFile });
    },
    (error: Error) => write({ error: error.message }),
  );
}

/**
 * CPU a process (this one by default) and every descendant it (or they) waited for used so far: for this one, test
 * files, their stacks, the JVM. From /proc (Linux); undefined elsewhere.
 */
function cpuMsWithChildren(pid: number | 'self' = 'self'): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    return Math.round((ticks / 100) * 1000);
  } catch {
    return undefined;
  }
}

// Each file's CPU: every test file's process writes its own as it exits (test/support/file-cpu.mjs, preloaded).
const cpuDir = tempDataDir('test-cpu');
process.env.LEDGER_TEST_CPU_DIR = cpuDir;
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --import=${join(ROOT, 'test', 'support', 'file-cpu.mjs')}`.trim();
function cpuByFile(): Record<string, number> {
  const byFile: Record<string, number> = {};
  for (const name of readdirSync(cpuDir)) {
    try {
      const { file, cpuMs } = JSON.parse(readFileSync(join(cpuDir, name), 'utf8')) as { file: string; cpuMs: number };
      byFile[file] = (byFile[file] ?? 0) + cpuMs;
    } catch {
      // a file cut short as it was written: no figure
    }
  }
  return byFile;
}

/** Every event of the run's phases, in order, for the slowest-files reporter; failures set the exit code. */
const events: unknown[] = [];
const started = Date.now();
{
  // node:test's TestsStream is a Node Readable (its typings say a web ReadableStream).
  const stream = run({ files: ordered.map((f) => join(ROOT, f)), concurrency: serial ? 1 : FILES_AT_ONCE, timeout: FILE_DEADLINE_MS }) as unknown as Readable;
  const recorded = stream.compose(async function* record(source: AsyncIterable<{ type: string; data: unknown }>) {
    for await (const event of source) {
      events.push(event);
      if (event.type === 'test:fail') process.exitCode = 1;
      yield event;
    }
  }) as unknown as Readable;
  const output = recorded.compose(spec as never) as unknown as Readable;
  output.pipe(process.stdout, { end: false });
  await new Promise<void>((done) => output.once('end', done));
}
const dynamoCpu = dynamo ? cpuMsWithChildren(dynamo.pid) : undefined;
await sharedStarting;
const sharedStackCpu = shared ? cpuMsWithChildren(shared.pid) : undefined;
await shared?.stop();
removeDir(sharedDir);
await stopDynamo();
const perFile = cpuByFile();
removeDir(cpuDir);

const sharedCpu: Record<string, number> = {
  ...(dynamoCpu === undefined ? {} : { 'the shared DynamoDB Local': dynamoCpu }),
  ...(sharedStackCpu === undefined ? {} : { 'the shared stack': sharedStackCpu }),
};
const report = {
  wallMs: Date.now() - started,
  cpuMs: cpuMsWithChildren(),
  cpuByFile: perFile,
  sharedCpu,
};
for await (const text of slowestFiles(Readable.from(events) as never, report)) process.stdout.write(text);
if (process.exitCode) process.stdout.write('Some tests failed: see above (each failure is listed again under "failing tests").\n');
