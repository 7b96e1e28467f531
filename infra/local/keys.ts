/**
 * `npm run keys -- <command>`: manage API keys without a redeploy.
 *
 *   create --role reader|writer|admin [--org ORG_ID]   prints a new key, once (--key-only: just the key, for scripts)
 *   list                                               ids, roles, orgs, creation times (never a key)
 *   revoke KEY_ID
 *   --aws                                              against the deployed stack (SVC_REGISTRY_TABLE names its table)
 *
 * It uses SVC_DYNAMODB_ENDPOINT when set (LocalStack, a shared DynamoDB Local), else the
 * DynamoDB of the `npm start` running on SVC_DATA_DIR, else it starts DynamoDB Local on that data dir
 * for the moment it needs it.
 */
import { parseArgsOrExit } from '#shared/cli-args';
import { ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { ROLES, createApiKey, isRole, revokeApiKey } from '#shared/admin/api-keys';
import { fail, settingsOrExit, toolDynamo } from './cli.ts';
import { DomainError } from '#shared/errors';
import { createApiKeyRepository } from '#shared/storage/api-key-repository';
import { createDynamoBaseClient, createDynamoClient } from '#shared/storage/client';
import { allTableSpecs, ensureTables, tableNamesFrom } from '#shared/storage/tables';

const USAGE = `Usage:
  npm run keys -- create --role ${ROLES.join('|')} [--org ORG_ID] [--key-only]
  npm run keys -- list
  npm run keys -- revoke KEY_ID
Add --aws to use the deployed stack's registry table (SVC_REGISTRY_TABLE=<RegistryTableName output>).`;

async function main(): Promise<void> {
  const { positionals, values } = parseArgsOrExit(
    {
      args: process.argv.slice(2),
      allowPositionals: true,
      options: {
        role: { type: 'string' },
        org: { type: 'string' },
        json: { type: 'boolean' },
        'key-only': { type: 'boolean' },
        aws: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    },
    USAGE,
    1,
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const [command, ...rest] = positionals;
  if (!command || !['create', 'list', 'revoke'].includes(command)) fail(USAGE);
  if (command === 'create' && (!values.role || !isRole(values.role))) fail(`--role must be one of ${ROLES.join(', ')}\n\n${USAGE}`);
  if (command === 'revoke' && rest.length !== 1) fail(USAGE);

  // --aws: the deployed stack's tables (name them with SVC_REGISTRY_TABLE), with the usual AWS credentials.
  const dynamo = await toolDynamo(settingsOrExit(), values.aws === true);
  const config = dynamo.config;
  const endpoint = dynamo.endpoint;
  const options = { region: config.SVC_AWS_REGION, endpoint, accessKeyId: dynamo.accessKeyId };
  try {
    // Only the DynamoDB Local started here may lack tables; a running stack, LocalStack and AWS own theirs.
    if (dynamo.startedHere) await ensureTables(createDynamoBaseClient(options), allTableSpecs(tableNamesFrom(config)));
    const keys = createApiKeyRepository({ client: createDynamoClient(options), tableName: config.SVC_REGISTRY_TABLE });
    if (command === 'create') {
      const { key, record } = await createApiKey(keys, values.role as (typeof ROLES)[number], values.org ?? null);
      if (values.json) process.stdout.write(`${JSON.stringify({ ...record, key })}\n`);
      else if (values['key-only']) process.stdout.write(`${key}\n`);
      else {
        process.stdout.write(`Created ${record.role} key ${record.key_id}${record.org_id ? ` for org ${record.org_id}` : ''}.\n`);
        process.stdout.write(`Key (shown once, store it now): ${key}\n`);
        process.stdout.write(`Use it as: curl -H '${config.API_KEY_NAME}: ${key}' …\n`);
      }
    } else if (command === 'list') {
      const records = await keys.list();
      if (values.json) process.stdout.write(`${JSON.stringify(records)}\n`);
      else if (records.length === 0) process.stdout.write('No API keys.\n');
      else {
        process.stdout.write(`${'KEY ID'.padEnd(14)}${'ROLE'.padEnd(8)}${'ORG'.padEnd(16)}CREATED\n`);
        for (const r of records) {
          process.stdout.write(`${r.key_id.padEnd(14)}${r.role.padEnd(8)}${(r.org_id ?? '-').padEnd(16)}${r.created_at}\n`);
        }
      }
    } else {
      await revokeApiKey(keys, rest[0]!);
      process.stdout.write(`Revoked key ${rest[0]}.\n`);
    }
  } catch (error) {
    if (error instanceof DomainError && error.expose) fail(error.message);
    if (error instanceof ResourceNotFoundException) {
      fail(`No table '${config.SVC_REGISTRY_TABLE}' at ${endpoint ?? 'AWS'}: set SVC_REGISTRY_TABLE to the stack's RegistryTableName output.`);
    }
    throw error;
  } finally {
    await dynamo.stop();
  }
}

await main();
