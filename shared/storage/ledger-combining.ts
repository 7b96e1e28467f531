/**
 * The records appends leave for each other (docs/appending.md): pending appends waiting for a leader,
 * the refusals a leader writes for the ones it cannot seal, and the Idempotency-Key records that make
 * retries safe. Part of the LedgerStorage port; shared/storage/ledger-repository.ts composes it.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { nextPendingSk } from '../ledger/block-meta.ts';
import type { BoundAppend, LedgerStorage, PendingAppend } from '../ledger/repository.ts';
import { translateStorageError } from './errors.ts';
import { IDEMPOTENCY_SK, idempotencyPk, pendingPk, refusalKey } from './keys.ts';
import { batchGetAll, putOnce, retryConflicts, send, writeIf } from './requests.ts';

export type CombiningRecords = Pick<
  LedgerStorage,
  | 'putPending'
  | 'listPending'
  | 'getPendings'
  | 'putRefusal'
  | 'getRefusal'
  | 'claimIdempotency'
  | 'bindIdempotency'
  | 'completeIdempotency'
  | 'releaseIdempotency'
>;

/** The pending append a key's record is bound to, if any. */
function boundOf(item: Record<string, unknown> | undefined): BoundAppend | undefined {
  if (!item || item.bound_sk === undefined) return undefined;
  return {
    ref: { shard: Number(item.bound_shard), sk: String(item.bound_sk) },
    after: Number(item.bound_after),
    token: String(item.bound_token),
    fingerprint: String(item.bound_fingerprint),
  };
}

/** How long a refusal is kept for its writer to read (its append waits at most seconds). */
const REFUSAL_TTL_SECONDS = 3600;

export function createCombiningRecords({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): CombiningRecords {
  /** Updates a key's record if `claim` still holds it, in progress; false if it does not. */
  const whileHeld = (claim: { id: string; token: string }, update: string, values: Record<string, unknown>) =>
    writeIf(
      client,
      new UpdateCommand({
        TableName: tableName,
        Key: { pk: idempotencyPk(claim.id), sk: IDEMPOTENCY_SK },
        UpdateExpression: update,
        ConditionExpression: 'claim_token = :token AND #status = :progress',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ...values, ':token': claim.token, ':progress': 'in-progress' },
      }),
    );

  return {
    async putPending(chainName, pending, expiresAt) {
      // Never over another append's key: its writer would be answered with our blocks. Our own, landed with its
      // answer lost, is recognised (putOnce).
      return putOnce(client, tableName, { pk: pendingPk(chainName, pending.ref.shard), sk: pending.ref.sk, drafts: pending.drafts, ttl: expiresAt });
    },

    async listPending(chainName, shards, after, upTo, limit) {
      const truncatedAt = new Map<number, string>();
      const pages = await Promise.all(
        Array.from({ length: shards }, (_, shard) =>
          send(() =>
            client.send(
              new QueryCommand({
                TableName: tableName,
                KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
                ExpressionAttributeValues: { ':pk': pendingPk(chainName, shard), ':from': nextPendingSk(after), ':to': upTo },
                ConsistentRead: true,
                Limit: limit,
              }),
            ),
          ).then((out) => {
            const items = (out.Items ?? []).map((item): PendingAppend => ({ ref: { shard, sk: String(item.sk) }, drafts: String(item.drafts) }));
            if (out.LastEvaluatedKey && items.length > 0) truncatedAt.set(shard, items[items.length - 1]!.ref.sk);
            return items;
          }),
        ),
      );
      const appends = pages.flat().sort((a, b) => (a.ref.sk < b.ref.sk ? -1 : a.ref.sk > b.ref.sk ? 1 : a.ref.shard - b.ref.shard));
      return { appends, truncatedAt };
    },

    async getPendings(chainName, refs) {
      const found = new Map<string, string>();
      if (refs.length === 0) return found;
      const keys = [...new Map(refs.map((r) => [`${r.shard}|${r.sk}`, { pk: pendingPk(chainName, r.shard), sk: r.sk }])).values()];
      for (const item of await batchGetAll(client, tableName, keys, { expression: 'pk, sk, drafts', consistent: true })) {
        const shard = Number(String(item.pk).slice(String(item.pk).lastIndexOf('#') + 1));
        found.set(`${shard}|${String(item.sk)}`, String(item.drafts));
      }
      return found;
    },

    async putRefusal(chainName, ref, reason) {
      await send(() =>
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: { ...refusalKey(chainName, ref.shard, ref.sk), reason, ttl: Math.floor(Date.now() / 1000) + REFUSAL_TTL_SECONDS },
          }),
        ),
      );
    },

    async getRefusal(chainName, ref) {
      const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: refusalKey(chainName, ref.shard, ref.sk), ConsistentRead: true })));
      return out.Item ? String(out.Item.reason) : undefined;
    },

    async claimIdempotency(claim, fingerprint, nowMs, untilMs, expiresAt, first) {
      const key = { pk: idempotencyPk(claim.id), sk: IDEMPOTENCY_SK };
      if (first) {
        // A new key (the usual case): made bound to the append key asked for, in one write. A record already
        // there (a retry) is claimed below, where a record taken over keeps what it names.
        try {
          await retryConflicts(() =>
            client.send(
              new PutCommand({
                TableName: tableName,
                Item: {
                  ...key,
                  status: 'in-progress',
                  fingerprint,
                  claim_token: claim.token,
                  claim_until_ms: untilMs,
                  ttl: expiresAt,
                  bound_shard: first.ref.shard,
                  bound_sk: first.ref.sk,
                  bound_after: first.after,
                  bound_token: claim.token,
                  bound_fingerprint: fingerprint,
                },
                ConditionExpression: 'attribute_not_exists(pk)',
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              }),
            ),
          );
          return { status: 'claimed', first: true };
        } catch (error) {
          if (!(error instanceof ConditionalCheckFailedException) || !error.Item) throw translateStorageError(error);
          // Ours: an earlier attempt of this request landed, its answer lost, and the SDK sent it again.
          if (unmarshall(error.Item).claim_token === claim.token) return { status: 'claimed', first: true };
        }
      }
      try {
        // An update, not a put: a record taken over keeps the pending append it is bound to, and an SDK retry
        // of this very request (its answer lost) still finds it there.
        const out = await retryConflicts(() =>
          client.send(
            new UpdateCommand({
              TableName: tableName,
              Key: key,
              UpdateExpression: 'SET #status = :progress, fingerprint = :fingerprint, claim_token = :token, claim_until_ms = :until, #ttl = :ttl',
              // Free, or held by a request whose hold lapsed (it died, or let go): never over a finished one.
              ConditionExpression: 'attribute_not_exists(pk) OR (#status = :progress AND claim_until_ms < :now)',
              ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
              ExpressionAttributeValues: {
                ':progress': 'in-progress',
                ':fingerprint': fingerprint,
                ':token': claim.token,
                ':until': untilMs,
                ':ttl': expiresAt,
                ':now': nowMs,
              },
              ReturnValues: 'ALL_OLD',
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            }),
          ),
        );
        const bound = boundOf(out.Attributes);
        return bound ? { status: 'claimed', bound } : { status: 'claimed' };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException) || !error.Item) throw translateStorageError(error);
        const item = unmarshall(error.Item);
        const bound = boundOf(item);
        // Our own claim: an earlier attempt of this request landed, its answer lost, and the SDK sent it again.
        if (item.claim_token === claim.token && item.status === 'in-progress') return bound ? { status: 'claimed', bound } : { status: 'claimed' };
        if (item.status === 'done')
          return { status: 'done', fingerprint: String(item.fingerprint), firstIndex: Number(item.first_index), count: Number(item.block_count) };
        return { status: 'in-progress', fingerprint: String(item.fingerprint), untilMs: Number(item.claim_until_ms), ...(bound ? { bound } : {}) };
      }
    },

    async bindIdempotency(claim, ref, after) {
      return whileHeld(claim, 'SET bound_shard = :shard, bound_sk = :sk, bound_after = :after, bound_token = :token, bound_fingerprint = fingerprint', {
        ':shard': ref.shard,
        ':sk': ref.sk,
        ':after': after,
      });
    },

    async completeIdempotency(claim, firstIndex, count) {
      return writeIf(client, new UpdateCommand({ TableName: tableName, ...completion(claim, firstIndex, count) }));
    },

    async releaseIdempotency(claim) {
      // Done meanwhile, or held by another (the condition failed): not ours. The bound append stays on the
      // record: whoever takes the key next settles it (withdrawn, or its blocks the answer).
      await whileHeld(claim, 'SET claim_until_ms = :lapsed', { ':lapsed': 0 });
    },
  };
}

/**
 * The update that records a key's answer (`count` blocks from `firstIndex`), on the condition that `claim`
 * still holds the record: alone (a leader, after its round's commit) or in a commit's transaction.
 */
export function completion(claim: { id: string; token: string }, firstIndex: number, count: number) {
  return {
    Key: { pk: idempotencyPk(claim.id), sk: IDEMPOTENCY_SK },
    UpdateExpression: 'SET #status = :done, first_index = :first, block_count = :count REMOVE claim_token, claim_until_ms',
    ConditionExpression: 'claim_token = :token',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':done': 'done', ':first': firstIndex, ':count': count, ':token': claim.token },
  };
}
