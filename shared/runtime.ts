/**
 * Wires the domain to its storage from the settings, once per process (a Lambda instance or the
 * local gateway). Handlers and middlewares ask for what they need here and never build clients.
 * Group-specific wiring lives beside its domain (shared/business/runtime.ts), so that a function
 * bundles only what it uses.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { RateLimiterDynamo, RateLimiterMemory, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { ApiKeyRepository } from './admin/api-keys.ts';
import { KMSClient } from '@aws-sdk/client-kms';
import { getConfig, masterKeyPath } from './config.ts';
import { DependencyUnavailableError } from './errors.ts';
import { createIpfsStore, type IpfsStore } from './offchain/ipfs-store.ts';
import { KmsKeyProvider, LocalKeyProvider, type KeyProvider } from './offchain/key-providers.ts';
import type { OffchainStore } from './ledger/offchain-port.ts';
import { createOffchainStore } from './offchain/offchain.ts';
import { ChainAppender } from './ledger/appender.ts';
import { createLedger, type Ledger } from './ledger/ledger.ts';
import type { LedgerRepository } from './ledger/repository.ts';
import { createAccessControl, type AccessControl } from './access/access.ts';
import { guardLedger } from './access/guarded.ts';
import type { Principal } from './access/policy.ts';
import { createApiKeyRepository } from './storage/api-key-repository.ts';
import { createBusinessRepository } from './storage/business-repository.ts';
import { QUIET_SDK_LOGGER, createDynamoAggregatedClient, createDynamoClient, dynamoRequestCounts } from './storage/client.ts';
import { createLedgerRepository } from './storage/ledger-repository.ts';
import { reportCapacity } from './storage/capacity-report.ts';
import { journalTransactions } from './storage/journal.ts';
import { allTableSpecs, tableNamesFrom } from './storage/tables.ts';
import { createMetrics, type Metrics } from './metrics/metrics.ts';
import { createSharedCounters } from './storage/metrics-repository.ts';

export interface LedgerRuntime {
  ledger: Ledger;
  repository: LedgerRepository;
  appender: ChainAppender;
}

/** A value made on first use and kept for the life of the process. */
export const once = <T>(make: () => T): (() => T) => {
  let value: T | undefined;
  return () => (value ??= make());
};

/** Built on first use, so a master key or IPFS problem only touches requests that need them. */
export const lazyOffchain: OffchainStore = {
  put: (value) => getOffchainStore().put(value),
  get: (cid, nonce) => getOffchainStore().get(cid, nonce),
  seal: (value) => getOffchainStore().seal(value),
  unseal: (sealed) => getOffchainStore().unseal(sealed),
  ping: () => getOffchainStore().ping(),
};

/** The bench's capacity model: every DynamoDB request of this process priced per partition (off unless set). */
const capacityReport = once(() => {
  const config = getConfig();
  if (!config.SVC_CAPACITY_REPORT_DIR) return;
  reportCapacity(
    config.SVC_CAPACITY_REPORT_DIR,
    Object.values(allTableSpecs(tableNamesFrom(config))).map((spec) => spec.definition),
  );
});

/** The local journal of acknowledged transactions (DynamoDB Local on disk only; see shared/storage/journal.ts). */
const localJournal = once(() => {
  const dir = getConfig().SVC_LOCAL_JOURNAL_DIR;
  if (dir) journalTransactions(dir);
});

const dynamoOptions = () => {
  capacityReport();
  localJournal();
  return { region: getConfig().SVC_AWS_REGION, endpoint: getConfig().SVC_DYNAMODB_ENDPOINT };
};

export const documentClient: () => DynamoDBDocumentClient = once(() => createDynamoClient(dynamoOptions()));

let ledgerRuntimeBuilt = false;

export const getLedgerRuntime = once((): LedgerRuntime => {
  ledgerRuntimeBuilt = true;
  const config = getConfig();
  const repository = createLedgerRepository({ client: documentClient(), tableName: config.SVC_LEDGER_TABLE });
  const appender = new ChainAppender(repository, {
    maxAttempts: config.SVC_APPEND_MAX_ATTEMPTS,
    batchMax: config.SVC_APPEND_BATCH_MAX,
    pendingShards: config.SVC_APPEND_PENDING_SHARDS,
  });
  const ledger = createLedger({
    repository,
    appender,
    offchain: lazyOffchain,
    offchainThresholdBytes: config.SVC_OFFCHAIN_THRESHOLD_BYTES,
  });
  return { ledger, repository, appender };
});

/** The access policy with the channel records it reads (the registry table). */
export const getAccessControl = once(
  (): AccessControl => createAccessControl({ channels: createBusinessRepository({ client: documentClient(), tableName: getConfig().SVC_REGISTRY_TABLE }) }),
);

/** The ledger as this caller may use it: every call checked by the access policy. What handlers use. */
export function ledgerFor(principal: Principal): Ledger {
  return guardLedger(getLedgerRuntime().ledger, getAccessControl(), principal);
}

/** Off-chain payloads: IPFS at SVC_IPFS_API_URL, keys from KMS (SVC_KMS_KEY_ID) or the local master key file. */
export const getOffchainStore = once((): OffchainStore => {
  const config = getConfig();
  const keys: KeyProvider = config.SVC_KMS_KEY_ID
    ? new KmsKeyProvider({ client: new KMSClient({ region: config.SVC_AWS_REGION, maxAttempts: 3, logger: QUIET_SDK_LOGGER }), keyId: config.SVC_KMS_KEY_ID })
    : LocalKeyProvider.fromFile(masterKeyPath(config), { create: false });
  const url = config.SVC_IPFS_API_URL;
  const ipfs: IpfsStore = url
    ? createIpfsStore({ url, authorization: config.SVC_IPFS_API_AUTH || undefined, timeoutMs: config.SVC_IPFS_TIMEOUT_MS, maxBytes: 16 * 1024 * 1024 })
    : {
        // Not configured is the same to a client as not reachable: the operations that need IPFS answer 503.
        add: async () => Promise.reject(new DependencyUnavailableError('IPFS (SVC_IPFS_API_URL is not set)')),
        cat: async () => Promise.reject(new DependencyUnavailableError('IPFS (SVC_IPFS_API_URL is not set)')),
        ping: async () => Promise.reject(new DependencyUnavailableError('IPFS (SVC_IPFS_API_URL is not set)')),
      };
  return createOffchainStore({ ipfs, keys });
});

export const getApiKeyRepository = once(
  (): ApiKeyRepository => createApiKeyRepository({ client: documentClient(), tableName: getConfig().SVC_REGISTRY_TABLE }),
);

/**
 * The request limiter: SVC_RATE_LIMIT_RPM requests per 60 s per client, in memory (one process) or in
 * DynamoDB (shared by every instance). If DynamoDB cannot be reached the limiter falls back to
 * counting in memory rather than failing requests.
 */
function limiter(points: number, keyPrefix: string): RateLimiterAbstract {
  const config = getConfig();
  const window = { points, duration: 60, keyPrefix };
  if (config.SVC_RATE_LIMIT_BACKEND === 'memory') return new RateLimiterMemory(window);
  return new RateLimiterDynamo({
    ...window,
    storeClient: createDynamoAggregatedClient(dynamoOptions()),
    tableName: config.SVC_RATE_LIMIT_TABLE,
    tableCreated: true,
    ttlSet: true,
    insuranceLimiter: new RateLimiterMemory(window),
  });
}

/** Requests per key (per source IP without one) and minute. */
export const getRateLimiter = once((): RateLimiterAbstract => limiter(getConfig().SVC_RATE_LIMIT_RPM, 'rlflx'));

/** Unknown keys presented per source IP and minute: a separate budget, so guessing keys cannot reset it. */
export const getAuthFailureLimiter = once((): RateLimiterAbstract => limiter(getConfig().SVC_AUTH_FAILURES_PER_MINUTE, 'authfail'));

/** Request and ledger metrics; summed across instances in the registry table with the dynamodb backend. */
export const getMetrics = once((): Metrics => {
  const config = getConfig();
  return createMetrics({
    shared: config.SVC_METRICS_BACKEND === 'dynamodb' ? createSharedCounters({ client: documentClient(), tableName: config.SVC_REGISTRY_TABLE }) : undefined,
    flushMs: config.SVC_METRICS_FLUSH_MS,
    // The appender exists only where chains are written; elsewhere there is nothing to count.
    ledgerCounters: () => (ledgerRuntimeBuilt ? getLedgerRuntime().appender.counters : { eventsAppended: 0, conflicts: 0, commits: 0 }),
    dynamoCounters: () => dynamoRequestCounts,
  });
});
