/**
 * Named sets of simulation options (docs/simulation.md): what `npm run simulate -- --profile NAME` runs, and
 * what the tests run their seeds under.
 */
import { DEFAULT_SCENARIO, type ScenarioOptions } from './scenario.ts';

/**
 * Batches: half the appends are 24 events in one request (a leader commits its own with their records in the
 * commit's transaction; a follower's wait as pending appends), half of them with a key; the faults of `faults`.
 */
const BATCHES: ScenarioOptions = {
  ...DEFAULT_SCENARIO,
  callers: 6,
  appendsPerCaller: 4,
  batchShare: 0.5,
  batchSize: 24,
  faults: { drop: 0.01, lostAnswer: 0.01, reset: 0.01, serverError: 0.01, refused: 0.01 },
  skewMs: 50,
  killRate: 0.05,
  freezeRate: 0.05,
  freezeMs: 3_000,
};

export const PROFILES: Record<string, ScenarioOptions> = {
  /** No fault: the protocol's own interleavings (latencies, eventual reads, transactions in flight). */
  calm: DEFAULT_SCENARIO,
  /** 1 % of requests dropped, answers lost, connections reset, 500s, connections refused; clocks ±50 ms; 5 % of invocations killed or frozen. */
  faults: {
    ...DEFAULT_SCENARIO,
    faults: { drop: 0.01, lostAnswer: 0.01, reset: 0.01, serverError: 0.01, refused: 0.01 },
    skewMs: 50,
    killRate: 0.05,
    freezeRate: 0.05,
    freezeMs: 3_000,
  },
  /**
   * Twice the faults, clocks ±200 ms (over the settle time), freezes past the lease, 6 callers of 5 appends,
   * and DynamoDB unreachable for 3 s (as the local stack's reliability test stops DynamoDB Local).
   */
  chaos: {
    ...DEFAULT_SCENARIO,
    callers: 6,
    appendsPerCaller: 5,
    outageMs: 3_000,
    faults: { drop: 0.02, lostAnswer: 0.02, reset: 0.02, serverError: 0.02, refused: 0.02 },
    skewMs: 200,
    killRate: 0.1,
    freezeRate: 0.1,
    freezeMs: 4_000,
    eventualWindowMs: 500,
  },
  /**
   * A crowd: 40 callers of 3 appends, so that the chain spreads its pending appends over several shards (writers
   * then look for their receipts in their shard's seals); the faults of `faults`.
   */
  crowd: {
    ...DEFAULT_SCENARIO,
    callers: 40,
    appendsPerCaller: 3,
    faults: { drop: 0.01, lostAnswer: 0.01, reset: 0.01, serverError: 0.01, refused: 0.01 },
    skewMs: 50,
    killRate: 0.05,
    freezeRate: 0.05,
    freezeMs: 3_000,
  },
  /**
   * Takeovers: every append has an Idempotency-Key held for 1.5 s only (the service holds it 60 s), and is
   * retried up to 4 times (a 409 too), so that retries take keys over from attempts still in flight (frozen,
   * or waiting for their round); the faults of `faults`, with freezes of up to 4 s. A quarter of the appends also get an
   * attempt with the same key and another body, within 3 s of the first: one body lands at most, each answered its own.
   */
  takeover: {
    ...DEFAULT_SCENARIO,
    callers: 6,
    appendsPerCaller: 4,
    idempotentShare: 1,
    otherBodyShare: 0.25,
    retries: 4,
    holdMs: 1_500,
    faults: { drop: 0.01, lostAnswer: 0.02, reset: 0.01, serverError: 0.01, refused: 0.01 },
    skewMs: 50,
    killRate: 0.05,
    freezeRate: 0.1,
    freezeMs: 4_000,
  },
  /**
   * A pair of writers on a schedule, in cycles of 12 s: the first appends alone, then the second alone (each then
   * remembers the head of its own commit, and no other writer for the 2 s a direct commit waits for), then both at the
   * same moment: their direct commits, each one transaction with its records, meet in flight, and the later is cancelled
   * for the earlier's transaction on the head (TransactionConflict), or refused for a head that moved. The other
   * profiles reach that interleaving by luck (2 of 400 seeds of `faults`). Clocks ±20 ms.
   */
  pair: {
    ...DEFAULT_SCENARIO,
    callers: 2,
    appendsPerCaller: 8,
    skewMs: 20,
    schedule: (c, j) => Math.floor(j / 2) * 12_000 + (j % 2 === 0 ? c * 4_000 : 8_000),
  },
  /**
   * Shared instances: 8 callers, 4 served at once by each instance, as the local stack's single-process runtime serves
   * concurrent requests (they share the appender and its queue of appends); every caller's answer must name blocks
   * holding its own events. The faults of `faults` (a kill ends the 4 invocations of a process at once).
   */
  shared: {
    ...DEFAULT_SCENARIO,
    callers: 8,
    appendsPerCaller: 4,
    callersPerInstance: 4,
    faults: { drop: 0.01, lostAnswer: 0.01, reset: 0.01, serverError: 0.01, refused: 0.01 },
    skewMs: 50,
    killRate: 0.05,
    freezeRate: 0.05,
    freezeMs: 3_000,
  },
  batches: BATCHES,
  /**
   * Large batches: as `batches`, with 98 events in each (the most one with a key may hold). A round's metadata is
   * cut into segments under 4 KB, so such a batch spans two or three, and its writer's looks find it in parts.
   */
  'large-batches': { ...BATCHES, batchSize: 98 },
};

export function profile(name: string): ScenarioOptions {
  const found = PROFILES[name];
  if (!found) throw new RangeError(`no simulation profile '${name}': one of ${Object.keys(PROFILES).join(', ')}`);
  return found;
}
