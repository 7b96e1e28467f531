/**
 * The realtime wiring: the connections table, and the API Gateway management API that pushes to
 * WebSocket clients (the cloud's, or the local gateway's /@connections, which answers the same calls).
 */
import { ApiGatewayManagementApiClient, GetConnectionCommand, GoneException, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import { AWS_HTTP, DeadlineHttpHandler } from '../aws-http.ts';
import { createAccessControl, type ChannelDirectory } from '../access/access.ts';
import type { Principal } from '../access/policy.ts';
import type { ChannelDetails, ChannelRecord } from '../business/repository.ts';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { connectionPrincipal, type ConnectionStore, type FanOutLimits, keyStillHeld, type MayReceive, type Send } from '../realtime/realtime.ts';
import { type Core, once } from './core.ts';
import { createBusinessRepository } from '../storage/business-repository.ts';
import { createConnectionStore } from '../storage/connection-repository.ts';
import { QUIET_SDK_LOGGER } from '../storage/client.ts';
import { translateAwsError } from '../storage/errors.ts';
import { logger } from '../log.ts';

export interface RealtimeWiring {
  connections(): ConnectionStore;
  /** Pushes a message to a connection. */
  sender(): Send;
  /**
   * Whether a connection is gone at API Gateway (GetConnection answers 410): undefined where this function is not
   * told the management API's address.
   */
  goneCheck(): ((connectionId: string) => Promise<boolean>) | undefined;
  /** A connection's principal under the current settings. */
  principalOf(identity: Parameters<typeof connectionPrincipal>[0]): Principal;
  /**
   * Who may receive which chain's pushes, for one broadcast batch: each channel's members are read once
   * per batch (not per subscriber), and never kept past it, so a membership change applies to the next.
   */
  pushPolicy(): MayReceive;
  /** Each key's share of pushes for a batch (SVC_WS_PUSHES_PER_MINUTE), or undefined when there is no limit. */
  pushBudget(): FanOutLimits['takePushes'];
}

export function createRealtimeWiring(core: Core): RealtimeWiring {
  const config = core.settings;
  const connections = once((): ConnectionStore => createConnectionStore({ client: core.documentClient(), tableName: config.SVC_CONNECTIONS_TABLE }));

  const management = once((): ApiGatewayManagementApiClient => {
    if (!config.SVC_WS_MANAGEMENT_ENDPOINT) throw new Error('SVC_WS_MANAGEMENT_ENDPOINT is not set: nowhere to push WebSocket messages');
    const local = !config.SVC_WS_MANAGEMENT_ENDPOINT.startsWith('https://');
    return new ApiGatewayManagementApiClient({
      region: config.SVC_AWS_REGION,
      endpoint: config.SVC_WS_MANAGEMENT_ENDPOINT,
      ...(local && !process.env.AWS_ACCESS_KEY_ID ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
      maxAttempts: 2,
      logger: QUIET_SDK_LOGGER,
      requestHandler: new DeadlineHttpHandler(AWS_HTTP),
    });
  });

  const isGone = (error: unknown) => error instanceof GoneException || (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 410;

  const goneCheck = once((): ((connectionId: string) => Promise<boolean>) | undefined => {
    if (!config.SVC_WS_MANAGEMENT_ENDPOINT) return undefined;
    const client = management();
    return async (connectionId: string) => {
      try {
        await client.send(new GetConnectionCommand({ ConnectionId: connectionId }));
        return false;
      } catch (error) {
        if (isGone(error)) return true;
        // Not known either way: the slot stays its holder's.
        logger.warn('could not ask whether a WebSocket connection is gone', { connection_id: connectionId, error });
        return false;
      }
    };
  });

  const sender = once((): Send => {
    const client = management();
    return async (connectionId, message) => {
      try {
        await client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(message) }));
        return 'sent';
      } catch (error) {
        if (isGone(error)) return 'gone';
        throw translateAwsError(error, 'the WebSocket management API');
      }
    };
  });

  /**
   * Takes a batch's pushes from a key's budget for the minute, and grants what is left of it (all, some, none). A
   * connection with no key (auth off) is not limited; a limiter that cannot answer grants all (pushes are the
   * ledger's own announcements, and the failure is logged).
   */
  const pushBudget = once((): FanOutLimits['takePushes'] => {
    const limiter = core.pushLimiter();
    if (!limiter) return undefined;
    const limit = config.SVC_WS_PUSHES_PER_MINUTE;
    return async (keyId, count) => {
      if (!keyId || count <= 0) return { granted: count, reached: false };
      try {
        await limiter.consume(keyId, count);
        return { granted: count, reached: false };
      } catch (refused) {
        if (refused instanceof RateLimiterRes) {
          const before = refused.consumedPoints - count;
          return { granted: Math.max(0, Math.min(count, limit - before)), reached: before < limit };
        }
        logger.warn('the WebSocket push limit could not be read: pushes sent unlimited this batch', { key_id: keyId, error: refused });
        return { granted: count, reached: false };
      }
    };
  });

  const principalOf = (identity: Parameters<typeof connectionPrincipal>[0]): Principal => connectionPrincipal(identity, config.SVC_AUTH_ENABLED);

  function pushPolicy(): MayReceive {
    const repository = createBusinessRepository({ client: core.documentClient(), tableName: config.SVC_REGISTRY_TABLE });
    const records = new Map<string, Promise<ChannelRecord | undefined>>();
    const details = new Map<string, Promise<ChannelDetails>>();
    const members = new Map<string, Promise<string[]>>();
    const memoized: ChannelDirectory = {
      getChannel(id) {
        if (!records.has(id)) records.set(id, repository.getChannel(id));
        return records.get(id)!;
      },
      getChannelDetails(id) {
        if (!details.has(id)) details.set(id, repository.getChannelDetails(id));
        return details.get(id)!;
      },
      getChannelMembers(id) {
        if (!members.has(id)) members.set(id, repository.getChannelMembers(id));
        return members.get(id)!;
      },
    };
    const access = createAccessControl({ channels: memoized });
    const readers = new Map<string, (chainName: string) => Promise<boolean>>();
    // A key's rights are checked at every push, not only at $connect: a key revoked since then receives nothing more
    // (it had kept receiving its channels' events for its connection's life), and its connection is forgotten
    // (fanOut). One read per key per batch of blocks.
    const apiKeys = core.apiKeys();
    const stored = new Map<string, Promise<string | undefined>>();
    const hashOf = (keyId: string) => {
      let known = stored.get(keyId);
      if (!known) stored.set(keyId, (known = apiKeys.hashOf(keyId)));
      return known;
    };
    return async (subscriber, chainName) => {
      if (config.SVC_AUTH_ENABLED && subscriber.key_id !== null && !keyStillHeld(await hashOf(subscriber.key_id), subscriber.key_hash)) return 'revoked';
      const principal = principalOf(subscriber);
      const key = `${principal.role}|${principal.org_id ?? ''}`;
      let reader = readers.get(key);
      if (!reader) readers.set(key, (reader = access.chainReader(principal)));
      return reader(chainName);
    };
  }

  return { connections, sender, goneCheck, principalOf, pushPolicy, pushBudget };
}
