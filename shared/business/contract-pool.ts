/**
 * Contracts run on a small pool of worker threads, never on the thread that serves requests. Each run
 * has a CPU-time limit QuickJS checks between its instructions, and a hard wall-clock bound enforced from outside
 * (three times the limit, or the invocation's deadline if sooner): a loop spent inside one builtin
 * (`new Array(1e6).fill(7)`, a huge string join) would overrun the first; at the bound plus a short grace the
 * worker is terminated and a fresh one takes its place. A worker's V8 heap is capped (`resourceLimits`), QuickJS's own heap by its memory limit.
 * Runs beyond the pool wait in a bounded queue; past it the caller gets 429 with Retry-After.
 *
 * The worker runs this very module (a bundle in the cloud and in the local instances, the source in tests and
 * under tsx), told apart by its workerData; so no second bundle has to be built or shipped.
 */
import { setPriority } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { remainingMs } from '../deadline.ts';
import { DeadlineExceededError } from '../errors.ts';
import { logger } from '../log.ts';
import { ContractsBusyError } from './contract-admission.ts';
import { ContractExecutionError, checkContract, runContract, type SandboxLimits } from './sandbox.ts';

export { ContractsBusyError };

/** What the business domain needs from the sandbox. */
export interface ContractSandbox {
  /**
   * Checks that the source evaluates within the limits and defines `execute`. `caller` (an organization, or a key
   * without one) is whose run it is, for a share of the service's sandboxes (contract-admission.ts).
   */
  check(source: string, caller?: string): Promise<void>;
  /** Runs `execute(event, context)` and answers its JSON result. */
  run(source: string, event: unknown, context: unknown, caller?: string): Promise<unknown>;
  /** Stops the workers (tests, shutdown). */
  close(): Promise<void>;
}

export interface ContractPoolOptions {
  limits: SandboxLimits;
  /** Worker threads (runs at once). */
  workers: number;
  /** Runs that may wait for a worker; one more is refused with 429. */
  queue: number;
  /** Time past the limit before a run's worker is terminated (QuickJS normally stops it first). */
  graceMs?: number;
  /** V8 heap of a worker (its code and messages; the contract's own heap is QuickJS's, in WebAssembly memory). */
  workerHeapMb?: number;
}

const ROLE = 'contract-sandbox';
/** A sandbox starts in well under a second (QuickJS compiled); one that has not after this is replaced. */
export const SANDBOX_START_TIMEOUT_MS = 10_000;
/** How long past its wall-clock bound a run's worker is stopped by default (QuickJS normally stops it first). */
export const SANDBOX_GRACE_MS = 500;
/**
 * A run's wall-clock bound, as a multiple of its CPU limit: a run waits for the CPU (a worker at nice 19 on a busy
 * machine; Lambda gives a 1,024 MB function 0.58 of a vCPU), so its CPU time comes slower than the clock's, and it is
 * charged only the CPU (sandbox.ts). A run still going at three times its limit is stopped from outside.
 */
export const WALL_FACTOR = 3;
/** How long a run may hold a worker, by the clock: the bound the pool stops it at (or the invocation's deadline, sooner). */
export const wallBoundMs = (cpuLimitMs: number, graceMs = SANDBOX_GRACE_MS) => WALL_FACTOR * cpuLimitMs + graceMs;

/**
 * This module as a worker's script: the bundle it is part of, or its source, which a Node that strips types (24)
 * runs as it is, and an older one only through a bootstrap that registers tsx (whose loader a worker thread does not
 * inherit) and then imports it.
 */
function workerScript(): [string | URL, { eval?: boolean }] {
  const self = new URL(import.meta.url);
  if (!self.pathname.endsWith('.ts') || (process.features as { typescript?: unknown }).typescript) return [self, {}];
  return [`import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(self.href)}); });`, { eval: true }];
}

type Operation = { op: 'check'; source: string } | { op: 'run'; source: string; event: unknown; context: unknown };
type Request = Operation & { id: number };
type Reply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; message: string; contract: boolean }
  | { ready: true }
  /** The worker's warm-up failed: it takes no run. */
  | { failed: string };

interface Job {
  request: Operation;
  /** The invocation's deadline (performance.now()), or Infinity outside one: a run is not left going past it. */
  deadlineAt: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  /** It started once (a worker that cannot start is not replaced in a loop). */
  started?: boolean;
  job?: Job & { id: number; timer?: NodeJS.Timeout };
}

export function createContractPool(options: ContractPoolOptions): ContractSandbox {
  const graceMs = options.graceMs ?? SANDBOX_GRACE_MS;
  const slots: Slot[] = [];
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;

  function spawn(): Slot {
    const [script, mode] = workerScript();
    const worker = new Worker(script, {
      ...mode,
      workerData: { role: ROLE, limits: options.limits },
      resourceLimits: { maxOldGenerationSizeMb: options.workerHeapMb ?? 256, maxYoungGenerationSizeMb: 32 },
    });
    worker.unref();
    let markReady: () => void = () => undefined;
    const slot: Slot = { worker, ready: new Promise<void>((resolve) => (markReady = resolve)) };
    // A sandbox that neither starts nor fails (QuickJS stuck compiling) must not hold its job forever.
    const startTimer = setTimeout(() => retire(slot, 'the contract sandbox did not start in time'), SANDBOX_START_TIMEOUT_MS);
    startTimer.unref();
    worker.on('message', (reply: Reply) => {
      if ('ready' in reply) {
        clearTimeout(startTimer);
        slot.started = true;
        return markReady();
      }
      if ('failed' in reply) {
        clearTimeout(startTimer);
        logger.warn('a contract sandbox failed to start', { error: reply.failed });
        return retire(slot, 'the contract sandbox did not start');
      }
      const job = slot.job;
      if (!job || job.id !== reply.id) return;
      finish(slot);
      if (reply.ok) job.resolve(reply.value);
      else job.reject(reply.contract ? new ContractExecutionError(reply.message) : new Error(reply.message));
    });
    // A worker that dies (its heap exhausted, or terminated) fails its run and is replaced.
    worker.on('error', (error) => {
      logger.warn('a contract sandbox failed', { error });
      retire(slot, error.message.includes('memory') ? 'the contract ran out of memory' : 'the contract sandbox failed');
    });
    worker.on('exit', () => {
      clearTimeout(startTimer);
      retire(slot, 'the contract sandbox stopped');
    });
    return slot;
  }

  function finish(slot: Slot): void {
    if (slot.job) clearTimeout(slot.job.timer);
    slot.job = undefined;
    slot.worker.unref();
    dispatch();
  }

  function retire(slot: Slot, message: string, error: Error = new ContractExecutionError(message)): void {
    const index = slots.indexOf(slot);
    if (index < 0) return;
    const job = slot.job;
    if (job) clearTimeout(job.timer);
    slot.job = undefined;
    slots.splice(index, 1);
    void slot.worker.terminate();
    if (job) job.reject(error);
    if (closed) return;
    // Its replacement starts now, not when the next run arrives and would have to wait for it.
    if (slot.started) slots.push(spawn());
    dispatch();
  }

  function dispatch(): void {
    while (queue.length > 0) {
      let slot = slots.find((s) => !s.job);
      if (!slot) {
        if (slots.length >= options.workers) return;
        slot = spawn();
        slots.push(slot);
      }
      const job = queue.shift()!;
      const id = nextId++;
      const chosen = slot;
      // The bound runs once the worker is ready: a fresh worker's start-up (compiling QuickJS) is not the contract's.
      // The invocation's deadline runs from now: a run still waiting for its worker's start then is withdrawn (503),
      // and the worker, not yet given it, goes on starting for the next.
      chosen.job = { ...job, id };
      chosen.worker.ref();
      const withdraw = () => {
        if (chosen.job?.id !== id) return;
        finish(chosen);
        job.reject(new DeadlineExceededError('a contract sandbox'));
      };
      if (Number.isFinite(job.deadlineAt)) chosen.job.timer = setTimeout(withdraw, Math.max(0, job.deadlineAt - performance.now()));
      void chosen.ready.then(() => {
        if (chosen.job?.id !== id) return;
        clearTimeout(chosen.job.timer);
        const bound = wallBoundMs(options.limits.timeoutMs, graceMs);
        const left = job.deadlineAt - performance.now();
        if (left <= 0) return withdraw();
        chosen.job.timer =
          left < bound
            ? // The invocation ends first: the run is stopped at its deadline and answered 503, never left past it.
              setTimeout(() => retire(chosen, 'deadline', new DeadlineExceededError('a contract run')), left)
            : setTimeout(
                () =>
                  retire(
                    chosen,
                    `the contract ran out of time (its worker was stopped after ${bound} ms by the clock: ${WALL_FACTOR} times its CPU time limit, and a grace)`,
                  ),
                bound,
              );
        chosen.worker.postMessage({ id, ...job.request } as Request);
      });
    }
  }

  function submit(request: Operation): Promise<unknown> {
    if (closed) return Promise.reject(new Error('the contract pool is closed'));
    const idle = slots.some((s) => !s.job) || slots.length < options.workers;
    if (!idle && queue.length >= options.queue) {
      return Promise.reject(
        new ContractsBusyError(Math.max(1, Math.ceil(options.limits.timeoutMs / 1000)), 'every contract worker of this process is busy and its queue is full'),
      );
    }
    return new Promise((resolve, reject) => {
      // A run still waiting for a sandbox when the invocation's deadline comes is withdrawn (503), not left queued.
      const left = remainingMs();
      let timer: NodeJS.Timeout | undefined;
      const job: Job = {
        request,
        deadlineAt: performance.now() + left,
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      if (Number.isFinite(left)) {
        timer = setTimeout(() => {
          const at = queue.indexOf(job);
          if (at < 0) return; // running: its bound, or this deadline, ends it
          queue.splice(at, 1);
          reject(new DeadlineExceededError('a contract sandbox'));
        }, left);
      }
      queue.push(job);
      dispatch();
    });
  }

  return {
    async check(source) {
      await submit({ op: 'check', source });
    },
    run: (source, event, context) => submit({ op: 'run', source, event, context }),
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error('the contract pool is closed'));
      await Promise.all(slots.splice(0).map((s) => s.worker.terminate()));
    },
  };
}

/** The worker side: runs requests one at a time with QuickJS, answering each. */
function serve(): void {
  const limits = (workerData as { limits: SandboxLimits }).limits;
  // A contract is CPU-bound by design; the threads that serve requests (and, locally, DynamoDB Local)
  // must not wait behind it. On Linux the nice value is per thread, and setPriority() with no pid sets
  // this thread's: at 19 a spinning contract gets the CPU only when nothing else wants it. Raising one's
  // own nice value needs no privilege; where it is refused anyway, runs go on at normal priority.
  try {
    setPriority(19);
  } catch {
    // not permitted here: the deadline still bounds each run
  }
  const port = parentPort!;
  port.on('message', async (request: Request) => {
    try {
      const value =
        request.op === 'check' ? await checkContract(request.source, limits) : await runContract(request.source, request.event, request.context, limits);
      port.postMessage({ id: request.id, ok: true, value: value ?? null } satisfies Reply);
    } catch (error) {
      port.postMessage({ id: request.id, ok: false, message: (error as Error).message, contract: error instanceof ContractExecutionError } satisfies Reply);
    }
  });
  // Compile QuickJS before the first run, so that its deadline is the contract's own. The warm-up is not a contract:
  // it has the start's own bound (the pool replaces a worker not ready by then), not a contract's. At nice 19 on a
  // busy machine it took longer than a contract's 300 ms, was interrupted, and failed the run waiting for it.
  void checkContract('function execute() {}', { ...limits, timeoutMs: SANDBOX_START_TIMEOUT_MS }).then(
    () => port.postMessage({ ready: true } satisfies Reply),
    (error: Error) => port.postMessage({ failed: error.message } satisfies Reply),
  );
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === ROLE) serve();
