/**
 * The scheduled sweep of unwritten rounds. A round's bodies wait in pending appends (kept 7 days, TTL) until
 * its leader writes their records; a leader that died between its commit and its records, or whose writes
 * DynamoDB refused through their retries, leaves that to the chain's next leader. On a chain nobody appends
 * to, that could be never: the sweep (every hour on AWS, `SVC_SWEEP_INTERVAL_MS` locally) finishes such
 * rounds so that no committed block's body outlives its pending append. It seals no pending append.
 */
import { type ChainAppender, recordsUnwritten } from './appender.ts';
import type { LedgerRepository } from './repository.ts';

/** What one sweep did: chains looked at, rounds finished, chains left for a later sweep, and failures. */
export interface SweepResult {
  chains: number;
  finished: string[];
  /** Someone held the lease (a leader at work, or one that died a moment ago): the next sweep looks again. */
  leased: string[];
  /** Not reached before the sweep's time ran out: the next sweep starts over. */
  unvisited: string[];
  failed: { chain_name: string; error: unknown }[];
}

/** Kept back from the sweep's time for one more chain's round (a few requests, its records included). */
const SWEEP_CHAIN_RESERVE_MS = 3_000;

/**
 * Finishes every chain's round whose leader left it unwritten, while `timeLeftMs()` allows. Every head is
 * read once (the chain list, then 100 heads a request); only chains whose head says a round's records are unwritten
 * are visited, each read again strongly before anything is written.
 */
export async function finishAbandonedRounds(
  deps: { repository: Pick<LedgerRepository, 'listHeads'>; appender: Pick<ChainAppender, 'finishAbandoned'> },
  timeLeftMs: () => number,
): Promise<SweepResult> {
  const heads = await deps.repository.listHeads();
  const result: SweepResult = { chains: heads.length, finished: [], leased: [], unvisited: [], failed: [] };
  for (const head of heads.filter(recordsUnwritten)) {
    if (timeLeftMs() < SWEEP_CHAIN_RESERVE_MS) {
      result.unvisited.push(head.chainName);
      continue;
    }
    try {
      const outcome = await deps.appender.finishAbandoned(head.chainName);
      if (outcome === 'finished') result.finished.push(head.chainName);
      else if (outcome === 'leased') result.leased.push(head.chainName);
    } catch (error) {
      result.failed.push({ chain_name: head.chainName, error });
    }
  }
  return result;
}
