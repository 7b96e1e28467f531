/**
 * The DynamoDB repositories, offline, with aws-sdk-client-mock: what a cancelled transaction means is
 * read item by item (each item says what its failed condition means), never by counting positions, and
 * an overloaded DynamoDB becomes the retryable 503. The same repositories run against DynamoDB Local in
 * the integration suite; here each refusal DynamoDB can answer is produced on purpose.
 */
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { type CancellationReason, DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { DependencyUnavailableError } from '#shared/errors';
import { packRun } from '#shared/ledger/block-meta';
import type { RoundCommit } from '#shared/ledger/repository';
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
  records_from: 0,
  cursor: '',
  materialized: index,
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

const meta = (b: Block) => ({ index: b.index, hash: b.hash, timestamp: b.timestamp, nodes: b.index % 2 ? ['11'.repeat(32)] : [], ref: null, position: 0 });

/** A round of two blocks on head 7, their metadata on the head, the lease kept. */
const round: RoundCommit = {
  chainName: 'orders',
  writerId: 'w',
  nowMs: 1,
  expectedHeadIndex: 7,
  expectedCursor: '',
  mode: { untilMs: 5 },
  blocks: [block(8), block(9)],
  frontier: [],
  recent: { run: { prev: 'cd'.repeat(32), blocks: [meta(block(8)), meta(block(9))] } },
  cursor: '0000000000001#000000000001',
  materialized: 7,
};

/** The same with its records written in it, an anchor and a completed key: one transaction. */
const withExtras: RoundCommit = {
  ...round,
  mode: { direct: true },
  records: [block(8), block(9)],
  proofRecords: [{ blockPosition: 1, subChain: 'shipments', headIndex: 3, proofId: 'p' }],
  completions: [{ claim: { id: 'k', token: 't' }, blockPosition: 1, count: 1 }],
};

/** Items in the order the transaction sends them: head, 2 records, 1 proof, 1 completion. */
const ITEMS = 1 + 2 + 1 + 1;

function cancelled(failing: Record<number, CancellationReason>): TransactionCanceledException {
  return new TransactionCanceledException({
    message: 'Transaction cancelled',
    $metadata: {},
    CancellationReasons: Array.from({ length: ITEMS }, (_, i) => failing[i] ?? { Code: 'None' }),
  });
}

const failed: CancellationReason = { Code: 'ConditionalCheckFailed' };

describe('the ledger storage commits a round in one conditional write, and reads a refusal item by item', () => {
  beforeEach(() => {
    dynamo.reset();
    dynamo.on(GetCommand).resolves({ Item: headItem(9) });
  });
  const repository = () => createLedgerRepository({ client: documentClient, tableName: 'ledger' });

  it('commits a plain round with one conditional update of the head: its index, its cursor, the lease', async () => {
    dynamo.on(UpdateCommand).resolves({});
    assert.deepEqual(await repository().commitRound(round), { status: 'committed' });
    assert.equal(dynamo.commandCalls(TransactWriteCommand).length, 0, 'no transaction');
    const input = dynamo.commandCalls(UpdateCommand)[0]!.args[0].input;
    assert.match(input.ConditionExpression!, /head_index = :expected/);
    assert.match(input.ConditionExpression!, /sealed_to = :cursor/);
    assert.match(input.ConditionExpression!, /turn_holder = :writer/);
    assert.match(input.UpdateExpression!, /recent_blocks = /, "the blocks' metadata goes on the head");
    assert.match(input.UpdateExpression!, /REMOVE recent_round, recent_first, recent_last/, 'and no round item is named any more');
  });

  it("reads the head strongly, a waiting writer's look at it and a shard's seals eventually consistent (half the read units)", async () => {
    dynamo.on(QueryCommand).resolves({ Items: [] });
    const repo = repository();
    assert.equal((await repo.getHead('orders'))?.headIndex, 9);
    assert.equal((await repo.lookHead('orders'))?.headIndex, 9);
    await repo.readSeals('orders', 1, 10, 4);
    const [strong, look] = dynamo.commandCalls(GetCommand).map((c) => c.args[0].input);
    assert.equal(strong!.ConsistentRead, true);
    assert.equal(look!.ConsistentRead, false);
    assert.equal(dynamo.commandCalls(QueryCommand)[0]!.args[0].input.ConsistentRead, false);
  });

  it("reads a waiting writer's receipts newest first (its round is among the newest when it looks), and answers them oldest first", async () => {
    const run = (last: number) => ({
      prev: 'p'.repeat(64),
      blocks: [
        { index: last, hash: 'h'.repeat(64), timestamp: 1, nodes: Array.from({ length: last === 11 ? 2 : 0 }, () => 'n'.repeat(64)), ref: null, position: 0 },
      ],
    });
    dynamo.on(QueryCommand).resolves({ Items: [{ run: packRun(run(12)) }, { run: packRun(run(11)) }] });
    const runs = await repository().readNewestSegments('orders', 10, 4);
    const input = dynamo.commandCalls(QueryCommand)[0]!.args[0].input;
    assert.equal(input.ScanIndexForward, false, 'newest first');
    assert.equal(input.Limit, 4);
    assert.equal(input.ConsistentRead, false, 'half the read units');
    assert.deepEqual(
      runs.map((r) => r.blocks[0]!.index),
      [11, 12],
    );
    dynamo.on(QueryCommand).resolves({ Items: [] });
    await repository().readSeals('orders', 1, 10, 4);
    assert.equal(dynamo.commandCalls(QueryCommand)[1]!.args[0].input.ScanIndexForward, false, "a shard's seals newest first too");
  });

  it('answers head-moved with the head DynamoDB returned when its condition failed', async () => {
    dynamo.on(UpdateCommand).rejects(new ConditionalCheckFailedException({ message: 'x', $metadata: {}, Item: marshall(headItem(12)) }));
    const result = await repository().commitRound(round);
    assert.equal(result.status, 'head-moved');
    assert.equal(result.status === 'head-moved' && result.head?.headIndex, 12);
  });

  it('sends one transaction when records, an anchor or a key go with the commit', async () => {
    dynamo.on(TransactWriteCommand).resolves({});
    assert.deepEqual(await repository().commitRound(withExtras), { status: 'committed' });
    const items = dynamo.commandCalls(TransactWriteCommand)[0]!.args[0].input.TransactItems!;
    assert.equal(items.length, ITEMS);
    assert.match(items[0]!.Update!.ConditionExpression!, /attribute_not_exists\(turn_holder\) OR turn_expires_ms < :now/, 'direct: no live lease');
  });

  it('answers head-moved, a stale proof or a lost claim by the item whose condition failed', async () => {
    dynamo.on(TransactWriteCommand).rejects(cancelled({ 0: { ...failed, Item: marshall(headItem(12)) } }));
    const moved = await repository().commitRound(withExtras);
    assert.equal(moved.status === 'head-moved' && moved.head?.headIndex, 12);
    dynamo.on(TransactWriteCommand).rejects(cancelled({ 3: failed }));
    assert.deepEqual(await repository().commitRound(withExtras), { status: 'proof-stale', blockPosition: 1 });
    dynamo.on(TransactWriteCommand).rejects(cancelled({ 4: failed }));
    assert.deepEqual(await repository().commitRound(withExtras), { status: 'claim-lost', blockPosition: 1 });
  });

  it('answers conflict when only a concurrent transaction got in the way, and a 503 when DynamoDB is overloaded', async () => {
    dynamo.on(TransactWriteCommand).rejects(cancelled({ 0: { Code: 'TransactionConflict' } }));
    assert.deepEqual(await repository().commitRound(withExtras), { status: 'conflict' });
    dynamo.on(TransactWriteCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    await assert.rejects(repository().commitRound(withExtras), DependencyUnavailableError);
    dynamo.on(UpdateCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    await assert.rejects(repository().commitRound(round), DependencyUnavailableError);
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
    // Items per chain: head, genesis record, list entry. The second chain's head (item 3) exists.
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

  it('sends a transaction again when only another transaction got in the way, and answers a retryable 503 if that lasts (never a 500)', async () => {
    const conflict = () =>
      new TransactionCanceledException({ message: 'x', $metadata: {}, CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }] });
    dynamo.on(TransactWriteCommand).rejectsOnce(conflict()).rejectsOnce(conflict()).resolves({});
    assert.equal(await publish(), 'created');
    assert.equal(dynamo.commandCalls(TransactWriteCommand).length, 3, 'sent again twice');
    dynamo.reset();
    dynamo.on(TransactWriteCommand).rejects(conflict());
    await assert.rejects(publish(), (error: Error) => error instanceof DependencyUnavailableError && error.notApplied);
    assert.equal(dynamo.commandCalls(TransactWriteCommand).length, 5, 'the first and four more, then the 503');
  });
});

describe('single writes that the AWS SDK may have sent twice, or that meet a transaction', () => {
  it("a pending append refused on the SDK's retry is ours when the item there carries this call's token, and another's otherwise", async () => {
    const repository = createLedgerRepository({ client: documentClient, tableName: 'ledger' });
    let sent: Record<string, unknown> | undefined;
    // The first attempt landed, its answer was lost: what the retry meets is the item with our own token.
    dynamo.on(PutCommand).callsFake((input) => {
      sent = input.Item;
      throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {}, Item: marshall(input.Item) });
    });
    assert.equal(await repository.putPending('orders', { ref: { shard: 0, sk: 'k1' }, drafts: '[]' }, 1), true);
    assert.equal(typeof sent?.put_token, 'string');
    // Another writer's append under that key: its token is not ours.
    dynamo.on(PutCommand).callsFake((input) => {
      throw new ConditionalCheckFailedException({
        message: 'The conditional request failed',
        $metadata: {},
        Item: marshall({ ...input.Item, put_token: 'another' }),
      });
    });
    assert.equal(await repository.putPending('orders', { ref: { shard: 0, sk: 'k1' }, drafts: '[]' }, 1), false);
  });

  it('a lease take that meets a transaction holding the head is sent again, not answered 500', async () => {
    const repository = createLedgerRepository({ client: documentClient, tableName: 'ledger' });
    const conflict = Object.assign(new Error('Transaction is ongoing for the item'), { name: 'TransactionConflictException' });
    const head = { pk: 'CHAIN#orders', sk: 'HEAD', chain_name: 'orders', kind: 'sub', head_index: 0, head_hash: '00', turn_holder: 'me', turn_expires_ms: 5 };
    dynamo.on(UpdateCommand).rejectsOnce(conflict).rejectsOnce(conflict).resolves({ Attributes: head });
    const lease = await repository.acquireLease('orders', 'me', 1, 5);
    assert.equal(lease.acquired, true);
    assert.equal(dynamo.commandCalls(UpdateCommand).length, 3);
  });
});
