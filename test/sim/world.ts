/**
 * The simulation's world: one virtual clock for everything, and one seed for every choice.
 *
 * While a run lasts, the process's timers and clocks are virtual (@sinonjs/fake-timers: setTimeout,
 * setInterval, setImmediate, Date, performance): the real code under test (the AWS SDK's retries and
 * timeouts, the invocation deadlines of shared/deadline.ts, the appender's waits) runs on virtual time,
 * and a run of minutes takes milliseconds. Math.random, crypto.randomUUID and crypto.randomBytes draw
 * from the run's seed (the built-in module's exports are re-synced, so `import { randomUUID }` sees it
 * too): the same seed makes the same run, request for request.
 *
 * The loop: settle every promise the last event set off (one real macrotask drains the microtasks), then
 * fire the next virtual timer, until the run says it is done. Nothing runs outside it.
 */
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { type Clock, withGlobal } from '@sinonjs/fake-timers';

/** A small, fast, seedable generator (mulberry32): the run's only source of randomness. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const realImmediate = setImmediate;
const settle = () => new Promise<void>((resolve) => realImmediate(resolve));

/** Long-lived handles (a terminal, the test runner's pipe, servers, children): not work the run waits for. */
const HANDLES = new Set([
  'TTYWrap',
  'PipeWrap',
  'Timeout',
  'Immediate',
  'TCPWrap',
  'TCPServerWrap',
  'ProcessWrap',
  'SignalWrap',
  'UDPWrap',
  'FSEventWrap',
  'StatWatcher',
  'MessagePort',
  'Worker',
]);

/**
 * Whether real I/O the code set off is still under way (a file read: the AWS SDK reads its shared config files
 * on a client's first request). Virtual time must not move on meanwhile: under a loaded machine such a read
 * outlasted the settling, the next timer (ten virtual seconds later) fired first, and one seed ran two ways.
 */
const realWorkPending = () => process.getActiveResourcesInfo().some((r) => !HANDLES.has(r));

/** Where a run's virtual time starts: a fixed date, so that runs are alike whatever day they run. */
export const EPOCH_MS = Date.UTC(2026, 0, 1);

export class World {
  readonly random: () => number;
  private clock: Clock | undefined;
  private restore: (() => void) | undefined;
  /** Set by the event now firing when it set off no promise (`inert()`). */
  private quiet = false;

  readonly seed: number;
  constructor(seed: number) {
    this.seed = seed;
    this.random = seeded(seed);
  }

  /** Virtual milliseconds since the epoch. */
  now(): number {
    return this.clock ? this.clock.now : Date.now();
  }

  /** Virtual milliseconds since the run started. */
  elapsed(): number {
    return this.now() - EPOCH_MS;
  }

  /** Makes time virtual and randomness seeded for the whole process, until `end()`. */
  begin(): void {
    const random = this.random;
    const originals = { mathRandom: Math.random, randomUUID: crypto.randomUUID, randomBytes: crypto.randomBytes };
    Math.random = random;
    const bytes = (n: number) => {
      const out = Buffer.alloc(n);
      for (let i = 0; i < n; i += 1) out[i] = Math.floor(random() * 256);
      return out;
    };
    crypto.randomUUID = (() => {
      const b = bytes(16);
      b[6] = (b[6]! & 0x0f) | 0x40;
      b[8] = (b[8]! & 0x3f) | 0x80;
      const h = b.toString('hex');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }) as typeof crypto.randomUUID;
    crypto.randomBytes = ((n: number, callback?: (error: Error | null, buf: Buffer) => void) => {
      const out = bytes(n);
      if (callback) callback(null, out);
      return out;
    }) as typeof crypto.randomBytes;
    syncBuiltinESMExports();
    this.clock = withGlobal(globalThis).install({
      now: EPOCH_MS,
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'Date', 'performance', 'hrtime'],
      loopLimit: 10_000_000,
    });
    this.restore = () => {
      Math.random = originals.mathRandom;
      crypto.randomUUID = originals.randomUUID;
      crypto.randomBytes = originals.randomBytes;
      syncBuiltinESMExports();
    };
  }

  end(): void {
    this.clock?.uninstall();
    this.clock = undefined;
    this.restore?.();
    this.restore = undefined;
  }

  /** Runs `then` at `at` (virtual ms since the epoch), or now when that has passed. */
  at(at: number, then: () => void): void {
    setTimeout(then, Math.max(0, at - this.now()));
  }

  /**
   * Says that the event now firing (a virtual timer's callback) set off no promise and resolved or rejected
   * none: it only changed state and set timers. The loop then fires the next event without settling (two real
   * macrotasks), as there is nothing to settle: the same events run in the same order, for less CPU (most of
   * a run's events are TTL's ticks and requests arriving at the simulated DynamoDB).
   */
  inert(): void {
    this.quiet = true;
  }

  /**
   * Runs the world until `done()` (checked whenever the last event's effects have settled), or until
   * `limitMs` of virtual time have passed; answers whether it was done. Throws when nothing is left to run
   * and it is not done (a wait that nothing can end: a hang).
   */
  async run(done: () => boolean, limitMs: number): Promise<boolean> {
    const clock = this.clock!;
    const stopAt = clock.now + limitMs;
    // Whether the event just fired was inert (and no real work was left pending before it): nothing to settle.
    let quiet = false;
    for (;;) {
      let pending = false;
      if (!quiet) {
        await settle();
        await settle();
        for (let spins = 0; (pending = realWorkPending()) && spins < 100_000; spins += 1) await settle();
      }
      if (done()) return true;
      if (clock.countTimers() === 0) throw new Error(`the simulation is stuck at ${clock.now - EPOCH_MS} ms: nothing left to run, and the run is not done`);
      this.quiet = false;
      const next = clock.next();
      quiet = this.quiet && !pending;
      this.quiet = false;
      if (next > stopAt) return done();
    }
  }
}
