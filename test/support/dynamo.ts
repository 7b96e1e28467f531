/**
 * DynamoDB Local with the service's tables, for tests that drive the storage or the appender directly (no service in
 * between). Under `npm test` (test/run.ts) the run's one DynamoDB Local (LEDGER_TEST_DYNAMODB), with tables of the
 * test's own, deleted at its stop: a JVM of its own cost a test about 3 s of CPU to start and more to compile its hot
 * paths again. Run alone (or asked for), a JVM in memory of its own, stopped by pid and its data dir removed.
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { startDynamoDbLocal } from '#infra/local/dynamodb-local';
import type { LedgerRepository } from '#shared/ledger/repository';
import { createDynamoBaseClient, createDynamoClient } from '#shared/storage/client';
import { createLedgerRepository } from '#shared/storage/ledger-repository';
import { allTableSpecs, ensureTables } from '#shared/storage/tables';
import { removeDir, tempDataDir } from './stack.ts';

export interface TestTables {
  ledger: string;
  registry: string;
  ratelimits: string;
  connections: string;
}

export interface TestDynamo {
  endpoint: string;
  /** The access key id its database is kept under (DynamoDB Local keeps one per access key id). */
  accessKeyId: string;
  /** A client's settings for it: region, endpoint and access key. */
  options: { region: string; endpoint: string; accessKeyId: string };
  /** The test's tables, by role (`ledger`, … when it has a JVM of its own). */
  tables: TestTables;
  /** The settings a stack is given to use these tables (SVC_LEDGER_TABLE, …, and the access key they are kept under). */
  tableEnv: Record<string, string>;
  /** The ledger repository on the ledger table. */
  repository: LedgerRepository;
  stop(): Promise<void>;
}

/**
 * `own`: a JVM of its own even under `npm test`, for a test that writes so much that it would slow every other file's
 * requests in the shared one (20,000 blocks made two files beside it 3-4 times as long).
 */
export async function startTestDynamo(label: string, { own: ownJvm = false }: { own?: boolean } = {}): Promise<TestDynamo> {
  const shared = ownJvm ? undefined : process.env.LEDGER_TEST_DYNAMODB;
  const dir = shared ? undefined : tempDataDir(label);
  const own = dir ? await startDynamoDbLocal({ dataDir: dir, inMemory: true }) : undefined;
  const endpoint = own?.endpoint ?? shared!;
  const accessKeyId = own?.accessKeyId ?? process.env.LEDGER_TEST_DYNAMODB_KEY ?? 'local';
  const prefix = own ? '' : `${label}-${randomUUID().slice(0, 8)}.`;
  const tables: TestTables = {
    ledger: `${prefix}ledger`,
    registry: `${prefix}registry`,
    ratelimits: `${prefix}ratelimits`,
    connections: `${prefix}connections`,
  };
  const options = { region: 'us-east-1', endpoint, accessKeyId };
  const admin = createDynamoBaseClient(options);
  await ensureTables(
    admin,
    allTableSpecs({ ledger: tables.ledger, registry: tables.registry, rateLimits: tables.ratelimits, connections: tables.connections }),
  );
  return {
    endpoint,
    accessKeyId,
    options,
    tables,
    tableEnv: {
      SVC_DYNAMODB_ACCESS_KEY_ID: accessKeyId,
      SVC_LEDGER_TABLE: tables.ledger,
      SVC_REGISTRY_TABLE: tables.registry,
      SVC_RATE_LIMIT_TABLE: tables.ratelimits,
      SVC_CONNECTIONS_TABLE: tables.connections,
    },
    repository: createLedgerRepository({ client: createDynamoClient(options), tableName: tables.ledger }),
    async stop() {
      if (own) {
        await own.stop();
        removeDir(dir!);
        return;
      }
      // The run's DynamoDB Local holds every table in memory: this test's go with it.
      await Promise.all(Object.values(tables).map((TableName) => admin.send(new DeleteTableCommand({ TableName })).catch(() => undefined)));
    },
  };
}

/**
 * The client, with the commands `fails` picks refused before they are sent (an Error 'DynamoDB failed this write'), as
 * DynamoDB may refuse any request: `fails` is asked about every command, by its class name, in the order they are sent.
 */
export function failingCommands<C extends { send: (...args: never[]) => unknown }>(client: C, fails: (command: string) => boolean): C {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver);
      return (command: { constructor: { name: string } }) => {
        if (fails(command.constructor.name)) throw new Error('DynamoDB failed this write');
        return target.send(command as never);
      };
    },
  });
}
