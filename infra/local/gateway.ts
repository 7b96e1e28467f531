/**
 * The local stand-in for API Gateway's HTTP API. It matches a request against infra/routes.ts, turns
 * it into the same `APIGatewayProxyEventV2` API Gateway sends (payload format 2.0), invokes the
 * group's unmodified Lambda handler with a Lambda-like context, and writes the result back.
 */
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, STATUS_CODES, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { steadyNow } from '../../shared/clock.ts';
import type { Route } from '../routes.ts';
import { LAMBDA_RESPONSE_BYTES } from '../../shared/http/answer-size.ts';

export type LambdaHttpHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<unknown>;

/** A route as the gateway serves it: the method and path template, API Gateway's route key, and whose function answers. */
export type GatewayRoute = Pick<Route, 'method' | 'path' | 'routeKey'> & { group: string };

export interface GatewayOptions {
  host: string;
  port: number;
  routes: GatewayRoute[];
  /** The functions, by the routes' `group` (a function group locally, a function's logical id in the simulator). */
  handlers: Record<string, LambdaHttpHandler>;
  /** Where unmatched requests go (API Gateway's `$default` route). */
  defaultGroup: string;
  /** API Gateway's own payload cap: larger requests never reach a function. */
  maxPayloadBytes?: number;
  /** Lambda's cap on a synchronous response, as the serialized result counts (default 6,291,556 bytes). */
  maxResponseBytes?: number;
  /** A Lambda's timeout, as the functions' contexts report it. */
  timeoutMs?: number;
  /**
   * API Gateway's own limit on an integration (30 s for HTTP APIs): an answer not back by then is a 503 to
   * the client, whatever the function is still doing.
   */
  integrationTimeoutMs?: number;
  /**
   * Told when an integration itself fails: the function crashed, timed out or could not start, or did not
   * answer within the integration timeout. The client only gets API Gateway's bare 500 or 503, so this is
   * where the cause is told (infra/local/integration-errors.ts logs and counts it).
   */
  onIntegrationError?: (failure: IntegrationFailure) => void;
  /** Told when a function answered a request that may have written (any method but GET, HEAD and OPTIONS). */
  onWriteAnswered?: () => void;
}

/** An integration that failed: which function, for which route and request, and why. */
export interface IntegrationFailure {
  group: string;
  routeKey: string;
  /** API Gateway's request id: the event's `requestContext.requestId`, and the `apigw-requestid` header the client got. */
  requestId: string;
  /** The status the client was given. */
  status: number;
  error: unknown;
}

/** The integration did not answer within API Gateway's integration timeout. */
export class IntegrationTimeoutError extends Error {
  override name = 'IntegrationTimeoutError';
}

/** The function answered more than Lambda returns from a synchronous invocation. */
export class ResponseTooLargeError extends Error {
  override name = 'ResponseTooLargeError';
}

/**
 * The quotas AWS enforces and no local part would (docs/sim.md, "Quotas", gives each one's source):
 * - an HTTP API request payload: 10 MB, else 413 `{"message":"Request Entity Too Large"}`;
 * - a Lambda synchronous response: 6 MB as Lambda counts it (6,291,556 bytes of the serialized response),
 *   else the invocation fails and the client gets 500 `{"message":"Internal Server Error"}`;
 * - an HTTP API integration: 30 s, else 503 `{"message":"Service Unavailable"}`.
 */
export const HTTP_API_QUOTAS = { requestPayloadBytes: 10 * 1024 * 1024, lambdaResponseBytes: LAMBDA_RESPONSE_BYTES, integrationTimeoutMs: 30_000 } as const;

export interface Gateway {
  url: string;
  server: Server;
  /** Answers requests before the routes do (the WebSocket management API); true when it answered. */
  intercept: ((req: IncomingMessage, res: ServerResponse) => boolean) | undefined;
  close(): Promise<void>;
}

interface CompiledRoute {
  route: GatewayRoute;
  pattern: RegExp;
  names: string[];
}

const TEXT_TYPES = /^(application\/(json|.*\+json|x-www-form-urlencoded|xml|graphql)|text\/)/i;

function compile(route: GatewayRoute): CompiledRoute {
  const names: string[] = [];
  const source = route.path
    .split('/')
    .map((segment) => {
      const param = /^\{([A-Za-z0-9_]+)(\+?)\}$/.exec(segment);
      if (param) {
        names.push(param[1]!);
        // `{name+}`, API Gateway's greedy parameter: the rest of the path.
        return param[2] ? '(.+)' : '([^/]+)';
      }
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return { route, pattern: new RegExp(`^${source}$`), names };
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}

/**
 * The request's body, 'too-large' past `limit`, or 'aborted' when the client went away before sending all of it: no
 * function runs then, and nothing failed on this side (each had been logged as an integration failure, a 500: sixty
 * aborted uploads, sixty error lines and counts, red team).
 */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large' | 'aborted'> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) return 'too-large';
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > limit) return 'too-large';
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    if (req.destroyed && (error as NodeJS.ErrnoException).code === 'ECONNRESET') return 'aborted';
    throw error;
  }
  return Buffer.concat(chunks);
}

function lambdaContext(functionName: string, timeoutMs: number): Context {
  const deadline = steadyNow() + timeoutMs;
  const awsRequestId = randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${awsRequestId}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - steadyNow()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

export interface LambdaResult {
  statusCode?: number;
  headers?: Record<string, string | number | boolean | undefined>;
  body?: string;
  isBase64Encoded?: boolean;
  cookies?: string[];
}

/**
 * At least the UTF-8 bytes of `JSON.stringify(result)`, computed without it: a UTF-16 code unit escaped or encoded
 * takes at most 6 bytes (`\u001f`), and the names and punctuation of the result's shape are under 200. Lambda's
 * limit is counted exactly only for a response this bound puts over it (a page of blocks was stringified again
 * for its size alone: a twentieth of the one-process stack's CPU on a read of pages).
 */
export function payloadBound(result: LambdaResult): number {
  let units = (result.body?.length ?? 0) + String(result.statusCode ?? '').length;
  for (const [key, value] of Object.entries(result.headers ?? {})) units += key.length + String(value).length + 6;
  for (const cookie of result.cookies ?? []) units += cookie.length + 3;
  return 6 * units + 200;
}

function writeResult(res: ServerResponse, result: LambdaResult): void {
  const headers: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(result.headers ?? {})) {
    if (value !== undefined) headers[key] = String(value);
  }
  if (result.cookies?.length) headers['Set-Cookie'] = result.cookies;
  const body = result.body === undefined ? '' : Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8');
  headers['Content-Length'] = String(body.length);
  res.writeHead(result.statusCode ?? 200, headers);
  res.end(body);
}

/**
 * A refusal the gateway writes on a bare socket (a refused WebSocket upgrade, a request Node's parser refuses), as it
 * answers every refusal: stored by no cache (a 404 is cacheable by default), sniffed by no browser, and closed (red
 * team: a bare status line).
 */
export function refusal(status: number): string {
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'Cache-Control: no-store',
    'X-Content-Type-Options: nosniff',
    'Content-Length: 0',
    'Connection: close',
    '',
    '',
  ].join('\r\n');
}

/** API Gateway's own answers (never from a function), in its own shape. */
function gatewayError(res: ServerResponse, statusCode: number, message: string, requestId: string = randomUUID()): void {
  writeResult(res, {
    statusCode,
    // API Gateway's own errors: never kept by a cache, as every answer of the service says (shared/http/caching.ts).
    headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', 'apigw-requestid': requestId },
    body: JSON.stringify({ message }),
  });
}

/** The integration's answer, or IntegrationTimeoutError once API Gateway would have stopped waiting. */
function withinIntegrationTimeout<T>(answer: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new IntegrationTimeoutError(`no answer within the integration timeout of ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

export function buildEvent(
  req: IncomingMessage,
  url: URL,
  route: GatewayRoute | undefined,
  params: Record<string, string> | undefined,
  body: Buffer,
): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (const [key, value] of Object.entries(req.headers)) {
    if (key === 'cookie') cookies.push(...String(value).split(/;\s*/));
    else {
      const joined = firstHeader(value);
      if (joined !== undefined) headers[key.toLowerCase()] = joined;
    }
  }
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) query[key] = key in query ? `${query[key]},${value}` : value;
  const contentType = headers['content-type'] ?? '';
  // Bytes that are not UTF-8 travel base64-encoded, as binary does, so the handler can refuse them
  // instead of reading replacement characters.
  const isText = body.length === 0 || ((contentType === '' || TEXT_TYPES.test(contentType)) && isUtf8(body));
  const now = new Date();
  const routeKey = route?.routeKey ?? '$default';
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(cookies.length ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length ? { queryStringParameters: query } : {}),
    ...(params && Object.keys(params).length ? { pathParameters: params } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0]!,
      http: {
        method: req.method ?? 'GET',
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(body.length ? { body: isText ? body.toString('utf8') : body.toString('base64') } : {}),
    isBase64Encoded: body.length > 0 && !isText,
  };
}

export function startGateway(options: GatewayOptions): Promise<Gateway> {
  // Like API Gateway, a literal segment beats a parameter: `/explorer/config.json` before `/explorer/{file}`.
  const compiled = options.routes.map(compile).sort((a, b) => a.names.length - b.names.length);
  const maxPayload = options.maxPayloadBytes ?? HTTP_API_QUOTAS.requestPayloadBytes;
  const maxResponse = options.maxResponseBytes ?? HTTP_API_QUOTAS.lambdaResponseBytes;
  const timeoutMs = options.timeoutMs ?? 29_000;
  const integrationTimeoutMs = options.integrationTimeoutMs ?? HTTP_API_QUOTAS.integrationTimeoutMs;

  let gateway: Gateway | undefined;
  // A client that sends its headers a byte at a time (slow loris) is cut off after 10 s; Node checks every
  // second instead of every 30. Each stalled socket costs a few KB meanwhile, and never blocks the others.
  // Idle keep-alive sockets live 65 s (as behind AWS's load balancers), not Node's 5 s: a client whose event
  // loop was busy for more than 5 s (a test waiting on a child process) would otherwise send its next
  // request on a socket the gateway had just closed, and see "other side closed".
  const server = createServer(
    { headersTimeout: 10_000, requestTimeout: 60_000, connectionsCheckingInterval: 1_000, keepAliveTimeout: 65_000 },
    async (req, res) => {
      if (gateway?.intercept?.(req, res)) return;
      let group: string = options.defaultGroup;
      let routeKey = '$default';
      let requestId: string = randomUUID();
      try {
        const url = new URL(req.url ?? '/', 'http://localhost');
        const method = req.method ?? 'GET';
        let match: { route: GatewayRoute; params: Record<string, string> } | undefined;
        for (const candidate of compiled) {
          if (candidate.route.method !== method) continue;
          const found = candidate.pattern.exec(url.pathname);
          if (!found) continue;
          const params: Record<string, string> = {};
          candidate.names.forEach((name, i) => {
            try {
              params[name] = decodeURIComponent(found[i + 1]!);
            } catch {
              params[name] = found[i + 1]!;
            }
          });
          match = { route: candidate.route, params };
          break;
        }
        const body = await readBody(req, maxPayload);
        if (body === 'aborted') {
          res.destroy();
          return;
        }
        if (body === 'too-large') {
          gatewayError(res, 413, 'Request Entity Too Large');
          req.resume();
          return;
        }
        group = match?.route.group ?? options.defaultGroup;
        const event = buildEvent(req, url, match?.route, match?.params, body);
        routeKey = event.routeKey;
        requestId = event.requestContext.requestId;
        const result = (await withinIntegrationTimeout(
          Promise.resolve(options.handlers[group]!(event, lambdaContext(group, timeoutMs))),
          integrationTimeoutMs,
        )) as LambdaResult;
        // Lambda refuses a synchronous response over its payload quota: the invocation fails, and the client
        // gets the integration failure, whatever the function meant to answer.
        const size = payloadBound(result ?? {}) > maxResponse ? Buffer.byteLength(JSON.stringify(result ?? {})) : 0;
        if (size > maxResponse) {
          throw new ResponseTooLargeError(`Response payload size exceeded maximum allowed payload size (${maxResponse} bytes): ${size} bytes`);
        }
        writeResult(res, result ?? {});
        if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS') options.onWriteAnswered?.();
      } catch (error) {
        // What an HTTP API answers when the integration itself fails: a bare 500, or 503 when it timed out.
        const timedOut = error instanceof IntegrationTimeoutError;
        const status = timedOut ? 503 : 500;
        options.onIntegrationError?.({ group, routeKey, requestId, status, error });
        if (!res.headersSent) gatewayError(res, status, timedOut ? 'Service Unavailable' : 'Internal Server Error', requestId);
        else res.destroy();
      }
    },
  );

  // A request Node's own parser refuses (headers past its limit, a malformed line, Content-Length beside
  // Transfer-Encoding) is answered here, as every other answer: no-store and nosniff, then closed. Node's default
  // was a bare status line (red team, 2026-12-06).
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    // Then closed, as Node's own handler closes it: a client still trickling headers (slow loris) is cut off.
    socket.once('finish', () => socket.destroy());
    socket.end(refusal(status));
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve(
        (gateway = {
          url: `http://${host}:${address.port}`,
          server,
          intercept: undefined,
          close: () =>
            new Promise<void>((done) => {
              server.close(() => done());
              server.closeAllConnections();
            }),
        }),
      );
    });
  });
}
