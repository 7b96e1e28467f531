/**
 * The DynamoDB repositories, offline, with aws-sdk-client-mock: what a cancelled transaction means is
 * read item by item (each item says what its failed condition means), never by counting positions, and
 * an overloaded DynamoDB becomes the retryable 503. The same repositories run against DynamoDB Local in
 * the integration suite; here each refusal DynamoDB can answer is produced on purpose.
 */
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { type CancellationReason, DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { DependencyUnavailableError } from '#shared/errors';
import type { BlockCommit } from '#shared/ledger/repository';
import type { Block } from '#shared/ledger/types';
import { createBusinessRepository } from '#shared/storage/business-repository';
import { createLedgerRepository } from '#shared/storage/ledger-repository';

const documentClient = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
const dynamo = mockClient(documentClient);

const headItem = (index: number, extra: Record<string, unknown> = {}) => ({
  pk: 'CHAIN#orders',
  sk: 'HEAD',
  chain_name: 'orders',
  kind: 'sub',
  head_index: index,
  head_hash: 'ab'.repeat(32),
  event_count: index,
  proof_count: 0,
  created_at: 1,
  block_shards: 16,
  ...extra,
});

const block = (index: number): Block => ({
  index,
  chain_name: 'orders',
  timestamp: 1_750_000_000 + index,
  previous_hash: '00'.repeat(32),
  hash: String(index).padStart(64, '0'),
  events: [],
});

/** A commit of two blocks on head 7 that also anchors, seals two pending appends and completes a key. */
const commit: BlockCommit = {
  chainName: 'orders',
  expectedHeadIndex: 7,
  writerId: 'w',
  nowMs: 1,
  blocks: [block(8), block(9)],
  treeNodes: [[], []],
  frontier: [],
  proofRecords: [{ blockPosition: 1, subChain: 'shipments', headIndex: 3, proofId: 'p' }],
  seals: [
    { ref: { shard: 0, sk: '1#a' }, receipt: { status: 'sealed', firstIndex: 8, previousHash: 'x', timestamp: 1, lastHash: 'y' } },
    { ref: { shard: 0, sk: '2#b' }, receipt: { status: 'sealed', firstIndex: 9, previousHash: 'x', timestamp: 1, lastHash: 'y' } },
  ],
  completions: [{ claim: { id: 'k', token: 't' }, blockPosition: 1, count: 1 }],
};

/** Items in the order the transaction sends them: head, 2 blocks, 1 proof, 2 × (pending, receipt), 1 completion. */
const ITEMS = 1 + 2 + 1 + 4 + 1;

function cancelled(failing: Record<number, CancellationReason>): TransactionCanceledException {
  return new TransactionCanceledException({
    message: 'Transaction cancelled',
    $metadata: {},
    CancellationReasons: Array.from({ length: ITEMS }, (_, i) => failing[i] ?? { Code: 'None' }),
  });
}

const failed: CancellationReason = { Code: 'ConditionalCheckFailed' };

describe('the ledger repository reads a cancelled commit item by item', () => {
  beforeEach(() => {
    dynamo.reset();
    dynamo.on(GetCommand).resolves({ Item: headItem(9) });
  });
  const repository = () => createLedgerRepository({ client: documentClient, tableName: 'ledger' });

  it('sends one transaction with every item of the commit', async () => {
    dynamo.on(TransactWriteCommand).resolves({});
    assert.deepEqual(await repository().commitBlocks(commit), { status: 'committed' });
    assert.equal(dynamo.commandCalls(TransactWriteCommand)[0]!.args[0].input.TransactItems!.length, ITEMS);
  });

  it('answers head-moved with the head DynamoDB returned when the head moved', async () => {
    dynamo.on(TransactWriteCommand).rejects(cancelled({ 0: { ...failed, Item: marshall(headItem(12)) } }));
    const result = await repository().commitBlocks(commit);
    assert.equal(result.status, 'head-moved');
    assert.equal(result.status === 'head-moved' && result.head?.headIndex, 12);
  });

  it('answers head-moved with the head read anew when a block key was taken', async () => {
    dynamo.on(TransactWriteCommand).rejects(cancelled({ 2: failed }));
    const result = await repository().commitBlocks(commit);
    assert.equal(result.status === 'head-moved' && result.head?.headIndex, 9);
  });

  it('names the anchoring block of a stale proof, the seal of a pending append gone, the block of a lost claim', async () => {
    dynamo.on(TransactWriteCommand).rejects(cancelled({ 3: failed }));
    assert.deepEqual(await repository().commitBlocks(commit), { status: 'proof-stale', blockPosition: 1 });
    dynamo.on(TransactWriteCommand).rejects(cancelled({ 6: failed }));
    assert.deepEqual(await repository().commitBlocks(commit), { status: 'pending-gone', sealPosition: 1 }, 'the second seal: item 6, after a receipt');
    dynamo.on(TransactWriteCommand).rejects(cancelled({ 8: failed }));
    assert.deepEqual(await repository().commitBlocks(commit), { status: 'claim-lost', blockPosition: 1 });
  });

  it('answers conflict when only a concurrent transaction got in the way, and a 503 when DynamoDB is overloaded', async () => {
    dynamo.on(TransactWriteCommand).rejects(cancelled({ 0: { Code: 'TransactionConflict' } }));
    assert.deepEqual(await repository().commitBlocks(commit), { status: 'conflict' });
    dynamo.on(TransactWriteCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    await assert.rejects(repository().commitBlocks(commit), DependencyUnavailableError);
  });

  it('names the chains that already exist when creating several', async () => {
    const genesis = (name: string): Block => ({ ...block(0), chain_name: name });
    const newHead = (name: string) => ({
      chainName: name,
      kind: 'sub' as const,
      headIndex: 0,
      headHash: genesis(name).hash,
      eventCount: 0,
      proofCount: 0,
      lastProofHeadIndex: null,
      lastProofId: null,
      createdAt: 1,
      frontier: [],
    });
    // Items per chain: head, genesis block, list entry. The second chain's head (item 3) exists.
    dynamo.on(TransactWriteCommand).rejects(
      new TransactionCanceledException({
        message: 'x',
        $metadata: {},
        CancellationReasons: [{ Code: 'None' }, { Code: 'None' }, { Code: 'None' }, failed, { Code: 'None' }, { Code: 'None' }],
      }),
    );
    const result = await repository().createChains([
      { head: newHead('a'), genesis: genesis('a') },
      { head: newHead('b'), genesis: genesis('b') },
    ]);
    assert.deepEqual(result, { status: 'exists', chainNames: ['b'] });
  });
});

describe('the business repository reads a cancelled contract publication item by item', () => {
  beforeEach(() => dynamo.reset());
  const version = { contract_id: 'c', version: '1.0.0' } as never;
  const publish = () => createBusinessRepository({ client: documentClient, tableName: 'registry' }).publishContractVersion(version, { org_id: 'acme' });

  it('tells an id owned by another organization from a version that exists', async () => {
    dynamo.on(TransactWriteCommand).rejects(new TransactionCanceledException({ message: 'x', $metadata: {}, CancellationReasons: [failed, { Code: 'None' }] }));
    assert.equal(await publish(), 'owned_by_another');
    dynamo.on(TransactWriteCommand).rejects(new TransactionCanceledException({ message: 'x', $metadata: {}, CancellationReasons: [{ Code: 'None' }, failed] }));
    assert.equal(await publish(), 'version_exists');
    dynamo.on(TransactWriteCommand).resolves({});
    assert.equal(await publish(), 'created');
  });
});
