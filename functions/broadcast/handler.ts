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
import { firstSequenceOf, streamBlocks } from '#shared/storage/stream';
import type { Core } from '#shared/wiring/core';
import { lambdaHandler } from '#shared/wiring/process';
import { createRealtimeWiring } from '#shared/wiring/realtime';
import { createNodeWiring } from '#shared/wiring/node';

/** What the broadcaster keeps back from its deadline to finish the block it is pushing and answer. */
export const PUSH_RESERVE_MS = 3_000;

export function createHandler(core: Core) {
  const realtime = createRealtimeWiring(core);
  const node = createNodeWiring(core);
  const broadcast = async (event: DynamoDBStreamEvent, stopAt: number): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> => {
    const found = streamBlocks(event.Records ?? []);
    if (found.length === 0) return { batchItemFailures: [] };
    const blocks = found.map((f) => f.block);
    const [{ sent, gone, revoked, failed, limited, unfinished }] = await Promise.all([
      fanOut(blocks, realtime.connections(), realtime.sender(), realtime.pushPolicy(), { stopAt, takePushes: realtime.pushBudget() }),
      // New checkpoints go to the witnesses (each chain at most once per interval), beside the pushes.
      node.witnessChains(blocks.map((b) => b.chain_name)),
    ]);
    logger.info('broadcast', {
      blocks: blocks.length,
      sent,
      gone: gone.length,
      revoked: revoked.length,
      failed: failed.length,
      limited: limited.length,
      unfinished: unfinished.length,
    });
    // Blocks not pushed before the deadline: the batch is taken up again from the first of their records, and only
    // those (and what follows them in the stream) are pushed again, not the whole batch.
    const first = firstSequenceOf(found, unfinished);
    return { batchItemFailures: first === undefined ? [] : [{ itemIdentifier: first }] };
  };
  // Every push and read ends at the invocation's deadline (shared/deadline.ts); pushing stops PUSH_RESERVE_MS before
  // it, so that the blocks left are answered as batch item failures rather than the whole batch failing.
  return (event: DynamoDBStreamEvent, context?: Context) => {
    const deadline = invocationDeadline(context);
    return withDeadline(deadline, () => broadcast(event, deadline - PUSH_RESERVE_MS));
  };
}

export const handler = lambdaHandler(createHandler);
