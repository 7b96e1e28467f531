/**
 * Wires the domain to its storage from the settings, once per process (a Lambda instance or the
 * local gateway). Handlers ask for what they need here and never build clients themselves.
 */
import { getConfig } from './config.ts';
import { ChainAppender } from './ledger/appender.ts';
import { createLedger, type Ledger } from './ledger/ledger.ts';
import { createDynamoClient } from './storage/client.ts';
import type { LedgerRepository } from './ledger/repository.ts';
import { createLedgerRepository } from './storage/ledger-repository.ts';

export interface LedgerRuntime {
  ledger: Ledger;
  repository: LedgerRepository;
  appender: ChainAppender;
}

let runtime: LedgerRuntime | undefined;

export function getLedgerRuntime(): LedgerRuntime {
  if (runtime) return runtime;
  const config = getConfig();
  const client = createDynamoClient({ region: config.SVC_AWS_REGION, endpoint: config.SVC_DYNAMODB_ENDPOINT });
  const repository = createLedgerRepository({ client, tableName: config.SVC_LEDGER_TABLE });
  const appender = new ChainAppender(repository, {
    maxAttempts: config.SVC_APPEND_MAX_ATTEMPTS,
    batchMax: config.SVC_APPEND_BATCH_MAX,
  });
  runtime = { ledger: createLedger({ repository, appender }), repository, appender };
  return runtime;
}
