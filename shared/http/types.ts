/** The shapes every function group shares: API Gateway's HTTP API v2 event in, a result out. */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { Access, Principal } from '../access/policy.ts';

export type HttpEvent = APIGatewayProxyEventV2;
export type HttpResult = APIGatewayProxyStructuredResultV2 & { headers: Record<string, string | number | boolean> };

/** The Lambda context plus what the edge middlewares learn about the request. */
export interface ServiceContext extends Context {
  requestId: string;
  startedAt: number;
  /** The function group serving the request (ledger, business, admin…). */
  group: string;
  /** The matched route's key in its group (`GET /chains`), or null when no route matched. */
  relativeKey: string | null;
  /** Whether the matched route appends events (its latency is the append latency CloudWatch alarms on). */
  appends?: boolean;
  /** The least role the edge asks of this request: the route's declared access (a reader for an unknown route). */
  access: Access;
  /** The caller's key, once auth has checked it. Never the key itself. */
  apiKey?: { key_id: string; role: string; org_id: string | null };
  /** Who the caller is to the access policy: OPEN_ACCESS with auth off, ANONYMOUS on public routes. */
  principal?: Principal;
  /**
   * Checks again that the caller's key is held (not revoked, its role and organization unchanged), in the registry
   * itself, not the authenticator's cache: 401 once it is not. For work that goes on after the edge's check (each of a
   * GraphQL request's mutations). Absent with auth off and on public routes.
   */
  keyStillHeld?: () => Promise<void>;
  /** The rate-limit state of this request, for the X-RateLimit-* headers. */
  rateLimit?: { limit: number; remaining: number; resetSeconds: number };
  /**
   * Counts one more request against the caller's rate budget (429 once it is spent): what a route that reads past
   * SVC_MAX_READ_ITEMS pays for each further allowance (shared/read-allowance.ts). Absent when nothing is counted.
   */
  chargeRequest?: () => Promise<void>;
}
