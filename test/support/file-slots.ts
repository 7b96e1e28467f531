/**
 * The test run's slots for files (test/run.ts): `base` files run at once, and one more at a time, up to `max`, while
 * the machine's cores stand partly idle. A file that waits for its stacks, a restart, a lease or a browser leaves a
 * core idle for seconds at a time, and a third file fills it; a file started while both cores are busy would only
 * slow the others down (each CPU-second does less when both cores of this VM are busy: the simulation's seeds used
 * 17 % more CPU beside a busy loop).
 *
 * node:test starts up to `max` files' processes; each waits before its first import (test/support/file-cpu.mjs,
 * preloaded) until this grants it a slot over a Unix socket, and frees it by exiting (the socket closes with it,
 * whatever way it ends). Slots are granted in the order asked for. A file still running `deadlineMs` after its grant
 * is killed (its wait for a slot is not its time; node:test's own timeout, counted from its spawn, is the backstop),
 * when it is a child of this process. The socket lives in a folder only this user can enter (mkdtemp's 0700).
 */
import { readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { cpus } from 'node:os';

export interface FileSlots {
  /** The socket's path, for the files' processes (SLOTS_ENV). */
  path: string;
  /** How long each file waited for its slot (absolute path to ms), to take out of its time. */
  waitedMs: Record<string, number>;
  /** Files started beyond `base` because cores stood idle. */
  extraStarts(): number;
  close(): Promise<void>;
}

/** Where the files' processes find the slots (set by the runner, removed by each file once it has its slot). */
export const SLOTS_ENV = 'LEDGER_TEST_SLOTS';

/** Cores idle on average over the last IDLE_WINDOW_MS before one more file starts. */
const IDLE_CORES = 0.5;
const IDLE_WINDOW_MS = 3_000;
const SAMPLE_MS = 500;
/** After an extra start, how long before the next one: a file takes seconds to reach its load. */
const EXTRA_GAP_MS = 5_000;

/** The machine's busy and total CPU ticks so far (Linux); undefined elsewhere (no extra files then). */
function ticks(): { busy: number; total: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((sum, n) => sum + n, 0);
    const idle = fields[3]! + (fields[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}

/** Whether `pid` is a child of this process (Linux's /proc; elsewhere unknown, so no). */
function startedHere(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid;
  } catch {
    return false;
  }
}

export async function startFileSlots(options: {
  path: string;
  base: number;
  max: number;
  /** Cores idle over the last few seconds (default: measured from /proc/stat); for tests. */
  idleCores?: () => number;
  /** After a file started beyond `base`, how long before another may (default 5 s); for tests. */
  extraGapMs?: number;
  /** How long a file may run once granted its slot: past it, its process is killed (SIGKILL) and `onDeadline` told. */
  deadlineMs?: number;
  onDeadline?: (file: string) => void;
}): Promise<FileSlots> {
  const { path, base, max } = options;
  const cores = cpus().length;
  const waiting: { socket: Socket; file: string; pid: number; askedAt: number }[] = [];
  const granted = new Map<Socket, NodeJS.Timeout | undefined>();
  const waitedMs: Record<string, number> = {};
  let extras = 0;
  let lastExtraAt = Number.NEGATIVE_INFINITY;
  const samples: { at: number; busy: number; total: number }[] = [];

  const measuredIdleCores = (): number => {
    const now = performance.now();
    const last = samples.at(-1);
    const first = samples.find((s) => s.at >= now - IDLE_WINDOW_MS - SAMPLE_MS);
    if (!first || !last || last.at - first.at < IDLE_WINDOW_MS - SAMPLE_MS || last.total === first.total) return 0;
    return ((last.total - first.total - (last.busy - first.busy)) / (last.total - first.total)) * cores;
  };
  const idleCores = options.idleCores ?? measuredIdleCores;
  const pump = () => {
    while (waiting.length > 0) {
      const extra = granted.size >= base;
      if (extra && (granted.size >= max || performance.now() - lastExtraAt < (options.extraGapMs ?? EXTRA_GAP_MS) || idleCores() < IDLE_CORES)) return;
      const next = waiting.shift()!;
      const deadline =
        options.deadlineMs === undefined
          ? undefined
          : setTimeout(() => {
              options.onDeadline?.(next.file);
              // Only a process this one started (node:test starts each file's): a pid named wrongly kills nothing else.
              if (!startedHere(next.pid)) return;
              try {
                process.kill(next.pid, 'SIGKILL');
              } catch {
                // already gone
              }
            }, options.deadlineMs);
      deadline?.unref();
      granted.set(next.socket, deadline);
      waitedMs[next.file] = Math.round(performance.now() - next.askedAt);
      if (extra) {
        extras += 1;
        lastExtraAt = performance.now();
      }
      next.socket.write('go\n');
    }
  };

  const server: Server = createServer((socket) => {
    let asked = '';
    let file: string | undefined;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      if (file !== undefined) return;
      asked += chunk;
      const end = asked.indexOf('\n');
      if (end === -1) return;
      // `<pid> <file>`
      const line = asked.slice(0, end);
      const space = line.indexOf(' ');
      file = line.slice(space + 1);
      waiting.push({ socket, file, pid: Number(line.slice(0, space)), askedAt: performance.now() });
      pump();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(granted.get(socket));
      granted.delete(socket);
      const i = waiting.findIndex((w) => w.socket === socket);
      if (i !== -1) waiting.splice(i, 1);
      pump();
    });
  });
  rmSync(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  const sampler = setInterval(() => {
    const now = ticks();
    if (!now) return;
    samples.push({ at: performance.now(), ...now });
    while (samples.length > 0 && samples[0]!.at < performance.now() - 2 * IDLE_WINDOW_MS) samples.shift();
    pump();
  }, SAMPLE_MS);
  sampler.unref();

  return {
    path,
    waitedMs,
    extraStarts: () => extras,
    close: async () => {
      clearInterval(sampler);
      for (const [socket, deadline] of granted) {
        clearTimeout(deadline);
        socket.destroy();
      }
      for (const { socket } of waiting) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(path, { force: true });
    },
  };
}
