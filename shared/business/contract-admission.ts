/**
 * How many contract sandboxes run at once across the whole service, and how many wait: admission through one
 * shared record, so that the bound holds however many Lambda instances serve the contracts function.
 *
 * Why not a pool in each instance: on Lambda an instance serves one request at a time, so a per-instance pool
 * never fills (its 429 never fired) while a burst of endless loops became as many instances, each spending its
 * full CPU limit. Here a run takes a slot in the record (`runs`, at most `runsAtOnce`), a run that finds them
 * taken waits in it (`waits`, at most `waiting`, polled), and one more is refused at once: 429 with Retry-After.
 *
 * Every entry carries its own expiry (wall clock, shared by all instances): an instance that dies mid-run (a
 * timeout, a crash) holds its slot only until then, never for ever. A slot is let go when the run ends, whatever
 * its outcome. The record is written only by conditional replaces on its version, so two instances never both
 * take the last slot; a write whose answer was lost is recognised by the run's own id in the record.
 *
 * Waiting is bounded twice: by `maxWaitMs`, and by the invocation's deadline less the time a run may take, so a
 * waiter still has time to run once admitted. A waiter that gives up leaves the record (or its entry expires).
 */
import { createHash, randomBytes } from 'node:crypto';
import { remainingMs } from '../deadline.ts';
import { DomainError } from '../errors.ts';
import { logger } from '../log.ts';

/** 429: every contract slot is taken and as many runs are already waiting as may wait. */
export class ContractsBusyError extends DomainError {
  readonly statusCode = 429;
  constructor(retryAfterSeconds: number, detail = 'every contract slot is taken and the queue is full') {
    super(`Contracts are busy: ${detail}; retry in ${retryAfterSeconds} s`);
    this.headers['Retry-After'] = String(retryAfterSeconds);
  }
}

/** The shared record: run and waiter ids, each with its expiry (epoch ms), and the version writes are conditioned on. */
export interface RunSlotsState {
  runs: Record<string, number>;
  waits: Record<string, number>;
  version: number;
}

/** Where the record lives (the registry table in the service; memory in unit tests). */
export interface RunSlotStore {
  /** The record as it is now (a strongly consistent read). */
  read(): Promise<RunSlotsState>;
  /** Writes `next` if the record's version is still `expected` (the version then goes up by one); answers whether it did. */
  replace(next: Omit<RunSlotsState, 'version'>, expected: number): Promise<boolean>;
  /** Takes an id out of runs and waits (the version goes up: a replace computed before it fails). */
  leave(id: string): Promise<void>;
}

export interface AdmissionOptions {
  /** Runs at once across the service. */
  runsAtOnce: number;
  /** Runs that may wait for a slot; one more is refused. */
  waiting: number;
  /** How long a slot is held at most: a run's CPU limit, the grace before its worker is stopped, and its start. */
  holdMs: number;
  /** The longest a run waits for a slot. */
  maxWaitMs: number;
  /** What a refusal's Retry-After says: about a run's CPU limit. */
  retryAfterSeconds: number;
  /** Between two looks at the record while waiting. */
  pollMs?: number;
  /** The shared clock entries expire by (epoch ms). */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface ContractAdmission {
  /**
   * Runs `work` holding a slot, waiting for one if it may; ContractsBusyError (429) when it may not. `caller` (its
   * organization, or its key without one) holds at most half the slots and half the queue: one caller's flood
   * leaves the others room.
   */
  admit<T>(work: () => Promise<T>, caller?: string): Promise<T>;
}

/**
 * Conditional writes lost to other instances in a row before the run is refused as busy (each a round trip, after a
 * random pause of up to a quarter of the poll): every slot let go moves the record's version, so under a crowd of
 * quick runs a write often loses to a release, not to a run taking the last slot. At 20 with no pause, 14 % of 36
 * callers' quick runs were refused so (red team).
 */
const MAX_CONFLICTS = 50;

/** The caller tag an entry's id starts with. */
const callerOf = (id: string) => (id.includes('.') ? id.slice(0, id.indexOf('.')) : id);
/** Runs of no caller in particular (auth off: every request is the same open caller) are held to no share. */
const NO_CALLER = '';

const live = (entries: Record<string, number>, now: number) => Object.fromEntries(Object.entries(entries).filter(([, expires]) => expires > now));

export function createContractAdmission(store: RunSlotStore, options: AdmissionOptions): ContractAdmission {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const pollMs = options.pollMs ?? 100;
  const retryAfter = Math.max(1, Math.ceil(options.retryAfterSeconds));

  /** A caller's share: half the slots (at least one), and half the places in the queue. */
  const runShare = Math.max(1, Math.ceil(options.runsAtOnce / 2));
  const waitShare = Math.ceil(options.waiting / 2);

  /** Takes a slot, or queues and waits for one; ContractsBusyError when it may do neither, or its wait ends first. */
  async function acquire(id: string): Promise<void> {
    // A waiter must still have time to run once admitted: it waits until the deadline less a whole run at most.
    const waitUntil = now() + Math.max(0, Math.min(options.maxWaitMs, remainingMs() - options.holdMs));
    const caller = callerOf(id);
    let conflicts = 0;
    let state = await store.read();
    for (;;) {
      const t = now();
      if (state.runs[id] !== undefined && state.runs[id]! > t) return; // a write whose answer was lost had landed
      const runs = live(state.runs, t);
      const waits = live(state.waits, t);
      const held = new Map<string, number>();
      for (const r of Object.keys(runs)) held.set(callerOf(r), (held.get(callerOf(r)) ?? 0) + 1);
      const free = options.runsAtOnce - Object.keys(runs).length;
      const waiting = Object.entries(waits).sort(([a, x], [b, y]) => x - y || a.localeCompare(b));
      const queued = waits[id] !== undefined;
      const overShare = (c: string) => c !== NO_CALLER && (held.get(c) ?? 0) >= runShare;
      const atShare = overShare(caller);
      // Waiters go first, in order of arrival, but only those whose caller is below its share: one caller's flood
      // waiting at the head does not hold the others back. A newcomer takes a slot only if one is left over after them.
      const eligible = waiting.filter(([w]) => !overShare(callerOf(w)));
      const ahead = queued ? eligible.findIndex(([w]) => w === id) : eligible.length;
      let next: Omit<RunSlotsState, 'version'> | undefined;
      if (!atShare && ahead >= 0 && free > ahead) {
        const { [id]: _mine, ...others } = waits;
        next = { runs: { ...runs, [id]: t + options.holdMs }, waits: others };
      } else if (!queued) {
        const mine = caller === NO_CALLER ? 0 : waiting.filter(([w]) => callerOf(w) === caller).length;
        if (waiting.length >= options.waiting || mine >= waitShare || waitUntil <= t) {
          throw new ContractsBusyError(
            retryAfter,
            waiting.length >= options.waiting
              ? undefined
              : atShare || mine >= waitShare
                ? 'this caller already holds its share of the contract slots and of the queue'
                : 'every contract slot is taken',
          );
        }
        next = { runs, waits: { ...waits, [id]: waitUntil + pollMs * 2 } };
      }
      if (next) {
        if (await store.replace(next, state.version)) {
          if (next.runs[id] !== undefined) return;
          conflicts = 0;
        } else {
          if ((conflicts += 1) >= MAX_CONFLICTS) {
            await leave(id);
            throw new ContractsBusyError(retryAfter, 'too many runs are taking slots at this moment');
          }
          // Apart from the others that lost the same race, so that they do not meet again at once.
          await sleep(Math.floor(Math.random() * (pollMs / 4)));
        }
        state = await store.read();
        continue;
      }
      // Queued, and no slot for this waiter yet.
      if (now() + pollMs > waitUntil) {
        await leave(id);
        throw new ContractsBusyError(retryAfter, 'no contract slot came free in time');
      }
      await sleep(pollMs);
      state = await store.read();
    }
  }

  async function leave(id: string): Promise<void> {
    try {
      await store.leave(id);
    } catch (error) {
      // Its entry expires by itself: the slot is held a little longer, nothing is lost.
      logger.warn('a contract slot was not let go; it expires by itself', { error });
    }
  }

  return {
    async admit(work, caller) {
      // The caller's tag (8 characters of a hash of its organization or key: it says whose runs are whose, not who),
      // then 96 random bits: unique among the runs of a few minutes, and short, as every write carries every entry.
      const tag = caller === undefined ? NO_CALLER : createHash('sha256').update(caller).digest('base64url').slice(0, 8);
      const id = `${tag}.${randomBytes(12).toString('base64url')}`;
      try {
        await acquire(id);
      } catch (error) {
        // A failed read or write may have left this run's entry behind: take it out (or it expires).
        if (!(error instanceof ContractsBusyError)) await leave(id);
        throw error;
      }
      try {
        return await work();
      } finally {
        await leave(id);
      }
    },
  };
}

/** The record in memory: one process's admission (unit tests; a single process shares it between its requests). */
export function memoryRunSlots(): RunSlotStore & { state: RunSlotsState } {
  const store = {
    state: { runs: {}, waits: {}, version: 0 } as RunSlotsState,
    async read() {
      return structuredClone(store.state);
    },
    async replace(next: Omit<RunSlotsState, 'version'>, expected: number) {
      if (store.state.version !== expected) return false;
      store.state = { ...structuredClone(next), version: expected + 1 };
      return true;
    },
    async leave(id: string) {
      const { [id]: _run, ...runs } = store.state.runs;
      const { [id]: _wait, ...waits } = store.state.waits;
      store.state = { runs, waits, version: store.state.version + 1 };
    },
  };
  return store;
}
