/**
 * Fed by the ledger table's stream (NEW_IMAGE): each new block is pushed to its subscribers as
 * `block_added` and `event` messages (docs/rules.md, "WebSocket"), in block order per chain within a batch.
 * Other writes (chain heads, tree migration) are ignored. A channel's chain reaches its members only.
 */
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { logger } from '#shared/log';
import { fanOut } from '#shared/realtime/realtime';
import { getConnectionStore, getSender, pushPolicy } from '#shared/realtime-runtime';
import { blocksFromStream } from '#shared/storage/stream';

export async function handler(event: DynamoDBStreamEvent): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> {
  const blocks = blocksFromStream(event.Records ?? []);
  if (blocks.length === 0) return { batchItemFailures: [] };
  const { sent, gone } = await fanOut(blocks, getConnectionStore(), getSender(), pushPolicy());
  logger.info('broadcast', { blocks: blocks.length, sent, gone: gone.length });
  return { batchItemFailures: [] };
}
