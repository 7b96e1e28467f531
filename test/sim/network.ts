/**
 * The network between the simulated Lambda instances and the simulated DynamoDB: the AWS SDK's HTTP handler
 * (what `DeadlineHttpHandler` is in the cloud), answered in process with the latencies and faults the run's
 * seed draws. Each instance has its own handler; the SDK above it is the real one (marshalling, its three
 * attempts with backoff, its error classes), as are the repository and the appender above that.
 *
 * Latencies, round trip, the figures docs/capacity.md prices the latency bound with (Alex DeBrie's measurements
 * from a Lambda function in the table's region, "DynamoDB Transactions Performance Testing"; AWS promises
 * "single-digit millisecond" averages for single-item operations, AWS Knowledge Center, "Why is my DynamoDB
 * latency high?"): a single-item request lognormal around 7.5 ms (p99 about 17 ms); a query or a batch around
 * 10 ms (p90 about 16 ms); a transaction that, plus its hold in the engine (17 ms and 0.3 ms an item: 25 ms at
 * 5 items, 32 ms at 25, as measured). One request in a thousand is a straggler of 50–200 ms.
 *
 * Faults, each drawn per request with the run's probabilities:
 * - `drop`: the request never arrives (the attempt times out after 5 s, as the service's handler does);
 * - `lostAnswer`: it is applied, and its answer never comes back (a timeout too): the outcome is unknown;
 * - `reset`: it is applied, and the connection drops before the answer (a network error at once);
 * - `serverError`: DynamoDB answers 500 without applying it (the SDK retries);
 * - `refused`: the connection is refused (ECONNREFUSED at once): the request never left, nothing changed.
 * And one only a script chooses (the profiles draw kills per invocation, at any moment):
 * - `kill`: it is applied, and its instance is killed as the answer comes back: a Lambda stopped right after a write
 *   landed, before it sent anything after it.
 * An outage (`down`, set by the scenario) makes DynamoDB unreachable for a while, as the local stack's stopped
 * DynamoDB Local is: every request sent in it is refused, and every answer on its way back in it is lost to a
 * reset connection (the request was applied).
 * The handler also keeps the service handler's contract: an attempt that has not answered in
 * `attemptTimeoutMs` fails with a TimeoutError (which the SDK retries), and the invocation's deadline
 * (shared/deadline.ts) aborts a request still in flight.
 */
import { deadlineSignal } from '#shared/deadline';
import { allTableSpecs } from '#shared/storage/tables';
import { type Outcome, SimDynamo } from './dynamo/engine.ts';
import type { World } from './world.ts';

export interface FaultRates {
  drop: number;
  lostAnswer: number;
  reset: number;
  serverError: number;
  refused: number;
}

export const NO_FAULTS: FaultRates = { drop: 0, lostAnswer: 0, reset: 0, serverError: 0, refused: 0 };

export type Fault = 'drop' | 'lost-answer' | 'reset' | 'server-error' | 'refused' | 'kill';

/** A fault chosen for one request by a test (it overrides the drawn ones): the request, and how many of its operation came before. */
export type FaultScript = (request: { instance: string; operation: string; input: Record<string, any>; n: number }) => Fault | undefined;

/**
 * Changes a request on its way to DynamoDB (the input as sent, marshalled; changed in place): how the tests
 * make a deliberately broken variant of the protocol, without touching the service's code.
 */
export type Mutation = (operation: string, input: Record<string, any>) => void;

/**
 * Reads an answer wrongly on its way back (the outcome the engine gave, unchanged there; another answered in its place):
 * how the tests make a variant whose bug is in how the service reads DynamoDB's answers. Undefined keeps the answer.
 */
export type Misread = (operation: string, input: Record<string, any>, outcome: Outcome) => Outcome | undefined;

/** What every request's trace line says. */
export interface RequestTrace {
  at: number;
  instance: string;
  operation: string;
  /** The item it is about (`pk / sk`), for a single-item request. */
  item?: string;
  fault?: string;
  status?: string;
}

/**
 * The service's ledger table on a simulated DynamoDB with AWS's figures: a partition's 1,000 write and 3,000
 * read units a second, and a transaction held 15 ms, 0.3 ms an item and up to 4 ms more (with the network's
 * round trip, the 25–32 ms measured). What the eventually consistent reads may lag, and how late TTL deletes,
 * are each run's.
 */
export function awsDynamo(world: World, options: { eventualWindowMs: number; ttlDelayMs: readonly [number, number]; laggingShare?: number }): SimDynamo {
  const { ledger } = allTableSpecs({ ledger: 'ledger', registry: 'registry', rateLimits: 'ratelimits', connections: 'connections' });
  return new SimDynamo({
    tables: { ledger },
    eventualWindowMs: options.eventualWindowMs,
    ...(options.laggingShare !== undefined ? { laggingShare: options.laggingShare } : {}),
    transactionMs: (items) => 15 + 0.3 * items + world.random() * 4,
    ttlDelayMs: options.ttlDelayMs,
    partitionWcu: 1_000,
    partitionRcu: 3_000,
    random: world.random,
  });
}

/** A request of the trace as one line: what, on which item, the fault drawn, and DynamoDB's answer. */
export function describeRequest(t: RequestTrace): string {
  return `${t.operation}${t.item ? ` ${t.item}` : ''}${t.fault ? ` [${t.fault}]` : ''} → ${t.status ?? 'nothing'}`;
}

/** The key a single-item request names, as `pk / sk`. */
function itemOf(input: Record<string, any>): string | undefined {
  const key = input.Key ?? input.Item;
  // An update says what it sets first (a head's commit, lease, mark or withdrawal read alike otherwise).
  const update = typeof input.UpdateExpression === 'string' ? (input.UpdateExpression as string) : undefined;
  const sets = update === undefined ? '' : ` (${update.length > 28 ? `${update.slice(0, 28)}…` : update})`;
  if (key?.pk?.S !== undefined) return `${key.pk.S} / ${key.sk?.S ?? ''}${sets}`;
  // A query: its partition, and where it starts.
  const values = input.ExpressionAttributeValues;
  return values?.[':pk']?.S !== undefined ? `${values[':pk'].S}${values[':from']?.S !== undefined ? ` from ${values[':from'].S}` : ''}` : undefined;
}

/** A latency in ms: lognormal around `median` (σ in log space), from two uniform draws. */
function lognormal(random: () => number, median: number, sigma: number): number {
  const u = Math.max(1e-12, random());
  const v = random();
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  return median * Math.exp(sigma * z);
}

/** The round-trip latency of an operation (ms), split evenly between the way there and back. */
export function roundTrip(random: () => number, operation: string): number {
  if (random() < 0.001) return 50 + random() * 150;
  const median = operation === 'Query' || operation.startsWith('Batch') ? 10 : 7.5;
  return Math.min(60, lognormal(random, median, 0.35));
}

class SimTimeoutError extends Error {
  override name = 'TimeoutError';
}
class SimAbortError extends Error {
  override name = 'AbortError';
}
class SimNetworkError extends Error {
  override name = 'Error';
  code = 'ECONNRESET';
}
class SimRefusedError extends Error {
  override name = 'Error';
  code = 'ECONNREFUSED';
}

export interface Endpoint {
  /** The instance is dead: what it sends never arrives, and nothing it waits for comes. */
  dead: boolean;
  /** Frozen until (virtual ms): its requests wait, as a frozen Lambda instance does nothing. */
  frozenUntil: number;
  /** Stops it now (a scripted `kill`). */
  kill(): void;
}

export class SimNetwork {
  readonly trace: RequestTrace[] = [];
  requests = 0;
  /** DynamoDB is unreachable from `from` until `until` (virtual ms). */
  down: { from: number; until: number } | undefined;

  private readonly world: World;
  private readonly dynamo: SimDynamo;
  private readonly faults: FaultRates;
  private readonly attemptTimeoutMs: number;
  private readonly tracing: boolean;
  private readonly script?: FaultScript;
  private readonly mutate?: Mutation;
  private readonly misread?: Misread;
  constructor(
    world: World,
    dynamo: SimDynamo,
    faults: FaultRates,
    attemptTimeoutMs = 5_000,
    tracing = false,
    script?: FaultScript,
    mutate?: Mutation,
    misread?: Misread,
  ) {
    this.world = world;
    this.dynamo = dynamo;
    this.faults = faults;
    this.attemptTimeoutMs = attemptTimeoutMs;
    this.tracing = tracing;
    this.script = script;
    this.mutate = mutate;
    this.misread = misread;
  }

  private readonly counts = new Map<string, number>();

  /** The AWS SDK request handler of one instance. */
  handlerFor(name: string, endpoint: Endpoint) {
    const network = this;
    return {
      metadata: { handlerProtocol: 'http/1.1' },
      destroy() {},
      updateHttpClientConfig() {},
      httpHandlerConfigs() {
        return {};
      },
      handle(request: { headers: Record<string, string>; body?: unknown }, options: { abortSignal?: AbortSignal } = {}) {
        return network.send(name, endpoint, request, options.abortSignal ?? deadlineSignal());
      },
    };
  }

  private isDown(at: number): boolean {
    return this.down !== undefined && at >= this.down.from && at < this.down.until;
  }

  private note(entry: RequestTrace): void {
    if (this.tracing) this.trace.push(entry);
  }

  private send(name: string, endpoint: Endpoint, request: { headers: Record<string, string>; body?: unknown }, signal: AbortSignal | undefined) {
    const world = this.world;
    const random = world.random;
    const target = request.headers['x-amz-target'] ?? request.headers['X-Amz-Target'] ?? '';
    const operation = target.slice(target.indexOf('.') + 1);
    const input = JSON.parse(typeof request.body === 'string' ? request.body : new TextDecoder().decode(request.body as Uint8Array)) as Record<string, unknown>;
    this.mutate?.(operation, input);
    this.requests += 1;
    const total = roundTrip(random, operation);
    const there = total / 2;
    const back = total / 2;
    const roll = random();
    const f = this.faults;
    const n = this.counts.get(operation) ?? 0;
    this.counts.set(operation, n + 1);
    const fault =
      this.script?.({ instance: name, operation, input, n }) ??
      (roll < f.drop
        ? 'drop'
        : roll < f.drop + f.lostAnswer
          ? 'lost-answer'
          : roll < f.drop + f.lostAnswer + f.reset
            ? 'reset'
            : roll < f.drop + f.lostAnswer + f.reset + f.serverError
              ? 'server-error'
              : roll < f.drop + f.lostAnswer + f.reset + f.serverError + f.refused
                ? 'refused'
                : undefined);
    const sentAt = world.now();

    return new Promise<{ response: { statusCode: number; headers: Record<string, string>; body: Uint8Array } }>((resolve, reject) => {
      let settled = false;
      const finish = (then: () => void) => {
        if (settled || endpoint.dead) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        then();
      };
      const timer = setTimeout(
        () => finish(() => reject(new SimTimeoutError(`Request to DynamoDB (${operation}) timed out after ${this.attemptTimeoutMs} ms`))),
        this.attemptTimeoutMs,
      );
      const onAbort = () => finish(() => reject(Object.assign(new SimAbortError('Request aborted'), { cause: signal?.reason })));
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });

      const respond = (answer: { outcome: Outcome }) => {
        const outcome = this.misread?.(operation, input, answer.outcome) ?? answer.outcome;
        const status = outcome.ok ? 200 : outcome.type === 'InternalServerError' ? 500 : 400;
        const body = outcome.ok
          ? outcome.output
          : { __type: `com.amazonaws.dynamodb.v20120810#${outcome.type}`, message: outcome.message, ...(outcome.extra ?? {}) };
        const item = itemOf(input);
        this.note({
          at: world.elapsed(),
          instance: name,
          operation,
          ...(item ? { item } : {}),
          ...(fault ? { fault } : {}),
          status: outcome.ok ? 'ok' : outcome.type,
        });
        if (fault === 'lost-answer') return world.inert();
        if (fault === 'kill') {
          endpoint.kill();
          return world.inert();
        }
        if (fault === 'reset' || this.isDown(world.now() + back)) return finish(() => reject(new SimNetworkError('socket hang up')));
        // The way back: a frozen instance takes its answer when it wakes.
        setTimeout(
          () =>
            finish(() =>
              resolve({
                response: {
                  statusCode: status,
                  headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': `sim-${this.requests}` },
                  body: Buffer.from(JSON.stringify(body)),
                },
              }),
            ),
          Math.max(back, endpoint.frozenUntil - world.now()),
        );
        world.inert();
      };

      // The way there: a frozen instance sends when it wakes; a dead one never does.
      const depart = Math.max(sentAt, endpoint.frozenUntil);
      if (fault === 'refused' || this.isDown(depart)) {
        world.at(depart + 1, () => {
          this.note({ at: world.elapsed(), instance: name, operation, fault: 'refused' });
          finish(() => reject(new SimRefusedError(`connect ECONNREFUSED (${operation})`)));
        });
        return;
      }
      world.at(depart + there, () => {
        if (this.isDown(world.now())) {
          this.note({ at: world.elapsed(), instance: name, operation, fault: 'reset (outage)' });
          finish(() => reject(new SimNetworkError('socket hang up')));
          return;
        }
        if (fault === 'drop') {
          this.note({ at: world.elapsed(), instance: name, operation, fault });
          world.inert();
          return;
        }
        if (fault === 'server-error') {
          respond({ outcome: { ok: false, type: 'InternalServerError', message: 'Internal server error' } });
          return;
        }
        const answer = this.dynamo.execute(operation, input, world.now());
        if ('afterMs' in answer) {
          setTimeout(() => respond(answer.commit()), answer.afterMs);
          world.inert();
        } else respond(answer);
      });
    });
  }
}
