/**
 * One declaration per route. A route is one `defineRoute` object: where it is served, who may call it,
 * what it accepts, what it answers on success, and the handler. Everything else derives from the list of
 * them (shared/api/routes.ts): the cloud stack's and the local gateway's route tables, the OpenAPI
 * document, the edge's access check, and each function's dispatch. Adding a route is one object here.
 *
 * Handlers get their path parameters typed from the path (`{chain_name}` → `params.chain_name: string`),
 * their query and body already parsed by the declared zod schemas (a failure is the 422 of
 * docs/rules.md, "Errors", before the handler runs), and the group's dependencies from its function's
 * composition root: route modules import no wiring, so the route list can be read (by the stacks, by
 * GET /openapi.json) without building anything.
 */
import type * as z from 'zod';
import type { Access, Principal } from '../access/policy.ts';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { GroupName } from './groups.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** `'/chains/{chain_name}/blocks/{index_or_hash}'` → `'chain_name' | 'index_or_hash'` (a greedy `{rest+}` → `'rest'`). */
export type ParamNames<P extends string> = P extends `${string}{${infer Name}}${infer Rest}`
  ? (Name extends `${infer Greedy}+` ? Greedy : Name) | ParamNames<Rest>
  : never;

export type PathParams<P extends string> = { [K in ParamNames<P>]: string };

type Parsed<S> = S extends z.ZodType ? z.output<S> : undefined;

/** What a handler sees. */
export interface RouteRequest<P extends string = string, Q = unknown, B = unknown> {
  params: PathParams<P>;
  /** The query string parsed by the route's `query` schema (the raw strings when it declares none). */
  query: Q;
  /** The body parsed by the route's `body` schema (the parsed JSON, or undefined, when it declares none). */
  body: B;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  requestId: string;
  /** Who is asking, for the access policy (shared/access/policy.ts): OPEN_ACCESS when auth is off. */
  principal: Principal;
  /** Checks again that the caller's key is held (401 once revoked or changed); nothing to check with auth off. */
  keyStillHeld: () => Promise<void>;
  /** Counts one more request against the caller's rate budget (429 once spent): for work one request does many times. */
  chargeRequest: () => Promise<void>;
  /** API Gateway's event, as it came. */
  event: APIGatewayProxyEventV2;
}

/**
 * What a handler answers: JSON `body` (or, with `contentType`, text sent as it is; `base64` for binary
 * files). The status is the route's declared `status` unless the answer names another (health's 503,
 * GraphQL's refusals).
 */
export interface RouteReply {
  body?: unknown;
  contentType?: string;
  base64?: true;
  status?: number;
  headers?: Record<string, string>;
}

export interface RouteDefinition<Deps = never, P extends string = string, Q = unknown, B = unknown> {
  group: GroupName;
  method: HttpMethod;
  /** Relative to the group prefix; `{name}` marks a path parameter, a last `{name+}` takes the rest of the path. */
  path: P;
  summary: string;
  /**
   * The least role the edge lets through (docs/rules.md, "Keys and limits"): `public` needs no key.
   * Finer rules (channels, organizations, owners) are the policy's (shared/access/policy.ts), per resource.
   */
  access: Access;
  /** The success status (default 200). */
  status?: number;
  query?: z.ZodType;
  body?: z.ZodType;
  /**
   * Schemas that only describe the request (in OpenAPI) for a handler that validates it itself: GraphQL
   * answers a malformed request with GraphQL errors, not with the REST 422.
   */
  describes?: { query?: z.ZodType; body?: z.ZodType };
  /** The success body's shape, for the OpenAPI document (and the client typed from it); not checked at run time. */
  response?: z.ZodType;
  /** A setting that, when on, lets the route answer with no key, the same to anyone (a shared cache may keep it). */
  publicWith?: 'SVC_TLOG_PUBLIC';
  /** Takes an Idempotency-Key header (retries answer the first result). */
  idempotent?: true;
  /**
   * Items the route may read from DynamoDB in one request, where it must read more than SVC_MAX_READ_ITEMS by what it
   * is (an audit of a whole chain); the setting when unset (shared/read-allowance.ts).
   */
  readItems?: number;
  /** Serve under only these of the group's prefixes (default: all). */
  onlyPrefixes?: readonly string[];
  handler: (request: RouteRequest<P, Q, B>, deps: Deps) => Promise<RouteReply>;
}

/** Any group's route, as the tables and the OpenAPI document see it (the handler's types erased). */
// biome-ignore lint/suspicious/noExplicitAny: the dispatcher passes what the schemas parsed; each handler was typed at its definition
export type AnyRoute = RouteDefinition<any, string, any, any>;

type Declared<Deps, P extends string, QS, BS> = Omit<
  RouteDefinition<Deps, P, QS extends z.ZodType ? Parsed<QS> : Record<string, string>, Parsed<BS> extends undefined ? unknown : Parsed<BS>>,
  'group' | 'query' | 'body'
> & {
  query?: QS;
  body?: BS;
};

/**
 * The route declarer of one group, whose handlers take `Deps` (what the group's function wires):
 * `const route = routesOf<LedgerDeps>('ledger'); route({ method: 'GET', path: '/chains', … })`.
 */
export function routesOf<Deps>(group: GroupName) {
  return <P extends string, QS extends z.ZodType | undefined = undefined, BS extends z.ZodType | undefined = undefined>(
    definition: Declared<Deps, P, QS, BS>,
  ): RouteDefinition<Deps, P> => ({ ...definition, group }) as unknown as RouteDefinition<Deps, P>;
}
