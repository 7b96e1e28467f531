/**
 * `npm start`: the whole service on a laptop. Launches DynamoDB Local (unless SVC_DYNAMODB_ENDPOINT
 * names another DynamoDB), creates the tables if missing, and serves the local gateway. Ctrl-C or
 * SIGTERM stops everything it started, the JVM included.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { join, resolve } from 'node:path';
import { ConfigError, loadConfig } from '#shared/config';
import { createDynamoBaseClient } from '#shared/storage/client';
import { allTableSpecs, ensureTables, tableNamesFrom } from '#shared/storage/tables';
import { seedAdminKey } from '#shared/admin/api-keys';
import { LaunchError, startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';
import { startGateway, type Gateway } from './gateway.ts';
import { isPortFree } from './ports.ts';
import { removeStackFile, writeStackFile } from './stack-file.ts';

function fail(message: string): never {
  process.stderr.write(`\n${message}\n\n`);
  process.exit(1);
}

function say(message: string): void {
  process.stdout.write(`${message}\n`);
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) fail(`Cannot start: ${error.message}`);
    throw error;
  }

  if (!(await isPortFree(config.SVC_PORT, config.SVC_HOST))) {
    fail(
      `Cannot start: port ${config.SVC_PORT} on ${config.SVC_HOST} is already in use.\n` +
        `Stop what uses it, or choose another port: SVC_PORT=2662 npm start`,
    );
  }

  let dynamo: DynamoDbLocal | undefined;
  let gateway: Gateway | undefined;
  let stopping = false;

  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('Stopping…');
    await gateway?.close().catch(() => undefined);
    await dynamo?.stop().catch(() => dynamo?.killNow());
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGHUP', () => void shutdown(0));
  // `npm start` runs us under `sh -c`; on SIGTERM npm stops the shell, which does not pass it on.
  // An orphaned launcher (our parent gone) stops as if signalled, so nothing outlives `npm start`.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void shutdown(0);
  }, 500).unref();
  // The JVM would outlive us otherwise: kill it on every way out, even the abrupt ones.
  process.on('exit', () => dynamo?.killNow());
  process.on('uncaughtException', (error) => {
    process.stderr.write(`Unexpected error: ${error.stack ?? error}\n`);
    void shutdown(1);
  });

  const dataDir = resolve(config.SVC_DATA_DIR);
  let endpoint = config.SVC_DYNAMODB_ENDPOINT;
  if (!endpoint) {
    try {
      dynamo = await startDynamoDbLocal({
        dataDir: join(dataDir, 'dynamodb'),
        inMemory: config.SVC_DYNAMODB_IN_MEMORY,
        port: config.SVC_DYNAMODB_LOCAL_PORT,
      });
    } catch (error) {
      if (error instanceof LaunchError) fail(`Cannot start: ${error.message}`);
      throw error;
    }
    endpoint = dynamo.endpoint;
    // The functions read their settings from the environment, as a Lambda does; hand them this endpoint.
    process.env.SVC_DYNAMODB_ENDPOINT = endpoint;
  }

  const admin = createDynamoBaseClient({ region: config.SVC_AWS_REGION, endpoint });
  try {
    const created = await ensureTables(admin, allTableSpecs(tableNamesFrom(config)));
    if (created.length) say(`Created tables: ${created.join(', ')}`);
    if (config.SVC_ADMIN_API_KEY) {
      const { getApiKeyRepository } = await import('#shared/runtime');
      await seedAdminKey(getApiKeyRepository(), config.SVC_ADMIN_API_KEY);
    }
  } catch (error) {
    await dynamo?.stop();
    fail(`Cannot start: DynamoDB at ${endpoint} did not answer (${(error as Error).name}).`);
  } finally {
    admin.destroy();
  }

  const [{ handler: ledger }, { DEFAULT_GROUP, expandRoutes }] = await Promise.all([
    import('#functions/ledger/handler'),
    import('#infra/routes'),
  ]);
  try {
    gateway = await startGateway({
      host: config.SVC_HOST,
      port: config.SVC_PORT,
      routes: expandRoutes(),
      handlers: { ledger: ledger as never },
      defaultGroup: DEFAULT_GROUP,
    });
  } catch (error) {
    await dynamo?.stop();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') fail(`Cannot start: port ${config.SVC_PORT} is already in use. Try SVC_PORT=2662 npm start`);
    throw error;
  }

  // Tells `npm run keys` (and other local tools) which DynamoDB this running stack uses.
  writeStackFile(dataDir, { pid: process.pid, url: gateway.url, dynamodb_endpoint: endpoint });
  process.on('exit', () => removeStackFile(dataDir, process.pid));
  say(`DynamoDB: ${endpoint}${dynamo ? ` (DynamoDB Local, pid ${dynamo.pid}, data in ${join(dataDir, 'dynamodb')})` : ''}`);
  say(`Auth: ${config.SVC_AUTH_ENABLED ? `on (header ${config.API_KEY_NAME}; create keys with: npm run keys -- create --role writer)` : 'off (SVC_AUTH_ENABLED=true to turn it on)'}`);
  say(`Ledger service ready at ${gateway.url}`);
}

await main();
