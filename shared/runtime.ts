/**
 * Wires the domain to its storage from the settings, once per process (a Lambda instance or the
 * local gateway). Handlers and middlewares ask for what they need here and never build clients.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { RateLimiterDynamo, RateLimiterMemory, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { ApiKeyRepository } from './admin/api-keys.ts';
import { getConfig } from './config.ts';
import { ChainAppender } from './ledger/appender.ts';
import { createLedger, type Ledger } from './ledger/ledger.ts';
import type { LedgerRepository } from './ledger/repository.ts';
import { createApiKeyRepository } from './storage/api-key-repository.ts';
import { createDynamoAggregatedClient, createDynamoClient } from './storage/client.ts';
import { createLedgerRepository } from './storage/ledger-repository.ts';

export interface LedgerRuntime {
  ledger: Ledger;
  repository: LedgerRepository;
  appender: ChainAppender;
}

const once = <T>(make: () => T): (() => T) => {
  let value: T | undefined;
  return () => (value ??= make());
};

const dynamoOptions = () => ({ region: getConfig().SVC_AWS_REGION, endpoint: getConfig().SVC_DYNAMODB_ENDPOINT });

const documentClient: () => DynamoDBDocumentClient = once(() => createDynamoClient(dynamoOptions()));

export const getLedgerRuntime = once((): LedgerRuntime => {
  const config = getConfig();
  const repository = createLedgerRepository({ client: documentClient(), tableName: config.SVC_LEDGER_TABLE });
  const appender = new ChainAppender(repository, {
    maxAttempts: config.SVC_APPEND_MAX_ATTEMPTS,
    batchMax: config.SVC_APPEND_BATCH_MAX,
  });
  return { ledger: createLedger({ repository, appender }), repository, appender };
});

export const getApiKeyRepository = once(
  (): ApiKeyRepository => createApiKeyRepository({ client: documentClient(), tableName: getConfig().SVC_REGISTRY_TABLE }),
);

/**
 * The request limiter: SVC_RATE_LIMIT_RPM requests per 60 s per client, in memory (one process) or in
 * DynamoDB (shared by every instance). If DynamoDB cannot be reached the limiter falls back to
 * counting in memory rather than failing requests.
 */
export const getRateLimiter = once((): RateLimiterAbstract => {
  const config = getConfig();
  const window = { points: config.SVC_RATE_LIMIT_RPM, duration: 60 };
  if (config.SVC_RATE_LIMIT_BACKEND === 'memory') return new RateLimiterMemory(window);
  return new RateLimiterDynamo({
    ...window,
    storeClient: createDynamoAggregatedClient(dynamoOptions()),
    tableName: config.SVC_RATE_LIMIT_TABLE,
    tableCreated: true,
    ttlSet: true,
    insuranceLimiter: new RateLimiterMemory(window),
  });
});
