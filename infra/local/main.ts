/**
 * `npm start`: the whole service on a laptop. Launches DynamoDB Local (unless SVC_DYNAMODB_ENDPOINT
 * names another DynamoDB), creates the tables if missing, runs the embedded IPFS node (unless
 * SVC_IPFS_API_URL names a Kubo), makes the local master key on first start, and serves the local
 * gateway. Ctrl-C or SIGTERM stops everything it started, the JVM included.
 */
import { stopWhenOrphaned } from './orphan.ts';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { identityPath, loadConfig, masterKeyPath } from '#shared/config';
import { fail, settingsOrExit } from './cli.ts';
import { LaunchError, startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';
import { ensureExplorerBuilt } from './explorer-build.ts';
import type { Gateway } from './gateway.ts';
import type { IpfsNode } from './ipfs-node.ts';
import { answersHttp, freePort, isPortFree } from './ports.ts';
import { readStackFile, removeStackFile, writeStackFile } from './stack-file.ts';
import { makeOwnDir } from './own-dir.ts';
import type { StreamPoller } from './stream-poller.ts';

/**
 * The modules a start needs once DynamoDB Local is on its way: loaded while the JVM starts (which takes a core
 * and about 1.5 s here), not before it (statically imported, they cost as long again, in series).
 */
const loadRuntime = async () => {
  const [
    identity,
    core,
    node,
    keyProviders,
    client,
    migrations,
    tables,
    journal,
    apiKeys,
    functions,
    bundles,
    gateway,
    errors,
    metrics,
    counters,
    ipfs,
    schedule,
    poller,
    websocket,
    routes,
  ] = await Promise.all([
    import('#shared/admin/identity'),
    import('#shared/wiring/core'),
    import('#shared/wiring/node'),
    import('#shared/offchain/key-providers'),
    import('#shared/storage/client'),
    import('#shared/storage/migrations'),
    import('#shared/storage/tables'),
    import('#shared/storage/journal'),
    import('#shared/admin/api-keys'),
    import('./functions.ts'),
    import('./bundles.ts'),
    import('./gateway.ts'),
    import('./integration-errors.ts'),
    import('#shared/metrics/metrics'),
    import('#shared/storage/metrics-repository'),
    import('./ipfs-node.ts'),
    import('./schedule.ts'),
    import('./stream-poller.ts'),
    import('./websocket.ts'),
    import('#infra/routes'),
    // Off-chain payloads' module (IPFS and keys), which the node identity's first read loads.
    import('#shared/wiring/offchain'),
  ]);
  return {
    ...identity,
    ...core,
    ...node,
    ...keyProviders,
    ...client,
    ...migrations,
    ...tables,
    ...journal,
    ...apiKeys,
    ...functions,
    ...bundles,
    ...gateway,
    ...errors,
    ...metrics,
    ...counters,
    ...ipfs,
    ...schedule,
    ...poller,
    ...websocket,
    ...routes,
  };
};

function say(message: string): void {
  process.stdout.write(`${message}\n`);
}

/** How long stopping may take before the launcher exits regardless (the tests' stop waits 15 s, then kills). */
const STOP_DEADLINE_MS = 10_000;

/**
 * Where a start's time went: each phase's end, in ms since the process started (the modules' load included).
 * Printed as one line before the ready line at SVC_LOG_LEVEL=debug (bench/probes/start-time.ts reads it).
 */
const phases: [string, number][] = [];
const phase = (name: string) => phases.push([name, Math.round(performance.now())]);

async function main(): Promise<void> {
  const config = settingsOrExit('Cannot start: ');
  phase('settings');

  if (!(await isPortFree(config.SVC_PORT, config.SVC_HOST))) {
    fail(`Cannot start: port ${config.SVC_PORT} on ${config.SVC_HOST} is already in use.\nStop what uses it, or choose another port: SVC_PORT=2662 npm start`);
  }

  ensureExplorerBuilt(say);

  let dynamo: DynamoDbLocal | undefined;
  let gateway: Gateway | undefined;
  let ipfs: IpfsNode | undefined;
  let poller: StreamPoller | undefined;
  let admin: DynamoDBClient | undefined;
  let stopFunctions: (() => Promise<void>) | undefined;
  let stopping = false;

  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('Stopping…');
    // Every step has a deadline: one that hangs (a connection that never closes, a worker that never ends)
    // must not keep the launcher and its JVM alive. Past it, say which step it was and exit anyway.
    let step = 'the stream poller';
    setTimeout(() => {
      say(`Stopping took over ${STOP_DEADLINE_MS / 1000} s (at ${step}); exiting now.`);
      dynamo?.killNow();
      process.exit(code === 0 ? 1 : code);
    }, STOP_DEADLINE_MS).unref();
    await poller?.stop().catch(() => undefined);
    step = 'the gateway';
    await gateway?.close().catch(() => undefined);
    step = 'the functions';
    await stopFunctions?.().catch(() => undefined);
    admin?.destroy();
    step = 'the IPFS node';
    await ipfs?.close().catch(() => undefined);
    step = 'DynamoDB Local';
    await dynamo?.stop().catch(() => dynamo?.killNow());
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGHUP', () => void shutdown(0));
  // An orphaned launcher (our parent gone) stops as if signalled, so nothing outlives `npm start`.
  stopWhenOrphaned(() => void shutdown(0));
  // The JVM would outlive us otherwise: kill it on every way out, even the abrupt ones.
  process.on('exit', () => dynamo?.killNow());
  // A parent that dies takes the other ends of our pipes with it: every write then fails (EPIPE). Unheard, each
  // failure was an uncaught exception whose report was one more failing write: the launcher spun a core for the
  // 10 s of its stop deadline before it stopped. What cannot be written is dropped; the stop goes on.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  process.on('uncaughtException', (error) => {
    process.stderr.write(`Unexpected error: ${error.stack ?? error}\n`);
    void shutdown(1);
  });

  const dataDir = resolve(config.SVC_DATA_DIR);
  // A stack already running on this data dir: said at once (its DynamoDB Local would be refused this one anyway). Its
  // stack.json is believed only if its pid is another process's and its address answers: a pid the system gave again
  // after a crash must not keep the data dir from ever starting.
  const already = readStackFile(dataDir);
  if (already && already.pid !== process.pid && (await answersHttp(`${already.url}/api/ledger/health`, 1_500))) {
    fail(`Cannot start: a stack already runs on ${dataDir} (pid ${already.pid}, ${already.url}); stop it first, or give this one another SVC_DATA_DIR`);
  }
  // The data dir is this user's alone (the master key, the DynamoDB Local files, the journal, the stack's ports): its
  // files were readable by every local user (red team). DynamoDB Local keeps its database under this data dir's access
  // key (its `access-key` file): another local user who finds its port sees an empty one.
  const notOwn = makeOwnDir(dataDir);
  if (notOwn && 'refuse' in notOwn) fail(notOwn.refuse);
  if (notOwn) say(notOwn.warn);
  /** The functions' variables that differ from the launcher's own environment. */
  const overrides: Record<string, string> = {};
  const functionEnv = (): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
    return { ...env, ...overrides };
  };
  const functionSettings = () => loadConfig(functionEnv());
  let endpoint: string | undefined = config.SVC_DYNAMODB_ENDPOINT;
  // Never the gateway's port for the embedded IPFS node, nor for DynamoDB Local (the OS may hand back a port a
  // caller just probed for another): picked first, so that DynamoDB Local can start before anything else.
  const ipfsPort = config.SVC_IPFS_API_URL ? undefined : (config.SVC_IPFS_PORT ?? (await freePort([config.SVC_PORT])));
  const dynamoStarting = endpoint
    ? undefined
    : startDynamoDbLocal({
        dataDir: join(dataDir, 'dynamodb'),
        region: config.SVC_AWS_REGION,
        onNotice: say,
        inMemory: config.SVC_DYNAMODB_IN_MEMORY,
        jit: config.SVC_DYNAMODB_LOCAL_JIT,
        port: config.SVC_DYNAMODB_LOCAL_PORT,
        avoidPorts: [config.SVC_PORT, ...(ipfsPort ? [ipfsPort] : [])],
        onLeftover: (pid) => say(`Stopping DynamoDB Local (pid ${pid}) left running on this data by a launcher that was killed`),
        // A local command (npm run keys) that runs its own on this data dir ends in seconds: wait for it.
        waitForHolderMs: 30_000,
        // Known as soon as it is spawned, so that every way out stops it, even while it starts.
        onSpawn: (handle) => {
          dynamo = handle;
        },
      });
  // Awaited below; a failed start is reported there, not as an unhandled rejection meanwhile.
  dynamoStarting?.catch(() => undefined);
  const rt = await loadRuntime();
  const { createCore } = rt;
  phase('modules');

  if (ipfsPort !== undefined) {
    ipfs = await rt.startIpfsNode({ dir: join(dataDir, 'ipfs'), port: ipfsPort });
    overrides.SVC_IPFS_API_URL = ipfs.url;
    phase('IPFS node');
  }
  const ipfsNote = ipfs ? `${ipfs.url} (embedded node, data in ${join(dataDir, 'ipfs')})` : `${config.SVC_IPFS_API_URL} (SVC_IPFS_API_URL)`;
  // Where the realtime functions push WebSocket messages: this gateway's /@connections, under a path made for this
  // start. Served to loopback only; but a reverse proxy on this machine (TLS in front of it) makes every caller loopback,
  // and anyone who learnt a connection's id could have pushed forged events to it (red team). On AWS, IAM signs the calls.
  if (!config.SVC_WS_MANAGEMENT_ENDPOINT)
    overrides.SVC_WS_MANAGEMENT_ENDPOINT = `http://${['0.0.0.0', '::'].includes(config.SVC_HOST) ? '127.0.0.1' : config.SVC_HOST}:${config.SVC_PORT}/@local-${randomBytes(16).toString('hex')}`;
  const managementPath = rt.managementPathOf(overrides.SVC_WS_MANAGEMENT_ENDPOINT ?? config.SVC_WS_MANAGEMENT_ENDPOINT!);
  if (!config.SVC_KMS_KEY_ID) {
    const keyFile = resolve(masterKeyPath(config));
    rt.LocalKeyProvider.fromFile(keyFile, { create: true });
    overrides.SVC_MASTER_KEY_FILE = keyFile;
  }
  const instances = config.SVC_LOCAL_RUNTIME === 'instances';
  // The functions' bundles checked (and built where stale) while DynamoDB Local starts.
  const bundling = instances ? rt.functionBundles() : undefined;
  bundling?.catch(() => undefined);
  if (instances) {
    // Every instance is its own process to these, as in the cloud: counts and rate limits must be
    // shared through DynamoDB (the cloud stack's choice) unless a setting says otherwise.
    if (!process.env.SVC_METRICS_BACKEND) overrides.SVC_METRICS_BACKEND = 'dynamodb';
    if (!process.env.SVC_RATE_LIMIT_BACKEND) overrides.SVC_RATE_LIMIT_BACKEND = 'dynamodb';
  }
  if (dynamoStarting) {
    try {
      dynamo = await dynamoStarting;
    } catch (error) {
      await ipfs?.close().catch(() => undefined);
      if (error instanceof LaunchError) fail(`Cannot start: ${error.message}`);
      throw error;
    }
    endpoint = dynamo.endpoint;
    if (!dynamo.streamsIndexed)
      say(
        'Warning: DynamoDB Local started without its stream records indexed (an unexpected DynamoDB Local version?): its writes slow down as its streams grow',
      );
    phase('DynamoDB Local');
    // The functions' settings, as a Lambda's environment: this endpoint, and the access key its database is kept under.
    overrides.SVC_DYNAMODB_ENDPOINT = endpoint;
    overrides.SVC_DYNAMODB_ACCESS_KEY_ID = dynamo.accessKeyId;
    // DynamoDB Local on disk answers a transaction a moment before it keeps it: journal each one before
    // it is acknowledged, and replay what it lost at the next start (shared/storage/journal.ts).
    if (!config.SVC_DYNAMODB_IN_MEMORY && !config.SVC_LOCAL_JOURNAL_DIR) overrides.SVC_LOCAL_JOURNAL_DIR = join(dataDir, 'journal');
  }
  if (endpoint === undefined) fail('Cannot start: no DynamoDB to use');
  const dynamoEndpoint: string = endpoint;
  const accessKeyId = overrides.SVC_DYNAMODB_ACCESS_KEY_ID ?? config.SVC_DYNAMODB_ACCESS_KEY_ID;
  // The node identity signs every checkpoint: its public key is what clients and auditors pin, so the first
  // start makes it and every later start keeps it (sealed, as `npm run identity -- init` makes it). Keys for
  // one run only when a setting asks, in a sealed document every instance opens, so that all of them sign
  // as one node (in-memory keys would differ per instance).
  let identityNote: string | undefined;
  if (config.SVC_IDENTITY_STORE === 'file' && (config.SVC_TEMPORARY_IDENTITY || !existsSync(identityPath(config)))) {
    const path = config.SVC_TEMPORARY_IDENTITY ? join(dataDir, 'identity.temporary.json') : resolve(identityPath(config));
    const { document, identity } = await rt.createIdentityDocument(createCore(functionSettings()).offchain(), { temporary: config.SVC_TEMPORARY_IDENTITY });
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, document, { mode: 0o600 });
    if (config.SVC_TEMPORARY_IDENTITY) overrides.SVC_VALIDATOR_IDENTITY_PATH = path;
    else identityNote = `Created the node identity ${identity.nodeId} in ${path}: it signs every checkpoint, and every later start keeps it`;
    phase('identity made');
  }
  const env = functionEnv();
  const core = createCore(functionSettings());

  admin = rt.createDynamoBaseClient({ region: config.SVC_AWS_REGION, endpoint, accessKeyId });
  try {
    const created = await rt.ensureTables(admin, rt.allTableSpecs(rt.tableNamesFrom(config)));
    if (created.length) say(`Created tables: ${created.join(', ')}`);
    phase('tables');
    // A table written by an earlier version is brought to the current layout (idempotent, cheap when done).
    const tables = { ledger: config.SVC_LEDGER_TABLE, registry: config.SVC_REGISTRY_TABLE };
    for (const report of await rt.migrateTables(admin, rt.createDynamoClient({ region: config.SVC_AWS_REGION, endpoint, accessKeyId }), tables)) {
      if (report.migrated > 0) say(`Migrated the tables (${report.name}): ${report.migrated} item(s)`);
    }
    if (core.settings.SVC_LOCAL_JOURNAL_DIR) {
      const replay = await rt.replayJournal(core.settings.SVC_LOCAL_JOURNAL_DIR, admin);
      // Every start applies the last run's journal again (whole-item writes are harmless to repeat); only what
      // was certainly lost, or could not be restored, is worth a line (docs/reliability.md, "Crashes").
      if (replay.restored > 0 || replay.failed > 0) {
        say(
          `Restored ${replay.restored} acknowledged transaction(s) DynamoDB Local had lost when it was stopped (it answers a write a moment before it keeps it; the launcher journals each one)${replay.failed ? `; ${replay.failed} write(s) could not be applied again` : ''}`,
        );
      }
    }
    if (config.SVC_ADMIN_API_KEY) await rt.seedAdminKey(core.apiKeys(), config.SVC_ADMIN_API_KEY);
    phase('migrations and journal');
  } catch (error) {
    await ipfs?.close().catch(() => undefined);
    await dynamo?.stop();
    fail(`Cannot start: DynamoDB at ${endpoint} did not answer (${(error as Error).name}).`);
  }

  // The node identity now, so that a missing one is said at start, not at the first signature; read while the
  // functions and the gateway start.
  const nodeIdentity = rt.createNodeWiring(core).admin().identity();
  nodeIdentity.catch(() => undefined);
  const functions = instances
    ? await rt.instancePools(config.SVC_LOCAL_MAX_INSTANCES, env, config.SVC_LOCAL_IDLE_MS, await bundling)
    : await rt.inProcessFunctions(core);
  stopFunctions = functions.close;
  phase('functions');
  try {
    gateway = await rt.startGateway({
      host: config.SVC_HOST,
      port: config.SVC_PORT,
      routes: rt.expandRoutes(),
      handlers: functions.http,
      defaultGroup: rt.DEFAULT_GROUP,
      // Counted where the functions' request counts are: the shared counters (instances), or this process's metrics.
      onIntegrationError: rt.reportIntegrationErrors(
        instances && core.settings.SVC_METRICS_BACKEND === 'dynamodb'
          ? rt.createMetrics({
              shared: rt.createSharedCounters({ client: core.documentClient(), tableName: core.settings.SVC_REGISTRY_TABLE }),
              flushMs: 0,
              coldStart: false,
            })
          : core.metrics(),
      ),
      // A write just answered: its blocks' pushes go out now, whatever the idle stream's reading rate.
      onWriteAnswered: () => poller?.nudge(),
    });
    // WebSocket at /ws (API Gateway's WebSocket API) and its pushes, fed by the ledger table's stream.
    const { ws: wsHandler, broadcast } = functions;
    rt.serveWebSocketApi(gateway, wsHandler as never, managementPath);
    poller = await rt.startStreamPoller({
      admin,
      region: config.SVC_AWS_REGION,
      endpoint: dynamoEndpoint,
      ...(accessKeyId ? { credentials: rt.localCredentials(accessKeyId) } : {}),
      tableName: config.SVC_LEDGER_TABLE,
      handler: broadcast as never,
      onError: (error) => process.stderr.write(`stream poller: ${(error as Error).message}\n`),
      onDiscard: (message) => process.stderr.write(`stream poller: ${message}\n`),
    });
    phase('gateway');
  } catch (error) {
    await ipfs?.close().catch(() => undefined);
    await dynamo?.stop();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') fail(`Cannot start: port ${config.SVC_PORT} is already in use. Try SVC_PORT=2662 npm start`);
    throw error;
  }

  // The sweep of unwritten rounds, as the cloud stack's hourly rule runs it: one at a time, never from an
  // instance's own timer (this is the scheduler's, outside every instance).
  if (config.SVC_SWEEP_INTERVAL_MS > 0) {
    rt.everyOneAtATime(
      config.SVC_SWEEP_INTERVAL_MS,
      () => functions.sweep({ source: 'local.schedule', 'detail-type': 'Scheduled Event' }, {} as never),
      (error) => process.stderr.write(`sweep: ${(error as Error).message}\n`),
    );
  }

  // Fault injection for failure tests: SIGUSR2 stops one busy ledger instance abruptly, mid-request, as a
  // crashed Lambda host would (its caller gets API Gateway's 500; what it had sent to DynamoDB stays sent).
  process.on('SIGUSR2', () => {
    const stopped = functions.pools.ledger?.killBusyInstance() ?? false;
    say(stopped ? 'Fault injected: stopped a busy ledger instance' : 'Fault injection: no busy ledger instance to stop');
  });

  // Tells `npm run keys` (and other local tools) which DynamoDB, and which tables, this running stack uses.
  writeStackFile(dataDir, {
    pid: process.pid,
    url: gateway.url,
    dynamodb_endpoint: dynamoEndpoint,
    ...(accessKeyId ? { dynamodb_access_key_id: accessKeyId } : {}),
    dynamodb_region: config.SVC_AWS_REGION,
    tables: rt.tableSettingsFrom(config),
  });
  process.on('exit', () => removeStackFile(dataDir, process.pid));
  say(
    instances
      ? `Functions: each a pool of single-request instances, up to ${config.SVC_LOCAL_MAX_INSTANCES} each (SVC_LOCAL_RUNTIME=single-process runs them in this process)`
      : 'Functions: all in this process (SVC_LOCAL_RUNTIME=single-process)',
  );
  say(`IPFS: ${ipfsNote}`);
  say(`DynamoDB: ${endpoint}${dynamo ? ` (DynamoDB Local, pid ${dynamo.pid}, data in ${join(dataDir, 'dynamodb')})` : ''}`);
  say(
    `Auth: ${config.SVC_AUTH_ENABLED ? `on (header ${config.API_KEY_NAME}; create keys with: npm run keys -- create --role writer)` : 'off (SVC_AUTH_ENABLED=true to turn it on)'}`,
  );
  const node = await nodeIdentity;
  phase('node identity');
  if (identityNote) say(identityNote);
  say(
    node.temporary
      ? `Node identity: TEMPORARY ${node.nodeId} (SVC_TEMPORARY_IDENTITY=true: keys for this run only; what they sign will not verify against the next run's key)`
      : `Node identity: ${node.nodeId} (public key ${node.publicKey})`,
  );
  say(`WebSocket: ${gateway.url.replace(/^http/, 'ws')}/ws   GraphQL: ${gateway.url}/graphql`);
  say(`Explorer: ${gateway.url}/explorer   API docs: ${gateway.url}/docs (OpenAPI: ${gateway.url}/openapi.json)`);
  if (config.SVC_LOG_LEVEL === 'debug') say(`Start phases (ms since the process started): ${phases.map(([name, at]) => `${name} ${at}`).join(', ')}`);
  say(`Ledger service ready at ${gateway.url}`);
}

await main();
