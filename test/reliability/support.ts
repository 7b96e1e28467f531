/**
 * What the reliability suite shares: how long to run (shorter with CI=true), where each test records the
 * figures it reports, and the checks every test ends with (a chain read back whole through the API).
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import { hashBlock } from '#shared/ledger/hashing';
import { call } from '#test/support/stack';

const ROOT = new URL('../../', import.meta.url).pathname;
export const CI = process.env.CI === 'true';
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
  t.diagnostic(`${figures.what}: ${figures.tried}; lost ${figures.lost}, forks ${figures.forks}, unexpected 5xx ${figures.unexpected5xx}${figures.notes ? `; ${figures.notes}` : ''}`);
  mkdirSync(dirname(FIGURES_FILE), { recursive: true });
  appendFileSync(FIGURES_FILE, `${JSON.stringify(figures)}\n`);
}

export interface Block {
  index: number;
  chain_name: string;
  previous_hash: string;
  hash: string;
  timestamp: number;
  events: { event_id: string; entity_id: string; event_type: string; details: Record<string, unknown> }[];
}

/**
 * Every block of a chain through the API, with what a fork or a half-written block would break: indices
 * 0…head each exactly once, every hash recomputed, every link followed, and the server's own audit.
 */
export async function readWholeChain(base: string, chain: string): Promise<{ blocks: Block[]; forks: number }> {
  const blocks: Block[] = [];
  for (;;) {
    const page = await call(base, 'GET', `/api/v1/chains/${chain}/blocks?limit=100&offset=${blocks.length}`);
    assert.equal(page.status, 200, page.text);
    blocks.push(...page.body.blocks);
    if (blocks.length >= page.body.total || page.body.blocks.length === 0) {
      assert.equal(blocks.length, page.body.total, 'every block up to the head can be read');
      break;
    }
  }
  let forks = 0;
  blocks.forEach((block, i) => {
    assert.equal(block.index, i, `block ${i} is where it should be (no gap)`);
    assert.equal(block.hash, hashBlock(block as never), `block ${i} is whole: its hash recomputes`);
    if (i > 0 && block.previous_hash !== blocks[i - 1]!.hash) forks += 1;
  });
  const audit = await call(base, 'GET', `/api/v1/chains/${chain}/verify`);
  assert.equal(audit.status, 200, audit.text);
  assert.equal(audit.body.valid, true, `the server's audit of '${chain}': ${audit.text}`);
  return { blocks, forks };
}

/** How many acknowledged events are missing from the blocks, and how many events appear twice. */
export function reconcile(blocks: Block[], acknowledged: Map<string, string>): { lost: number; duplicated: number } {
  const seen = new Map<string, number>();
  const ids = new Map<string, string>();
  for (const block of blocks.slice(1)) {
    for (const event of block.events) {
      const key = String(event.details.key);
      seen.set(key, (seen.get(key) ?? 0) + 1);
      ids.set(key, event.event_id);
    }
  }
  let lost = 0;
  for (const [key, eventId] of acknowledged) if (ids.get(key) !== eventId) lost += 1;
  const duplicated = [...seen.values()].filter((n) => n > 1).length;
  return { lost, duplicated };
}
