/** Routes as served: a declaration under each prefix of its group, with API Gateway's route key. */
import type { AnyRoute, HttpMethod } from './define.ts';
import { GROUPS, type GroupName } from './groups.ts';

/** A route as served: one per (route, prefix). */
export interface Route {
  group: GroupName;
  method: HttpMethod;
  /** The full path template, e.g. `/api/v1/chains/{chain_name}/events`. */
  path: string;
  /** API Gateway's route key, e.g. `POST /api/v1/chains/{chain_name}/events`. */
  routeKey: string;
  /** The key of the route in its group, e.g. `POST /chains/{chain_name}/events`. */
  relativeKey: string;
  prefix: string;
  summary: string;
  /** Its declaration. */
  definition: AnyRoute;
}

/** Every served route: each route under each prefix of its group. */
export function servedRoutes(table: readonly AnyRoute[]): Route[] {
  return table.flatMap((definition) => {
    const prefixes = definition.onlyPrefixes ?? GROUPS[definition.group].prefixes;
    return prefixes.map((prefix) => ({
      group: definition.group,
      method: definition.method,
      path: `${prefix}${definition.path}`,
      routeKey: `${definition.method} ${prefix}${definition.path}`,
      relativeKey: `${definition.method} ${definition.path}`,
      prefix,
      summary: definition.summary,
      definition,
    }));
  });
}
