/**
 * The one DynamoDB client of a process. The same code talks to AWS, LocalStack and DynamoDB Local;
 * only the endpoint differs.
 */
import { DynamoDB, DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { randomUUID } from 'node:crypto';
import { DYNAMODB_HTTP, DeadlineHttpHandler } from '../aws-http.ts';
import type { CapacityMeter } from './capacity.ts';
import { attemptChangedNothing, markNeverApplied } from './errors.ts';
import { beforeRead, chargeReads, countingReads, READ_UNIT_BYTES } from '../read-allowance.ts';

export interface DynamoClientOptions {
  region: string;
  /** Set for DynamoDB Local and LocalStack; unset for AWS. */
  endpoint?: string | undefined;
  /**
   * The access key id a local endpoint is called with (SVC_DYNAMODB_ACCESS_KEY_ID): DynamoDB Local keeps one database per
   * access key id, and the launcher's is its data dir's own. Unset: the environment's credentials, else `local`.
   */
  accessKeyId?: string | undefined;
  /** One attempt's timeout (SVC_DYNAMODB_ATTEMPT_TIMEOUT_MS); default 5 s. */
  attemptTimeoutMs?: number | undefined;
  /**
   * Another HTTP handler than the deadline-aware one (the deterministic simulation's network, which keeps
   * the same contract: attempts that time out, requests aborted at the invocation's deadline).
   */
  requestHandler?: DynamoDBClientConfig['requestHandler'];
  /**
   * false: requests go unsigned. Only for the deterministic simulation, whose simulated DynamoDB checks no
   * signature: SigV4 signing (canonical request, HMAC chain) was about a tenth of its CPU.
   */
  sign?: boolean;
}

/** SigV4 with a signer that signs nothing (the simulation's): the SDK's identity and auth steps run as usual. */
const UNSIGNED: DynamoDBClientConfig['httpAuthSchemes'] = [
  {
    schemeId: 'aws.auth#sigv4',
    identityProvider: (config) => config.getIdentityProvider('aws.auth#sigv4'),
    signer: { sign: async (request) => request },
  },
];

/**
 * The SDK's default logger is a no-op that still has `info` and `error`, and its logger middleware calls
 * `logger?.info?.({input: filter(input), output: filter(output)})`: every request walks its input and
 * output through the sensitive-data filter to log nothing (up to 8 % of the service's CPU in the
 * benchmark's profile). Without `info` and `error` the call short-circuits. The service logs failures itself.
 * Every AWS client of the service is given this logger.
 */
export const QUIET_SDK_LOGGER = { trace() {}, debug() {}, warn() {} } as unknown as NonNullable<DynamoDBClientConfig['logger']>;

/**
 * Credentials for a local DynamoDB (DynamoDB Local, LocalStack): it checks no secret, but DynamoDB Local keeps one
 * database per access key id, so the key names the database; `local` when none is named.
 */
export const localCredentials = (accessKeyId = 'local') => ({ accessKeyId, secretAccessKey: 'local' });

function clientConfig(options: DynamoClientOptions): DynamoDBClientConfig {
  const local = options.endpoint !== undefined;
  return {
    region: options.region,
    ...(local ? { endpoint: options.endpoint } : {}),
    // A local endpoint checks no secret, but keeps a database per access key id: the one named, else the environment's, else `local`.
    ...(local && (options.accessKeyId || !process.env.AWS_ACCESS_KEY_ID) ? { credentials: localCredentials(options.accessKeyId) } : {}),
    maxAttempts: 3,
    logger: QUIET_SDK_LOGGER,
    ...(options.sign === false ? { httpAuthSchemes: UNSIGNED } : {}),
    // Each attempt fails after 5 s without an answer (and is retried); the invocation's deadline aborts the
    // rest (shared/aws-http.ts). Without this a DynamoDB that never answered held the instance to its timeout.
    requestHandler:
      options.requestHandler ??
      new DeadlineHttpHandler({ ...DYNAMODB_HTTP, ...(options.attemptTimeoutMs ? { requestTimeoutMs: options.attemptTimeoutMs } : {}) }),
  };
}

/**
 * What this process (a Lambda instance, or the local launcher) asked DynamoDB, counted by an SDK
 * middleware on every client made here: every request, and the write transactions among them. /metrics
 * adds them up across instances; the bench divides them by the events appended.
 */
export const dynamoRequestCounts = { requests: 0, transactWrites: 0, transactItems: 0 };

let meter: CapacityMeter | undefined;
/** A write DynamoDB acknowledged, as it was sent (marshalled), for the local journal. */
export interface JournaledWrite {
  command: 'TransactWriteItemsCommand' | 'PutItemCommand' | 'UpdateItemCommand' | 'DeleteItemCommand' | 'BatchWriteItemCommand';
  input: Record<string, unknown>;
}

const JOURNALED = new Set<string>(['TransactWriteItemsCommand', 'PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand']);

let journal: ((write: JournaledWrite) => void) | undefined;

/**
 * Hands every write this process makes and DynamoDB acknowledges (transactions, single items, batches; as
 * sent) to `write` before the caller sees the answer: the local journal (shared/storage/journal.ts). A
 * write that throws fails the request.
 */
export function journalDynamoWrites(write: ((write: JournaledWrite) => void) | undefined): void {
  journal = write;
}

/** Prices every later DynamoDB request of this process with `capacity` (the bench's capacity model). */
export function meterDynamoRequests(capacity: CapacityMeter | undefined): void {
  meter = capacity;
}

/** Errors DynamoDB bills: the request reached a partition and was refused by its condition. */
const BILLED_ERRORS = new Set(['ConditionalCheckFailedException', 'TransactionCanceledException']);

/**
 * The output as DynamoDB sent it: the document client has already turned its items into plain values
 * when the output comes back through the build step, so they are marshalled again to be sized.
 */
function wireOutput(output: Record<string, any> | undefined, documentClient: boolean): Record<string, any> | undefined {
  if (!output || !documentClient) return output;
  const m = (item: Record<string, unknown>) => marshall(item, { removeUndefinedValues: true, convertClassInstanceToMap: true });
  return {
    ...output,
    ...(output.Item ? { Item: m(output.Item) } : {}),
    ...(output.Items ? { Items: output.Items.map(m) } : {}),
    ...(output.Responses
      ? {
          Responses: Array.isArray(output.Responses)
            ? output.Responses.map((r: { Item?: Record<string, unknown> }) => (r.Item ? { Item: m(r.Item) } : r))
            : Object.fromEntries(Object.entries(output.Responses as Record<string, Record<string, unknown>[]>).map(([t, items]) => [t, items.map(m)])),
        }
      : {}),
  };
}

const READS = new Set(['GetItemCommand', 'QueryCommand', 'ScanCommand', 'BatchGetItemCommand', 'TransactGetItemsCommand']);

/**
 * A value's size about as DynamoDB counts it (strings and numbers by their length, binaries by their bytes, names
 * included), whether still marshalled or already plain (the document client unmarshals inside the same step).
 */
function valueBytes(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value).length;
  if (value instanceof Uint8Array) return value.byteLength;
  if (Array.isArray(value)) return value.reduce((n: number, x) => n + 1 + valueBytes(x), 3);
  if (value !== null && typeof value === 'object') return 3 + mapBytes(value as Record<string, unknown>);
  return 1;
}

function mapBytes(item: Record<string, unknown>): number {
  let n = 0;
  for (const name in item) n += name.length + valueBytes(item[name]);
  return n;
}

/** The bytes of the items a read's answer holds, about as DynamoDB sizes them for its read units. */
function itemsBytes(output: Record<string, unknown> | undefined): number {
  if (!output) return 0;
  let n = 0;
  if (output.Item) n += mapBytes(output.Item as Record<string, unknown>);
  if (Array.isArray(output.Items)) for (const item of output.Items) n += mapBytes(item as Record<string, unknown>);
  const responses = output.Responses;
  if (Array.isArray(responses)) for (const r of responses as { Item?: Record<string, unknown> }[]) n += r.Item ? mapBytes(r.Item) : 0;
  else if (responses && typeof responses === 'object')
    for (const list of Object.values(responses as Record<string, unknown[]>)) for (const item of list) n += mapBytes(item as Record<string, unknown>);
  return n;
}

/** The items a read request brought back (or examined, for a filtered query or scan): at least one. */
export function itemsReadBy(output: Record<string, unknown> | undefined): number {
  if (!output) return 1;
  let items = 0;
  if (typeof output.ScannedCount === 'number') items = output.ScannedCount;
  else if (Array.isArray(output.Items)) items = output.Items.length;
  else if (output.Item) items = 1;
  else if (Array.isArray(output.Responses)) items = output.Responses.length;
  else if (output.Responses && typeof output.Responses === 'object') {
    for (const list of Object.values(output.Responses as Record<string, unknown[]>)) items += Array.isArray(list) ? list.length : 0;
  }
  return Math.max(1, items);
}

function counted<T extends DynamoDBClient | DynamoDB>(client: T): T {
  // A transaction retried by the SDK after an attempt that timed out may have committed already: with a
  // ClientRequestToken DynamoDB answers the retry as the first (idempotent for 10 minutes) instead of
  // applying it again or failing its conditions against its own writes. Set once, before the retries.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand') {
        const input = args.input as { ClientRequestToken?: string };
        input.ClientRequestToken ??= randomUUID();
      }
      return next(args);
    },
    { step: 'initialize', name: 'transactionToken' },
  );
  // Which failed requests certainly changed nothing (shared/storage/errors.ts, wasNeverApplied): the deserialize
  // step runs once per attempt, inside the SDK's retries, and sees each attempt's error as DynamoDB or the
  // socket gave it; the initialize step sees the request's last error once. A write that failed so needs no
  // settling: the local stack's DynamoDB stopped refuses connections, and its appends were answered 500
  // (outcome unknown) instead of the 503 they are.
  const possiblyApplied = Symbol('possiblyApplied');
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (!attemptChangedNothing(error)) (context as Record<symbol, unknown>)[possiblyApplied] = true;
        throw error;
      }
    },
    { step: 'deserialize', priority: 'high', name: 'attemptOutcomes' },
  );
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (!(context as Record<symbol, unknown>)[possiblyApplied]) markNeverApplied(error);
        throw error;
      }
    },
    { step: 'initialize', priority: 'high', name: 'requestOutcome' },
  );
  // Every request's reads are capped (shared/read-allowance.ts): a read is refused once the request has read its
  // allowance, and one that takes it past fails it. Each read request counts the items it brought back (a filtered
  // query, those it examined), and at least one; an answer larger than 4 KB an item counts one per started 4 KB of its
  // items, as DynamoDB bills reads (sized as DynamoDB sizes items, in the deserialize step, where they are still
  // attribute values; a large answer's Content-Length is not always sent): a page of whole blocks counted as its items
  // had let one request read hundreds of MB (red team).
  const answerBytes = Symbol('answerBytes');
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      // Sized only where it is counted: the simulation's and the scripts' reads are outside any request's allowance.
      if (countingReads() && READS.has(context.commandName ?? '')) {
        (context as Record<symbol, unknown>)[answerBytes] = itemsBytes(result.output as unknown as Record<string, unknown>);
      }
      return result;
    },
    { step: 'deserialize', priority: 'high', name: 'answerBytes' },
  );
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? '';
      if (!READS.has(command)) return next(args);
      await beforeRead();
      const result = await next(args);
      const bytes = ((context as Record<symbol, unknown>)[answerBytes] as number | undefined) ?? 0;
      chargeReads(Math.max(itemsReadBy(result.output as unknown as Record<string, unknown> | undefined), Math.ceil(bytes / READ_UNIT_BYTES)));
      return result;
    },
    { step: 'initialize', name: 'readAllowance' },
  );
  client.middlewareStack.add(
    (next, context) => async (args) => {
      dynamoRequestCounts.requests += 1;
      if (context.commandName === 'TransactWriteItemsCommand') {
        dynamoRequestCounts.transactWrites += 1;
        dynamoRequestCounts.transactItems += ((args.input as { TransactItems?: unknown[] }).TransactItems ?? []).length;
      }
      return next(args);
    },
    { step: 'initialize', name: 'countDynamoRequests' },
  );
  // In the build step the input is marshalled (the wire form DynamoDB sizes and the journal replays) and
  // retries are not seen.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!meter && !journal) return next(args);
      const command = context.commandName ?? '';
      const input = args.input as Record<string, unknown>;
      let result;
      try {
        result = await next(args);
      } catch (error) {
        meter?.price(command, input, undefined, BILLED_ERRORS.has((error as Error).name) ? 'condition-failed' : 'not-billed');
        throw error;
      }
      if (meter) {
        const documentClient = (context as { __aws_sdk_context?: { features?: Record<string, string> } }).__aws_sdk_context?.features?.DDB_MAPPER === 'd';
        meter.price(command, input, wireOutput(result.output as Record<string, any>, documentClient), 'ok');
      }
      if (journal && JOURNALED.has(command)) journal({ command: command as JournaledWrite['command'], input });
      return result;
    },
    { step: 'build', name: 'priceDynamoRequests' },
  );
  return client;
}

/** The low-level client (table administration, waiters). */
export function createDynamoBaseClient(options: DynamoClientOptions): DynamoDBClient {
  return counted(new DynamoDBClient(clientConfig(options)));
}

/** The aggregated `DynamoDB` client, for libraries that want it (rate-limiter-flexible's store). */
export function createDynamoAggregatedClient(options: DynamoClientOptions): DynamoDB {
  return counted(new DynamoDB(clientConfig(options)));
}

/** The document client repositories use: plain JavaScript values in and out. */
export function createDynamoClient(options: DynamoClientOptions): DynamoDBDocumentClient {
  return documentClientOf(createDynamoBaseClient(options));
}

/**
 * A document client on a client made here (it shares that client's connections, settings and counting):
 * a function's repositories and its rate limiter use one client, so a cold instance sets up one, not two.
 */
export function documentClientOf(client: DynamoDBClient | DynamoDB): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}
