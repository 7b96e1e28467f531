/** GET {prefix}/health (docs/rules.md, "Health and metrics"): 200 healthy, or 503 degraded naming the failing check. */
import { logger } from './log.ts';
import { SERVICE_VERSION } from './version.ts';

const CHECK_TIMEOUT_MS = 3_000;

/** The dependencies the service cannot work without, each a probe that rejects when it is unavailable. */
export interface HealthProbes {
  dynamodb: () => Promise<void>;
  ipfs: () => Promise<void>;
}

async function check(name: string, probe: () => Promise<void>): Promise<'ok' | 'unavailable'> {
  try {
    await Promise.race([probe(), new Promise((_, reject) => setTimeout(() => reject(new Error(`${name} check timed out`)), CHECK_TIMEOUT_MS).unref())]);
    return 'ok';
  } catch (error) {
    logger.warn('health check failed', { check: name, error });
    return 'unavailable';
  }
}

/** Health of the service: every dependency checked at once. */
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
