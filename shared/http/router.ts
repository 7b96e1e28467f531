/**
 * Finds an API Gateway HTTP API event's route. API Gateway (or the local gateway) has already matched
 * the path against the route list and names the route in `routeKey`, e.g.
 * `POST /api/v1/chains/{chain_name}/events`: the function looks it up, it does not match again.
 * Anything unmatched (`$default`) is the contract's 404.
 */
import type { AnyRoute } from '../api/define.ts';
import type { Route } from '../api/served.ts';
import type { HttpEvent } from './types.ts';

export interface ResolvedRoute {
  definition: AnyRoute;
  params: Record<string, string>;
  /** The route's key in its group, e.g. `GET /chains/{chain_name}/stats`. */
  relativeKey: string;
}

/**
 * Path parameters read from the raw path against the route template, each percent-decoded once. A last
 * template segment `{name+}` (API Gateway's greedy parameter) takes the rest of the path, slashes
 * included; each of its segments is decoded on its own, so an encoded slash stays inside one segment.
 */
export function pathParameters(template: string, rawPath: string): Record<string, string> | undefined {
  const want = template.split('/');
  let got = rawPath.split('/');
  const greedy = /^\{([A-Za-z0-9_]+)\+\}$/.exec(want[want.length - 1] ?? '');
  if (greedy) {
    if (got.length < want.length) return undefined;
    const rest = got.slice(want.length - 1);
    got = got.slice(0, want.length - 1);
    const head = pathParameters(want.slice(0, -1).join('/'), got.join('/'));
    if (!head) return undefined;
    try {
      return { ...head, [greedy[1]!]: rest.map((segment) => decodeURIComponent(segment)).join('/') };
    } catch {
      return undefined;
    }
  }
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i += 1) {
    const segment = want[i]!;
    const actual = got[i]!;
    if (segment.startsWith('{') && segment.endsWith('}')) {
      try {
        params[segment.slice(1, -1)] = decodeURIComponent(actual);
      } catch {
        return undefined;
      }
    } else if (segment !== actual) {
      return undefined;
    }
  }
  return params;
}

/** A group's routes by API Gateway route key (one entry per prefix), as the gateway names them in `routeKey`. */
export type RouteIndex = ReadonlyMap<string, { definition: AnyRoute; template: string; relativeKey: string }>;

export function indexRoutes(routes: readonly Route[]): RouteIndex {
  return new Map(routes.map((route) => [route.routeKey, { definition: route.definition, template: route.path, relativeKey: route.relativeKey }]));
}

/**
 * The route of an event, or undefined when none matches (`$default`). The gateway matched the path
 * already and names the route in `routeKey`; this looks the key up, and reads the parameters off the
 * raw path (decoded once, as documented above).
 */
export function matchRoute(index: RouteIndex, event: HttpEvent): ResolvedRoute | undefined {
  const found = event.routeKey && event.routeKey !== '$default' ? index.get(event.routeKey) : undefined;
  const params = found ? pathParameters(found.template, event.rawPath) : undefined;
  return found && params ? { definition: found.definition, params, relativeKey: found.relativeKey } : undefined;
}
