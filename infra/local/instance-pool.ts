/**
 * Lambda's concurrency model, locally: a function is a pool of isolated instances (worker threads, each
 * with its own module state and its own AWS clients), and each instance serves one invocation at a
 * time. An invocation goes to an idle instance; when none is idle a new one starts (a cold start), up to
 * the function's concurrency limit; past it, invocations wait their turn (Lambda would throttle; a queue
 * keeps local load tests about the service, not about retries). An instance idle for long is stopped,
 * as Lambda reclaims idle instances. One that fails or exceeds the timeout is replaced.
 *
 * Every wait here ends: an instance that has not loaded its bundle within Lambda's init limit (10 s) fails
 * its invocation and is stopped; an invocation that waited for a free instance as long as the timeout
 * fails (where Lambda would have throttled it); a running one fails at the timeout.
 *
 * An instance runs its bundle the way the Lambda runtime does: plain `node`, none of the launcher's own
 * flags. The launcher run from its sources runs under tsx, whose loader hooks would otherwise start a thread of
 * their own in every instance and sit under every module the instance loads, at its first request too (the
 * AWS SDK imports `node:http` lazily, on an instance's first request).
 *
 * So a speed-up that needs two requests in one process does nothing here, exactly as in the cloud.
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { Context } from 'aws-lambda';
import type { InstanceData, InstanceMessage, Invocation } from './instance-worker.ts';

/** The variable a child-process instance reads its InstanceData from (instance-worker.ts). */
const INSTANCE_DATA_VARIABLE = 'LOCAL_LAMBDA_INSTANCE_DATA';

export interface InstancePoolOptions {
  functionName: string;
  /** The function's bundle (its module exports `handler`). */
  bundle: string;
  /** The bundled instance bootstrap (infra/local/instance-worker.ts). */
  workerFile: string;
  /** Most instances at once: the function's concurrency limit. */
  maxInstances: number;
  /** An invocation that takes longer fails, and its instance is replaced (Lambda's timeout). */
  timeoutMs: number;
  /** Instances idle this long are stopped. */
  idleMs?: number;
  memoryLimitMb?: number;
  /** The instances' environment (a Lambda's configured variables); default: this process's, as it is at each start. */
  env?: Record<string, string>;
  /** The handler's export name in the bundle (the part after the dot of `index.handler`); default `handler`. */
  exportName?: string;
  /** Node flags of the instances; default none, as the Lambda runtime starts a function. */
  execArgv?: string[];
  /** Longest an instance may take to load its bundle (Lambda's init phase); default 10 s. */
  initTimeoutMs?: number;
  /**
   * The Node binary instances run on, each a child process of its own (`npm run sim`: the Node major the
   * template's runtime names). Unset, instances are worker threads of this process's Node.
   */
  nodeBinary?: string;
  /** Told once per instance that loaded its bundle, and once per invocation it served (the sim's log-call record). */
  onInstanceEvent?: (event: { type: 'started' | 'invoked'; instance: string }) => void;
}

/** What the pool holds of a running instance: a worker thread or a child process, driven alike. */
interface InstanceHandle {
  post(invocation: Invocation): void;
  /** 'message' (an InstanceMessage), 'error' (an Error) or 'exit' (the exit code). */
  on(event: 'message' | 'error' | 'exit', listener: (...args: never[]) => void): void;
  terminate(): Promise<unknown>;
}

export interface PoolStats {
  instances: number;
  busy: number;
  coldStarts: number;
  invocations: number;
  waiting: number;
}

interface Instance {
  /** Its name in log lines and records (Lambda's log stream name has one too). */
  name: string;
  worker: InstanceHandle;
  ready: Promise<void>;
  busy: boolean;
  lastUsed: number;
  current?: { id: number; resolve(value: unknown): void; reject(error: Error): void; timer: NodeJS.Timeout };
}

/** A failure of the instance itself (crash, timeout), not of the handler: the gateway answers 500. */
export class InstanceFailure extends Error {
  override name = 'InstanceFailure';
}

export class InstancePool {
  private readonly instances = new Set<Instance>();
  private readonly waiting: ((instance: Instance) => void)[] = [];
  private nextId = 1;
  private closed = false;
  readonly stats: PoolStats = { instances: 0, busy: 0, coldStarts: 0, invocations: 0, waiting: 0 };
  private readonly reaper: NodeJS.Timeout;

  private readonly options: InstancePoolOptions;
  constructor(options: InstancePoolOptions) {
    this.options = options;
    const idleMs = options.idleMs ?? 2 * 60_000;
    this.reaper = setInterval(
      () => {
        for (const instance of this.instances) if (!instance.busy && Date.now() - instance.lastUsed > idleMs) this.retire(instance);
      },
      Math.min(idleMs, 30_000),
    );
    this.reaper.unref();
  }

  /** Invokes the function as Lambda would; the context's functions are rebuilt inside the instance. */
  async invoke(event: unknown, context?: Pick<Context, 'awsRequestId'>): Promise<unknown> {
    if (this.closed) throw new InstanceFailure(`${this.options.functionName}: the pool is closed`);
    this.stats.invocations += 1;
    const instance = await this.acquire();
    try {
      return await this.run(instance, event, context?.awsRequestId ?? randomUUID());
    } finally {
      this.release(instance);
    }
  }

  private async acquire(): Promise<Instance> {
    for (const instance of this.instances) {
      if (!instance.busy) {
        instance.busy = true;
        this.stats.busy += 1;
        await instance.ready;
        return instance;
      }
    }
    if (this.instances.size < this.options.maxInstances) {
      const instance = this.start();
      instance.busy = true;
      this.stats.busy += 1;
      return this.whenReady(instance);
    }
    this.stats.waiting += 1;
    let timer: NodeJS.Timeout | undefined;
    const handed = await new Promise<Instance>((resolve, reject) => {
      this.waiting.push(resolve);
      // Waiting for a free instance ends too: as long as an invocation may run, no longer.
      timer = setTimeout(() => {
        const at = this.waiting.indexOf(resolve);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(
          new InstanceFailure(`${this.options.functionName}: no instance was free within ${this.options.timeoutMs} ms (${this.options.maxInstances} busy)`),
        );
      }, this.options.timeoutMs);
    }).finally(() => {
      clearTimeout(timer);
      this.stats.waiting -= 1;
    });
    return this.whenReady(handed);
  }

  /** A busy instance once it has loaded its bundle; one that failed to (or took too long) is retired, and the invocation fails. */
  private async whenReady(instance: Instance): Promise<Instance> {
    const initTimeoutMs = this.options.initTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        instance.ready,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new InstanceFailure(`${this.options.functionName}: an instance did not load its bundle within ${initTimeoutMs} ms`)),
            initTimeoutMs,
          );
        }),
      ]).finally(() => clearTimeout(timer));
    } catch (error) {
      this.stats.busy -= 1;
      this.retire(instance);
      throw error;
    }
    return instance;
  }

  private release(instance: Instance): void {
    instance.lastUsed = Date.now();
    if (!this.instances.has(instance)) {
      this.stats.busy -= 1;
      // Replaced (it failed): a waiter gets a fresh instance instead.
      const next = this.waiting.shift();
      if (next) {
        const fresh = this.start();
        fresh.busy = true;
        this.stats.busy += 1;
        next(fresh);
      }
      return;
    }
    const next = this.waiting.shift();
    if (next) {
      next(instance); // stays busy, handed over
      return;
    }
    instance.busy = false;
    this.stats.busy -= 1;
  }

  private spawn(data: InstanceData, env: Record<string, string | undefined>): InstanceHandle {
    const execArgv = this.options.execArgv ?? [];
    if (!this.options.nodeBinary) {
      const worker = new Worker(this.options.workerFile, { workerData: data, env, execArgv });
      worker.unref();
      return {
        post: (invocation) => worker.postMessage(invocation),
        on: (event, listener) => void worker.on(event, listener as (...args: unknown[]) => void),
        terminate: () => worker.terminate(),
      };
    }
    // A process of its own on the given Node, as Lambda starts its runtime: its output is the function's log.
    const child = fork(this.options.workerFile, [], {
      execPath: this.options.nodeBinary,
      execArgv,
      env: { ...env, [INSTANCE_DATA_VARIABLE]: JSON.stringify(data) },
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.unref();
    (child as unknown as { channel?: { unref(): void } }).channel?.unref();
    const gone = new Promise((resolve) => child.once('exit', resolve));
    return {
      post: (invocation) => child.send(invocation),
      on: (event, listener) => void child.on(event, listener as (...args: unknown[]) => void),
      // Resolves once it has exited (at once if it had already).
      terminate: () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        return gone;
      },
    };
  }

  private start(): Instance {
    const name = randomUUID().slice(0, 8);
    const worker = this.spawn(
      {
        bundle: this.options.bundle,
        functionName: this.options.functionName,
        memoryLimitMb: this.options.memoryLimitMb ?? 1024,
        exportName: this.options.exportName ?? 'handler',
      },
      // What the instance's settings are read from: its own variables, or the environment as it is now.
      this.options.env ? { ...this.options.env } : { ...process.env },
    );
    let markReady!: () => void;
    let markFailed!: (error: Error) => void;
    const instance: Instance = {
      name,
      worker,
      busy: false,
      lastUsed: Date.now(),
      ready: new Promise<void>((resolve, reject) => {
        markReady = resolve;
        markFailed = reject;
      }),
    };
    instance.ready.catch(() => undefined);
    this.instances.add(instance);
    this.stats.instances = this.instances.size;
    this.stats.coldStarts += 1;
    worker.on('message', (message: InstanceMessage) => {
      if (message.type === 'ready') {
        markReady();
        this.options.onInstanceEvent?.({ type: 'started', instance: name });
      } else if (message.type === 'init-failed') markFailed(new InstanceFailure(`${this.options.functionName} failed to start: ${message.message}`));
      else if (message.type === 'result' && instance.current?.id === message.id) {
        const { resolve, reject, timer } = instance.current;
        clearTimeout(timer);
        instance.current = undefined;
        if (message.ok) resolve(message.value);
        else reject(Object.assign(new Error(message.error.message), { name: message.error.name, stack: message.error.stack }));
      }
    });
    const fail = (error: Error) => {
      markFailed(error);
      if (instance.current) {
        clearTimeout(instance.current.timer);
        instance.current.reject(error);
        instance.current = undefined;
      }
      this.instances.delete(instance);
      this.stats.instances = this.instances.size;
    };
    worker.on('error', (error: Error) => fail(new InstanceFailure(`${this.options.functionName} instance crashed: ${error.message}`)));
    worker.on('exit', (code: number | null) => fail(new InstanceFailure(`${this.options.functionName} instance exited (${code})`)));
    return instance;
  }

  private run(instance: Instance, event: unknown, awsRequestId: string): Promise<unknown> {
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        // Lambda stops a timed-out instance; so do we, and the next invocation starts a fresh one.
        instance.current = undefined;
        reject(new InstanceFailure(`${this.options.functionName} timed out after ${this.options.timeoutMs} ms`));
        this.retire(instance);
      }, this.options.timeoutMs);
      instance.current = { id, resolve, reject, timer };
      this.options.onInstanceEvent?.({ type: 'invoked', instance: instance.name });
      instance.worker.post({ id, event, awsRequestId, timeoutMs: this.options.timeoutMs } satisfies Invocation);
    });
  }

  /** Stops an instance now (idle, timed out, or for a test: as if its host died). */
  private retire(instance: Instance): void {
    this.instances.delete(instance);
    this.stats.instances = this.instances.size;
    void instance.worker.terminate();
  }

  /**
   * Stops one busy instance abruptly, mid-invocation, as a crashed Lambda host would: its caller gets an
   * instance failure, and whatever it had sent to DynamoDB stays sent. For failure tests.
   */
  killBusyInstance(): boolean {
    const victim = [...this.instances].find((i) => i.busy && i.current);
    if (!victim) return false;
    void victim.worker.terminate();
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.reaper);
    await Promise.all([...this.instances].map((i) => i.worker.terminate()));
    this.instances.clear();
    this.stats.instances = 0;
  }
}
