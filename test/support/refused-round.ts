/**
 * A writer outside the stack whose round's records DynamoDB refuses through every retry: its commit lands on
 * the chain, its caller is answered with its block (it is on the chain), and the block's body is left only in
 * its pending append (which expires). What the sweep of unwritten rounds is for (shared/ledger/sweep.ts).
 */
import assert from 'node:assert/strict';
import { ChainAppender } from '#shared/ledger/appender';
import { createLedger } from '#shared/ledger/ledger';
import type { LedgerRepository } from '#shared/ledger/repository';
import { createDynamoClient } from '#shared/storage/client';
import { createLedgerRepository } from '#shared/storage/ledger-repository';

/**
 * Appends one event of type `eventType` to `chainName` with its round's records refused, and checks that the
 * block is on the chain without its record (unless a sweep may have run since: `sweepRuns`). Answers the
 * table as it is (a repository that refuses nothing), for the test's own reads, and `close` for its client.
 */
export async function appendWithRecordsRefused(
  options: { endpoint: string; accessKeyId: string; tableName: string; sweepRuns?: boolean },
  chainName: string,
  eventType: string,
): Promise<{ repository: LedgerRepository; index: number; close(): void }> {
  const client = createDynamoClient({ endpoint: options.endpoint, accessKeyId: options.accessKeyId, region: 'us-east-1' });
  const repository = createLedgerRepository({ client, tableName: options.tableName });
  const refusing = new Proxy(repository, {
    get: (target, name, receiver) =>
      name === 'writeRound'
        ? async () => {
            throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
          }
        : Reflect.get(target, name, receiver),
  });
  const writer = createLedger({ repository: refusing, appender: new ChainAppender(refusing, { maxAttempts: 3, batchMax: 99 }) });
  const draft = {
    entity_id: 'refused',
    event_type: eventType,
    details: {},
    details_cid: null,
    details_nonce: null,
    details_metadata: null,
    is_offchain: false,
  };
  const answered = await writer.appendEvent(chainName, draft);
  const head = (await repository.getHead(chainName))!;
  assert.equal(answered.block.index, head.headIndex, 'its caller is answered with its block, which is on the chain');
  if (!options.sweepRuns) assert.ok((head.materialized ?? 0) < head.headIndex, 'the block is on the chain, its record not written');
  return { repository, index: head.headIndex, close: () => client.destroy() };
}
