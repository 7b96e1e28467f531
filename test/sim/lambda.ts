/**
 * Simulated Lambda instances: each one runs the service's real append path (the ledger domain with its
 * Idempotency-Key handling, the ChainAppender, the DynamoDB repository, the AWS SDK) with a client of its
 * own on the simulated network, a clock of its own (the world's plus its skew), and one invocation at a
 * time, as Lambda runs them. An invocation has the function's timeout: its deadline is the one the service
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
}

export type InvocationResult<T> =
  | { kind: 'answered'; value: T; startedAt: number; endedAt: number }
  | { kind: 'failed'; error: unknown; startedAt: number; endedAt: number }
  /** The instance was stopped (killed, or at the timeout): the caller gets API Gateway's own error. */
  | { kind: 'lost'; startedAt: number; endedAt: number; why: 'killed' | 'timeout' };

export class SimInstance implements Endpoint {
  dead = false;
  frozenUntil = 0;
  busy = false;
  readonly repository: LedgerRepository;
  readonly appender: ChainAppender;
  readonly ledger: Ledger;
  private lose: ((why: 'killed' | 'timeout') => void) | undefined;

  constructor(
    readonly name: string,
    readonly skewMs: number,
    private readonly world: World,
    network: SimNetwork,
    readonly settings: InstanceSettings,
  ) {
    // Unsigned: the simulated DynamoDB checks no signature, and signing was a tenth of the simulation's CPU.
    const client = createDynamoClient({
      region: 'us-east-1',
      endpoint: 'http://dynamodb.sim',
      requestHandler: network.handlerFor(name, this) as never,
      sign: false,
    });
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

  /** Runs one invocation, as Lambda runs it: one at a time, with the function's timeout. */
  invoke<T>(work: (ledger: Ledger) => Promise<T>): Promise<InvocationResult<T>> {
    if (this.busy || this.dead) throw new Error(`${this.name} cannot take an invocation now`);
    this.busy = true;
    const startedAt = this.world.now();
    const { timeoutMs } = this.settings;
    return new Promise<InvocationResult<T>>((resolve) => {
      let over = false;
      const end = (result: InvocationResult<T>) => {
        if (over) return;
        over = true;
        clearTimeout(timer);
        this.lose = undefined;
        this.busy = false;
        resolve(result);
      };
      this.lose = (why) => end({ kind: 'lost', startedAt, endedAt: this.world.now(), why });
      // Lambda stops an instance still running at its timeout.
      const timer = setTimeout(() => {
        this.kill();
        end({ kind: 'lost', startedAt, endedAt: this.world.now(), why: 'timeout' });
      }, timeoutMs);
      withDeadline(startedAt + timeoutMs - ANSWER_MARGIN_MS, () => work(this.ledger)).then(
        (value) => {
          if (!this.dead) end({ kind: 'answered', value, startedAt, endedAt: this.world.now() });
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
    this.lose?.('killed');
  }

  /** Freezes it for `ms` from now. */
  freeze(ms: number): void {
    this.frozenUntil = Math.max(this.frozenUntil, this.world.now() + ms);
  }
}
