/**
 * `npm run migrate [-- --aws]`: brings the ledger and registry tables written by an earlier version to the current layout
 * (shared/storage/migrations.ts). Idempotent: a second run finds nothing to do. The local launcher runs the
 * same migrations at every start; this command is for the deployed stack (`--aws`, with SVC_LEDGER_TABLE
 * and SVC_REGISTRY_TABLE naming its tables) and for any DynamoDB named by SVC_DYNAMODB_ENDPOINT.
 *
 * Without --aws it uses SVC_DYNAMODB_ENDPOINT, else the DynamoDB of the `npm start` running on
 * SVC_DATA_DIR, else DynamoDB Local on that data dir for the moment it needs it.
 */
import { parseArgs } from 'node:util';
import { createDynamoBaseClient, createDynamoClient } from '#shared/storage/client';
import { migrateTables } from '#shared/storage/migrations';
import { settingsOrExit, toolDynamo } from './cli.ts';

const { values } = parseArgs({ args: process.argv.slice(2), options: { aws: { type: 'boolean' } } });
const dynamo = await toolDynamo(settingsOrExit(), values.aws === true);
const config = dynamo.config;
const options = { region: config.SVC_AWS_REGION, endpoint: dynamo.endpoint, accessKeyId: dynamo.accessKeyId };
try {
  const tables = { ledger: config.SVC_LEDGER_TABLE, registry: config.SVC_REGISTRY_TABLE };
  for (const report of await migrateTables(createDynamoBaseClient(options), createDynamoClient(options), tables, true)) {
    process.stdout.write(`${report.name}: ${report.migrated === 0 ? 'nothing to do' : `${report.migrated} item(s) migrated`}\n`);
  }
} finally {
  await dynamo.stop();
}
