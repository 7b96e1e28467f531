/**
 * What the reliability suite shares: how long to run (shorter with CI=true), where each test records the
 * figures it reports, and the checks every test ends with (a chain read back whole through the API).
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import { settingsSchema } from '#shared/config';
import type { Block } from '#shared/ledger/types';
import { checkBlocks, readAllBlocks } from '#test/support/chain';
import { call } from '#test/support/stack';

const ROOT = new URL('../../', import.meta.url).pathname;
export const CI = process.env.CI === 'true';

/**
 * The instance limit of `npm start` (10 a function), for the stacks under load here: as on Lambda, a request seldom
 * waits for another's instance. The other suites' stacks allow 2 (test/support/stack.ts: their CPU); with 2, the
 * appends held by a DynamoDB outage kept a new append from any instance past its client's 15 s.
 */
export const AS_NPM_START = { SVC_LOCAL_MAX_INSTANCES: String(settingsSchema.shape.SVC_LOCAL_MAX_INSTANCES.parse(undefined)) };
/** Where figures go: one JSON line per test, read by test/reliability/run.ts for its table. */
export const FIGURES_FILE = process.env.RELIABILITY_FIGURES ?? join(ROOT, 'test-output', 'reliability', 'figures.jsonl');

export interface Figures {
  /** Which row of the summary table. */
  area: 'load' | 'faults' | 'inputs' | 'abuse';
  what: string;
  /** Load held (requests, clients, seconds), faults injected, inputs tried… */
  tried: string;
  lost: number;
  forks: number;
  /** 5xx other than documented 503s (with Retry-After). */
  unexpected5xx: number;
  notes?: string;
}

/** Prints a test's figures under it and keeps them for the summary table. */
export function report(t: TestContext, figures: Figures): void {
  t.diagnostic(
    `${figures.what}: ${figures.tried}; lost ${figures.lost}, forks ${figures.forks}, unexpected 5xx ${figures.unexpected5xx}${figures.notes ? `; ${figures.notes}` : ''}`,
  );
  mkdirSync(dirname(FIGURES_FILE), { recursive: true });
  appendFileSync(FIGURES_FILE, `${JSON.stringify(figures)}\n`);
}

/**
 * Every block of a chain through the API, with what a fork or a half-written block would break: indices
 * 0…head each exactly once, every hash recomputed, every link followed, and the server's own audit.
 */
export async function readWholeChain(base: string, chain: string): Promise<{ blocks: Block[]; forks: number }> {
  const blocks = await readAllBlocks(base, chain);
  const { forks } = checkBlocks(blocks);
  const audit = await call(base, 'GET', `/api/v1/chains/${chain}/verify`);
  assert.equal(audit.status, 200, audit.text);
  assert.equal(audit.body.valid, true, `the server's audit of '${chain}': ${audit.text}`);
  return { blocks, forks };
}

/**
 * The acknowledged events missing from the blocks (by key; an event counts only under the id it was
 * acknowledged with), how many that is, and how many events appear twice.
 */
export function reconcile(blocks: Block[], acknowledged: Map<string, string>): { lost: number; missing: string[]; duplicated: number } {
  const seen = new Map<string, number>();
  const ids = new Map<string, string>();
  for (const block of blocks.slice(1)) {
    for (const event of block.events) {
      const key = String(event.details.key);
      seen.set(key, (seen.get(key) ?? 0) + 1);
      ids.set(key, event.event_id);
    }
  }
  const missing = [...acknowledged].filter(([key, eventId]) => ids.get(key) !== eventId).map(([key]) => key);
  const duplicated = [...seen.values()].filter((n) => n > 1).length;
  return { lost: missing.length, missing, duplicated };
}
