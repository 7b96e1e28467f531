/**
 * The service's core, wired from its settings: DynamoDB, the ledger and its appender, access control,
 * off-chain payloads, API keys, rate limiters, metrics, and the edge the HTTP chain needs. Everything
 * is built on first use, so a master key or IPFS problem only touches requests that need them.
 *
 * `createCore(settings)` is a plain factory: a function's composition root (functions/<name>/handler.ts)
 * makes one per process through shared/wiring/process.ts, the local launcher makes one from the
 * settings it settled, tests make their own. Nothing here reads the environment.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { RateLimiterDynamo, RateLimiterMemory, RLWrapperTimeouts, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { type AccessControl, createAccessControl } from '../access/access.ts';
import { type CallerOffchain, guardLedger, guardOffchain } from '../access/guarded.ts';
import type { Principal } from '../access/policy.ts';
import type { ApiKeyRepository } from '../admin/api-keys.ts';
import type { ChannelDetails, ChannelRecord } from '../business/repository.ts';
import { type Settings, subjectsDir } from '../config.ts';
import { type HealthProbes, reusedProbes } from '../health.ts';
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
import { createCloudWatchMetrics } from '../metrics/cloudwatch.ts';
import type { KeyProvider } from '../offchain/key-providers.ts';
import type { OffchainParts } from './offchain.ts';
import { createApiKeyRepository } from '../storage/api-key-repository.ts';
import { createBusinessRepository } from '../storage/business-repository.ts';
import { reportCapacity } from '../storage/capacity-report.ts';
import { createDynamoAggregatedClient, documentClientOf, dynamoRequestCounts } from '../storage/client.ts';
import { journalWrites } from '../storage/journal.ts';
import { createLedgerRepository } from '../storage/ledger-repository.ts';
import { createSharedCounters } from '../storage/metrics-repository.ts';
import { createReadCache, type ReadCache } from '../storage/read-cache.ts';
import { createWitnessRepository } from '../storage/witness-repository.ts';
import { allTableSpecs, tableNamesFrom } from '../storage/tables.ts';

/** Longest a request waits for the shared rate-limit store before counting in memory. */
const RATE_LIMIT_WAIT_MS = 1_000;

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
  /** What this process keeps of immutable ledger items between requests. */
  readCache(): ReadCache;
  /** The bare ledger, its repository and appender: the service's own bookkeeping writes through it. */
  ledgerRuntime(): LedgerRuntime;
  /** The access policy with the channel records it reads (the registry table). */
  access(): AccessControl<ChannelRecord, ChannelDetails>;
  /** The ledger as this caller may use it: every call checked by the access policy. What handlers use. */
  ledgerFor(principal: Principal): Ledger;
  /** Off-chain payloads: IPFS at SVC_IPFS_API_URL, keys from KMS (SVC_KMS_KEY_ID) or the local master key file. */
  offchain(): OffchainStore;
  /** Off-chain payloads as this caller may use them: put for a scope it may write, opened only where it may read. */
  offchainFor(principal: Principal): CallerOffchain;
  /** The same, built on its first call rather than on the first read of `offchain`. */
  lazyOffchain: OffchainStore;
  /** Data subjects' keys (docs/personal-data.md), built on first use. */
  personalData: PersonalData;
  apiKeys(): ApiKeyRepository;
  /** Request and ledger metrics; summed across instances in the registry table with the dynamodb backend. */
  metrics(): Metrics;
  health: HealthProbes;
  /** WebSocket pushes per key and minute (SVC_WS_PUSHES_PER_MINUTE), shared by the broadcaster's instances; undefined when 0 (off). */
  pushLimiter(): RateLimiterAbstract | undefined;
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
  // The local journal of acknowledged writes (DynamoDB Local on disk only; see shared/storage/journal.ts).
  if (settings.SVC_LOCAL_JOURNAL_DIR) journalWrites(settings.SVC_LOCAL_JOURNAL_DIR, settings.SVC_LEDGER_TABLE);
}

export function createCore(settings: Readonly<Settings>): Core {
  const dynamoOptions = () => {
    installSdkHooks(settings);
    return {
      region: settings.SVC_AWS_REGION,
      endpoint: settings.SVC_DYNAMODB_ENDPOINT,
      accessKeyId: settings.SVC_DYNAMODB_ACCESS_KEY_ID,
      attemptTimeoutMs: settings.SVC_DYNAMODB_ATTEMPT_TIMEOUT_MS,
    };
  };
  // One DynamoDB client per process: the repositories' document client and the rate limiter's store share it.
  const dynamoClient = once(() => createDynamoAggregatedClient(dynamoOptions()));
  const documentClient = once(() => documentClientOf(dynamoClient()));
  const registry = () => ({ client: documentClient(), tableName: settings.SVC_REGISTRY_TABLE });
  /** Channels, memberships and private values in the registry: for the access policy and an erasure's deletes. */
  const businessRecords = once(() => createBusinessRepository(registry()));

  /**
   * Off-chain payloads and data keys (IPFS, KMS or the local master key), loaded and built on first use
   * (shared/wiring/offchain.ts): a request that needs neither never loads their clients. A failure to build
   * them (a missing master key) fails that use and is tried again at the next.
   */
  let parts: Promise<OffchainParts> | undefined;
  const offchainParts = (): Promise<OffchainParts> =>
    (parts ??= import('./offchain.ts')
      .then((module) => module.buildOffchain(settings))
      .catch((error: unknown) => {
        parts = undefined;
        throw error;
      }));
  const keys: KeyProvider = {
    dataKey: async (scope) => (await offchainParts()).keys.dataKey(scope),
    freshDataKey: async (scope) => (await offchainParts()).keys.freshDataKey(scope),
    unwrap: async (wrapped, kek, scope) => (await offchainParts()).keys.unwrap(wrapped, kek, scope),
    unwrapOwn: async (wrapped, scope) => (await offchainParts()).keys.unwrapOwn(wrapped, scope),
  };
  const lazyOffchain: OffchainStore = {
    put: async (value, scope) => (await offchainParts()).offchain.put(value, scope),
    get: async (cid, nonce, opener, fetched) => (await offchainParts()).offchain.get(cid, nonce, opener, fetched),
    seal: async (value, scope) => (await offchainParts()).offchain.seal(value, scope),
    unseal: async (sealed, opener) => (await offchainParts()).offchain.unseal(sealed, opener),
    sealToken: async (value, context) => (await offchainParts()).offchain.sealToken(value, context),
    unsealToken: async (token, context) => (await offchainParts()).offchain.unsealToken(token, context),
    ping: async () => (await offchainParts()).offchain.ping(),
    remove: async (cid) => (await offchainParts()).offchain.remove(cid),
  };
  const offchain = () => lazyOffchain;

  /** Data subjects' keys in the registry, wrapped like data keys; built on first use, as off-chain payloads are. */
  const personalData = once(
    (): PersonalData =>
      createPersonalData(
        createSubjectKeys({
          // Locally a file per subject (a database file keeps deleted rows' bytes); in the cloud the registry table.
          repository: settings.SVC_SUBJECT_KEY_STORE === 'registry' ? createSubjectRepository(registry()) : createFileSubjectRepository(subjectsDir(settings)),
          keys,
          // Its private values' records (their keys may be personal) go with it.
          removePrivateValue: ({ channel, collection, key }, subjectId) => businessRecords().deletePrivateData(channel, collection, key, subjectId),
        }),
      ),
  );
  const lazyPersonalData: PersonalData = {
    seal: (subjectId, details) => personalData().seal(subjectId, details),
    blind: (subjectId, details) => personalData().blind(subjectId, details),
    openAll: (items) => personalData().openAll(items),
    recordEvents: (subjectId, events) => personalData().recordEvents(subjectId, events),
    recordPayload: (subjectId, cid) => personalData().recordPayload(subjectId, cid),
    recordPrivateValue: (subjectId, ref) => personalData().recordPrivateValue(subjectId, ref),
    forgetPrivateValue: (subjectId, ref) => personalData().forgetPrivateValue(subjectId, ref),
    isErased: (subjectId) => personalData().isErased(subjectId),
    removeErasedValues: (subjectId, options) => personalData().removeErasedValues(subjectId, options),
    recordErasureEvent: (subjectId, eventId) => personalData().recordErasureEvent(subjectId, eventId),
    erase: (subjectId, by) => personalData().erase(subjectId, by),
  };

  /** One per process: what this instance keeps of immutable items (records, segments, full tiles) between requests. */
  const readCache = once(() => createReadCache(settings.SVC_READ_CACHE_BYTES));

  let ledgerRuntimeBuilt = false;
  const ledgerRuntime = once((): LedgerRuntime => {
    ledgerRuntimeBuilt = true;
    const repository = createLedgerRepository({ client: documentClient(), tableName: settings.SVC_LEDGER_TABLE, cache: readCache() });
    const appender = new ChainAppender(repository, {
      maxAttempts: settings.SVC_APPEND_MAX_ATTEMPTS,
      batchMax: settings.SVC_APPEND_BATCH_MAX,
      pendingShards: settings.SVC_APPEND_PENDING_SHARDS,
      settleMs: settings.SVC_APPEND_SETTLE_MS,
      gatherSiblings: settings.SVC_APPEND_GATHER_SIBLINGS,
      maxLeadMs: settings.SVC_APPEND_MAX_LEAD_MS,
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

  const access = once((): AccessControl<ChannelRecord, ChannelDetails> => createAccessControl({ channels: businessRecords() }));
  const apiKeys = once((): ApiKeyRepository => createApiKeyRepository(registry()));

  /**
   * A request limiter: `points` per 60 s per client, in memory (one process) or in DynamoDB (shared by
   * every instance). If DynamoDB cannot be reached, or has not answered within a second, the limiter
   * counts in memory instead rather than failing or holding up the request (a DynamoDB that hangs would
   * otherwise add its retries to every request before its handler even starts). With `blockSpent` (the requests'
   * limiter), a client that has spent its window is refused from the instance's memory until the window ends
   * (`inMemoryBlockOnConsumed`): each refused request had still written the shared item, so a spent key kept buying
   * writes of the limiter's table (red team). Not the push budget's: a refusal from memory says nothing of how much was
   * consumed (0), which it reads to grant the part of a batch still within the limit.
   */
  const limiter = (points: number, keyPrefix: string, { blockSpent = false } = {}): RateLimiterAbstract => {
    const window = { points, duration: 60, keyPrefix };
    if (settings.SVC_RATE_LIMIT_BACKEND === 'memory') return new RateLimiterMemory(window);
    const insuranceLimiter = new RateLimiterMemory(window);
    const shared = new RateLimiterDynamo({
      ...window,
      storeClient: dynamoClient(),
      tableName: settings.SVC_RATE_LIMIT_TABLE,
      tableCreated: true,
      ttlSet: true,
      ...(blockSpent ? { inMemoryBlockOnConsumed: points } : {}),
      insuranceLimiter,
    });
    return new RLWrapperTimeouts({ limiter: shared, timeoutMs: RATE_LIMIT_WAIT_MS, insuranceLimiter }) as unknown as RateLimiterAbstract;
  };

  const metrics = once(
    (): Metrics =>
      createMetrics({
        shared: settings.SVC_METRICS_BACKEND === 'dynamodb' ? createSharedCounters(registry()) : undefined,
        flushMs: settings.SVC_METRICS_FLUSH_MS,
        // The appender exists only where chains are written; elsewhere there is nothing to count.
        ledgerCounters: () =>
          ledgerRuntimeBuilt
            ? ledgerRuntime().appender.counters
            : { eventsAppended: 0, conflicts: 0, commits: 0, leaseTakes: 0, pendingReads: 0, roundWrites: 0, rewrites: 0, recoveries: 0 },
        dynamoCounters: () => dynamoRequestCounts,
        readCache,
        witnesses: settings.SVC_WITNESSES?.trim()
          ? () => createWitnessRepository({ client: documentClient(), tableName: settings.SVC_LEDGER_TABLE }).summary()
          : undefined,
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
    readCache,
    ledgerRuntime,
    access,
    ledgerFor: (principal) => guardLedger(ledgerRuntime().ledger, access(), principal),
    offchainFor: (principal) => guardOffchain(lazyOffchain, access(), principal),
    offchain,
    lazyOffchain,
    personalData: lazyPersonalData,
    apiKeys,
    metrics,
    health: reusedProbes({ dynamodb: () => ledgerRuntime().repository.ping(), ipfs: () => offchain().ping() }),
    pushLimiter: once(() => (settings.SVC_WS_PUSHES_PER_MINUTE > 0 ? limiter(settings.SVC_WS_PUSHES_PER_MINUTE, 'wspush') : undefined)),
    edge: {
      settings,
      metrics,
      // Made once per function group, as each group's handler is built once.
      cloudWatch: settings.SVC_CLOUDWATCH_METRICS_NAMESPACE
        ? (group: string) => createCloudWatchMetrics({ namespace: settings.SVC_CLOUDWATCH_METRICS_NAMESPACE, functionGroup: group })
        : undefined,
      // Requests per key (per source IP without one) and minute.
      rateLimiter: once(() => limiter(settings.SVC_RATE_LIMIT_RPM, 'rlflx', { blockSpent: true })),
      authenticator,
    },
  };
}
