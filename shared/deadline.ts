/**
 * Every invocation has a deadline, and every wait inside it ends by then.
 *
 * Lambda stops a function at its timeout (29 s here); API Gateway gives up at 30 s. A wait with no end of its
 * own (a DynamoDB request nobody answers, a lease, a receipt poll, a retry loop) would otherwise run until
 * Lambda kills the instance, bill the whole timeout, and give the client a bare 500. So each invocation runs
 * inside a budget: its deadline is the function's remaining time less a margin kept to answer, and
 *
 * - every AWS SDK request of the invocation is aborted at the deadline (the clients' request handler reads
 *   `deadlineSignal()`), besides each attempt's own timeout;
 * - loops that wait (`pause`) or retry (`checkDeadline`) stop at it;
 * - whatever still runs then is answered for: the HTTP chain answers 503 with Retry-After
 *   (`DeadlineExceededError`), never a hang.
 *
 * The budget travels with the invocation's async context (AsyncLocalStorage), so code deep in a repository
 * needs no parameter for it. Outside any budget (scripts, the launcher) nothing is bounded here.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { setMaxListeners } from 'node:events';
import { steadyNow } from './clock.ts';
import { DeadlineExceededError } from './errors.ts';
import { outsideReadAllowance } from './read-allowance.ts';

/** What an invocation keeps back to answer (the 503, its log line, the metrics) before the function's timeout. */
export const ANSWER_MARGIN_MS = 1_500;

interface Budget {
  readonly deadlineMs: number;
  readonly signal: AbortSignal;
}

/** Undefined inside `outsideDeadline`, as outside any invocation. */
const budgets = new AsyncLocalStorage<Budget | undefined>();

/** The deadline for an invocation whose context says how long the function has left. */
export function invocationDeadline(context: { getRemainingTimeInMillis?: () => number } | undefined, nowMs = steadyNow()): number {
  const remaining = context?.getRemainingTimeInMillis?.();
  if (typeof remaining !== 'number' || !Number.isFinite(remaining)) return Number.POSITIVE_INFINITY;
  return nowMs + Math.max(0, remaining - ANSWER_MARGIN_MS);
}

/**
 * Runs `work` with a deadline (epoch ms on `steadyNow`'s clock, which never steps). Nested budgets keep the earlier deadline: an inner one can only
 * shorten the wait. The signal aborts with a DeadlineExceededError as reason.
 */
export function withDeadline<T>(deadlineMs: number, work: () => Promise<T>): Promise<T> {
  const effective = Math.min(deadlineMs, budgets.getStore()?.deadlineMs ?? Number.POSITIVE_INFINITY);
  return Number.isFinite(effective) ? runBudget(effective, work) : work();
}

/** Runs `work` in a budget ending at `deadlineMs`, its signal aborted then. */
function runBudget<T>(deadlineMs: number, work: () => Promise<T>): Promise<T> {
  const controller = new AbortController();
  // Every request of the invocation listens to it (a page of reads is dozens at once): not a leak, so no warning.
  setMaxListeners(1_000, controller.signal);
  const abort = () => controller.abort(new DeadlineExceededError());
  const left = deadlineMs - steadyNow();
  let timer: NodeJS.Timeout | undefined;
  if (left <= 0) abort();
  else timer = setTimeout(abort, left);
  // The timer lives only as long as the invocation: cleared when the work settles, so a frozen instance holds none.
  return budgets.run({ deadlineMs, signal: controller.signal }, work).finally(() => clearTimeout(timer));
}

/**
 * Runs `work` outside any invocation's budget. For work that outlives the request that started it and serves
 * later ones (a process's queue of appends on a chain, drained while requests keep coming): it sets each
 * step's budget itself, from the callers that step serves, instead of inheriting the first caller's deadline
 * forever (in one process under steady load, every commit after that request's deadline failed with 503).
 */
export function outsideDeadline<T>(work: () => T): T {
  // Run with no budget set, not under `budgets.exit`: under exit, the code after an `await` inside `work` came
  // back in the context of the budget it had awaited (Node 20's async-hooks storage), so the next commit of a
  // queue ran within the deadline of the caller of the one before.
  // Nor within that caller's allowance of reads (shared/read-allowance.ts): the queue's reads are for its later callers too.
  return budgets.run(undefined, () => outsideReadAllowance(work));
}

/** The current invocation's deadline (epoch ms, `steadyNow`'s clock), or Infinity outside one. */
export function currentDeadline(): number {
  return budgets.getStore()?.deadlineMs ?? Number.POSITIVE_INFINITY;
}

/**
 * Whether the current deadline has passed: its signal aborted, or its time reached. Both, because the timer that
 * aborts the signal runs on the event loop's whole-millisecond clock and may fire a fraction of a millisecond
 * before `steadyNow` reaches the deadline: what runs after the abort must find the deadline passed too.
 */
export function deadlinePassed(): boolean {
  const budget = budgets.getStore();
  return budget !== undefined && (budget.signal.aborted || steadyNow() >= budget.deadlineMs);
}

/** Milliseconds left before the current deadline (Infinity outside a budget, 0 once passed). */
export function remainingMs(): number {
  return deadlinePassed() ? 0 : Math.max(0, currentDeadline() - steadyNow());
}

/** Aborts at the current deadline; undefined outside a budget. */
export function deadlineSignal(): AbortSignal | undefined {
  return budgets.getStore()?.signal;
}

/** Throws DeadlineExceededError (503) naming what was being waited for, once the deadline has passed. */
export function checkDeadline(waitingFor: string): void {
  if (deadlinePassed()) throw new DeadlineExceededError(waitingFor);
}

/**
 * Waits `ms`, unless that would pass the deadline: then it throws at once (DeadlineExceededError), rather than
 * sleeping into a wait that cannot be finished anyway.
 */
export async function pause(ms: number, waitingFor: string): Promise<void> {
  if (deadlinePassed() || steadyNow() + ms >= currentDeadline()) throw new DeadlineExceededError(waitingFor);
  await new Promise<void>((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs `work` past the current deadline by at most `graceMs` (never past the margin kept to answer): for the
 * one read that settles what an aborted write did, so that an outcome is not left unknown for want of a
 * few milliseconds.
 */
export function withGrace<T>(graceMs: number, work: () => Promise<T>): Promise<T> {
  const budget = budgets.getStore();
  if (!budget) return work();
  return runBudget(Math.max(budget.deadlineMs, steadyNow()) + Math.min(graceMs, ANSWER_MARGIN_MS / 2), work);
}

/** A signal that aborts after `ms` or at the invocation's deadline, whichever comes first (for non-AWS clients). */
export function timeoutSignal(ms: number): AbortSignal {
  const deadline = deadlineSignal();
  return deadline ? AbortSignal.any([AbortSignal.timeout(ms), deadline]) : AbortSignal.timeout(ms);
}
