/** Reading the ledger table's stream: the blocks that a batch of records inserted. */
import type { DynamoDBRecord } from 'aws-lambda';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { inContractOrder } from '../ledger/hashing.ts';
import type { Block } from '../ledger/types.ts';
import { BLOCK_SK_PREFIX } from './keys.ts';

/** New blocks in stream records (NEW_IMAGE); heads, tree updates and deletions are not blocks. */
export function blocksFromStream(records: readonly DynamoDBRecord[]): Block[] {
  const blocks: Block[] = [];
  for (const record of records) {
    if (record.eventName !== 'INSERT' || !record.dynamodb?.NewImage) continue;
    const item = unmarshall(record.dynamodb.NewImage as never) as Record<string, unknown>;
    if (typeof item.sk !== 'string' || !item.sk.startsWith(BLOCK_SK_PREFIX) || typeof item.block_json !== 'string') continue;
    blocks.push(inContractOrder(JSON.parse(item.block_json) as Block));
  }
  return blocks;
}
