/** The shapes every function group shares: API Gateway's HTTP API v2 event in, a result out. */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { Principal } from '../access/policy.ts';

export type HttpEvent = APIGatewayProxyEventV2;
export type HttpResult = APIGatewayProxyStructuredResultV2 & { headers: Record<string, string | number | boolean> };

/** The Lambda context plus what the edge middlewares learn about the request. */
export interface ServiceContext extends Context {
  requestId: string;
  startedAt: number;
  /** The function group serving the request (ledger, business, admin…). */
  group: string;
  /** The matched handler's relative key (`GET /chains`), or null when no route matched. */
  relativeKey: string | null;
  /** The caller's key, once auth has checked it. Never the key itself. */
  apiKey?: { key_id: string; role: string; org_id: string | null };
  /** Who the caller is to the access policy: OPEN_ACCESS with auth off, ANONYMOUS on public routes. */
  principal?: Principal;
  /** The rate-limit state of this request, for the X-RateLimit-* headers. */
  rateLimit?: { limit: number; remaining: number; resetSeconds: number };
}

/** What a route handler sees: decoded parameters, the parsed body, and the request id. */
export interface RouteRequest {
  params: Record<string, string>;
  query: Record<string, string>;
  /** The parsed JSON body; undefined when none was sent. */
  body: unknown;
  headers: Record<string, string>;
  requestId: string;
  /** Who is asking, for the access policy (shared/access/policy.ts): OPEN_ACCESS when auth is off. */
  principal: Principal;
  event: HttpEvent;
}

export interface RouteResponse {
  statusCode: number;
  /** JSON to send; or, with `contentType`, the text to send as it is. */
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

export type RouteHandler = (request: RouteRequest) => Promise<RouteResponse>;

/** A group's handlers, keyed by route key relative to the group's prefix: `"GET /chains/{chain_name}"`. */
export type RouteHandlers = Record<string, RouteHandler>;
