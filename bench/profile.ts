/**
 * `--profile`: where a process's CPU went during each scenario, from V8's own sampling profiler
 * (`node --cpu-prof`). Scenario windows are taken on the monotonic clock, which V8's sample timestamps
 * share, so one profile of the whole run is cut into one summary per scenario.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Window {
  name: string;
  /** Monotonic microseconds. */
  fromUs: number;
  toUs: number;
}

export interface ProfileSummary {
  window_ms: number;
  busy_ms: number;
  /** Busy time by where the code lives: a package, the service's own code, Node itself, the GC. */
  by_origin: Record<string, number>;
  /** The functions with the most self time. */
  top: { fn: string; ms: number; pct: number }[];
}

/** Now on the monotonic clock V8's profiler uses, in microseconds. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

function origin(url: string, functionName: string): string {
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(program)' || functionName === '(idle)') return functionName;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg.startsWith('@aws-sdk/') || pkg.startsWith('@smithy/') ? 'AWS SDK' : pkg;
  if (url.startsWith('node:') || url === '') return 'Node.js (http, streams, crypto, JSON…)';
  return 'service code';
}

function label(frame: CpuProfile['nodes'][number]['callFrame']): string {
  const file = frame.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(shared|functions|infra|bench)\//, '$1/');
  return `${frame.functionName || '(anonymous)'} ${file}${file ? `:${frame.lineNumber + 1}` : ''}`;
}

/** The main thread's profile in a --cpu-prof directory: the one with the most busy samples. */
export function loadMainProfile(dir: string): CpuProfile | undefined {
  let best: { profile: CpuProfile; busy: number } | undefined;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
    const busy = profile.samples.filter((s) => !idle.has(s)).length;
    if (!best || busy > best.busy) best = { profile, busy };
  }
  return best?.profile;
}

export function summarize(profile: CpuProfile, window?: Window, topN = 10): ProfileSummary {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const from = window?.fromUs ?? -Infinity;
  const to = window?.toUs ?? Infinity;
  const selfUs = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  let t = profile.startTime;
  let windowUs = 0;
  let idleUs = 0;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0;
    if (t < from || t > to) return;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    const frame = frames.get(id)!;
    windowUs += dt;
    if (frame.functionName === '(idle)') {
      idleUs += dt;
      return;
    }
    const key = label(frame);
    selfUs.set(key, (selfUs.get(key) ?? 0) + dt);
    const where = origin(frame.url, frame.functionName);
    byOrigin.set(where, (byOrigin.get(where) ?? 0) + dt);
  });
  const busyUs = windowUs - idleUs;
  const ms = (us: number) => Math.round(us / 100) / 10;
  return {
    window_ms: ms(windowUs),
    busy_ms: ms(busyUs),
    by_origin: Object.fromEntries([...byOrigin].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, ms(v)])),
    top: [...selfUs]
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([fn, us]) => ({ fn, ms: ms(us), pct: Math.round((1000 * us) / Math.max(1, busyUs)) / 10 })),
  };
}
