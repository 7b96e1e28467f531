/**
 * The tables of the service as CreateTable inputs: the local stack creates them from here, and the
 * cloud stack (infra/cdk) declares the same keys and indexes.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { translateStorageError } from './errors.ts';
import { CONNECTIONS_INDEXES, LEDGER_INDEXES } from './keys.ts';

export interface TableNames {
  ledger: string;
  registry: string;
  rateLimits: string;
  connections: string;
}

export function ledgerTableDefinition(tableName: string): CreateTableCommandInput {
  const keysOnly = { ProjectionType: 'KEYS_ONLY' as const };
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
      { AttributeName: 'gsi_hash', AttributeType: 'S' },
      { AttributeName: 'gsi_entity_pk', AttributeType: 'S' },
      { AttributeName: 'gsi_entity_sk', AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: LEDGER_INDEXES.byHash,
        KeySchema: [{ AttributeName: 'gsi_hash', KeyType: 'HASH' }],
        Projection: keysOnly,
      },
      {
        IndexName: LEDGER_INDEXES.byEntity,
        KeySchema: [
          { AttributeName: 'gsi_entity_pk', KeyType: 'HASH' },
          { AttributeName: 'gsi_entity_sk', KeyType: 'RANGE' },
        ],
        // The trace answers whole events, so the index carries the block body: one query, no fan-out reads.
        Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['block_json', 'chain_name'] },
      },
    ],
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
  };
}

/** Channels, contracts, organizations, API keys (hashed), peers, used nonces: `pk`, `sk`, TTL on `ttl`. */
export function registryTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
  };
}

/** Rate-limit windows, in the layout rate-limiter-flexible's DynamoDB store uses: `key`, TTL on `expire`. */
export function rateLimitTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'key', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'key', KeyType: 'HASH' }],
  };
}

/** WebSocket connections and their subscriptions: `pk`, `sk`, a GSI by subscription filter, TTL on `ttl`. */
export function connectionsTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
      { AttributeName: 'gsi_filter_pk', AttributeType: 'S' },
      { AttributeName: 'gsi_filter_sk', AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: CONNECTIONS_INDEXES.byFilter,
        KeySchema: [
          { AttributeName: 'gsi_filter_pk', KeyType: 'HASH' },
          { AttributeName: 'gsi_filter_sk', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
    ],
  };
}

/** A table to create: its CreateTable input and, where it has one, its TTL attribute. */
export interface TableSpec {
  definition: CreateTableCommandInput;
  ttlAttribute?: string;
}

export type TableRole = keyof TableNames;

/** The settings that name each table, for the functions' environment and the local tools. */
export const TABLE_SETTINGS: Record<TableRole, 'SVC_LEDGER_TABLE' | 'SVC_REGISTRY_TABLE' | 'SVC_RATE_LIMIT_TABLE' | 'SVC_CONNECTIONS_TABLE'> = {
  ledger: 'SVC_LEDGER_TABLE',
  registry: 'SVC_REGISTRY_TABLE',
  rateLimits: 'SVC_RATE_LIMIT_TABLE',
  connections: 'SVC_CONNECTIONS_TABLE',
};

export function tableNamesFrom(settings: Record<(typeof TABLE_SETTINGS)[TableRole], string>): TableNames {
  return {
    ledger: settings.SVC_LEDGER_TABLE,
    registry: settings.SVC_REGISTRY_TABLE,
    rateLimits: settings.SVC_RATE_LIMIT_TABLE,
    connections: settings.SVC_CONNECTIONS_TABLE,
  };
}

/** The settings that name the tables, with their values (what a running local stack tells its tools). */
export function tableSettingsFrom(settings: Record<(typeof TABLE_SETTINGS)[TableRole], string>): Record<string, string> {
  return Object.fromEntries(Object.values(TABLE_SETTINGS).map((name) => [name, settings[name]]));
}

/** Every table of the service, keyed by role: the local stack creates them, the cloud stack declares them. */
export function allTableSpecs(names: TableNames): Record<TableRole, TableSpec> {
  return {
    // Pending appends, receipts and Idempotency-Key records expire on `ttl`.
    ledger: { definition: ledgerTableDefinition(names.ledger), ttlAttribute: 'ttl' },
    registry: { definition: registryTableDefinition(names.registry), ttlAttribute: 'ttl' },
    rateLimits: { definition: rateLimitTableDefinition(names.rateLimits), ttlAttribute: 'expire' },
    connections: { definition: connectionsTableDefinition(names.connections), ttlAttribute: 'ttl' },
  };
}

/**
 * Creates every table that does not exist yet, waits until each is ACTIVE, and turns on its TTL.
 * Idempotent: safe at every start, and safe when two processes start at once.
 */
export async function ensureTables(client: DynamoDBClient, specs: Record<string, TableSpec>): Promise<string[]> {
  // Each table on its own, all at once: a start waits for the slowest table, not for their sum.
  const created = await Promise.all(Object.values(specs).map((spec) => ensureTable(client, spec)));
  return Object.values(specs)
    .filter((_, i) => created[i])
    .map((spec) => spec.definition.TableName!);
}

/** Creates one table unless it exists (answers whether it created it), waits until it is ACTIVE, turns on its TTL. */
async function ensureTable(client: DynamoDBClient, { definition, ttlAttribute }: TableSpec): Promise<boolean> {
  const name = definition.TableName!;
  try {
    await client.send(new DescribeTableCommand({ TableName: name }));
    // A table made by an earlier version may lack the TTL a later one relies on.
    if (ttlAttribute) {
      const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: name }));
      if (ttl.TimeToLiveDescription?.TimeToLiveStatus === 'DISABLED') {
        await client.send(new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: { AttributeName: ttlAttribute, Enabled: true } }));
      }
    }
    return false;
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw translateStorageError(error);
  }
  let created = false;
  try {
    await client.send(new CreateTableCommand(definition));
    created = true;
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw translateStorageError(error);
  }
  await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: name });
  if (ttlAttribute) {
    await client.send(new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: { AttributeName: ttlAttribute, Enabled: true } }));
  }
  return created;
}
