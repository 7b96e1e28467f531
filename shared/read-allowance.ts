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
 * Off-chain payloads count too, where they are fetched (shared/offchain/offchain.ts): one item per started 4 KB
 * fetched from IPFS. And the payloads a request puts in its answer (`resolve_cid`, each event that cites one, the
 * same payload cited twice counted twice) may come to no more than one answer can carry (MAX_RESOLVED_BYTES): a
 * request of 99 events citing one 4 MB payload had fetched and decrypted it 99 times, built an answer of 392 MB,
 * and only then been refused; four at once held the service for 26 s (red team, 2026-12-06).
 *
 * The allowance travels with the request's async context (AsyncLocalStorage), as its deadline does. Work that
 * outlives the request and serves later ones (a process's queue of appends, shared/deadline.ts `outsideDeadline`)
 * runs outside it; so does everything outside a request (scripts, the sweep, the broadcaster).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { ReadLimitExceededError, ResolvedPayloadsTooLargeError } from './errors.ts';

/** SVC_MAX_READ_ITEMS's default: ten pages of the largest a route answers (1,000), with their blocks. */
export const DEFAULT_MAX_READ_ITEMS = 10_000;

/** What one answer can carry (a Lambda synchronous response's 6 MB, shared/http/answer-size.ts): the most payload bytes a request resolves. */
export const MAX_RESOLVED_BYTES = 6_291_556;

/** Bytes that count as one item read: DynamoDB's read unit (a large answer's items, and IPFS bytes, are counted by it). */
export const READ_UNIT_BYTES = 4096;

interface Allowance {
  max: number;
  read: number;
  /**
   * A route that reads past the cap by what it is: up to `ceiling` items, each further `step` (the cap) paid for first
   * by `topUp` (one more request counted against the caller's rate budget: 429 once it is spent).
   */
  extension?: { ceiling: number; step: number; topUp: () => Promise<void>; paying?: Promise<void> };
  /** Bytes of off-chain payloads resolved into the answer so far. */
  resolved: number;
}

const allowances = new AsyncLocalStorage<Allowance | undefined>();

/** Runs `work` with at most `maxItems` items read from DynamoDB. */
export function withReadAllowance<T>(maxItems: number, work: () => Promise<T>): Promise<T> {
  return allowances.run({ max: maxItems, read: 0, resolved: 0 }, work);
}

/**
 * Lets the current request read up to `maxItems` (a route that must read more by what it is); outside one, nothing.
 * With `topUp` (the caller's rate budget: shared/http/rate-limit.ts), each further SVC_MAX_READ_ITEMS items are paid
 * for as one more request before they are read: a reader key's verifies of a long chain had read a whole chain each,
 * twelve at once held every other read of the stack for 25 s, and none counted more than one request (red team,
 * 2026-12-07). `perMinute`, that budget: a request never reads more than a whole minute of it could pay for (past
 * it, the 422 that says so, rather than a 429 that no retry could get past). Without `topUp` (no rate limit), the
 * whole of `maxItems` at once, as before.
 */
export function allowReads(maxItems: number, topUp?: () => Promise<void>, perMinute?: number): void {
  const allowance = allowances.getStore();
  if (!allowance) return;
  if (!topUp) {
    allowance.max = maxItems;
    return;
  }
  const ceiling = Math.min(maxItems, perMinute ? perMinute * allowance.max : maxItems);
  if (ceiling > allowance.max) allowance.extension = { ceiling, step: allowance.max, topUp };
}

/** Whether the request may still pay for more reads. */
const extensible = (allowance: Allowance) => allowance.extension !== undefined && allowance.max < allowance.extension.ceiling;

/** Before a read: pays for the next allowance once the request has read its own (a route with an extension); else as checkReadAllowance. */
export async function beforeRead(): Promise<void> {
  const allowance = allowances.getStore();
  while (allowance && allowance.read >= allowance.max && extensible(allowance)) {
    const extension = allowance.extension!;
    // One payment at a time: reads sent together (Promise.all) past the allowance wait for the same one, then look
    // again, where each had paid for an allowance of its own (sixteen anchors read at once: sixteen requests).
    // The limiter's own requests are not the route's reads (nor could they pay for themselves).
    extension.paying ??= outsideReadAllowance(extension.topUp)
      .then(() => {
        allowance.max = Math.min(extension.ceiling, allowance.max + extension.step);
      })
      .finally(() => {
        extension.paying = undefined;
      });
    await extension.paying;
  }
  checkReadAllowance();
}

/** Runs `work` outside any request's allowance (work that serves other requests than the one that started it). */
export function outsideReadAllowance<T>(work: () => T): T {
  return allowances.run(undefined, work);
}

/** Before a read: throws once the request has read its allowance. */
function checkReadAllowance(): void {
  const allowance = allowances.getStore();
  if (allowance && allowance.read >= allowance.max) throw new ReadLimitExceededError(allowance.max);
}

/** After a read: counts its items, and throws when they take the request past its allowance. */
export function chargeReads(items: number): void {
  const allowance = allowances.getStore();
  if (!allowance || items <= 0) return;
  allowance.read += items;
  // Past an allowance that may still be paid for, the next read pays (beforeRead): this one's items are counted in it.
  if (allowance.read > allowance.max && !extensible(allowance)) throw new ReadLimitExceededError(allowance.max);
}

/** Whether reads are counted here: inside a request's allowance (not outside one, nor in work that serves later ones). */
export function countingReads(): boolean {
  return allowances.getStore() !== undefined;
}

/** Items read so far by the current request (0 outside one). */
export function itemsRead(): number {
  return allowances.getStore()?.read ?? 0;
}

/**
 * What one off-chain payload fetched costs at least, in items: an IPFS round trip and, on AWS, a KMS Decrypt of its
 * data key ($0.03 per 10,000, what 12 to 24 DynamoDB read units cost). Priced by its bytes alone, a trace resolving
 * 1,000 small payloads of distinct scopes read 1,000 payloads and unwrapped 1,000 keys for 430 items (red team).
 */
export const PAYLOAD_FETCH_ITEMS = 16;

/** After an off-chain payload is fetched: its bytes, as items read (one per started 4 KB), PAYLOAD_FETCH_ITEMS at least. */
export function chargeFetched(bytes: number): void {
  chargeReads(Math.max(PAYLOAD_FETCH_ITEMS, Math.ceil(bytes / READ_UNIT_BYTES)));
}

/** A payload resolved into the answer (each event that cites it): throws once they pass what one answer can carry. */
export function chargeResolved(bytes: number): void {
  const allowance = allowances.getStore();
  if (!allowance) return;
  allowance.resolved += bytes;
  if (allowance.resolved > MAX_RESOLVED_BYTES) throw new ResolvedPayloadsTooLargeError(MAX_RESOLVED_BYTES);
}
