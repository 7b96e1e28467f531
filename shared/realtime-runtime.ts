/**
 * The realtime wiring: the connections table, and the API Gateway management API that pushes to
 * WebSocket clients (the cloud's, or the local gateway's /@connections, which answers the same calls).
 */
import { ApiGatewayManagementApiClient, GoneException, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import { getConfig } from './config.ts';
import { DependencyUnavailableError } from './errors.ts';
import type { ConnectionStore, Send } from './realtime/realtime.ts';
import { documentClient, once } from './runtime.ts';
import { createConnectionStore } from './storage/connection-repository.ts';
import { QUIET_SDK_LOGGER } from './storage/client.ts';
import { isUnavailable } from './storage/errors.ts';

export const getConnectionStore = once(
  (): ConnectionStore => createConnectionStore({ client: documentClient(), tableName: getConfig().SVC_CONNECTIONS_TABLE }),
);

export const getSender = once((): Send => {
  const config = getConfig();
  if (!config.SVC_WS_MANAGEMENT_ENDPOINT) throw new Error('SVC_WS_MANAGEMENT_ENDPOINT is not set: nowhere to push WebSocket messages');
  const local = !config.SVC_WS_MANAGEMENT_ENDPOINT.startsWith('https://');
  const client = new ApiGatewayManagementApiClient({
    region: config.SVC_AWS_REGION,
    endpoint: config.SVC_WS_MANAGEMENT_ENDPOINT,
    ...(local && !process.env.AWS_ACCESS_KEY_ID ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    maxAttempts: 2,
    logger: QUIET_SDK_LOGGER,
  });
  return async (connectionId, message) => {
    try {
      await client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(message) }));
      return 'sent';
    } catch (error) {
      if (error instanceof GoneException || (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 410) return 'gone';
      if (isUnavailable(error)) throw new DependencyUnavailableError('the WebSocket management API', { cause: error });
      throw error;
    }
  };
});
