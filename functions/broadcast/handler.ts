/**
 * Fed by the ledger table's stream (NEW_IMAGE): each new block is pushed to its subscribers as
 * `block_added` and `event` messages (docs/rules.md, "WebSocket"), in block order per chain within a batch.
 * Other writes (chain heads, tree migration) are ignored. A channel's chain reaches its members only.
 * With witnesses (SVC_WITNESSES), the chains' new checkpoints are sent to them too (shared/tlog/witnessing.ts).
 */
import type { Context, DynamoDBStreamEvent } from 'aws-lambda';
import { invocationDeadline, withDeadline } from '#shared/deadline';
import { logger } from '#shared/log';
import { fanOut } from '#shared/realtime/realtime';
import { blocksFromStream } from '#shared/storage/stream';
import type { Core } from '#shared/wiring/core';
import { lambdaHandler } from '#shared/wiring/process';
import { createRealtimeWiring } from '#shared/wiring/realtime';
import { createNodeWiring } from '#shared/wiring/node';

export function createHandler(core: Core) {
  const realtime = createRealtimeWiring(core);
  const node = createNodeWiring(core);
  const broadcast = async (event: DynamoDBStreamEvent): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> => {
    const blocks = blocksFromStream(event.Records ?? []);
    if (blocks.length === 0) return { batchItemFailures: [] };
    const [{ sent, gone, revoked }] = await Promise.all([
      fanOut(blocks, realtime.connections(), realtime.sender(), realtime.pushPolicy()),
      // New checkpoints go to the witnesses (each chain at most once per interval), beside the pushes.
      node.witnessChains(blocks.map((b) => b.chain_name)),
    ]);
    logger.info('broadcast', { blocks: blocks.length, sent, gone: gone.length, revoked: revoked.length });
    return { batchItemFailures: [] };
  };
  // Every push and read ends at the invocation's deadline (shared/deadline.ts): a failed batch is retried by
  // the event source mapping, never left hanging to the function's timeout.
  return (event: DynamoDBStreamEvent, context?: Context) => withDeadline(invocationDeadline(context), () => broadcast(event));
}

export const handler = lambdaHandler(createHandler);
