/**
 * One local Lambda instance: a worker thread, or a child process (`npm run sim`, on the Node binary of
 * the template's runtime), that loads one function bundle (its own module state, its own AWS clients) and
 * serves the invocations its pool sends it, one at a time, as the Lambda runtime does. Bundled by
 * infra/local/bundles.ts and run by infra/local/instance-pool.ts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Context } from 'aws-lambda';
import { steadyNow } from '../../shared/clock.ts';

export interface InstanceData {
  bundle: string;
  functionName: string;
  memoryLimitMb: number;
  /** The handler's export name. */
  exportName: string;
}

/** What the pool sends: the event, and the context's plain fields (functions cannot cross threads). */
export interface Invocation {
  id: number;
  event: unknown;
  awsRequestId: string;
  /** The function's timeout: the instance counts it from the invocation's arrival, on its own steady clock (a
   * deadline in the pool's clock would not do: a child process's or thread's clock starts elsewhere). */
  timeoutMs: number;
}

export type InstanceMessage =
  | { type: 'ready'; initMs: number }
  | { type: 'init-failed'; message: string }
  | { type: 'result'; id: number; ok: true; value: unknown }
  | { type: 'result'; id: number; ok: false; error: { name: string; message: string; stack?: string } };

/** The variable a child-process instance finds its InstanceData in (a worker thread gets it as workerData; the pool names it too). */
const INSTANCE_DATA_VARIABLE = 'LOCAL_LAMBDA_INSTANCE_DATA';

/** The pool's end: the thread's port, or the child process's IPC channel. */
const port: { postMessage(message: InstanceMessage): void; on(event: 'message', listener: (invocation: Invocation) => void): void } = parentPort ?? {
  postMessage: (message) => process.send!(message),
  on: (event, listener) => process.on(event, listener as never),
};
// A child whose pool is gone (the sim stopped, or was killed) stops too, as a worker thread would with its process.
if (!parentPort) process.on('disconnect', () => process.exit(0));
const data = (parentPort ? workerData : JSON.parse(process.env[INSTANCE_DATA_VARIABLE] ?? '{}')) as InstanceData;
if (!parentPort) delete process.env[INSTANCE_DATA_VARIABLE]; // the function sees only its own environment
const started = performance.now();

function context(invocation: Invocation): Context {
  const deadlineMs = steadyNow() + invocation.timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: data.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${data.functionName}`,
    memoryLimitInMB: String(data.memoryLimitMb),
    awsRequestId: invocation.awsRequestId,
    logGroupName: `/aws/lambda/${data.functionName}`,
    logStreamName: `local/${invocation.awsRequestId}`,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - steadyNow()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

let handler: (event: unknown, context: Context) => Promise<unknown>;
try {
  handler = ((await import(data.bundle)) as Record<string, typeof handler>)[data.exportName]!;
  if (typeof handler !== 'function') throw new Error(`${data.bundle} exports no function '${data.exportName}'`);
  port.postMessage({ type: 'ready', initMs: performance.now() - started } satisfies InstanceMessage);
} catch (error) {
  const failed = { type: 'init-failed', message: (error as Error).stack ?? String(error) } satisfies InstanceMessage;
  // A child process exits once the message is out (an exit at once could drop it); a thread's port delivers it regardless.
  if (parentPort) {
    port.postMessage(failed);
    process.exit(1);
  } else process.send!(failed, () => process.exit(1));
}

port.on('message', async (invocation: Invocation) => {
  let reply: InstanceMessage;
  try {
    reply = { type: 'result', id: invocation.id, ok: true, value: await handler(invocation.event, context(invocation)) };
  } catch (error) {
    const e = error as Error;
    reply = { type: 'result', id: invocation.id, ok: false, error: { name: e?.name ?? 'Error', message: e?.message ?? String(error), stack: e?.stack } };
  }
  port.postMessage(reply);
});
