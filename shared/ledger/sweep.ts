/**
 * The scheduled sweep of unwritten rounds. A round's bodies wait in pending appends (kept 7 days, TTL) until
 * its leader writes their records; a leader that died between its commit and its records, or whose writes
 * DynamoDB refused through their retries, leaves that to the chain's next leader. On a chain nobody appends
 * to, that could be never: the sweep (every hour on AWS, `SVC_SWEEP_INTERVAL_MS` locally) finishes such
 * rounds so that no committed block's body outlives its pending append. It seals no pending append.
 *
 * A sweep pages through the chain list, 100 heads a page, and goes on where the last one stopped: its place
 * is saved after every page (one small item), so a list longer than one invocation can read is covered by
 * the sweeps that follow, and an invocation cut short loses at most a page of progress. A sweep that
 * reaches the list's end clears the place: the next one starts over.
 */
import { type ChainAppender, recordsUnwritten } from './appender.ts';
import type { LedgerRepository } from './repository.ts';

/** What one sweep did: chains looked at, rounds finished, where the next sweep goes on, and failures. */
export interface SweepResult {
  /** Chains whose heads this sweep read. */
  chains: number;
  finished: string[];
  /** Someone held the lease (a leader at work, or one that died a moment ago): the next pass looks again. */
  leased: string[];
  failed: { chain_name: string; error: unknown }[];
  /** Whether it started where an earlier sweep stopped (not at the list's start). */
  resumed: boolean;
  /** Whether it reached the list's end (the next sweep starts over); if not, the next goes on after `stoppedAfter`. */
  reachedEnd: boolean;
  /** The last chain it looked at, when it stopped before the list's end. */
  stoppedAfter?: string;
}

/** Kept back from the sweep's time for one more chain's round (a few requests, its records included). */
const SWEEP_CHAIN_RESERVE_MS = 3_000;
/** Chains per page: one Query of the list and one BatchGetItem of their heads. */
export const SWEEP_PAGE_SIZE = 100;

/**
 * Finishes the rounds that leaders left unwritten, chain after chain from where the last sweep stopped, while
 * `timeLeftMs()` allows. Every head is read once, eventually consistent; only chains whose head says a round's
 * records are unwritten are visited, each read again strongly before anything is written. A chain it could
 * not finish is in `failed`; the sweep goes on past it (the next pass tries it again), so one chain that
 * keeps failing does not hold back the chains after it.
 */
export async function finishAbandonedRounds(
  deps: {
    repository: Pick<LedgerRepository, 'listHeadsPage' | 'getSweepPosition' | 'saveSweepPosition'>;
    appender: Pick<ChainAppender, 'finishAbandoned'>;
  },
  timeLeftMs: () => number,
  pageSize = SWEEP_PAGE_SIZE,
): Promise<SweepResult> {
  let position = await deps.repository.getSweepPosition();
  const result: SweepResult = { chains: 0, finished: [], leased: [], failed: [], resumed: position !== undefined, reachedEnd: false };
  let lastName: string | undefined;
  let saved = position;
  const save = async (at: string | undefined) => {
    if (at === saved) return;
    await deps.repository.saveSweepPosition(at);
    saved = at;
  };
  for (;;) {
    if (timeLeftMs() < SWEEP_CHAIN_RESERVE_MS) break;
    const page = await deps.repository.listHeadsPage(position, pageSize);
    let stopped = false;
    for (const { position: at, head } of page.heads) {
      if (recordsUnwritten(head)) {
        if (timeLeftMs() < SWEEP_CHAIN_RESERVE_MS) {
          stopped = true;
          break;
        }
        try {
          const outcome = await deps.appender.finishAbandoned(head.chainName);
          if (outcome === 'finished') result.finished.push(head.chainName);
          else if (outcome === 'leased') result.leased.push(head.chainName);
        } catch (error) {
          result.failed.push({ chain_name: head.chainName, error });
        }
      }
      position = at;
      lastName = head.chainName;
      result.chains += 1;
    }
    if (stopped) break;
    if (page.next === undefined) {
      result.reachedEnd = true;
      position = undefined;
      break;
    }
    // A page whose chains all had no head yet still moves the place on.
    position = page.next;
    await save(position);
  }
  await save(position);
  if (!result.reachedEnd && lastName !== undefined) result.stoppedAfter = lastName;
  return result;
}
