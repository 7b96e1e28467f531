/**
 * Starts the local stack exactly as `npm start` does (infra/local/main.ts), on a free port and a
 * temporary data dir, and stops it by pid. Integration tests talk HTTP to it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '#infra/local/ports';

const ROOT = new URL('../../', import.meta.url).pathname;

export interface Stack {
  url: string;
  pid: number;
  /** The DynamoDB Local JVM's pid, when the stack launched one. */
  dynamoPid: number | undefined;
  /** The DynamoDB endpoint the stack uses (another stack given it as SVC_DYNAMODB_ENDPOINT shares the data). */
  dynamoEndpoint: string;
  dataDir: string;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, then wait for the exit (SIGKILL after a grace period). */
  stop(): Promise<number | null>;
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

/** Spawns the launcher; resolves when it prints its ready line, rejects with its output otherwise. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const dataDir = options.dataDir ?? tempDataDir('stack');
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), '--import', 'tsx', options.script ?? 'infra/local/main.ts', ...(options.args ?? [])],
    {
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
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
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
  let stopped: Promise<number | null> | undefined;
  return {
    url,
    pid: child.pid!,
    dynamoPid: dynamoPid ? Number(dynamoPid) : undefined,
    dynamoEndpoint,
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

/** Stops the stacks, the last first (one may use another's DynamoDB), and removes their data dirs. */
export async function stopAndRemove(...stacks: (Stack | undefined)[]): Promise<void> {
  for (const stack of [...stacks].reverse()) await stack?.stop();
  for (const stack of stacks) if (stack) removeDir(stack.dataDir);
}

/** Runs the launcher expecting it to refuse to start; answers its exit code and output. */
export async function expectStartFailure(
  env: Record<string, string>,
  timeoutMs = 30_000,
  launcher: { script: string; args: string[] } = { script: 'infra/local/main.ts', args: [] },
): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', launcher.script, ...launcher.args], {
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
  const child = spawn(process.execPath, ['--import', 'tsx', 'infra/local/keys.ts', ...args], {
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
