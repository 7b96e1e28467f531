/**
 * Shared metric counters in the registry table: pk = METRICS#<shard>, sk = COUNTERS, one number
 * attribute per figure, added to with ADD (atomic, no read). Each instance adds to one shard, and each
 * shard is its own partition: with every instance of a busy service flushing every few seconds, one
 * partition (1,000 write units/s) would be the whole service's ceiling. A scrape reads every shard in
 * one BatchGetItem and sums them, with the items of tables written by earlier versions (pk = METRICS,
 * sk = shard-<n>), which are read but no longer written.
 */
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { BUCKETS, addTotals, emptyTotals, type SharedCounters, type Totals } from '../metrics/metrics.ts';
import { batchGetAll, queryAll, send } from './requests.ts';

const LEGACY_METRICS_PARTITION = 'METRICS';
export const METRICS_SHARDS = 32;
const COUNTERS_SK = 'COUNTERS';
const shardKey = (shard: number) => ({ pk: `METRICS#${shard}`, sk: COUNTERS_SK });
/** Integration failures are kept per function: one attribute each, `integration_errors__<function>`. */
const INTEGRATION_ERRORS = 'integration_errors__';
/** Read cache counts, per kind: `cache_hits__<kind>`, `cache_misses__<kind>`. */
const CACHE_HITS = 'cache_hits__';
const CACHE_MISSES = 'cache_misses__';
const prefixed = (prefix: string, counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).map(([key, n]) => [`${prefix}${key}`, n]));
const unprefixed = (prefix: string, item: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(item)
      .filter(([name]) => name.startsWith(prefix))
      .map(([name, n]) => [name.slice(prefix.length), Number(n)]),
  );

export function createSharedCounters({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): SharedCounters {
  return {
    shards: METRICS_SHARDS,
    async add(shard, delta) {
      const fields: Record<string, number> = {
        success: delta.success,
        failed: delta.failed,
        latency_sum: delta.latencySum,
        events_appended: delta.eventsAppended,
        conflicts: delta.conflicts,
        commits: delta.commits,
        cold_starts: delta.coldStarts,
        dynamo_requests: delta.dynamoRequests,
        dynamo_transact_writes: delta.dynamoTransactWrites,
        dynamo_transact_items: delta.dynamoTransactItems,
        lease_takes: delta.leaseTakes,
        pending_reads: delta.pendingReads,
        round_writes: delta.roundWrites,
        rewrites: delta.rewrites,
        recoveries: delta.recoveries,
        ...Object.fromEntries(delta.buckets.map((n, i) => [`bucket_${i}`, n])),
        ...prefixed(INTEGRATION_ERRORS, delta.integrationErrors),
        ...prefixed(CACHE_HITS, delta.cacheHits),
        ...prefixed(CACHE_MISSES, delta.cacheMisses),
      };
      const names = Object.keys(fields);
      await send(() =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: shardKey(shard),
            UpdateExpression: `ADD ${names.map((_n, i) => `#f${i} :v${i}`).join(', ')}`,
            ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#f${i}`, n])),
            ExpressionAttributeValues: Object.fromEntries(names.map((n, i) => [`:v${i}`, fields[n]])),
          }),
        ),
      );
    },
    async read() {
      const items = await queryAll(client, {
        TableName: tableName,
        KeyConditionExpression: 'pk = :p',
        ExpressionAttributeValues: { ':p': LEGACY_METRICS_PARTITION },
      });
      items.push(
        ...(await batchGetAll(
          client,
          tableName,
          Array.from({ length: METRICS_SHARDS }, (_, i) => shardKey(i)),
        )),
      );
      return items.reduce<Totals>(
        (sum, item) =>
          addTotals(sum, {
            success: Number(item.success ?? 0),
            failed: Number(item.failed ?? 0),
            latencySum: Number(item.latency_sum ?? 0),
            buckets: Array.from({ length: BUCKETS.length + 1 }, (_, i) => Number(item[`bucket_${i}`] ?? 0)),
            eventsAppended: Number(item.events_appended ?? 0),
            conflicts: Number(item.conflicts ?? 0),
            commits: Number(item.commits ?? 0),
            coldStarts: Number(item.cold_starts ?? 0),
            dynamoRequests: Number(item.dynamo_requests ?? 0),
            dynamoTransactWrites: Number(item.dynamo_transact_writes ?? 0),
            dynamoTransactItems: Number(item.dynamo_transact_items ?? 0),
            leaseTakes: Number(item.lease_takes ?? 0),
            pendingReads: Number(item.pending_reads ?? 0),
            roundWrites: Number(item.round_writes ?? 0),
            rewrites: Number(item.rewrites ?? 0),
            recoveries: Number(item.recoveries ?? 0),
            integrationErrors: unprefixed(INTEGRATION_ERRORS, item),
            cacheHits: unprefixed(CACHE_HITS, item),
            cacheMisses: unprefixed(CACHE_MISSES, item),
          }),
        emptyTotals(),
      );
    },
  };
}
