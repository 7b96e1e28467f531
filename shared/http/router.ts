/**
 * Dispatches an API Gateway HTTP API event to a group's handler. API Gateway (or the local gateway)
 * has already matched the route from infra/routes.ts and names it in `routeKey`, e.g.
 * `POST /api/v1/chains/{chain_name}/events`; a group's handlers are keyed by the part after its
 * prefix, `POST /chains/{chain_name}/events`, so one handler serves every prefix of the group.
 * Anything unmatched (`$default`) is the contract's 404.
 */
import { RouteNotFoundError } from '../errors.ts';
import type { HttpEvent, RouteHandler, RouteHandlers } from './types.ts';

export interface ResolvedRoute {
  handler: RouteHandler;
  params: Record<string, string>;
  /** The handler's key in its group, e.g. `GET /chains/{chain_name}/stats`. */
  relativeKey: string;
}

function splitRouteKey(routeKey: string): { method: string; path: string } | undefined {
  const space = routeKey.indexOf(' ');
  if (space < 0) return undefined;
  return { method: routeKey.slice(0, space), path: routeKey.slice(space + 1) };
}

/**
 * Finds the handler whose relative key ends the event's route key, after a literal prefix
 * (no parameters in the prefix). The longest such key wins.
 */
export function findHandler(handlers: RouteHandlers, routeKey: string): { handler: RouteHandler; template: string; relativeKey: string } | undefined {
  const route = splitRouteKey(routeKey);
  if (!route) return undefined;
  let best: { handler: RouteHandler; template: string; relativeKey: string; length: number } | undefined;
  for (const [key, handler] of Object.entries(handlers)) {
    const relative = splitRouteKey(key);
    if (!relative || relative.method !== route.method || !route.path.endsWith(relative.path)) continue;
    const prefix = route.path.slice(0, route.path.length - relative.path.length);
    if (prefix.includes('{') || (prefix !== '' && !prefix.startsWith('/'))) continue;
    if (!best || relative.path.length > best.length) {
      best = { handler, template: route.path, relativeKey: key, length: relative.path.length };
    }
  }
  return best && { handler: best.handler, template: best.template, relativeKey: best.relativeKey };
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

/** The route of an event, or undefined when none matches (`$default`). */
export function matchRoute(handlers: RouteHandlers, event: HttpEvent): ResolvedRoute | undefined {
  const found = event.routeKey && event.routeKey !== '$default' ? findHandler(handlers, event.routeKey) : undefined;
  const params = found ? pathParameters(found.template, event.rawPath) : undefined;
  return found && params ? { handler: found.handler, params, relativeKey: found.relativeKey } : undefined;
}

export function resolveRoute(handlers: RouteHandlers, event: HttpEvent): ResolvedRoute {
  const route = matchRoute(handlers, event);
  if (!route) throw new RouteNotFoundError(event.requestContext?.http?.method ?? 'GET', event.rawPath);
  return route;
}
