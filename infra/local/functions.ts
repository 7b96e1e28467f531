/**
 * The service's functions as the local gateway calls them, in one of two runtimes:
 * - `instances` (the default): each function a pool of single-request instances running its esbuild
 *   bundle in worker threads, as Lambda runs it (infra/local/instance-pool.ts);
 * - `single-process`: every function imported into this process from its sources, for debugging.
 * Entries come from GROUPS and EVENT_FUNCTIONS, so a new group needs no change here.
 */
import { pathToFileURL } from 'node:url';
import type { Context } from 'aws-lambda';
import type { AnyRoute } from '#shared/api/define';
import { loadConfig } from '#shared/config';
import { type Core, createCore } from '#shared/wiring/core';
import { EVENT_FUNCTIONS, GROUPS, type GroupName } from '../routes.ts';
import { ROOT } from '../bundling.ts';
import { functionBundles } from './bundles.ts';
import type { LambdaHttpHandler } from './gateway.ts';
import { InstancePool } from './instance-pool.ts';

type Handler = (event: unknown, context: Context) => Promise<unknown>;

export interface LocalFunctions {
  http: Record<GroupName, LambdaHttpHandler>;
  ws: Handler;
  broadcast: Handler;
  /** The scheduled sweep of unwritten rounds (the launcher runs it every SVC_SWEEP_INTERVAL_MS). */
  sweep: Handler;
  /** The pools, by function name (none in single-process mode): for stats and failure tests. */
  pools: Record<string, InstancePool>;
  close(): Promise<void>;
}

/** A Lambda's timeout, as the cloud stack sets it. */
const FUNCTION_TIMEOUT_MS = 29_000;

/** `env`: the functions' environment (a Lambda's configured variables); `bundles`: functionBundles()' answer, if already had. */
export async function instancePools(
  maxInstances: number,
  env: Record<string, string>,
  idleMs?: number,
  bundles?: Awaited<ReturnType<typeof functionBundles>>,
): Promise<LocalFunctions> {
  const { functions, worker } = bundles ?? (await functionBundles());
  const pools: Record<string, InstancePool> = {};
  for (const [name, bundle] of Object.entries(functions)) {
    pools[name] = new InstancePool({
      functionName: name,
      bundle: bundle.file,
      workerFile: worker,
      // The broadcaster is fed one stream batch at a time, in order, as an event source mapping does; one sweep at a time.
      maxInstances: name === 'broadcast' || name === 'sweep' ? 1 : maxInstances,
      timeoutMs: FUNCTION_TIMEOUT_MS,
      ...(idleMs ? { idleMs } : {}),
      env,
      // Plain node, as Lambda runs a function; a profiler the launcher was started with profiles its instances too.
      execArgv: process.execArgv.filter((flag) => flag.startsWith('--cpu-prof')),
    });
  }
  const invoker =
    (name: string): Handler =>
    (event, context) =>
      pools[name]!.invoke(event, context);
  return {
    http: Object.fromEntries(Object.keys(GROUPS).map((group) => [group, invoker(group)])) as Record<GroupName, LambdaHttpHandler>,
    ws: invoker('ws'),
    broadcast: invoker('broadcast'),
    sweep: invoker('sweep'),
    pools,
    close: async () => {
      await Promise.all(Object.values(pools).map((pool) => pool.close()));
    },
  };
}

/** A function's composition root: `createHandler(core)`, beside the Lambda `handler` it also exports. */
async function composer(entry: string): Promise<(core: Core) => Handler & { routes?: readonly AnyRoute[] }> {
  const module = (await import(pathToFileURL(`${ROOT}${entry}`).href)) as { createHandler?: (core: Core) => Handler };
  if (typeof module.createHandler !== 'function') throw new Error(`${entry} must export createHandler`);
  return module.createHandler;
}

/** Every function in this process, built from one core (the settings the launcher settled), as one process would share it. */
export async function inProcessFunctions(core: Core): Promise<LocalFunctions> {
  const load = async (entry: string) => (await composer(entry))(core);
  const groups = await Promise.all(Object.entries(GROUPS).map(async ([group, spec]) => [group, await load(spec.entry)] as const));
  return {
    http: Object.fromEntries(groups) as Record<GroupName, LambdaHttpHandler>,
    ws: await load(EVENT_FUNCTIONS.ws.entry),
    broadcast: await load(EVENT_FUNCTIONS.broadcast.entry),
    sweep: await load(EVENT_FUNCTIONS.sweep.entry),
    pools: {},
    close: async () => undefined,
  };
}

/** The routes each group's function serves, read from its entry (the route list's tests check each group's are its own). */
export async function loadGroupRoutes(): Promise<Record<GroupName, readonly AnyRoute[]>> {
  const entries = await Promise.all(
    Object.entries(GROUPS).map(async ([group, spec]) => {
      const routes = (await composer(spec.entry))(createCore(loadConfig({}))).routes;
      if (!Array.isArray(routes)) throw new Error(`${spec.entry} must build its handler with createHttpHandler`);
      return [group, routes] as const;
    }),
  );
  return Object.fromEntries(entries) as unknown as Record<GroupName, readonly AnyRoute[]>;
}
