/**
 * Runs test files through node:test, each in its own process, `base` at a time, and one more (up to `max`) while the
 * machine's cores stand partly idle: many files spend much of their time waiting (on a stack's instances, DynamoDB
 * Local, a socket, a timer), and two files at a time left about 15 % of two cores idle over a whole `npm test`.
 *
 * Each file's events are handed over together when the file ends, so that its report reads as one block; node:test's
 * own summary of each file (its counts) is summed into one for the run.
 */
import { readFileSync } from 'node:fs';
import { run } from 'node:test';

export interface PoolOptions {
  /** Files always run at once (the cores). */
  base: number;
  /** Most files at once, when the cores stand idle. */
  max: number;
  /** A file's deadline. */
  timeoutMs: number;
  /** The idle share of all cores, over the last window, above which one more file starts. */
  idleAbove?: number;
  /** How often the load is read, and how long a file that was started beyond `base` is given before the next. */
  sampleMs?: number;
  settleMs?: number;
}

interface TestEvent {
  type: string;
  data?: { nesting?: number; file?: string; message?: string };
}

/** Busy and total CPU ticks of the whole machine so far (/proc/stat); undefined off Linux. */
function cpuTicks(): { busy: number; total: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
    const idle = fields[3]! + fields[4]!;
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}

const SUMMARY = /^(tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$/;

/** Every event of every file, each file's together as it ends, then the run's summary. */
export async function* runFiles(files: string[], options: PoolOptions): AsyncGenerator<TestEvent> {
  const { base, max, timeoutMs, idleAbove = 0.35, sampleMs = 1_000, settleMs = 4_000 } = options;
  const started = performance.now();
  const counts = new Map<string, number>();
  const done: TestEvent[][] = [];
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  let next = 0;
  let running = 0;
  let lastExtra = 0;

  const start = () => {
    const file = files[next++]!;
    running += 1;
    void (async () => {
      const events: TestEvent[] = [];
      try {
        for await (const event of run({ files: [file], timeout: timeoutMs }) as AsyncIterable<TestEvent>) {
          const summary = event.type === 'test:diagnostic' && !event.data?.file && SUMMARY.exec(event.data?.message ?? '');
          if (summary) counts.set(summary[1]!, (counts.get(summary[1]!) ?? 0) + Number(summary[2]));
          else if (event.type === 'test:plan' && !event.data?.file) continue;
          else if (!(event.type === 'test:diagnostic' && !event.data?.file)) events.push(event);
        }
      } catch (error) {
        events.push({ type: 'test:fail', data: { nesting: 0, file, message: String(error) } });
      }
      running -= 1;
      done.push(events);
      notify();
    })();
  };

  let last = cpuTicks();
  const sampler = setInterval(() => {
    const now = cpuTicks();
    if (!now || !last) return;
    const idle = 1 - (now.busy - last.busy) / Math.max(1, now.total - last.total);
    last = now;
    const settled = performance.now() - lastExtra >= settleMs;
    if (next < files.length && running >= base && running < max && idle > idleAbove && settled) {
      lastExtra = performance.now();
      start();
    }
  }, sampleMs);

  try {
    while (next < files.length || running > 0 || done.length > 0) {
      while (next < files.length && running < base) start();
      if (done.length > 0) {
        yield* done.shift()!;
        continue;
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    clearInterval(sampler);
  }
  for (const name of ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'])
    yield { type: 'test:diagnostic', data: { nesting: 0, message: `${name} ${counts.get(name) ?? 0}` } };
  yield { type: 'test:diagnostic', data: { nesting: 0, message: `duration_ms ${(performance.now() - started).toFixed(0)}` } };
}
