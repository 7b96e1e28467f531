/**
 * THE middleware chain, built once here and used unchanged by every function group. The order is a
 * design decision (docs/rules.md, "Keys and limits"), written down once:
 *
 *   request id → access log → metrics → security headers → body limit → CORS → auth (who) → rate limit
 *     → authorize (may) → JSON body → router → (handler) → errors
 *
 * middy runs `before` in this order and `after`/`onError` in reverse: the error handler shapes a
 * failure first, then CORS, rate-limit and security headers are stamped on it, the access log records
 * the final status, and the request id goes on last. So every response, 4xx and 5xx included, carries
 * the same headers. The route is matched (pure, no I/O) when the request id is set, because rate limit
 * (health is free) and auth (who may call what) both depend on it; unknown routes still reach the
 * router, which answers 404 after auth.
 */
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { ANONYMOUS } from '../access/policy.ts';
import { steadyNow } from '../clock.ts';
import { ANSWER_MARGIN_MS, invocationDeadline, withDeadline } from '../deadline.ts';
import { allowReads, DEFAULT_MAX_READ_ITEMS, withReadAllowance } from '../read-allowance.ts';
import type { RouteDefinition, RouteReply } from '../api/define.ts';
import type { GroupName } from '../api/groups.ts';
import type { Settings } from '../config.ts';
import type { CloudWatchMetrics } from '../metrics/cloudwatch.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { servedRoutes } from '../api/served.ts';
import { DeadlineExceededError, RouteNotFoundError, ValidationError } from '../errors.ts';
import { logger } from '../log.ts';
import { parseInput } from '../validation.ts';
import { accessLog, requestMetrics } from './access-log.ts';
import { type Authenticator, auth, authorize } from './auth.ts';
import { bodyLimit } from './body-limit.ts';
import { cacheDefaults, matchedTag } from './caching.ts';
import { withinAnswerLimit } from './answer-size.ts';
import { compressed, negotiateCoding } from './compression.ts';
import { cors } from './cors.ts';
import { viaCdn } from './cdn.ts';
import { errorHandler, errorResponse, jsonResponse } from './errors.ts';
import { PARSED_BODY, jsonBody, type EventWithBody } from './json-body.ts';
import { rateLimit } from './rate-limit.ts';
import { requestId } from './request-id.ts';
import { indexRoutes, matchRoute, type ResolvedRoute } from './router.ts';
import { securityHeaders } from './security-headers.ts';
import type { HttpEvent, HttpResult, ServiceContext } from './types.ts';

/** What the middlewares use, the same for every function of a process (shared/wiring/core.ts builds it). */
export interface Edge {
  settings: Pick<Settings, 'SVC_AUTH_ENABLED' | 'API_KEY_NAME' | 'SVC_RATE_LIMIT_RPM' | 'SVC_MAX_BODY_BYTES' | 'SVC_CORS_ORIGINS'> &
    Partial<Pick<Settings, 'SVC_CHECK_RESPONSES' | 'SVC_EDGE_SECRET' | 'SVC_EDGE_ONLY' | 'SVC_TLOG_PUBLIC' | 'SVC_MAX_READ_ITEMS'>>;
  metrics: () => Metrics;
  /** Per-request CloudWatch metrics of a function group (EMF), when SVC_CLOUDWATCH_METRICS_NAMESPACE is set. */
  cloudWatch?: ((group: string) => CloudWatchMetrics) | undefined;
  rateLimiter: () => RateLimiterAbstract;
  authenticator: Authenticator;
}

export interface HttpHandlerOptions<Deps> {
  /** The function group's name. */
  group: GroupName;
  /** Its routes (shared/api/routes/<group>.ts). */
  // biome-ignore lint/suspicious/noExplicitAny: each route's handler was typed at its declaration
  routes: readonly RouteDefinition<Deps, string, any, any>[];
  /** What its handlers use, wired by the function's composition root. */
  deps: Deps;
  edge: Edge;
}

function lowerCaseHeaders(event: HttpEvent): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(event.headers ?? {})) if (value !== undefined) headers[key.toLowerCase()] = value;
  return headers;
}

/** A handler's reply as API Gateway's result: JSON, or text as it is (binary files base64-encoded, as API Gateway expects them). */
function toResult(reply: RouteReply, status: number): HttpResult {
  if (reply.contentType !== undefined) {
    return {
      statusCode: status,
      headers: { 'Content-Type': reply.contentType, ...reply.headers },
      body: String(reply.body ?? ''),
      ...(reply.base64 ? { isBase64Encoded: true } : {}),
    };
  }
  return jsonResponse(status, reply.body ?? null, reply.headers);
}

/**
 * A query parameter given more than once is refused (422, naming it), on every route. API Gateway joins
 * repeats with commas, which one parameter would read as a list (`leaves`) and another refuse (`blocks`):
 * no route guesses which of two values was meant. Read from the raw query string, which keeps the repeats.
 */
function refuseRepeatedQuery(rawQueryString: string | undefined): void {
  if (!rawQueryString) return;
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const key of new URLSearchParams(rawQueryString).keys()) (seen.has(key) ? repeated : seen).add(key);
  if (repeated.size > 0) {
    throw new ValidationError(
      [...repeated].map((key) => ({ loc: ['query', key], msg: 'Given more than once; give each query parameter once', type: 'repeated' })),
    );
  }
}

/**
 * The pages a person types with a trailing slash (`/explorer/`, `/docs/`): API Gateway matches no route for them (a
 * route's path cannot end in a slash), so they reach the `$default` group (metrics), locally and on AWS alike, which
 * sends them on to the page, as public as the page itself. A redirect rather than the page: the page's relative links
 * then resolve as they were written.
 */
export const SLASHED_PAGES: ReadonlyMap<string, string> = new Map([
  ['/explorer/', '/explorer'],
  ['/docs/', '/docs'],
]);

const slashedPage = (event: HttpEvent): string | undefined => {
  const method = event.requestContext?.http?.method ?? 'GET';
  return method === 'GET' || method === 'HEAD' ? SLASHED_PAGES.get(event.rawPath) : undefined;
};

/** The request's route, matched once (when the request id is set) for the middlewares and the dispatch. */
const MATCHED = Symbol('matched route');
type MatchedContext = ServiceContext & { [MATCHED]?: ResolvedRoute };

/** A Lambda handler for one function group: the shared chain around the group's routes. */
export function createHttpHandler<Deps>(options: HttpHandlerOptions<Deps>) {
  const index = indexRoutes(servedRoutes(options.routes));
  const { edge } = options;
  const { settings } = edge;

  const dispatch = async (event: HttpEvent, context: MatchedContext): Promise<HttpResult> => {
    // A CORS preflight: the cors middleware adds the Access-Control-* headers on the way out.
    if (event.requestContext?.http?.method === 'OPTIONS') return { statusCode: 204, headers: {} };
    const route = context[MATCHED];
    const page = route ? undefined : slashedPage(event);
    if (page) return { statusCode: 308, headers: { Location: `${page}${event.rawQueryString ? `?${event.rawQueryString}` : ''}` }, body: '' };
    if (!route) throw new RouteNotFoundError(event.requestContext?.http?.method ?? 'GET', event.rawPath);
    const { definition, params } = route;
    // Past SVC_MAX_READ_ITEMS, each further allowance is paid for as one more request of the caller's (read-allowance.ts).
    if (definition.readItems !== undefined) allowReads(definition.readItems, context.chargeRequest, context.rateLimit?.limit);
    refuseRepeatedQuery(event.rawQueryString);
    const rawQuery: Record<string, string> = {};
    for (const [key, value] of Object.entries(event.queryStringParameters ?? {})) if (value !== undefined) rawQuery[key] = value;
    const rawBody = (event as EventWithBody)[PARSED_BODY];
    const headers = lowerCaseHeaders(event);
    const reply = await definition.handler(
      {
        params,
        query: definition.query ? parseInput(definition.query, rawQuery, 'query') : rawQuery,
        // A route that takes a body and got none is told what is missing (422), as for an empty object.
        body: definition.body ? parseInput(definition.body, rawBody ?? {}, 'body') : rawBody,
        headers,
        requestId: context.requestId,
        // The auth middleware always sets it; without it (a chain built without auth) nothing is allowed.
        principal: context.principal ?? ANONYMOUS,
        keyStillHeld: context.keyStillHeld ?? (async () => {}),
        chargeRequest: context.chargeRequest ?? (async () => {}),
        event,
      },
      options.deps,
    );
    const status = reply.status ?? definition.status ?? 200;
    if (settings.SVC_CHECK_RESPONSES && definition.response && reply.contentType === undefined && status < 300) {
      // The OpenAPI document (and the client typed from it) promises this shape: an answer that drifts is a bug.
      const checked = definition.response.safeParse(reply.body);
      if (!checked.success) {
        throw new Error(
          `the answer of ${definition.method} ${definition.path} does not match its declared schema: ${JSON.stringify(checked.error.issues).slice(0, 500)}`,
        );
      }
    }
    // A conditional GET of what the caller already holds: 304, no body (shared/http/caching.ts); a large answer
    // goes compressed to a caller that accepts it (shared/http/compression.ts).
    const readOk = definition.method === 'GET' && status === 200;
    const coding = readOk ? negotiateCoding(headers['accept-encoding']) : undefined;
    const tag = reply.headers?.ETag;
    const held = readOk && tag ? matchedTag(headers['if-none-match'], tag, coding) : undefined;
    if (held) {
      // A 304 carries the ETag, Cache-Control and Vary a 200 would have (RFC 9110 15.4.5).
      const cacheControl = reply.headers?.['Cache-Control'];
      return {
        statusCode: 304,
        headers: { ETag: held, ...(cacheControl ? { 'Cache-Control': cacheControl } : {}), ...(held !== tag ? { Vary: 'Accept-Encoding' } : {}) },
      };
    }
    const result = toResult(reply, status);
    // An answer Lambda could not carry is refused here, in words, rather than failing the invocation into a bare 500.
    return withinAnswerLimit(readOk ? compressed(result, coding) : result);
  };

  const identify = requestId();
  const security = securityHeaders();
  // middy's own early timeout races the route's handler alone (not the middlewares) and answers a bare 500;
  // the invocation's deadline below covers the whole chain instead.
  const handler = middy<HttpEvent, HttpResult, Error, MatchedContext>(dispatch, { timeoutEarlyInMillis: 0 })
    // Outermost, so that it sees every final answer: how each may be cached (shared/http/caching.ts).
    .use(cacheDefaults({ authEnabled: settings.SVC_AUTH_ENABLED, keyHeader: settings.API_KEY_NAME }))
    .use({
      ...identify,
      before: (request) => {
        identify.before?.(request);
        const route = matchRoute(index, request.event);
        request.context[MATCHED] = route;
        request.context.group = options.group;
        request.context.relativeKey = route?.relativeKey ?? null;
        // The routes that take an Idempotency-Key are the ones that append events.
        request.context.appends = route?.definition.idempotent === true;
        // An unknown route needs any valid key before it is told 404, so that routes cannot be probed without one.
        const declared = route?.definition;
        const open =
          request.event.requestContext?.http?.method === 'OPTIONS' ||
          (declared?.publicWith !== undefined && settings[declared.publicWith] === true) ||
          (!route && slashedPage(request.event) !== undefined);
        request.context.access = open ? 'public' : (declared?.access ?? 'reader');
      },
    })
    // Through the CDN, the caller's own address (shared/http/cdn.ts), before anything counts by address; with
    // SVC_EDGE_ONLY, a request that did not come through it is refused here, before its body or key is read.
    .use(viaCdn(settings.SVC_EDGE_SECRET, settings.SVC_EDGE_ONLY === true))
    .use(accessLog())
    .use(requestMetrics(edge.metrics, edge.cloudWatch?.(options.group)))
    .use(security)
    .use(bodyLimit(settings.SVC_MAX_BODY_BYTES))
    .use(cors({ origins: settings.SVC_CORS_ORIGINS, apiKeyHeader: settings.API_KEY_NAME }))
    // Who calls (auth: 401 for a key that is none), then the count, then what the caller may do (authorize: 401 without a
    // key, 403 for its role): a request is counted by a key only once that key is known to be one. Counted first, a
    // made-up key a request had each written a new bucket into the shared limiter's table (red team); an unknown key is
    // counted by its address, in auth's own budget of unknown keys.
    .use(auth({ enabled: settings.SVC_AUTH_ENABLED, header: settings.API_KEY_NAME, authenticator: edge.authenticator }))
    .use(rateLimit({ perMinute: settings.SVC_RATE_LIMIT_RPM, header: settings.API_KEY_NAME, limiter: edge.rateLimiter }))
    .use(authorize({ enabled: settings.SVC_AUTH_ENABLED, header: settings.API_KEY_NAME }))
    .use(jsonBody())
    .use(errorHandler());
  /**
   * The last line of defence: every wait inside the chain ends at the invocation's deadline by itself
   * (shared/deadline.ts), and if something still has not answered shortly after it, the client gets a 503
   * with Retry-After now, and the log says which request and route, rather than Lambda's timeout later.
   */
  const answerInTime = async (event: HttpEvent, lambdaContext: Context): Promise<HttpResult> => {
    const context = lambdaContext as MatchedContext;
    const deadline = invocationDeadline(context);
    // Every request's DynamoDB reads are capped, whatever route or fields led to them (shared/read-allowance.ts).
    const maxReads = settings.SVC_MAX_READ_ITEMS ?? DEFAULT_MAX_READ_ITEMS;
    if (!Number.isFinite(deadline)) return withReadAllowance(maxReads, () => handler(event, context));
    return withReadAllowance(maxReads, () =>
      withDeadline(deadline, () => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<HttpResult>((resolve) => {
          timer = setTimeout(
            async () => {
              logger.error('request did not finish by its deadline', {
                request_id: context.requestId,
                route: event.routeKey,
                waited_ms: Math.round(performance.now() - (context.startedAt ?? performance.now())),
              });
              const response = errorResponse(new DeadlineExceededError(), context, event);
              const request = { event, context, response, error: null };
              await security.onError?.(request as never);
              await identify.onError?.(request as never);
              resolve(request.response);
            },
            Math.max(0, deadline - steadyNow()) + ANSWER_MARGIN_MS / 2,
          );
        });
        return Promise.race([handler(event, context), late]).finally(() => clearTimeout(timer));
      }),
    );
  };
  // What this function serves, for the route list's tests.
  return Object.assign(answerInTime, { routes: options.routes });
}
