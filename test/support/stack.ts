/**
 * Starts the local stack exactly as `npm start` does (infra/local/start.mjs), on a free port and a
 * temporary data dir, and stops it by pid. Integration tests talk HTTP to it.
 *
 * Under `npm test` (test/run.ts) one DynamoDB Local serves the whole run (LEDGER_TEST_DYNAMODB names it): a stack
 * then uses it, with tables of its own (named after its data dir, so that a restart on the same data dir finds
 * them), instead of starting a JVM of its own (1.5 s and 3.3 s of CPU a stack here). A stack whose settings
 * choose its DynamoDB (SVC_DYNAMODB_ENDPOINT, SVC_DYNAMODB_IN_MEMORY, SVC_DYNAMODB_LOCAL_PORT, a table name) or that
 * asks for `ownDynamoDb` (what it tests is the JVM's life, or data on disk) starts its own, as `npm start` does.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { dynamoAccessKey } from '#infra/local/dynamodb-data';
import { freePort } from '#infra/local/ports';
import { localCredentials } from '#shared/storage/client';

const ROOT = new URL('../../', import.meta.url).pathname;

export interface Stack {
  url: string;
  pid: number;
  /** The DynamoDB Local JVM's pid, when the stack launched one. */
  dynamoPid: number | undefined;
  /** The DynamoDB endpoint the stack uses. */
  dynamoEndpoint: string;
  /** The access key id its database is kept under there (DynamoDB Local keeps one per access key id). */
  dynamoAccessKeyId: string;
  /** Its tables' names, by role. */
  tables: StackTables;
  /** The settings another stack (or a tool) is given to use this stack's data: its DynamoDB and its tables. */
  dataEnv: Record<string, string>;
  dataDir: string;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, then wait for the exit (SIGKILL after a grace period). A shared stack's does nothing: the run stops it. */
  stop(): Promise<number | null>;
  /** The run's shared stack (sharedStack()): other files use it too, so it is neither stopped nor removed by one. */
  shared?: true;
}

export interface StackOptions {
  dataDir?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  /** Extra node flags for the launcher (e.g. `--cpu-prof`, which NODE_OPTIONS does not allow). */
  nodeArgs?: string[];
  /** Another launcher than `npm start`'s (the simulator: infra/sim/main.ts), and its arguments. */
  script?: string;
  args?: string[];
  /** A DynamoDB Local of its own even under `npm test` (a test of the JVM's life, or of what is kept on disk). */
  ownDynamoDb?: boolean;
  /** A file that gets everything the process prints, as it prints it (the shared stack's, for the files using it). */
  logFile?: string;
}

export interface StackTables {
  ledger: string;
  registry: string;
  ratelimits: string;
  connections: string;
}

const TABLE_SETTINGS: Record<keyof StackTables, string> = {
  ledger: 'SVC_LEDGER_TABLE',
  registry: 'SVC_REGISTRY_TABLE',
  ratelimits: 'SVC_RATE_LIMIT_TABLE',
  connections: 'SVC_CONNECTIONS_TABLE',
};
/** Settings that choose a stack's DynamoDB: a stack given any of them keeps to it. */
const CHOOSES_DYNAMODB = [
  'SVC_DYNAMODB_ENDPOINT',
  'SVC_DYNAMODB_ACCESS_KEY_ID',
  'SVC_DYNAMODB_IN_MEMORY',
  'SVC_DYNAMODB_LOCAL_PORT',
  ...Object.values(TABLE_SETTINGS),
];

/** The run's shared DynamoDB Local, and the tables of a stack on `dataDir` in it; undefined when the stack starts its own. */
function sharedDynamo(options: StackOptions, dataDir: string): Record<string, string> | undefined {
  const shared = process.env.LEDGER_TEST_DYNAMODB;
  if (!shared || options.ownDynamoDb || options.script || CHOOSES_DYNAMODB.some((name) => options.env?.[name] !== undefined)) return undefined;
  const prefix = basename(dataDir).replace(/[^a-zA-Z0-9_.-]/g, '_');
  return {
    SVC_DYNAMODB_ENDPOINT: shared,
    // The key the run's DynamoDB Local keeps its database under (test/run.ts).
    ...(process.env.LEDGER_TEST_DYNAMODB_KEY ? { SVC_DYNAMODB_ACCESS_KEY_ID: process.env.LEDGER_TEST_DYNAMODB_KEY } : {}),
    ...Object.fromEntries(Object.entries(TABLE_SETTINGS).map(([role, setting]) => [setting, `${prefix}.${role}`])),
  };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function tempDataDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `ledger-${label}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** `npm start`'s launcher (it runs its kept bundle, or its sources), or another launcher's TypeScript through tsx. */
const launcherArgs = (script: string | undefined) => (script ? ['--import', 'tsx', script] : ['infra/local/start.mjs']);

/** Spawns the launcher; resolves when it prints its ready line, rejects with its output otherwise. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const dataDir = options.dataDir ?? tempDataDir('stack');
  const port = await freePort();
  const dynamo = sharedDynamo(options, dataDir);
  const child: ChildProcess = spawn(process.execPath, [...(options.nodeArgs ?? []), ...launcherArgs(options.script), ...(options.args ?? [])], {
    cwd: ROOT,
    env: {
      ...process.env,
      SVC_PORT: String(port),
      SVC_DATA_DIR: dataDir,
      SVC_LOG_LEVEL: 'warn',
      // Suites that are not about rate limits must not trip the default 100/min; those that are set it.
      SVC_RATE_LIMIT_RPM: '0',
      // Likewise the guessed-key lockout: the auth matrix presents unknown keys on purpose.
      SVC_AUTH_FAILURES_PER_MINUTE: '0',
      // Every answer a test gets must match what its route declares (the OpenAPI document, the client's types).
      SVC_CHECK_RESPONSES: 'true',
      // Each function at most 2 single-request instances (npm start: 10): still more than one, so that what one
      // instance holds is not what the next request finds, but fewer cold starts. An instance's cold start is a worker
      // thread loading its 2 MB bundle (0.25 s of CPU) and compiling its first requests' path: a suite sending a matrix
      // at once started 76 of them with 10 (the authorization matrix: 60 s of the stack's CPU with 10, 41-49 s with 3,
      // 38-39 s with 2). The integration files (the manual's walk aside) used 706 s of CPU with 2 against 806 s with 3,
      // the shared DynamoDB Local 122 s against 147-154 s. One is too few: a function that calls itself (a peer's ping of this node) would wait on
      // itself. Suites about instances or bursts set their own.
      SVC_LOCAL_MAX_INSTANCES: '2',
      // The region every test's own DynamoDB client signs with (dynamoConfigOf): with the access key, it names the
      // stack's database in DynamoDB Local, whatever AWS_REGION the developer's shell has.
      SVC_AWS_REGION: 'us-east-1',
      ...dynamo,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const logFile = options.logFile;
  const keep = (chunk: Buffer) => {
    output += chunk;
    if (logFile) appendFileSync(logFile, chunk);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));

  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`stack did not start in time:\n${output}`));
    }, options.timeoutMs ?? 60_000);
    const onData = () => {
      const ready = /ready at (http:\/\/\S+)/.exec(output);
      if (ready) {
        clearTimeout(timer);
        resolveUrl(ready[1]!);
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`stack exited with ${code} before it was ready:\n${output}`));
    });
  });

  const dynamoPid = /DynamoDB Local, pid (\d+)/.exec(output)?.[1];
  const dynamoEndpoint = /DynamoDB: (http:\/\/\S+)/.exec(output)?.[1] ?? '';
  const settings = { ...dynamo, ...options.env };
  const dynamoAccessKeyId = settings.SVC_DYNAMODB_ACCESS_KEY_ID ?? dynamoAccessKey(join(dataDir, 'dynamodb')) ?? 'local';
  const tables = Object.fromEntries(Object.entries(TABLE_SETTINGS).map(([role, setting]) => [role, settings[setting] ?? role])) as unknown as StackTables;
  let stopped: Promise<number | null> | undefined;
  return {
    url,
    pid: child.pid!,
    dynamoPid: dynamoPid ? Number(dynamoPid) : undefined,
    dynamoEndpoint,
    dynamoAccessKeyId,
    tables,
    dataEnv: {
      SVC_DYNAMODB_ENDPOINT: dynamoEndpoint,
      SVC_DYNAMODB_ACCESS_KEY_ID: dynamoAccessKeyId,
      ...Object.fromEntries(Object.entries(TABLE_SETTINGS).map(([role, setting]) => [setting, tables[role as keyof StackTables]])),
    },
    dataDir,
    output: () => output,
    stop() {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        const code = await exited;
        clearTimeout(timer);
        // A launcher that had to be killed (or was, by a test) cannot stop its JVM: no test leaves one behind.
        if (dynamoPid && isAlive(Number(dynamoPid))) process.kill(Number(dynamoPid), 'SIGKILL');
        return code;
      })();
      return stopped;
    },
  };
}

/** What the stack printed about one request (its log lines naming `requestId`), to show beside a failed assertion. */
export function serverLinesFor(stack: Pick<Stack, 'output'>, requestId: string | undefined): string {
  if (!requestId) return '(the answer named no request id)';
  const lines = stack
    .output()
    .split('\n')
    .filter((line) => line.includes(requestId));
  return lines.length > 0 ? lines.join('\n') : `(the stack printed nothing about request ${requestId})`;
}

/** The gateway's structured line for a failed integration of the request `requestId` (its `apigw-requestid`), if printed. */
export function integrationFailureLine(stack: Pick<Stack, 'output'>, requestId: string | null): Record<string, any> | undefined {
  return stack
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, any>)
    .find((line) => line.message === 'integration failed' && line.request_id === requestId);
}

/** A raw DynamoDB client's settings for a stack's database (a test that reads or plants items behind the service). */
export function dynamoConfigOf(stack: Pick<Stack, 'dynamoEndpoint' | 'dynamoAccessKeyId'>) {
  return { endpoint: stack.dynamoEndpoint, region: 'us-east-1', credentials: localCredentials(stack.dynamoAccessKeyId) };
}

/** Stops the stacks, the last first (one may use another's DynamoDB), and removes their data dirs; the shared stack is left to the run. */
export async function stopAndRemove(...stacks: (Stack | undefined)[]): Promise<void> {
  for (const stack of [...stacks].reverse()) await stack?.stop();
  for (const stack of stacks) if (stack && !stack.shared) removeDir(stack.dataDir);
}

/** What test/run.ts writes of the shared stack once it is ready (or why it could not start), for the files using it. */
export interface SharedStackFile {
  url: string;
  pid: number;
  dataDir: string;
  dynamoEndpoint: string;
  dynamoAccessKeyId: string;
  tables: StackTables;
  dataEnv: Record<string, string>;
  logFile: string;
}

/** The environment variable naming the shared stack's file (set by test/run.ts). */
export const SHARED_STACK_ENV = 'LEDGER_TEST_SHARED_STACK';
/** Longest a file waits for the run's shared stack to be ready (it starts beside the first files). */
const SHARED_STACK_WAIT_MS = 90_000;

/**
 * The stack of a file that needs no settings of its own: under `npm test`, the one stack the run started for every such
 * file (test/run.ts), already warm; alone (`node --import tsx --test <file>`), one of its own, started as
 * startStack() starts it. Each file using it works in chains (and keys) of its own names, so that files running at once
 * cannot see each other's data: no file using it asserts on what every chain holds (the Main Chain's blocks, the list of
 * chains, counts of the whole node). Its stop() does nothing and stopAndRemove() leaves it; the run stops it at the end.
 */
export async function sharedStack(): Promise<Stack> {
  const file = process.env[SHARED_STACK_ENV];
  if (!file) return startStack();
  const deadline = Date.now() + SHARED_STACK_WAIT_MS;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`the run's shared stack was not ready within ${SHARED_STACK_WAIT_MS / 1000} s (${file})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const written = JSON.parse(readFileSync(file, 'utf8')) as SharedStackFile | { error: string };
  if ('error' in written) throw new Error(`the run's shared stack did not start: ${written.error}`);
  return {
    url: written.url,
    pid: written.pid,
    dynamoPid: undefined,
    dynamoEndpoint: written.dynamoEndpoint,
    dynamoAccessKeyId: written.dynamoAccessKeyId,
    tables: written.tables,
    dataEnv: written.dataEnv,
    dataDir: written.dataDir,
    output: () => readFileSync(written.logFile, 'utf8'),
    stop: async () => null,
    shared: true,
  };
}

/** Runs the launcher expecting it to refuse to start; answers its exit code and output. */
export async function expectStartFailure(
  env: Record<string, string>,
  timeoutMs = 30_000,
  launcher: { script?: string; args: string[] } = { args: [] },
): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [...launcherArgs(launcher.script), ...launcher.args], {
    cwd: ROOT,
    env: { ...process.env, SVC_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((done) => child.once('exit', (c) => done(c)));
  clearTimeout(timer);
  return { code, output };
}

/** A small HTTP client for the tests and the smoke test: JSON in (a string is sent as is), status + headers + parsed body out. */
export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: any; text: string }> {
  const init: RequestInit = { method, headers: { ...headers }, signal: AbortSignal.timeout(30_000) };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

const ROOT_DIR = new URL('../../', import.meta.url).pathname;

/** Runs `npm run keys -- …` against a stack's data dir; answers stdout, or throws with the output. */
export async function keysCli(dataDir: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const child = spawn(process.execPath, ['bin/run.mjs', 'infra/local/keys.ts', ...args], {
    cwd: ROOT_DIR,
    env: { ...process.env, SVC_DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (err += c));
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  if (code !== 0) throw new Error(`keys ${args.join(' ')} exited ${code}: ${err}${out}`);
  return out;
}

/**
 * `Promise.all` for a `before` that starts stacks beside other work: when any part fails, the stacks that did start
 * are stopped before the error is thrown (a stack left running keeps its test file from ever ending).
 */
export async function allOrStop<T extends readonly unknown[]>(parts: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(parts as readonly Promise<unknown>[]);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (!failed) return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as unknown as T;
  for (const s of settled) {
    const value = s.status === 'fulfilled' ? (s.value as Partial<Stack> | undefined) : undefined;
    if (value && typeof value.stop === 'function' && typeof value.dataDir === 'string') await stopAndRemove(value as Stack);
  }
  throw failed.reason;
}

/** A counter or gauge of the stack's `/metrics` (a series without labels), asserted present. */
export async function metricOf(stack: Stack, name: string): Promise<number> {
  const text = (await call(stack.url, 'GET', '/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} in /metrics`);
  return Number(line.split(' ')[1]);
}
