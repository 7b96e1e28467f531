/**
 * The tables of the service as CreateTable inputs: the local stack creates them from here, and the
 * cloud stack (infra/cdk) declares the same keys and indexes.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { translateStorageError } from './errors.ts';
import { LEDGER_INDEXES } from './keys.ts';

export interface TableNames {
  ledger: string;
  registry: string;
  rateLimits: string;
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
      { AttributeName: 'gsi_chains_pk', AttributeType: 'S' },
      { AttributeName: 'gsi_chains_sk', AttributeType: 'S' },
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
      {
        IndexName: LEDGER_INDEXES.chains,
        KeySchema: [
          { AttributeName: 'gsi_chains_pk', KeyType: 'HASH' },
          { AttributeName: 'gsi_chains_sk', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
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

/** A table to create: its CreateTable input and, where it has one, its TTL attribute. */
export interface TableSpec {
  definition: CreateTableCommandInput;
  ttlAttribute?: string;
}

export function tableNamesFrom(settings: {
  SVC_LEDGER_TABLE: string;
  SVC_REGISTRY_TABLE: string;
  SVC_RATE_LIMIT_TABLE: string;
}): TableNames {
  return { ledger: settings.SVC_LEDGER_TABLE, registry: settings.SVC_REGISTRY_TABLE, rateLimits: settings.SVC_RATE_LIMIT_TABLE };
}

export function allTableSpecs(names: TableNames): TableSpec[] {
  return [
    { definition: ledgerTableDefinition(names.ledger) },
    { definition: registryTableDefinition(names.registry), ttlAttribute: 'ttl' },
    { definition: rateLimitTableDefinition(names.rateLimits), ttlAttribute: 'expire' },
  ];
}

/**
 * Creates every table that does not exist yet, waits until each is ACTIVE, and turns on its TTL.
 * Idempotent: safe at every start, and safe when two processes start at once.
 */
export async function ensureTables(client: DynamoDBClient, specs: TableSpec[]): Promise<string[]> {
  const created: string[] = [];
  for (const { definition, ttlAttribute } of specs) {
    const name = definition.TableName!;
    try {
      await client.send(new DescribeTableCommand({ TableName: name }));
      continue;
    } catch (error) {
      if (!(error instanceof ResourceNotFoundException)) throw translateStorageError(error);
    }
    try {
      await client.send(new CreateTableCommand(definition));
      created.push(name);
    } catch (error) {
      if (!(error instanceof ResourceInUseException)) throw translateStorageError(error);
    }
    await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: name });
    if (ttlAttribute) {
      await client.send(
        new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: { AttributeName: ttlAttribute, Enabled: true } }),
      );
    }
  }
  return created;
}
