/**
 * DynamoDB Local in memory with the service's tables, for tests that drive the storage or the appender
 * directly (no service in between). Stopped by pid; its data dir removed.
 */
import { startDynamoDbLocal } from '#infra/local/dynamodb-local';
import type { LedgerRepository } from '#shared/ledger/repository';
import { createDynamoBaseClient, createDynamoClient } from '#shared/storage/client';
import { createLedgerRepository } from '#shared/storage/ledger-repository';
import { allTableSpecs, ensureTables } from '#shared/storage/tables';
import { removeDir, tempDataDir } from './stack.ts';

export interface TestDynamo {
  endpoint: string;
  /** The ledger repository on the `ledger` table. */
  repository: LedgerRepository;
  stop(): Promise<void>;
}

export async function startTestDynamo(label: string): Promise<TestDynamo> {
  const dir = tempDataDir(label);
  const dynamo = await startDynamoDbLocal({ dataDir: dir, inMemory: true });
  const options = { region: 'us-east-1', endpoint: dynamo.endpoint };
  await ensureTables(
    createDynamoBaseClient(options),
    allTableSpecs({ ledger: 'ledger', registry: 'registry', rateLimits: 'ratelimits', connections: 'connections' }),
  );
  return {
    endpoint: dynamo.endpoint,
    repository: createLedgerRepository({ client: createDynamoClient(options), tableName: 'ledger' }),
    async stop() {
      await dynamo.stop();
      removeDir(dir);
    },
  };
}
