/**
 * CPU and memory of a process, read from /proc (Linux): CPU as the share of one core used over a
 * window, RSS as the largest resident set seen while sampling.
 */
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds the process has used (user + system). */
export function cpuSeconds(pid: number): number {
  // Fields after the command name (which may hold spaces) start at ")"; utime and stime are 14th and 15th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+)/.exec(status)?.[1];
  return Number(kb ?? 0) * 1024;
}

export interface Usage {
  /** Average share of one core, percent (200 = both cores of this machine). */
  cpu_pct: number;
  /** Largest resident set seen, MiB. */
  rss_max_mb: number;
}

/** Samples the processes until `stop()`; answers each one's usage over the window. */
export function sample(pids: Record<string, number | undefined>): { stop(): Record<string, Usage> } {
  const started = performance.now();
  const alive = Object.entries(pids).filter((e): e is [string, number] => e[1] !== undefined);
  const cpuAtStart = new Map(alive.map(([name, pid]) => [name, cpuSeconds(pid)]));
  const rss = new Map(alive.map(([name, pid]) => [name, rssBytes(pid)]));
  const lastCpu = new Map(cpuAtStart);
  const timer = setInterval(() => {
    for (const [name, pid] of alive) {
      try {
        rss.set(name, Math.max(rss.get(name) ?? 0, rssBytes(pid)));
        lastCpu.set(name, cpuSeconds(pid));
      } catch {
        // the process ended; keep what was seen
      }
    }
  }, 100);
  const selfCpu = process.cpuUsage();
  let selfRss = process.memoryUsage().rss;
  const selfTimer = setInterval(() => (selfRss = Math.max(selfRss, process.memoryUsage().rss)), 200);
  return {
    stop() {
      clearInterval(timer);
      clearInterval(selfTimer);
      const seconds = (performance.now() - started) / 1000;
      const usage: Record<string, Usage> = {};
      for (const [name, pid] of alive) {
        try {
          lastCpu.set(name, cpuSeconds(pid));
          rss.set(name, Math.max(rss.get(name) ?? 0, rssBytes(pid)));
        } catch {
          // ended: its figures are those of the last sample
        }
        const cpu = lastCpu.get(name)! - cpuAtStart.get(name)!;
        usage[name] = { cpu_pct: round((cpu / seconds) * 100, 0), rss_max_mb: round(rss.get(name)! / 2 ** 20, 0) };
      }
      // The benchmark's own process: the load generator (raw SDK loops, autocannon) shares the cores too.
      const self = process.cpuUsage(selfCpu);
      usage.bench = { cpu_pct: round(((self.user + self.system) / 1e6 / seconds) * 100, 0), rss_max_mb: round(selfRss / 2 ** 20, 0) };
      return usage;
    },
  };
}

export function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
