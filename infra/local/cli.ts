/** What the local commands (npm start, npm run keys, npm run migrate, npm run identity) share: settings or a clear exit, and the DynamoDB to use. */
import { join, resolve } from 'node:path';
import { ConfigError, loadConfig, type Settings } from '#shared/config';
import { DataDirInUseError, LaunchError, startDynamoDbLocal } from './dynamodb-local.ts';
import { readStackFile, type StackFile } from './stack-file.ts';

export function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/** The validated settings; a bad value ends the command with the message naming it. */
export function settingsOrExit(prefix = '', env: NodeJS.ProcessEnv = process.env): Readonly<Settings> {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) fail(`${prefix}${error.message}`);
    throw error;
  }
}

/** The DynamoDB a local command works on, and how to let go of it. */
export interface ToolDynamo {
  /** undefined: AWS itself (`--aws`). */
  endpoint: string | undefined;
  /** The access key id to call it with (a running stack's, a DynamoDB Local started here: its data dir's; else SVC_DYNAMODB_ACCESS_KEY_ID, if set). */
  accessKeyId: string | undefined;
  /** Whether the command started DynamoDB Local itself (its tables may be missing). */
  startedHere: boolean;
  /** The settings to work with: the command's own, with a running stack's table names where the command names none. */
  config: Readonly<Settings>;
  stop(): Promise<void>;
}

/**
 * Where `npm run keys` and `npm run migrate` find DynamoDB: AWS with `--aws`; else SVC_DYNAMODB_ENDPOINT;
 * else the DynamoDB of the `npm start` running on SVC_DATA_DIR; else DynamoDB Local started on that data
 * dir for the moment the command needs it.
 */
export async function toolDynamo(config: Readonly<Settings>, aws: boolean): Promise<ToolDynamo> {
  const dataDir = resolve(config.SVC_DATA_DIR);
  const running = aws || config.SVC_DYNAMODB_ENDPOINT ? undefined : readStackFile(dataDir);
  if (aws || config.SVC_DYNAMODB_ENDPOINT || running) return onStack(config, aws, running);
  // A stack starting on the data dir (`npm start &`, then this at once) runs its DynamoDB Local before it writes
  // stack.json: this command waits for the stack rather than start one beside it (whose JVM would be refused the data
  // dir's lock). Another command holding it ends in seconds: then this one starts its own.
  const until = Date.now() + STACK_START_WAIT_MS;
  let told = false;
  for (;;) {
    try {
      const dynamo = await startDynamoDbLocal({
        dataDir: join(dataDir, 'dynamodb'),
        region: config.SVC_AWS_REGION,
        onNotice: (message) => process.stderr.write(`${message}\n`),
      });
      return { endpoint: dynamo.endpoint, accessKeyId: dynamo.accessKeyId, startedHere: true, config, stop: () => dynamo.stop() };
    } catch (error) {
      if (!(error instanceof LaunchError)) throw error;
      if (!(error instanceof DataDirInUseError) || Date.now() >= until) {
        fail(told ? `${error.message}\n(waited ${STACK_START_WAIT_MS / 1000} s for it)` : error.message);
      }
      if (!told) process.stderr.write(`DynamoDB Local on ${dataDir} is run by another process, a stack starting or another command: waiting for it\n`);
      told = true;
      for (const stop = Math.min(until, Date.now() + 2_000); Date.now() < stop; ) {
        const stack = readStackFile(dataDir);
        if (stack) return onStack(config, false, stack);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
}

/** How long a command waits for a stack starting on its data dir, or another command, to let go of its DynamoDB Local. */
export const STACK_START_WAIT_MS = 60_000;

/** The DynamoDB of a running stack (or AWS, or SVC_DYNAMODB_ENDPOINT): not the command's to start or stop. */
function onStack(config: Readonly<Settings>, aws: boolean, running: StackFile | undefined): ToolDynamo {
  const known = aws ? undefined : (config.SVC_DYNAMODB_ENDPOINT ?? running?.dynamodb_endpoint);
  // The running stack's tables (it may have been started with other names), unless this command names its own.
  // Its region too: with the access key, it names the stack's database in DynamoDB Local.
  const withTables = running?.tables
    ? settingsOrExit('', { ...running.tables, ...process.env, ...(running.dynamodb_region ? { SVC_AWS_REGION: running.dynamodb_region } : {}) })
    : config;
  // The key the running stack calls its DynamoDB with (its own DynamoDB Local keeps its database under the data dir's).
  const accessKeyId = running?.dynamodb_access_key_id ?? config.SVC_DYNAMODB_ACCESS_KEY_ID;
  return { endpoint: known, accessKeyId, startedHere: false, config: withTables, stop: async () => undefined };
}
