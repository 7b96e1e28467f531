/**
 * The service's core, wired from its settings: DynamoDB, the ledger and its appender, access control,
 * off-chain payloads, API keys, rate limiters, metrics, and the edge the HTTP chain needs. Everything
 * is built on first use, so a master key or IPFS problem only touches requests that need them.
 *
 * `createCore(settings)` is a plain factory: a function's composition root (functions/<name>/handler.ts)
 * makes one per process through shared/wiring/process.ts, the local launcher makes one from the
 * settings it settled, tests make their own. Nothing here reads the environment.
 */
import { KMSClient } from '@aws-sdk/client-kms';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { RateLimiterDynamo, RateLimiterMemory, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { type AccessControl, createAccessControl } from '../access/access.ts';
import { guardLedger } from '../access/guarded.ts';
import type { Principal } from '../access/policy.ts';
import type { ApiKeyRepository } from '../admin/api-keys.ts';
import type { ChannelDetails, ChannelRecord } from '../business/repository.ts';
import { masterKeyPath, type Settings, subjectsDir } from '../config.ts';
import { AWS_HTTP, DeadlineHttpHandler } from '../aws-http.ts';
import { DependencyUnavailableError } from '../errors.ts';
import type { HealthProbes } from '../health.ts';
import { type Authenticator, createAuthenticator } from '../http/auth.ts';
import type { Edge } from '../http/chain.ts';
import { ChainAppender } from '../ledger/appender.ts';
import { createLedger, type Ledger } from '../ledger/ledger.ts';
import type { OffchainStore } from '../ledger/offchain-port.ts';
import type { PersonalData } from '../ledger/subject-port.ts';
import { createFileSubjectRepository } from '../subjects/file-repository.ts';
import { createPersonalData, createSubjectKeys } from '../subjects/subjects.ts';
import { createSubjectRepository } from '../storage/subject-repository.ts';
import type { LedgerRepository } from '../ledger/repository.ts';
import { createMetrics, type Metrics } from '../metrics/metrics.ts';
import { createIpfsStore, type IpfsStore } from '../offchain/ipfs-store.ts';
import { KmsKeyProvider, type KeyProvider, LocalKeyProvider } from '../offchain/key-providers.ts';
import { createOffchainStore } from '../offchain/offchain.ts';
import { createApiKeyRepository } from '../storage/api-key-repository.ts';
import { createBusinessRepository } from '../storage/business-repository.ts';
import { reportCapacity } from '../storage/capacity-report.ts';
import { createDynamoAggregatedClient, createDynamoClient, dynamoRequestCounts, QUIET_SDK_LOGGER } from '../storage/client.ts';
import { journalTransactions } from '../storage/journal.ts';
import { createLedgerRepository } from '../storage/ledger-repository.ts';
import { createSharedCounters } from '../storage/metrics-repository.ts';
import { allTableSpecs, tableNamesFrom } from '../storage/tables.ts';

/** A value made on first use and kept. */
export const once = <T>(make: () => T): (() => T) => {
  let value: T | undefined;
  return () => (value ??= make());
};

export interface LedgerRuntime {
  ledger: Ledger;
  repository: LedgerRepository;
  appender: ChainAppender;
}

export interface Core {
  settings: Readonly<Settings>;
  documentClient(): DynamoDBDocumentClient;
  /** The bare ledger, its repository and appender: the service's own bookkeeping writes through it. */
  ledgerRuntime(): LedgerRuntime;
  /** The access policy with the channel records it reads (the registry table). */
  access(): AccessControl<ChannelRecord, ChannelDetails>;
  /** The ledger as this caller may use it: every call checked by the access policy. What handlers use. */
  ledgerFor(principal: Principal): Ledger;
  /** Off-chain payloads: IPFS at SVC_IPFS_API_URL, keys from KMS (SVC_KMS_KEY_ID) or the local master key file. */
  offchain(): OffchainStore;
  /** The same, built on its first call rather than on the first read of `offchain`. */
  lazyOffchain: OffchainStore;
  /** Data subjects' keys (docs/personal-data.md), built on first use. */
  personalData: PersonalData;
  apiKeys(): ApiKeyRepository;
  /** Request and ledger metrics; summed across instances in the registry table with the dynamodb backend. */
  metrics(): Metrics;
  health: HealthProbes;
  /** What every HTTP function's middleware chain uses. */
  edge: Edge;
}

/** Process-wide SDK hooks (the bench's capacity model, the local journal): installed once, by the first core to reach DynamoDB. */
let sdkHooksInstalled = false;
function installSdkHooks(settings: Readonly<Settings>): void {
  if (sdkHooksInstalled) return;
  sdkHooksInstalled = true;
  // Every DynamoDB request of this process priced per partition (off unless set).
  if (settings.SVC_CAPACITY_REPORT_DIR) {
    reportCapacity(
      settings.SVC_CAPACITY_REPORT_DIR,
      Object.values(allTableSpecs(tableNamesFrom(settings))).map((spec) => spec.definition),
    );
  }
  // The local journal of acknowledged transactions (DynamoDB Local on disk only; see shared/storage/journal.ts).
  if (settings.SVC_LOCAL_JOURNAL_DIR) journalTransactions(settings.SVC_LOCAL_JOURNAL_DIR);
}

export function createCore(settings: Readonly<Settings>): Core {
  const dynamoOptions = () => {
    installSdkHooks(settings);
    return { region: settings.SVC_AWS_REGION, endpoint: settings.SVC_DYNAMODB_ENDPOINT, attemptTimeoutMs: settings.SVC_DYNAMODB_ATTEMPT_TIMEOUT_MS };
  };
  const documentClient = once(() => createDynamoClient(dynamoOptions()));
  const registry = () => ({ client: documentClient(), tableName: settings.SVC_REGISTRY_TABLE });

  /** What wraps data keys: KMS (SVC_KMS_KEY_ID) or the local master key file. */
  const keys = once(
    (): KeyProvider =>
      settings.SVC_KMS_KEY_ID
        ? new KmsKeyProvider({
            client: new KMSClient({
              region: settings.SVC_AWS_REGION,
              maxAttempts: 3,
              logger: QUIET_SDK_LOGGER,
              requestHandler: new DeadlineHttpHandler(AWS_HTTP),
            }),
            keyId: settings.SVC_KMS_KEY_ID,
          })
        : LocalKeyProvider.fromFile(masterKeyPath(settings), { create: false }),
  );

  const offchain = once((): OffchainStore => {
    const url = settings.SVC_IPFS_API_URL;
    const unavailable = async () => Promise.reject(new DependencyUnavailableError('IPFS (SVC_IPFS_API_URL is not set)'));
    const ipfs: IpfsStore = url
      ? createIpfsStore({ url, authorization: settings.SVC_IPFS_API_AUTH || undefined, timeoutMs: settings.SVC_IPFS_TIMEOUT_MS, maxBytes: 16 * 1024 * 1024 })
      : // Not configured is the same to a client as not reachable: the operations that need IPFS answer 503.
        { add: unavailable, cat: unavailable, ping: unavailable, remove: unavailable };
    return createOffchainStore({ ipfs, keys: keys() });
  });
  const lazyOffchain: OffchainStore = {
    put: (value) => offchain().put(value),
    get: (cid, nonce) => offchain().get(cid, nonce),
    seal: (value) => offchain().seal(value),
    unseal: (sealed) => offchain().unseal(sealed),
    ping: () => offchain().ping(),
    remove: (cid) => offchain().remove(cid),
  };

  /** Data subjects' keys in the registry, wrapped like data keys; built on first use, as off-chain payloads are. */
  const personalData = once(
    (): PersonalData =>
      createPersonalData(
        createSubjectKeys({
          // Locally a file per subject (a database file keeps deleted rows' bytes); in the cloud the registry table.
          repository: settings.SVC_SUBJECT_KEY_STORE === 'registry' ? createSubjectRepository(registry()) : createFileSubjectRepository(subjectsDir(settings)),
          keys: keys(),
        }),
      ),
  );
  const lazyPersonalData: PersonalData = {
    seal: (subjectId, details) => personalData().seal(subjectId, details),
    openAll: (items) => personalData().openAll(items),
    recordEvents: (subjectId, events) => personalData().recordEvents(subjectId, events),
    recordPayload: (subjectId, cid) => personalData().recordPayload(subjectId, cid),
    recordErasureEvent: (subjectId, eventId) => personalData().recordErasureEvent(subjectId, eventId),
    erase: (subjectId, by) => personalData().erase(subjectId, by),
  };

  let ledgerRuntimeBuilt = false;
  const ledgerRuntime = once((): LedgerRuntime => {
    ledgerRuntimeBuilt = true;
    const repository = createLedgerRepository({ client: documentClient(), tableName: settings.SVC_LEDGER_TABLE });
    const appender = new ChainAppender(repository, {
      maxAttempts: settings.SVC_APPEND_MAX_ATTEMPTS,
      batchMax: settings.SVC_APPEND_BATCH_MAX,
      pendingShards: settings.SVC_APPEND_PENDING_SHARDS,
    });
    const ledger = createLedger({
      repository,
      appender,
      offchain: lazyOffchain,
      personalData: lazyPersonalData,
      offchainThresholdBytes: settings.SVC_OFFCHAIN_THRESHOLD_BYTES,
    });
    return { ledger, repository, appender };
  });

  const access = once((): AccessControl<ChannelRecord, ChannelDetails> => createAccessControl({ channels: createBusinessRepository(registry()) }));
  const apiKeys = once((): ApiKeyRepository => createApiKeyRepository(registry()));

  /**
   * A request limiter: `points` per 60 s per client, in memory (one process) or in DynamoDB (shared by
   * every instance). If DynamoDB cannot be reached the limiter falls back to counting in memory rather
   * than failing requests.
   */
  const limiter = (points: number, keyPrefix: string): RateLimiterAbstract => {
    const window = { points, duration: 60, keyPrefix };
    if (settings.SVC_RATE_LIMIT_BACKEND === 'memory') return new RateLimiterMemory(window);
    return new RateLimiterDynamo({
      ...window,
      storeClient: createDynamoAggregatedClient(dynamoOptions()),
      tableName: settings.SVC_RATE_LIMIT_TABLE,
      tableCreated: true,
      ttlSet: true,
      insuranceLimiter: new RateLimiterMemory(window),
    });
  };

  const metrics = once(
    (): Metrics =>
      createMetrics({
        shared: settings.SVC_METRICS_BACKEND === 'dynamodb' ? createSharedCounters(registry()) : undefined,
        flushMs: settings.SVC_METRICS_FLUSH_MS,
        // The appender exists only where chains are written; elsewhere there is nothing to count.
        ledgerCounters: () => (ledgerRuntimeBuilt ? ledgerRuntime().appender.counters : { eventsAppended: 0, conflicts: 0, commits: 0 }),
        dynamoCounters: () => dynamoRequestCounts,
      }),
  );

  const authenticator: Authenticator = createAuthenticator({
    apiKeys,
    adminApiKey: settings.SVC_ADMIN_API_KEY,
    cacheSeconds: settings.SVC_AUTH_CACHE_SECONDS,
    failuresPerMinute: settings.SVC_AUTH_FAILURES_PER_MINUTE,
    // Unknown keys presented per source IP and minute: a separate budget, so guessing keys cannot reset it.
    failureLimiter: once(() => limiter(settings.SVC_AUTH_FAILURES_PER_MINUTE, 'authfail')),
  });

  return {
    settings,
    documentClient,
    ledgerRuntime,
    access,
    ledgerFor: (principal) => guardLedger(ledgerRuntime().ledger, access(), principal),
    offchain,
    lazyOffchain,
    personalData: lazyPersonalData,
    apiKeys,
    metrics,
    health: { dynamodb: () => ledgerRuntime().repository.ping(), ipfs: () => offchain().ping() },
    edge: {
      settings,
      metrics,
      // Requests per key (per source IP without one) and minute.
      rateLimiter: once(() => limiter(settings.SVC_RATE_LIMIT_RPM, 'rlflx')),
      authenticator,
    },
  };
}
