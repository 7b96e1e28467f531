/**
 * Every request's DynamoDB reads are capped (SVC_MAX_READ_ITEMS, docs/settings.md).
 *
 * A request's limits and prices (pages, GraphQL points) bound what each route means to read; this is the bound
 * under all of them, held where every read passes: the DynamoDB client's middleware (shared/storage/client.ts)
 * counts the items each read request of the request brings back (or, for a filtered query, examines; or one per
 * started 4 KB of its items, when that is more: a page of whole blocks is its size, not its count), and past
 * the cap the request fails with a 422 that says so, whatever route, field or path led there. Reads served from
 * the instance's cache cost DynamoDB nothing and are not counted.
 *
 * The allowance travels with the request's async context (AsyncLocalStorage), as its deadline does. Work that
 * outlives the request and serves later ones (a process's queue of appends, shared/deadline.ts `outsideDeadline`)
 * runs outside it; so does everything outside a request (scripts, the sweep, the broadcaster).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { ReadLimitExceededError } from './errors.ts';

/** SVC_MAX_READ_ITEMS's default: ten pages of the largest a route answers (1,000), with their blocks. */
export const DEFAULT_MAX_READ_ITEMS = 10_000;

interface Allowance {
  max: number;
  read: number;
}

const allowances = new AsyncLocalStorage<Allowance | undefined>();

/** Runs `work` with at most `maxItems` items read from DynamoDB. */
export function withReadAllowance<T>(maxItems: number, work: () => Promise<T>): Promise<T> {
  return allowances.run({ max: maxItems, read: 0 }, work);
}

/** Sets the current request's allowance to `maxItems` (a route that must read more by what it is); outside one, nothing. */
export function allowReads(maxItems: number): void {
  const allowance = allowances.getStore();
  if (allowance) allowance.max = maxItems;
}

/** Runs `work` outside any request's allowance (work that serves other requests than the one that started it). */
export function outsideReadAllowance<T>(work: () => T): T {
  return allowances.run(undefined, work);
}

/** Before a read: throws once the request has read its allowance. */
export function checkReadAllowance(): void {
  const allowance = allowances.getStore();
  if (allowance && allowance.read >= allowance.max) throw new ReadLimitExceededError(allowance.max);
}

/** After a read: counts its items, and throws when they take the request past its allowance. */
export function chargeReads(items: number): void {
  const allowance = allowances.getStore();
  if (!allowance || items <= 0) return;
  allowance.read += items;
  if (allowance.read > allowance.max) throw new ReadLimitExceededError(allowance.max);
}

/** Whether reads are counted here: inside a request's allowance (not outside one, nor in work that serves later ones). */
export function countingReads(): boolean {
  return allowances.getStore() !== undefined;
}

/** Items read so far by the current request (0 outside one). */
export function itemsRead(): number {
  return allowances.getStore()?.read ?? 0;
}
