/**
 * Simulated Lambda instances: each one runs the service's real append path (the ledger domain with its
 * Idempotency-Key handling, the ChainAppender, the DynamoDB repository, the AWS SDK) with a client of its
 * own on the simulated network, a clock of its own (the world's plus its skew), and one invocation at a
 * time, as Lambda runs them; or, `shared`, several at once in one process, as the local stack's single-process
 * runtime serves concurrent requests (and any in-process combining would): they share the appender and its queues. An invocation has the function's timeout: its deadline is the one the service
 * computes (the timeout less the margin kept to answer, shared/deadline.ts), and an instance still busy at
 * the timeout itself is stopped, as Lambda stops it. An instance can be killed at any moment (what it sent
 * stays sent; nothing more leaves it and nothing reaches it), or frozen for a while (its requests and waits
 * resume when it wakes; the world's clock went on).
 */
import { ANSWER_MARGIN_MS, withDeadline } from '#shared/deadline';
import { ChainAppender } from '#shared/ledger/appender';
import { createLedger, type Ledger } from '#shared/ledger/ledger';
import type { LedgerRepository } from '#shared/ledger/repository';
import { createDynamoClient } from '#shared/storage/client';
import { createReadCache } from '#shared/storage/read-cache';
import { createLedgerRepository } from '#shared/storage/ledger-repository';
import type { Endpoint, SimNetwork } from './network.ts';
import type { World } from './world.ts';

/** The service's defaults (shared/config.ts), which the cloud stack keeps. */
/**
 * SDK middlewares that only set HTTP headers the simulated DynamoDB never reads (the user agent, recursion
 * detection, host and content length): removed from each instance's client, as the signer is. What the service's
 * requests mean (marshalling, retries, errors, the endpoint) still goes through the real SDK.
 */
const SIM_SKIPS = ['getUserAgentMiddleware', 'recursionDetectionMiddleware', 'hostHeaderMiddleware', 'contentLengthMiddleware'];

export const SERVICE_SETTINGS = {
  maxAttempts: 8,
  batchMax: 256,
  pendingShards: 32,
  settleMs: 10,
  gatherSiblings: 2,
  maxLeadMs: 200,
};

export interface InstanceSettings {
  /** The function's timeout (the cloud stack's: 29 s, API Gateway's limit). */
  timeoutMs: number;
  tableName: string;
  /** How long a request holds its Idempotency-Key (ms; the service's 60 s when not given). */
  idempotencyHoldMs?: number;
  appender?: Partial<typeof SERVICE_SETTINGS> & { leaseMs?: number; waitMs?: number };
  /** Serves several invocations at once, in one process (a kill ends them all; a timeout ends its own). */
  shared?: boolean;
  /**
   * A deliberately broken runtime: each invocation is answered with the value of the one answered before it on this
   * instance (answers shifted by one between the callers it serves), the first as it is.
   */
  shiftAnswers?: boolean;
}

export type InvocationResult<T> =
  | { kind: 'answered'; value: T; startedAt: number; endedAt: number }
  | { kind: 'failed'; error: unknown; startedAt: number; endedAt: number }
  /** The instance was stopped (killed, or at the timeout): the caller gets API Gateway's own error. */
  | { kind: 'lost'; startedAt: number; endedAt: number; why: 'killed' | 'timeout' };

export class SimInstance implements Endpoint {
  dead = false;
  frozenUntil = 0;
  readonly repository: LedgerRepository;
  readonly appender: ChainAppender;
  readonly ledger: Ledger;
  /** The invocations in flight, each ended as lost by its function. */
  private readonly running = new Set<(why: 'killed' | 'timeout') => void>();
  /** With `shiftAnswers`: the value answered last, given to the next invocation instead of its own. */
  private previousValue: { value: unknown } | undefined;

  /** Whether an invocation is in flight (one that serves one at a time takes no other then). */
  get busy(): boolean {
    return this.running.size > 0;
  }

  readonly name: string;
  readonly skewMs: number;
  private readonly world: World;
  readonly settings: InstanceSettings;
  constructor(name: string, skewMs: number, world: World, network: SimNetwork, settings: InstanceSettings) {
    this.name = name;
    this.skewMs = skewMs;
    this.world = world;
    this.settings = settings;
    // Unsigned: the simulated DynamoDB checks no signature, and signing was a tenth of the simulation's CPU.
    const client = createDynamoClient({
      region: 'us-east-1',
      endpoint: 'http://dynamodb.sim',
      requestHandler: network.handlerFor(name, this) as never,
      sign: false,
    });
    for (const name of SIM_SKIPS) client.middlewareStack.remove(name);
    // A warm instance keeps written records and segments between its invocations, as the service's instances do.
    this.repository = createLedgerRepository({ client, tableName: settings.tableName, cache: createReadCache(64 * 1024 * 1024) });
    const now = () => (world.now() + skewMs) / 1000;
    this.appender = new ChainAppender(this.repository, {
      ...SERVICE_SETTINGS,
      ...settings.appender,
      now,
      // A frozen instance's waits end when it wakes; the world's random, so the run is its seed's.
      sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(ms, this.frozenUntil - world.now()))),
      random: world.random,
    });
    this.ledger = createLedger({ repository: this.repository, appender: this.appender, now, idempotencyHoldMs: settings.idempotencyHoldMs });
  }

  /** Runs one invocation, as Lambda runs it: one at a time (unless `shared`), with the function's timeout. */
  invoke<T>(work: (ledger: Ledger) => Promise<T>): Promise<InvocationResult<T>> {
    if ((this.busy && !this.settings.shared) || this.dead) throw new Error(`${this.name} cannot take an invocation now`);
    const startedAt = this.world.now();
    const { timeoutMs } = this.settings;
    return new Promise<InvocationResult<T>>((resolve) => {
      let over = false;
      const end = (result: InvocationResult<T>) => {
        if (over) return;
        over = true;
        clearTimeout(timer);
        this.running.delete(lose);
        resolve(result);
      };
      const lose = (why: 'killed' | 'timeout') => end({ kind: 'lost', startedAt, endedAt: this.world.now(), why });
      this.running.add(lose);
      // Lambda stops an instance still running at its timeout; a process serving several ends that request alone.
      const timer = setTimeout(() => {
        if (!this.settings.shared) this.kill();
        lose('timeout');
      }, timeoutMs);
      withDeadline(startedAt + timeoutMs - ANSWER_MARGIN_MS, () => work(this.ledger)).then(
        (value) => {
          if (this.dead) return;
          if (this.settings.shiftAnswers) {
            const given = this.previousValue;
            this.previousValue = { value };
            if (given) value = given.value as T;
          }
          end({ kind: 'answered', value, startedAt, endedAt: this.world.now() });
        },
        (error) => {
          if (!this.dead) end({ kind: 'failed', error, startedAt, endedAt: this.world.now() });
        },
      );
    });
  }

  /** Stops the instance now: its invocation is lost to its caller; what it sent may still land. */
  kill(): void {
    if (this.dead) return;
    this.dead = true;
    for (const lose of [...this.running]) lose('killed');
  }

  /** Freezes it for `ms` from now. */
  freeze(ms: number): void {
    this.frozenUntil = Math.max(this.frozenUntil, this.world.now() + ms);
  }
}
