/**
 * The WebSocket API's three routes (docs/rules.md, "WebSocket"). $connect checks the key (header or `?api_key=`,
 * since browsers cannot set headers) and records the connection; $default answers subscribe,
 * unsubscribe and ping (as the route's response); $disconnect forgets the connection.
 */
import type { APIGatewayProxyResultV2, APIGatewayProxyWebsocketEventV2, Context } from 'aws-lambda';
import { invocationDeadline, withDeadline } from '#shared/deadline';
import { withReadAllowance } from '#shared/read-allowance';
import { passesEdge } from '#shared/access/policy';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { hashApiKey } from '#shared/admin/api-keys';
import { headerValue } from '#shared/http/request-id';
import { DomainError, TooManyRequestsError } from '#shared/errors';
import { logger } from '#shared/log';
import { keyStillHeld, messages, parseClientMessage, type ConnectionIdentity } from '#shared/realtime/realtime';
import type { Core } from '#shared/wiring/core';
import { lambdaHandler } from '#shared/wiring/process';
import { createRealtimeWiring } from '#shared/wiring/realtime';

type WsEvent = APIGatewayProxyWebsocketEventV2 & {
  headers?: Record<string, string | undefined>;
  queryStringParameters?: Record<string, string | undefined>;
  /** Every value of each query parameter (a WebSocket API's $connect event keeps repeats here). */
  multiValueQueryStringParameters?: Record<string, string[] | undefined>;
};

/** The WebSocket API's handler, wired from a core (one per process in the cloud: `handler` below). */
export function createHandler(core: Core) {
  const config = core.settings;
  const { connections, principalOf, goneCheck } = createRealtimeWiring(core);
  const expiresAt = () => Math.floor(Date.now() / 1000) + config.SVC_WS_CONNECTION_TTL_SECONDS;

  /** Counts one request against the key's budget: the seconds to wait when it is spent, else 0 (and 0 when nothing counts). */
  const spendRequest = async (rateKey: string, connectionId?: string): Promise<number> => {
    if (config.SVC_RATE_LIMIT_RPM <= 0) return 0;
    try {
      await core.edge.rateLimiter().consume(rateKey);
      return 0;
    } catch (outcome) {
      if (outcome instanceof RateLimiterRes) return Math.max(1, Math.ceil(outcome.msBeforeNext / 1000));
      logger.warn('rate limiter unavailable; not counted', { connection_id: connectionId, error: outcome });
      return 0;
    }
  };

  const route = async (event: WsEvent): Promise<APIGatewayProxyResultV2> => {
    const { routeKey, connectionId } = event.requestContext;
    try {
      if (routeKey === '$connect') {
        // As on every HTTP route, a query parameter given twice is refused rather than one of its values guessed.
        const repeated = Object.entries(event.multiValueQueryStringParameters ?? {}).find(([, values]) => (values?.length ?? 0) > 1);
        if (repeated) return { statusCode: 400, body: `The query parameter '${repeated[0]}' was given more than once; give it once` };
        let identity: ConnectionIdentity = { key_id: null, role: null, org_id: null };
        let rateKey: string | undefined;
        if (config.SVC_AUTH_ENABLED) {
          const key = headerValue(event, config.API_KEY_NAME) ?? event.queryStringParameters?.api_key;
          let record;
          try {
            record = key
              ? await core.edge.authenticator.authenticateFrom(
                  key,
                  (event.requestContext as { identity?: { sourceIp?: string } }).identity?.sourceIp ?? 'unknown',
                )
              : undefined;
          } catch (error) {
            if (error instanceof TooManyRequestsError) return { statusCode: 429, body: 'Too many unknown keys from this address; try again later' };
            throw error;
          }
          if (!record) return { statusCode: 401, body: 'A valid API key is required (header or ?api_key=)' };
          if (!passesEdge(record.role, 'reader')) return { statusCode: 403, body: 'This key may not subscribe' };
          identity = { key_id: record.key_id, role: record.role, org_id: record.org_id, key_hash: hashApiKey(key!) };
          // Its messages count against the key's requests a minute, as its HTTP requests do (shared/http/rate-limit.ts),
          // and so does its $connect, before its slot is taken: connecting and closing in a loop cost the ledger writes
          // and reads at no cost to the key (red team, 2026-12-07).
          rateKey = `key:${identity.key_hash}`;
          const spent = await spendRequest(rateKey);
          if (spent) return { statusCode: 429, body: `Too many requests: this key's ${config.SVC_RATE_LIMIT_RPM} a minute are spent; retry in ${spent} s` };
        }
        // A key holds at most SVC_WS_CONNECTIONS_PER_KEY connections open (each is a subscriber every push fans out
        // to): each takes one of its key's slots, by a conditional write, so a burst of connections cannot pass it.
        const recorded = await connections().connect(
          connectionId,
          { ...identity, ...(rateKey ? { rate_key: rateKey } : {}), connected_at: new Date().toISOString() },
          expiresAt(),
          identity.key_id !== null ? { max: config.SVC_WS_CONNECTIONS_PER_KEY, nowSeconds: Math.floor(Date.now() / 1000), gone: goneCheck() } : undefined,
        );
        if (!recorded) {
          return { statusCode: 429, body: `This key holds ${config.SVC_WS_CONNECTIONS_PER_KEY} connections open, its most; close one first` };
        }
        logger.info('websocket connected', { connection_id: connectionId, key_id: identity.key_id });
        return { statusCode: 200 };
      }
      if (routeKey === '$disconnect') {
        await connections().disconnect(connectionId);
        return { statusCode: 200 };
      }
      // Counted in the second the message reached API Gateway (requestTimeEpoch), not the second it is handled in:
      // a flood that instances work through slowly is still a flood.
      const arrivedMs = Number((event.requestContext as { requestTimeEpoch?: number }).requestTimeEpoch) || Date.now();
      if (!(await connections().takeMessage(connectionId, Math.floor(arrivedMs / 1000), config.SVC_WS_MESSAGES_PER_SECOND))) {
        return { statusCode: 200, body: messages.error(`Too many messages: at most ${config.SVC_WS_MESSAGES_PER_SECOND} per second on one connection`) };
      }
      const store = connections();
      const identity = config.SVC_AUTH_ENABLED ? await store.identity(connectionId) : undefined;
      if (identity?.rate_key) {
        // One budget a key, HTTP and WebSocket together: many connections do not multiply it.
        const spent = await spendRequest(identity.rate_key, connectionId);
        if (spent) {
          return {
            statusCode: 200,
            body: messages.error(
              `Too many requests: this key's ${config.SVC_RATE_LIMIT_RPM} a minute (HTTP and WebSocket together) are spent; retry in ${spent} s`,
            ),
          };
        }
      }
      // With auth on, a connection answers only while it is recorded and its key exists: the key is checked again at
      // every message (and every push), not only at $connect. A revoked key's connection is forgotten with its
      // subscriptions, so that it holds no place among its key's connections and nothing is pushed to it.
      if (config.SVC_AUTH_ENABLED) {
        if (!identity) return { statusCode: 200, body: messages.error('This connection is no longer recorded; connect again') };
        if (identity.key_id !== null && !keyStillHeld(await core.apiKeys().hashOf(identity.key_id), identity.key_hash)) {
          await store.disconnect(connectionId);
          logger.info('websocket connection of a revoked key forgotten', { connection_id: connectionId, key_id: identity.key_id });
          return { statusCode: 200, body: messages.error("This connection's key was revoked: connect again with a valid key") };
        }
      }
      const request = parseClientMessage(event.body);
      switch (request.kind) {
        case 'ping':
          return { statusCode: 200, body: messages.pong() };
        case 'subscribe': {
          const subscriber = identity ?? (await store.identity(connectionId));
          if (!subscriber) return { statusCode: 200, body: messages.error('This connection is no longer recorded; connect again') };
          const { rate_key: _rateKey, ...who } = subscriber;
          // A channel's chain is subscribed to by its members only. `*` and event types may be subscribed
          // to by anyone: the pushes themselves leave out the chains a subscriber may not read.
          if (request.chain !== null && request.chain !== '*') {
            try {
              await core.access().chain(principalOf(who), 'chain.read', request.chain);
            } catch (error) {
              if (error instanceof DomainError && error.expose) return { statusCode: 200, body: messages.error(error.message) };
              throw error;
            }
          }
          if (!(await store.subscribe(connectionId, request.filter, who, expiresAt(), config.SVC_WS_MAX_SUBSCRIPTIONS))) {
            return {
              statusCode: 200,
              body: messages.error(`At most ${config.SVC_WS_MAX_SUBSCRIPTIONS} subscriptions per connection; unsubscribe from one first`),
            };
          }
          return { statusCode: 200, body: messages.subscribed(request.chain, request.event_type) };
        }
        case 'unsubscribe':
          await connections().unsubscribe(connectionId, request.filter);
          return { statusCode: 200, body: messages.subscribed(request.chain, request.event_type, 'unsubscribed') };
        default:
          return { statusCode: 200, body: messages.error(request.detail) };
      }
    } catch (error) {
      // A refusal meant for the client (past the reads one message may make, say) is answered with its reason.
      if (routeKey === '$default' && error instanceof DomainError && error.expose) {
        logger.info('websocket message refused', { connection_id: connectionId, status: error.statusCode, detail: error.message });
        return { statusCode: 200, body: messages.error(error.message) };
      }
      logger.error('websocket route failed', { route: routeKey, connection_id: connectionId, error });
      return routeKey === '$default' ? { statusCode: 200, body: messages.error('The service could not handle this message; try again') } : { statusCode: 500 };
    }
  };
  // Every wait ends at the invocation's deadline (shared/deadline.ts); a failure is answered above.
  // Its reads are capped as an HTTP request's are (shared/read-allowance.ts): a subscription reads a channel's members.
  return (event: WsEvent, context?: Context) =>
    withReadAllowance(config.SVC_MAX_READ_ITEMS, () => withDeadline(invocationDeadline(context), () => route(event)));
}

export const handler = lambdaHandler(createHandler);
