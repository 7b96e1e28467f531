/**
 * The records appends leave for each other (docs/appending.md): pending appends waiting for a combiner,
 * the receipts a combiner writes for them, and the Idempotency-Key records that make retries safe. Part
 * of the LedgerRepository port; shared/storage/ledger-repository.ts composes it with heads and blocks.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { LedgerRepository } from '../ledger/repository.ts';
import { translateStorageError } from './errors.ts';
import { IDEMPOTENCY_SK, idempotencyPk, pendingPk, RECEIPT_SK, receiptPk } from './keys.ts';
import { receiptFromItem, receiptItem, writerOf } from './ledger-items.ts';
import { send, writeIf } from './requests.ts';
import { Transaction } from './transactions.ts';

export type CombiningRecords = Pick<
  LedgerRepository,
  'putPending' | 'listPending' | 'withdrawPending' | 'rejectPending' | 'getReceipt' | 'claimIdempotency' | 'releaseIdempotency'
>;

export function createCombiningRecords({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): CombiningRecords {
  return {
    async putPending(chainName, pending, expiresAt) {
      await send(() =>
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: { pk: pendingPk(chainName, pending.ref.shard), sk: pending.ref.sk, drafts: pending.drafts, ttl: expiresAt },
          }),
        ),
      );
    },

    async listPending(chainName, shards, limit) {
      const pages = await Promise.all(
        Array.from({ length: shards }, (_, shard) =>
          send(() =>
            client.send(
              new QueryCommand({
                TableName: tableName,
                KeyConditionExpression: 'pk = :pk',
                ExpressionAttributeValues: { ':pk': pendingPk(chainName, shard) },
                ConsistentRead: true,
                Limit: limit,
              }),
            ),
          ).then((out) => (out.Items ?? []).map((item) => ({ ref: { shard, sk: String(item.sk) }, drafts: String(item.drafts) }))),
        ),
      );
      return pages
        .flat()
        .sort((a, b) => (a.ref.sk < b.ref.sk ? -1 : a.ref.sk > b.ref.sk ? 1 : a.ref.shard - b.ref.shard))
        .slice(0, limit);
    },

    async withdrawPending(chainName, ref) {
      return writeIf(
        client,
        new DeleteCommand({ TableName: tableName, Key: { pk: pendingPk(chainName, ref.shard), sk: ref.sk }, ConditionExpression: 'attribute_exists(pk)' }),
      );
    },

    async rejectPending(chainName, ref, reason) {
      const transaction = new Transaction<'gone'>()
        .add(
          { Delete: { TableName: tableName, Key: { pk: pendingPk(chainName, ref.shard), sk: ref.sk }, ConditionExpression: 'attribute_exists(pk)' } },
          'gone',
        )
        .add({ Put: { TableName: tableName, Item: receiptItem(chainName, ref, { status: 'rejected', reason }) } });
      try {
        await client.send(new TransactWriteCommand({ TransactItems: transaction.items }));
        return true;
      } catch (error) {
        if (transaction.cancellation(error)?.failed.length) return false; // gone: sealed or refused meanwhile
        throw translateStorageError(error);
      }
    },

    async getReceipt(chainName, ref) {
      const out = await send(() =>
        client.send(new GetCommand({ TableName: tableName, Key: { pk: receiptPk(chainName, writerOf(ref)), sk: RECEIPT_SK }, ConsistentRead: true })),
      );
      return out.Item ? receiptFromItem(out.Item) : undefined;
    },

    async claimIdempotency(claim, fingerprint, nowMs, untilMs, expiresAt) {
      try {
        await client.send(
          new PutCommand({
            TableName: tableName,
            Item: {
              pk: idempotencyPk(claim.id),
              sk: IDEMPOTENCY_SK,
              status: 'in-progress',
              fingerprint,
              claim_token: claim.token,
              claim_until_ms: untilMs,
              ttl: expiresAt,
            },
            // Free, or held by a request whose hold lapsed (it died): never over a finished one.
            ConditionExpression: 'attribute_not_exists(pk) OR (#status = :progress AND claim_until_ms < :now)',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':progress': 'in-progress', ':now': nowMs },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return { status: 'claimed' };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException) || !error.Item) throw translateStorageError(error);
        const item = unmarshall(error.Item);
        return item.status === 'done'
          ? { status: 'done', fingerprint: String(item.fingerprint), firstIndex: Number(item.first_index), count: Number(item.block_count) }
          : { status: 'in-progress', fingerprint: String(item.fingerprint), untilMs: Number(item.claim_until_ms) };
      }
    },

    async releaseIdempotency(claim) {
      // Done meanwhile, or held by another (the condition failed): not ours.
      await writeIf(
        client,
        new DeleteCommand({
          TableName: tableName,
          Key: { pk: idempotencyPk(claim.id), sk: IDEMPOTENCY_SK },
          ConditionExpression: 'claim_token = :token',
          ExpressionAttributeValues: { ':token': claim.token },
        }),
      );
    },
  };
}
