/**
 * The tables of the service as CreateTable inputs: the local stack creates them from here, and the
 * cloud stack (infra/cdk) declares the same keys and indexes.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  waitUntilTableExists,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { translateStorageError } from './errors.ts';
import { LEDGER_INDEXES } from './keys.ts';

export interface TableNames {
  ledger: string;
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

export function allTableDefinitions(names: TableNames): CreateTableCommandInput[] {
  return [ledgerTableDefinition(names.ledger)];
}

/**
 * Creates every table that does not exist yet and waits until each is ACTIVE. Idempotent: safe at
 * every start, and safe when two processes start at once.
 */
export async function ensureTables(client: DynamoDBClient, definitions: CreateTableCommandInput[]): Promise<string[]> {
  const created: string[] = [];
  for (const definition of definitions) {
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
  }
  return created;
}
