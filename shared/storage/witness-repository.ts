/**
 * What the witnesses cosigned, in the ledger table. A chain's items sit in one of 16 partitions
 * (`WITNESS#<n>`, n from the chain's name), so thousands of chains witnessed each second do not meet on one:
 *
 *   sk `<chain>#w#<witness>`  the witness's latest cosignature of the chain {size, root, line, at}
 *   sk `<chain>#turn`         until when the chain's attempt turn is taken {until}
 *   pk `WITNESSES#<n>`, sk `<witness>`: per witness, its cosignatures and failures counted, and the last size
 *                             it cosigned, for /metrics (read by summing the 16 partitions)
 *
 * Per attempt (at most one per chain per interval): the turn (1 write), one cosignature item and one
 * count per witness (2 writes each), and one Query of the chain's items. Serving a witnessed checkpoint
 * reads that Query (one read unit).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createHash } from 'node:crypto';
import type { Cosigned, WitnessStateStore } from '../tlog/witnessing.ts';
import { translateStorageError } from './errors.ts';
import { send } from './requests.ts';

const SHARDS = 16;
const shardOf = (chainName: string) => createHash('sha256').update(chainName).digest().readUInt16BE(0) % SHARDS;

export function createWitnessRepository({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): WitnessStateStore {
  const pk = (chainName: string) => `WITNESS#${shardOf(chainName)}`;
  /** A conditional write that lost is an answer, not an error. */
  const conditional = async (run: () => Promise<unknown>): Promise<boolean> => {
    try {
      await run();
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw translateStorageError(error);
    }
  };
  return {
    async cosigned(chainName) {
      const out = await send(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
            ExpressionAttributeValues: { ':pk': pk(chainName), ':prefix': `${chainName}#w#` },
          }),
        ),
      );
      return (out.Items ?? []).map((item) => ({
        witness: String(item.witness),
        size: Number(item.size),
        root: String(item.root),
        line: String(item.line),
        at: Number(item.at),
      }));
    },

    async keep(chainName, cosigned: Cosigned) {
      await conditional(() =>
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: { pk: pk(chainName), sk: `${chainName}#w#${cosigned.witness}`, ...cosigned },
            ConditionExpression: 'attribute_not_exists(pk) OR #size <= :size',
            ExpressionAttributeNames: { '#size': 'size' },
            ExpressionAttributeValues: { ':size': cosigned.size },
          }),
        ),
      );
    },

    claim(chainName, nowMs, untilMs) {
      return conditional(() =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { pk: pk(chainName), sk: `${chainName}#turn` },
            UpdateExpression: 'SET #until = :until',
            ConditionExpression: 'attribute_not_exists(pk) OR #until <= :now',
            ExpressionAttributeNames: { '#until': 'until' },
            ExpressionAttributeValues: { ':until': untilMs, ':now': nowMs },
          }),
        ),
      );
    },

    async count(witness, outcome, size) {
      await send(() =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { pk: `WITNESSES#${Math.floor(Math.random() * SHARDS)}`, sk: witness },
            UpdateExpression: outcome === 'cosigned' ? 'ADD cosigned :one SET last_size = :size, last_at = :at' : 'ADD failures :one',
            ExpressionAttributeValues: outcome === 'cosigned' ? { ':one': 1, ':size': size, ':at': Date.now() } : { ':one': 1 },
          }),
        ),
      );
    },

    async summary() {
      const parts = await Promise.all(
        Array.from({ length: SHARDS }, (_, n) =>
          send(() =>
            client.send(new QueryCommand({ TableName: tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': `WITNESSES#${n}` } })),
          ),
        ),
      );
      const byWitness = new Map<string, { witness: string; lastSize: number; lastAt: number; cosigned: number; failures: number }>();
      for (const item of parts.flatMap((p) => p.Items ?? [])) {
        const name = String(item.sk);
        const sum = byWitness.get(name) ?? { witness: name, lastSize: 0, lastAt: 0, cosigned: 0, failures: 0 };
        sum.cosigned += Number(item.cosigned ?? 0);
        sum.failures += Number(item.failures ?? 0);
        if (Number(item.last_at ?? 0) > sum.lastAt) {
          sum.lastAt = Number(item.last_at);
          sum.lastSize = Number(item.last_size);
        }
        byWitness.set(name, sum);
      }
      return [...byWitness.values()].map(({ lastAt: _lastAt, ...rest }) => rest);
    },
  };
}
