/** GET {prefix}/health (docs/rules.md, "Health and metrics"): 200 healthy, or 503 degraded naming the failing check. */
import { logger } from './log.ts';
import { SERVICE_VERSION } from './version.ts';

const CHECK_TIMEOUT_MS = 3_000;

/** The dependencies the service cannot work without, each a probe that rejects when it is unavailable. */
export interface HealthProbes {
  dynamodb: () => Promise<void>;
  ipfs: () => Promise<void>;
}

/** Checks whose timeout was logged: requests sharing one check in flight (reusedProbes) log its timeout once. */
const timeoutsLogged = new WeakSet<Promise<void>>();

/** A check's answer; a probe's failure is logged where it is observed once (reusedProbes), its timeout here, once. */
async function check(name: string, probe: () => Promise<void>): Promise<'ok' | 'unavailable'> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), CHECK_TIMEOUT_MS).unref();
  });
  try {
    const running = probe();
    if ((await Promise.race([running, timedOut])) === 'timeout') {
      if (!timeoutsLogged.has(running)) {
        timeoutsLogged.add(running);
        logger.warn('health check failed', { check: name, error: new Error(`${name} check timed out after ${CHECK_TIMEOUT_MS} ms`) });
      }
      return 'unavailable';
    }
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How long an instance gives the same answer for a dependency: `/health` is open to anyone and counted against no
 * limit, so without it each request cost a DynamoDB read and an IPFS call. A flood now costs each instance one of
 * each a second at most, and concurrent requests in one process share the check in flight.
 */
export const HEALTH_REUSE_MS = 1_000;

/**
 * The probes, each answering from its last check for `reuseMs` after that check settled (either way), and sharing
 * a check in flight; one in flight longer than a check may take is not waited on again (a new one starts).
 */
export function reusedProbes(probes: HealthProbes, reuseMs = HEALTH_REUSE_MS, now: () => number = () => performance.now()): HealthProbes {
  const reused = (name: string, probe: () => Promise<void>) => {
    let last: { promise: Promise<void>; startedAt: number; settledAt?: number } | undefined;
    return () => {
      const at = now();
      if (last && (last.settledAt === undefined ? at - last.startedAt < CHECK_TIMEOUT_MS : at - last.settledAt < reuseMs)) return last.promise;
      const entry: NonNullable<typeof last> = { promise: (async () => probe())(), startedAt: at };
      entry.promise.then(
        () => {
          entry.settledAt = now();
        },
        (error) => {
          entry.settledAt = now();
          logger.warn('health check failed', { check: name, error });
        },
      );
      last = entry;
      return entry.promise;
    };
  };
  return { dynamodb: reused('dynamodb', probes.dynamodb), ipfs: reused('ipfs', probes.ipfs) };
}

/** The answer: 200 healthy, or 503 with Retry-After, naming each check. */
export interface HealthReport {
  status: 200 | 503;
  headers: Record<string, string>;
  body: { status: 'healthy' | 'degraded'; service: string; version: string; checks: Record<keyof HealthProbes, 'ok' | 'unavailable'> };
}

export async function healthReport(probes: HealthProbes, service: 'ledger' | 'business' = 'ledger'): Promise<HealthReport> {
  const [dynamodb, ipfs] = await Promise.all([check('dynamodb', probes.dynamodb), check('ipfs', probes.ipfs)]);
  const checks = { dynamodb, ipfs };
  const healthy = Object.values(checks).every((c) => c === 'ok');
  return {
    status: healthy ? 200 : 503,
    headers: healthy ? {} : { 'Retry-After': '5' },
    body: { status: healthy ? 'healthy' : 'degraded', service, version: SERVICE_VERSION, checks },
  };
}
