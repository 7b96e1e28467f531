/**
 * The local stand-in for a Lambda event source mapping on the ledger table's stream: reads DynamoDB
 * Local's stream with the real Streams API (DescribeStream, GetShardIterator, GetRecords) and invokes the
 * broadcaster with the DynamoDB stream event shape, one batch at a time, in order per shard. `ready`
 * resolves once what was in the stream before the start has been passed over.
 *
 * As the cloud stack's event source mapping (infra/cdk/realtime.ts: `reportBatchItemFailures`, `retryAttempts` 3,
 * a dead-letter queue), a batch is taken up again from the first record the handler names in `batchItemFailures`,
 * and a batch that failed (thrown, or with a failure named) RETRY_ATTEMPTS times after its first try is passed over
 * with a message in its place of the dead-letter queue. Before, a failure named was ignored (the blocks it left were
 * never pushed) and a batch that always threw was read again for good: every push of the stack stopped behind it.
 */
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import { DYNAMODB_HTTP, DeadlineHttpHandler } from '#shared/aws-http';
import { QUIET_SDK_LOGGER } from '#shared/storage/client';

export type StreamHandler = (event: { Records: unknown[] }) => Promise<unknown>;

/** Retries of a failing batch before it is passed over (the mapping's `retryAttempts`). */
export const RETRY_ATTEMPTS = 3;

/** What a log says of a batch passed over. */
function discarded(batch: { first: string; last: string; records: number; cause: unknown }): string {
  const cause = batch.cause instanceof Error ? batch.cause.message : String(batch.cause);
  return `a batch of ${batch.records} records (${batch.first} to ${batch.last}) failed ${RETRY_ATTEMPTS + 1} times and was passed over, as the cloud's mapping sends it to its dead-letter queue: ${cause}`;
}

/**
 * The first record a handler's answer names as failed (`{ batchItemFailures: [{ itemIdentifier }] }`), if any. A list
 * with an identifier that is no record of the batch (empty, unknown) fails the whole batch, as Lambda reads it.
 */
function firstFailure(answer: unknown, sequences: string[]): string | undefined {
  const named = (answer as { batchItemFailures?: { itemIdentifier?: unknown }[] } | undefined)?.batchItemFailures;
  if (!Array.isArray(named) || named.length === 0) return undefined;
  const ids = named.map((f) => f?.itemIdentifier);
  if (ids.some((id) => typeof id !== 'string' || !sequences.includes(id))) return sequences[0];
  return sequences.find((sequence) => ids.includes(sequence));
}

/** The wait before a failed batch's next try: 100 ms, doubled at each, as Lambda backs off (not to the millisecond). */
const retryWaitMs = (tries: number) => 100 * 2 ** (tries - 1);

export interface StreamPoller {
  /** Reads the stream at once, and at its base rate again (a request that may have written was just answered). */
  nudge(): void;
  stop(): Promise<void>;
}

/** Resolves when no shard is still being fast-forwarded. */
async function settled(skipping: Set<string>): Promise<void> {
  while (skipping.size > 0) await new Promise((r) => setTimeout(r, 20));
}

/** How long stopping waits for the poll under way. */
const STOP_WAIT_MS = 3_000;

/**
 * How often an idle stream is read: Lambda polls each shard of a DynamoDB stream at a base rate of four times a
 * second (AWS Lambda developer guide, "Polling and batching streams"), and reads again at once while records keep
 * coming. At ten a second, an idle stack's polling took 3.5 % of a core in the launcher and 3.9 % in DynamoDB Local.
 */
const IDLE_POLL_MS = 250;
/**
 * How often a stream idle for a while is read: after IDLE_POLLS_BEFORE_BACKOFF empty reads the wait doubles, up to
 * this. The launcher nudges the poller after every request that may have written (infra/local/main.ts), so pushes
 * of writes made through this stack go out at once; only writes from elsewhere (another process on the same
 * tables) wait up to this long. Polled four times a second for good, an idle stack's stream took 4.4 % of a core in
 * the launcher and 2.8 % in DynamoDB Local here (1.32 s and 0.84 s of CPU in 30 s idle), the whole life of every
 * stack a test run starts.
 */
const IDLE_POLL_MAX_MS = 1_000;
const IDLE_POLLS_BEFORE_BACKOFF = 4;
/** Failed listings of the stream at its start before the poller is ready without one. */
const FIRST_LISTING_TRIES = 3;
/** How often the stream's shards are listed again (DynamoDB Local opens new ones as it goes). */
const DISCOVER_MS = 2_000;

export async function startStreamPoller(options: {
  admin: DynamoDBClient;
  region: string;
  endpoint: string;
  /** Who reads the stream (default: this process's AWS credentials, or dummy local ones). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  tableName: string;
  handler: StreamHandler;
  intervalMs?: number;
  onError?: (error: unknown) => void;
  /** A batch passed over after its retries (where the cloud's mapping sends it to the dead-letter queue), said for a log. */
  onDiscard?: (message: string) => void;
}): Promise<StreamPoller> {
  const table = await options.admin.send(new DescribeTableCommand({ TableName: options.tableName }));
  const streamArn = table.Table?.LatestStreamArn;
  if (!streamArn) throw new Error(`table ${options.tableName} has no stream`);
  const streams = new DynamoDBStreamsClient({
    region: options.region,
    endpoint: options.endpoint,
    credentials: options.credentials ?? {
      accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local',
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    },
    logger: QUIET_SDK_LOGGER,
    // A stream read that is never answered fails at its timeout (and the loop goes on), never stops the feed.
    requestHandler: new DeadlineHttpHandler(DYNAMODB_HTTP),
  });
  const interval = options.intervalMs ?? IDLE_POLL_MS;
  // Shards being read → their iterator; shards already read to the end are remembered and skipped.
  const iterators = new Map<string, string>();
  const finished = new Set<string>();
  /** The last sequence number delivered per shard: where to resume when an iterator goes bad. */
  const delivered = new Map<string, string>();
  /** Shards being read through what was there before the start, without delivering it. */
  const skipping = new Set<string>();
  let listingFailures = 0;
  /** Failed tries of the batch each shard is at. */
  const failures = new Map<string, number>();
  let first = true;
  /** The stream's shards listed once: what was there before the start is known (or the stream could not be read). */
  let firstDiscovered!: () => void;
  const discovered = new Promise<void>((resolve) => {
    firstDiscovered = resolve;
  });
  let running = true;
  /** Empty reads in a row, and the wake-up of the wait between reads (a nudge ends it early). */
  let emptyPolls = 0;
  let wake: (() => void) | undefined;
  /** A nudge that came while a read was under way: read again at once. */
  let nudged = false;

  async function discover(): Promise<void> {
    const described = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    for (const shard of described.StreamDescription?.Shards ?? []) {
      const id = shard.ShardId!;
      if (iterators.has(id) || finished.has(id)) continue;
      // At start, only what happens from now on: closed shards are done, open ones are read through to
      // their end without delivering (so that the last sequence number is known), as LATEST would but
      // with a place to resume from. Shards that appear later are read from their start.
      if (first && shard.SequenceNumberRange?.EndingSequenceNumber) {
        finished.add(id);
        continue;
      }
      if (first) skipping.add(id);
      const it = await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: id, ShardIteratorType: 'TRIM_HORIZON' }));
      if (it.ShardIterator) iterators.set(id, it.ShardIterator);
    }
    first = false;
    firstDiscovered();
  }

  const loop = (async () => {
    let discoveredAt = Number.NEGATIVE_INFINITY;
    while (running) {
      let delivering = false;
      try {
        if (performance.now() - discoveredAt >= DISCOVER_MS) {
          await discover();
          discoveredAt = performance.now();
        }
        for (const [shard, iterator] of [...iterators]) {
          let out;
          try {
            out = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 100 }));
          } catch (error) {
            const name = (error as Error).name;
            if (name !== 'TrimmedDataAccessException' && name !== 'ExpiredIteratorException') throw error;
            // DynamoDB Local sometimes refuses an iterator it handed out; resume right after what was delivered.
            const last = delivered.get(shard);
            const fresh = await streams.send(
              new GetShardIteratorCommand(
                last
                  ? { StreamArn: streamArn, ShardId: shard, ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: last }
                  : { StreamArn: streamArn, ShardId: shard, ShardIteratorType: 'TRIM_HORIZON' },
              ),
            );
            if (fresh.ShardIterator) iterators.set(shard, fresh.ShardIterator);
            continue;
          }
          if (skipping.has(shard)) {
            // Passed over at once, not at the idle rate: a stream of 3,000 records had held the start 27 s (a review).
            if (out.Records?.length) {
              delivered.set(shard, out.Records[out.Records.length - 1]!.dynamodb!.SequenceNumber!);
              delivering = true;
            } else skipping.delete(shard);
          } else if (out.Records?.length) {
            const sequences = out.Records.map((r) => r.dynamodb!.SequenceNumber!);
            let failed: { from: string | undefined; cause: unknown } | undefined;
            try {
              const answer = await options.handler({
                Records: out.Records.map((r) => ({ ...r, eventSourceARN: streamArn, awsRegion: options.region, eventSource: 'aws:dynamodb' })),
              });
              const from = firstFailure(answer, sequences);
              if (from !== undefined) failed = { from, cause: new Error(`the handler named record ${from} failed`) };
            } catch (error) {
              failed = { from: undefined, cause: error };
            }
            delivering = true;
            const tries = (failures.get(shard) ?? 0) + 1;
            if (failed && tries <= RETRY_ATTEMPTS) {
              failures.set(shard, tries);
              options.onError?.(failed.cause);
              // Again from the first record not done (thrown: the whole batch), after a wait that doubles.
              await new Promise((r) => setTimeout(r, retryWaitMs(tries)));
              const from = failed.from ?? sequences[0]!;
              const again = await streams.send(
                new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard, ShardIteratorType: 'AT_SEQUENCE_NUMBER', SequenceNumber: from }),
              );
              if (again.ShardIterator) iterators.set(shard, again.ShardIterator);
              const before = sequences.indexOf(from) - 1;
              if (before >= 0) delivered.set(shard, sequences[before]!);
              continue;
            }
            failures.delete(shard);
            if (failed) options.onDiscard?.(discarded({ first: sequences[0]!, last: sequences.at(-1)!, records: sequences.length, cause: failed.cause }));
            delivered.set(shard, sequences.at(-1)!);
          }
          if (out.NextShardIterator) iterators.set(shard, out.NextShardIterator);
          else {
            iterators.delete(shard);
            // A shard that closed while it was passed over is passed over (the start waited for it for good).
            skipping.delete(shard);
            finished.add(shard);
            discoveredAt = Number.NEGATIVE_INFINITY;
          }
        }
      } catch (error) {
        options.onError?.(error);
        // A stream that cannot be listed is tried again; after FIRST_LISTING_TRIES it holds the start up no longer
        // (as before), and its first listing passes over what it then finds.
        if (first && ++listingFailures >= FIRST_LISTING_TRIES) firstDiscovered();
      }
      // Records came: read on at once, as Lambda does; an idle stream is read at its base rate, then less often.
      if (delivering || nudged) {
        emptyPolls = 0;
        nudged = false;
      } else {
        emptyPolls += 1;
        const backoff = Math.max(0, emptyPolls - IDLE_POLLS_BEFORE_BACKOFF);
        const wait = Math.min(interval * 2 ** Math.min(backoff, 8), Math.max(interval, IDLE_POLL_MAX_MS));
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    }
  })();

  // Ready once what was there before the start is passed over: a write made as this returns is delivered. (It had
  // returned before the first listing of the shards, so a write made at once was taken for one made before the start.)
  await Promise.race([discovered, loop]);
  await settled(skipping);
  return {
    nudge() {
      emptyPolls = 0;
      if (wake) wake();
      else nudged = true;
    },
    async stop() {
      running = false;
      wake?.();
      // The loop ends after the poll under way, unless its handler never returns: then stop without it.
      await Promise.race([loop, new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref())]);
      streams.destroy();
    },
  };
}
