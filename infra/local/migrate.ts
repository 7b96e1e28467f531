/**
 * `npm run migrate [-- --aws]`: brings a ledger table written by an earlier version to the current layout
 * (shared/storage/migrations.ts). Idempotent: a second run finds nothing to do. The local launcher runs the
 * same migrations at every start; this command is for the deployed stack (`--aws`, with SVC_LEDGER_TABLE
 * naming its table) and for any DynamoDB named by SVC_DYNAMODB_ENDPOINT.
 *
 * Without --aws it uses SVC_DYNAMODB_ENDPOINT, else the DynamoDB of the `npm start` running on
 * SVC_DATA_DIR, else DynamoDB Local on that data dir for the moment it needs it.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createDynamoBaseClient, createDynamoClient } from '#shared/storage/client';
import { migrateLedgerTable } from '#shared/storage/migrations';
import { fail, settingsOrExit } from './cli.ts';
import { LaunchError, startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';
import { readStackFile } from './stack-file.ts';

const { values } = parseArgs({ args: process.argv.slice(2), options: { aws: { type: 'boolean' } } });
const config = settingsOrExit();
const dataDir = resolve(config.SVC_DATA_DIR);
let dynamo: DynamoDbLocal | undefined;
let endpoint = values.aws ? undefined : (config.SVC_DYNAMODB_ENDPOINT ?? readStackFile(dataDir)?.dynamodb_endpoint);
if (!endpoint && !values.aws) {
  try {
    dynamo = await startDynamoDbLocal({ dataDir: join(dataDir, 'dynamodb') });
  } catch (error) {
    if (error instanceof LaunchError) fail(error.message);
    throw error;
  }
  endpoint = dynamo.endpoint;
}
const options = { region: config.SVC_AWS_REGION, endpoint };
try {
  for (const report of await migrateLedgerTable(createDynamoBaseClient(options), createDynamoClient(options), config.SVC_LEDGER_TABLE, true)) {
    process.stdout.write(`${report.name}: ${report.migrated === 0 ? 'nothing to do' : `${report.migrated} item(s) migrated`}\n`);
  }
} finally {
  await dynamo?.stop();
}
