/**
 * Launches Amazon's DynamoDB Local (the jar shipped inside the npm package `amplify-dynamodb-simulator`,
 * which is never imported: its own launcher fails on a fresh machine) with `java`, and stops it.
 *
 * Traps handled here (architecture.md): telemetry off only through DDB_LOCAL_TELEMETRY=0; `-port 0` is
 * refused, so a free port is picked first; a busy port makes the JVM hang after "Failed to bind", so the
 * start has a deadline and the JVM is killed by pid on every way out; it has no option for the address it
 * listens on, so a main of ours binds it to 127.0.0.1 (LOOPBACK_MAIN); it takes any credentials, so its database is
 * kept under an access key of its own (ACCESS_KEY_FILE), not shared with whoever finds its port; two on one data dir
 * would each write into its SQLite file, so the JVM holds the data dir's lock and a second one exits (DataDirInUseError).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adoptSharedDatabase, dynamoAccessKey } from './dynamodb-data.ts';
import { LaunchError } from './launch-error.ts';
import { answersHttp, freePort, isPortFree } from './ports.ts';

export { LaunchError } from './launch-error.ts';

/**
 * Another process runs DynamoDB Local on this data dir (a stack, or a local command such as `npm run keys` that started
 * its own): the JVM holds the data dir's lock (infra/local/java/LoopbackDynamoDbLocal.java) and a second one exits
 * rather than open the same SQLite file, where two had each written and a key made at a stack's start was lost.
 */
export class DataDirInUseError extends LaunchError {}

/** The JVM's exit status when the data dir's lock is held (LoopbackDynamoDbLocal.IN_USE). */
const IN_USE_STATUS = 4;
/** … and when the data dir cannot be locked at all (LoopbackDynamoDbLocal.UNLOCKABLE): said at once, not waited for. */
const UNLOCKABLE_STATUS = 5;

export interface DynamoDbLocal {
  endpoint: string;
  /**
   * The access key id its database is kept under: DynamoDB Local checks no signature, but keeps one database per
   * access key id and region, so a caller with another key (any other local user who found the port) sees an empty one.
   * Its callers sign with it (SVC_DYNAMODB_ACCESS_KEY_ID); it is kept in `<dataDir>/access-key`, the data dir's user's alone.
   */
  accessKeyId: string;
  port: number;
  pid: number;
  /**
   * Whether its stream records are indexed by stream (infra/local/java/LoopbackDynamoDbLocal.java): without the index
   * every write to a table with a stream reads every stream record of the last 24 hours, of every table.
   */
  streamsIndexed: boolean;
  /** Stops the JVM (SIGTERM, then SIGKILL after a grace period). Safe to call twice. */
  stop(): Promise<void>;
  /** Last resort for synchronous exit paths: SIGKILL by pid. */
  killNow(): void;
}

export interface DynamoDbLocalOptions {
  /** Ports promised to something else (the gateway's): never picked for DynamoDB Local. */
  avoidPorts?: readonly number[];
  /** Folder for the database file (ignored with `inMemory`) and the access key its database is kept under. */
  dataDir: string;
  /** The region its callers sign with (default us-east-1): DynamoDB Local names a database by access key and region. */
  region?: string;
  /** Told what a start did to the data (a database kept under the access key for the first time, one of another region). */
  onNotice?: (message: string) => void;
  inMemory?: boolean;
  /** The JVM's compilers: `quick` (C1 only, the default: less CPU to start and to serve a test run) or `full` (C2 too). */
  jit?: 'quick' | 'full';
  /** A fixed port; a free one is picked when absent. */
  port?: number | undefined;
  startTimeoutMs?: number;
  /** Told when a JVM left on this data dir by a launcher that was killed is stopped first. */
  onLeftover?: (pid: number) => void;
  /**
   * How long to go on trying while another process runs DynamoDB Local on the data dir (DataDirInUseError): a local
   * command's own ends in seconds. Default 0: the error at once.
   */
  waitForHolderMs?: number;
  /** Given the JVM's handle as soon as it is spawned, before it listens: a caller stopped meanwhile can stop it. */
  onSpawn?: (handle: DynamoDbLocal) => void;
}

const PID_FILE = 'dynamodb-local.pid';

/**
 * DynamoDB Local has no option for the address it listens on, and listened on every interface: whoever reached its
 * port could write an admin key into the stack's tables. It is started through a main of ours
 * (infra/local/java/LoopbackDynamoDbLocal.java, kept compiled beside its source) that binds its server to 127.0.0.1,
 * and exits with status 3 rather than start when it cannot.
 */
const LOOPBACK_MAIN = 'LoopbackDynamoDbLocal';
const LOOPBACK_MAIN_DIR = fileURLToPath(new URL('./java/', import.meta.url));

/**
 * The JVM's options. `quick` (the default): its quick compiler only (C1), and one GC thread. DynamoDB Local spends
 * its time in SQLite (native) and short request paths; C2's compile threads cost more CPU than they gave back in a
 * start or a test run: the JVM was ready on 1.2 s of CPU, not 2.2 s, and an integration file's requests took 8.7 s
 * of its CPU, not 16.8 s (test/integration/concurrency.test.ts, 2026-12-04); on a 2-core machine that CPU is the
 * service's and the tests'. `full`: the JVM's defaults (tiered up to C2), for long measured runs (`npm run bench`),
 * whose earlier figures were measured so.
 */
const JVM_OPTIONS = { quick: ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'], full: [] } as const;

/**
 * A launcher killed with SIGKILL cannot stop its JVM, which then keeps the data file open. The JVM's pid
 * is kept beside the data, with the pid of the process that started it; the next start on the same data stops
 * such a leftover (only if that pid is still a DynamoDB Local serving this very directory, and the process that
 * started it is gone) before opening the file again. One whose starter still runs is not a leftover: a command
 * run while `npm start` was starting found it so, and stopped the starting stack's JVM.
 */
async function stopLeftover(dataDir: string, onLeftover?: (pid: number) => void): Promise<void> {
  let pid: number;
  let owner: number;
  try {
    [pid, owner] = readFileSync(join(dataDir, PID_FILE), 'utf8').trim().split(/\s+/).map(Number) as [number, number];
  } catch {
    return;
  }
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    // Not running (or not Linux, where /proc is absent: nothing to check it against).
  }
  const serving = pid > 0 && cmdline.includes('DynamoDBLocal.jar') && cmdline.includes(`-dbPath ${dataDir}`);
  if (serving && owner > 0 && owner !== process.pid && isRunning(owner)) {
    throw new DataDirInUseError(
      `DynamoDB Local on ${dataDir} (pid ${pid}) belongs to a process still running (pid ${owner}), a stack or a local command on this data dir: run this again once it has started or ended`,
    );
  }
  if (serving) {
    onLeftover?.(pid);
    // SIGTERM first: the JVM's shutdown lets SQLite finish what it acknowledged. SIGKILL after 5 s.
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(pid, name);
      } catch {
        // gone meanwhile
      }
    };
    signal('SIGTERM');
    for (let waited = 0; isRunning(pid) && waited < 10_000; waited += 100) {
      if (waited === 5_000) signal('SIGKILL');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  rmSync(join(dataDir, PID_FILE), { force: true });
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const JAVA_MISSING_MESSAGE = [
  'Java was not found, and DynamoDB Local needs it (Java 17 or newer).',
  '  Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y openjdk-17-jre-headless',
  '  macOS:         brew install openjdk@17',
  'Or point the service at a DynamoDB you already run: SVC_DYNAMODB_ENDPOINT=http://localhost:8000',
].join('\n');

function jarDirectory(): string {
  const require = createRequire(import.meta.url);
  try {
    return join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator');
  } catch {
    throw new LaunchError('DynamoDB Local was not found (npm package amplify-dynamodb-simulator). Run `npm ci` first.');
  }
}

/** Throws a LaunchError saying how to install Java when `java` cannot run. */
export function assertJavaAvailable(): void {
  const probe = spawnSync('java', ['-version'], { stdio: 'ignore', timeout: 15_000 });
  if (probe.error || probe.status !== 0) throw new LaunchError(JAVA_MISSING_MESSAGE);
}

export async function startDynamoDbLocal(options: DynamoDbLocalOptions): Promise<DynamoDbLocal> {
  assertJavaAvailable();
  const until = Date.now() + (options.waitForHolderMs ?? 0);
  let pause = 500;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (!(error instanceof DataDirInUseError) || Date.now() + pause > until) throw error;
      if (attempt === 0) options.onNotice?.(`${error.message.split('\n').at(-1)}: waiting up to ${Math.round((until - Date.now()) / 1000)} s for it`);
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(pause * 2, 2_000);
    }
  }
}

async function startOnce(options: DynamoDbLocalOptions): Promise<DynamoDbLocal> {
  const jarDir = jarDirectory();
  const port = options.port ?? (await freePort(options.avoidPorts));
  if (options.port !== undefined && !(await isPortFree(port, '127.0.0.1'))) {
    throw new LaunchError(`Port ${port} (SVC_DYNAMODB_LOCAL_PORT) is already in use; choose another or leave it unset to pick a free one.`);
  }
  const dataDir = resolve(options.dataDir);
  mkdirSync(dataDir, { recursive: true });
  if (!options.inMemory) await stopLeftover(dataDir, options.onLeftover);
  const accessKeyId = dynamoAccessKey(dataDir, true)!;
  const region = options.region ?? 'us-east-1';
  if (!options.inMemory) adoptSharedDatabase(dataDir, accessKeyId, region, options.onNotice);
  const storage = options.inMemory ? ['-inMemory'] : ['-dbPath', dataDir];
  const child = spawn(
    'java',
    [
      ...JVM_OPTIONS[options.jit ?? 'quick'],
      `-Djava.library.path=${join(jarDir, 'DynamoDBLocal_lib')}`,
      // DynamoDB Local's own main, with its server bound to 127.0.0.1 (LOOPBACK_MAIN); the jar's manifest brings its libraries.
      '-cp',
      `${join(jarDir, 'DynamoDBLocal.jar')}${delimiter}${LOOPBACK_MAIN_DIR}`,
      LOOPBACK_MAIN,
      '-port',
      String(port),
      // No -sharedDb: one database per access key id (and region), so the port alone gives an empty one.
      ...storage,
    ],
    {
      // DynamoDB Local writes telemetry files into its working directory; keep them in the data dir.
      cwd: dataDir,
      // The database whose stream records the main indexes: the one the stack's callers use (LoopbackDynamoDbLocal.java).
      env: { ...process.env, DDB_LOCAL_TELEMETRY: '0', LEDGER_DYNAMODB_DATABASE: `${accessKeyId}_${region}` },
      // Its standard input a pipe from this process: the JVM ends when it ends (LoopbackDynamoDbLocal.endWithStarter),
      // however this process ends, and lets go of the data dir's lock.
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  const pid = child.pid;
  if (pid === undefined) throw new LaunchError('Could not start java for DynamoDB Local.');

  const handle = makeHandle(child, pid, port, accessKeyId);
  options.onSpawn?.(handle);
  try {
    const output = await waitUntilListening(child, port, options.startTimeoutMs ?? 30_000);
    handle.streamsIndexed = STREAMS_INDEXED.test(output);
  } catch (error) {
    await handle.stop();
    throw error;
  }
  if (options.inMemory) return handle;
  // Only the JVM that holds the data dir's lock gets here: its pid beside the data (one that was refused it must not
  // write over the holder's). One whose starter dies ends by itself (its standard input ends).
  writeFileSync(join(dataDir, PID_FILE), `${pid} ${process.pid}\n`);
  const stop = handle.stop;
  return {
    ...handle,
    stop: async () => {
      await stop();
      rmSync(join(dataDir, PID_FILE), { force: true });
    },
  };
}

function makeHandle(child: ChildProcess, pid: number, port: number, accessKeyId: string): DynamoDbLocal {
  const exited = new Promise<void>((done) => {
    if (child.exitCode !== null || child.signalCode !== null) done();
    else child.once('exit', () => done());
  });
  let stopping: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    accessKeyId,
    port,
    pid,
    streamsIndexed: false,
    stop() {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
    killNow() {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };
}

/** The line the main prints once it has indexed the stream records, before its server listens. */
const STREAMS_INDEXED = /^DynamoDB Local: stream records indexed$/m;

/**
 * Resolves once the JVM accepts HTTP on the port, with what it printed until then; rejects on "Failed to bind", exit,
 * or the deadline.
 */
async function waitUntilListening(child: ChildProcess, port: number, timeoutMs: number): Promise<string> {
  let output = '';
  const onData = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8_000);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const deadline = Date.now() + timeoutMs;
  try {
    while (Date.now() < deadline) {
      if (/cannot be bound to 127\.0\.0\.1/.test(output)) throw new LaunchError(`DynamoDB Local was not started: ${output.trim()}`);
      if (/Failed to bind|Address already in use|Could not start server on port/i.test(output)) {
        throw new LaunchError(`DynamoDB Local could not use port ${port}: it is already in use.`);
      }
      if (child.exitCode === IN_USE_STATUS) throw new DataDirInUseError(output.trim());
      if (child.exitCode === UNLOCKABLE_STATUS) throw new LaunchError(output.trim());
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new LaunchError(`DynamoDB Local stopped while starting:\n${output.trim()}`);
      }
      // DynamoDB Local answers 400 to a bare GET: it is up.
      if (await answersHttp(`http://127.0.0.1:${port}/`, 1_000)) return output;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new LaunchError(`DynamoDB Local did not start within ${timeoutMs} ms:\n${output.trim()}`);
  } finally {
    // Keep draining the pipes so the JVM never blocks on a full buffer, but stop collecting.
    child.stdout?.off('data', onData);
    child.stderr?.off('data', onData);
    child.stdout?.resume();
    child.stderr?.resume();
  }
}
