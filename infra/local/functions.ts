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
  /** The pools, by function name (none in single-process mode): for stats and failure tests. */
  pools: Record<string, InstancePool>;
  close(): Promise<void>;
}

/** A Lambda's timeout, as the cloud stack sets it. */
const FUNCTION_TIMEOUT_MS = 29_000;

export async function instancePools(maxInstances: number): Promise<LocalFunctions> {
  const { functions, worker } = await functionBundles();
  const pools: Record<string, InstancePool> = {};
  for (const [name, bundle] of Object.entries(functions)) {
    pools[name] = new InstancePool({
      functionName: name,
      bundle: bundle.file,
      workerFile: worker,
      // The broadcaster is fed one stream batch at a time, in order, as an event source mapping does.
      maxInstances: name === 'broadcast' ? 1 : maxInstances,
      timeoutMs: FUNCTION_TIMEOUT_MS,
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
    pools,
    close: async () => {
      await Promise.all(Object.values(pools).map((pool) => pool.close()));
    },
  };
}

async function load(entry: string): Promise<Handler> {
  const module = (await import(pathToFileURL(`${ROOT}${entry}`).href)) as { handler?: Handler };
  if (typeof module.handler !== 'function') throw new Error(`${entry} must export handler`);
  return module.handler;
}

export async function inProcessFunctions(): Promise<LocalFunctions> {
  const groups = await Promise.all(Object.entries(GROUPS).map(async ([group, spec]) => [group, await load(spec.entry)] as const));
  return {
    http: Object.fromEntries(groups) as Record<GroupName, LambdaHttpHandler>,
    ws: await load(EVENT_FUNCTIONS.ws.entry),
    broadcast: await load(EVENT_FUNCTIONS.broadcast.entry),
    pools: {},
    close: async () => undefined,
  };
}

/** The routes each group's function serves, read from its entry (the route list's tests check each group's are its own). */
export async function loadGroupRoutes(): Promise<Record<GroupName, readonly AnyRoute[]>> {
  const entries = await Promise.all(
    Object.entries(GROUPS).map(async ([group, spec]) => {
      const module = (await import(pathToFileURL(`${ROOT}${spec.entry}`).href)) as { handler?: { routes?: readonly AnyRoute[] } };
      if (!Array.isArray(module.handler?.routes)) throw new Error(`${spec.entry} must export a handler made by createHttpHandler`);
      return [group, module.handler.routes] as const;
    }),
  );
  return Object.fromEntries(entries) as unknown as Record<GroupName, readonly AnyRoute[]>;
}
