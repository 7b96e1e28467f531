/**
 * Run on a schedule (an EventBridge rule, every hour; locally every `SVC_SWEEP_INTERVAL_MS`): finishes every
 * chain's round whose leader left its records unwritten, before TTL deletes the pending appends that hold
 * their bodies (shared/ledger/sweep.ts). A sweep that could not finish a chain fails the invocation (its
 * Errors metric raises the alarm) after logging each chain's cause; the next sweep tries again.
 */
import type { Context, ScheduledEvent } from 'aws-lambda';
import { invocationDeadline, remainingMs, withDeadline } from '#shared/deadline';
import { logger } from '#shared/log';
import { finishAbandonedRounds } from '#shared/ledger/sweep';
import type { Core } from '#shared/wiring/core';
import { lambdaHandler } from '#shared/wiring/process';

export function createHandler(core: Core) {
  const sweep = async () => {
    const { repository, appender } = core.ledgerRuntime();
    const result = await finishAbandonedRounds({ repository, appender }, remainingMs);
    for (const { chain_name, error } of result.failed) logger.error('sweep could not finish a round', { chain_name, error });
    const summary = {
      chains: result.chains,
      finished: result.finished.length,
      leased: result.leased.length,
      failed: result.failed.length,
      resumed: result.resumed,
      reached_end: result.reachedEnd,
      ...(result.stoppedAfter !== undefined ? { stopped_after: result.stoppedAfter } : {}),
    };
    logger.info('sweep', { ...summary, ...(result.finished.length ? { finished_chains: result.finished } : {}) });
    if (result.failed.length > 0)
      throw new Error(`the sweep could not finish ${result.failed.length} chain(s): ${result.failed.map((f) => f.chain_name).join(', ')}`);
    return summary;
  };
  return (_event: ScheduledEvent | Record<string, unknown>, context?: Context) => withDeadline(invocationDeadline(context), sweep);
}

export const handler = lambdaHandler(createHandler);
