/**
 * Data subjects' keys in the registry table (shared/subjects/subjects.ts): one item per subject, holding
 * its data key wrapped, never in the clear. Erasing removes the wrapped key from the item, in one
 * conditional update that also records who erased it, when and why; the item stays as that record.
 */
import { createHash } from 'node:crypto';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { StoredSubject, SubjectRepository } from '../ledger/subject-port.ts';
import { subjectKey } from './keys.ts';
import { send, writeIf } from './requests.ts';

/** A subject's private value, listed for its erasure: an item beside the subject's, named by the SHA-256 of its ref. */
const PRIVATE_VALUE_PREFIX = 'PRIVATE#';
const privateValueKey = (subjectId: string, ref: string) => ({
  pk: subjectKey(subjectId).pk,
  sk: `${PRIVATE_VALUE_PREFIX}${createHash('sha256').update(ref, 'utf8').digest('hex')}`,
});

export function createSubjectRepository({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): SubjectRepository {
  /** A conditional update of a subject's item; false when its condition failed. */
  const updateIf = (subjectId: string, update: Omit<UpdateCommandInput, 'TableName' | 'Key'>) =>
    writeIf(client, new UpdateCommand({ TableName: tableName, Key: subjectKey(subjectId), ...update }));

  return {
    async get(subjectId) {
      const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: subjectKey(subjectId), ConsistentRead: true })));
      const item = out.Item;
      if (!item) return undefined;
      const events = Number(item.events ?? 0);
      const payloads = item.payloads instanceof Set ? [...item.payloads].map(String).sort() : [];
      if (item.wrapped_key === undefined) {
        return {
          state: 'erased',
          subject_id: subjectId,
          erased_at: String(item.erased_at),
          erased_by: item.erased_by === null || item.erased_by === undefined ? null : String(item.erased_by),
          reason: String(item.reason ?? ''),
          events,
          payloads,
          ...(item.event_id !== undefined ? { event_id: String(item.event_id) } : {}),
        } satisfies StoredSubject;
      }
      return {
        state: 'active',
        wrapped_key: String(item.wrapped_key),
        kek: item.kek as { provider: string; key_id: string },
        created_at: String(item.created_at),
        events,
        payloads,
      } satisfies StoredSubject;
    },

    create: (subjectId, key) =>
      writeIf(
        client,
        new PutCommand({ TableName: tableName, Item: { ...subjectKey(subjectId), ...key, events: 0 }, ConditionExpression: 'attribute_not_exists(pk)' }),
      ),

    async countEvents(subjectId, events) {
      await updateIf(subjectId, {
        UpdateExpression: 'ADD events :n',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':n': events },
      });
    },

    async recordPayload(subjectId, cid) {
      // A string set: adding a CID twice keeps one.
      await updateIf(subjectId, {
        UpdateExpression: 'ADD payloads :cid',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':cid': new Set([cid]) },
      });
    },

    async recordPrivateValue(subjectId, ref) {
      // An item of its own in the subject's partition: a set on the subject's item would make its every read (one at
      // each erasable event) larger with each value, and stop at DynamoDB's 400 KB item.
      await send(() => client.send(new PutCommand({ TableName: tableName, Item: { ...privateValueKey(subjectId, ref), ref } })));
    },

    async privateValues(subjectId, limit) {
      // One page: an erasure deletes a bounded number of values a call, however many the subject has.
      const out = await send(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
            ExpressionAttributeValues: { ':pk': subjectKey(subjectId).pk, ':prefix': PRIVATE_VALUE_PREFIX },
            ConsistentRead: true,
            Limit: limit,
          }),
        ),
      );
      return (out.Items ?? []).map((item) => String(item.ref));
    },

    async forgetPrivateValues(subjectId, refs) {
      for (const ref of refs) await send(() => client.send(new DeleteCommand({ TableName: tableName, Key: privateValueKey(subjectId, ref) })));
    },

    async recordErasureEvent(subjectId, eventId) {
      await updateIf(subjectId, {
        UpdateExpression: 'SET event_id = :id',
        ConditionExpression: 'attribute_exists(erased_at) AND attribute_not_exists(event_id)',
        ExpressionAttributeValues: { ':id': eventId },
      });
    },

    erase: (subjectId, record) =>
      writeIf(
        client,
        new UpdateCommand({
          TableName: tableName,
          Key: subjectKey(subjectId),
          // The wrapped key goes; what stays says who erased the subject, when and why.
          UpdateExpression: 'REMOVE wrapped_key, kek SET erased_at = :at, erased_by = :by, reason = :reason',
          ConditionExpression: 'attribute_exists(wrapped_key)',
          ExpressionAttributeValues: { ':at': record.erased_at, ':by': record.erased_by, ':reason': record.reason },
        }),
      ),
  };
}
