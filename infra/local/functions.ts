/**
 * Every function group's handler and routes, loaded from the entry files GROUPS names, so that a new
 * group needs no change here.
 */
import { pathToFileURL } from 'node:url';
import type { RouteHandlers } from '#shared/http/types';
import { GROUPS, type GroupName } from '../routes.ts';
import type { LambdaHttpHandler } from './gateway.ts';

const ROOT = new URL('../../', import.meta.url);

export interface LoadedGroup {
  handler: LambdaHttpHandler;
  routes: RouteHandlers;
}

export async function loadGroups(): Promise<Record<GroupName, LoadedGroup>> {
  const entries = await Promise.all(
    (Object.entries(GROUPS) as [GroupName, { entry: string }][]).map(async ([group, spec]) => {
      const module = (await import(pathToFileURL(new URL(spec.entry, ROOT).pathname).href)) as {
        handler: LambdaHttpHandler;
        routes: RouteHandlers;
      };
      if (typeof module.handler !== 'function' || typeof module.routes !== 'object') {
        throw new Error(`${spec.entry} must export handler and routes`);
      }
      return [group, { handler: module.handler, routes: module.routes }] as const;
    }),
  );
  return Object.fromEntries(entries) as Record<GroupName, LoadedGroup>;
}
