/** Reading the ledger table's stream: the blocks that a batch of records inserted. */
import type { DynamoDBRecord } from 'aws-lambda';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { inContractOrder } from '../ledger/hashing.ts';
import type { Block } from '../ledger/types.ts';
import { BLOCK_SK_PREFIX } from './keys.ts';

/**
 * New blocks in stream records (NEW_IMAGE), each with its record's sequence number (what a batch item failure names);
 * heads, tree updates and deletions are not blocks.
 */
export function streamBlocks(records: readonly DynamoDBRecord[]): { block: Block; sequence: string }[] {
  const blocks: { block: Block; sequence: string }[] = [];
  for (const record of records) {
    if (record.eventName !== 'INSERT' || !record.dynamodb?.NewImage) continue;
    const item = unmarshall(record.dynamodb.NewImage as never) as Record<string, unknown>;
    if (typeof item.sk !== 'string' || !item.sk.startsWith(BLOCK_SK_PREFIX) || typeof item.block_json !== 'string') continue;
    blocks.push({ block: inContractOrder(JSON.parse(item.block_json) as Block), sequence: record.dynamodb.SequenceNumber ?? '' });
  }
  return blocks;
}

/**
 * The lowest sequence number among the records of these blocks (a batch item failure: the stream's batch is taken up
 * again from it), or undefined for none. Sequence numbers are decimal strings of any length: compared as numbers.
 */
export function firstSequenceOf(found: readonly { block: Block; sequence: string }[], blocks: readonly Block[]): string | undefined {
  const wanted = new Set(blocks);
  return found
    .filter((f) => wanted.has(f.block) && f.sequence !== '')
    .map((f) => f.sequence)
    .sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0))[0];
}
