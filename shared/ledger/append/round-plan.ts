/**
 * What one round takes (a leader's plan), and when a chain's pending appends spread over more shards.
 *
 * Invariant kept here: a round holds what one commit can: its own drafts first, then pending appends oldest
 * first while they fit one transaction (the head, proofs, and records written with the commit) and the round's bytes; nothing above a shard's part-read keys (older
 * appends there were not read), and never two anchors of one Sub-Chain (both would update its head).
 */
import { pendingSkMs } from '../block-meta.ts';
import { type BlockDraft, draftBytes, MAX_TRANSACTION_ITEMS, transactionItems } from '../blocks.ts';
import type { PendingAppend } from '../repository.ts';
import type { AppenderCore } from './core.ts';
import { anchoredChains, anchorsAgain } from './parts.ts';
import { GROW_RATE_PER_SHARD, MAX_ROUND_BYTES, PENDING_PER_SHARD, refKey, type Unit } from './settings.ts';

/**
 * The units of the next round: our own drafts first, then pending appends oldest first while they fit,
 * and the cursor after them. Refused appends the cursor passes too; an append in a shard that had more
 * than was read waits unless it is below what was read there.
 */
export function plan(
  a: AppenderCore,
  own: Unit | undefined,
  pendings: PendingAppend[],
  truncatedAt: Map<number, string>,
  cursor: string,
  refused: ReadonlySet<string>,
): { units: Unit[]; cursorAfter: string } {
  const units: Unit[] = [];
  let items = 1;
  let bytes = 0;
  let blocks = 0;
  let cursorAfter = cursor;
  // A shard read only in part: nothing above the last key read there may be taken (its older appends were not read).
  const limit = [...truncatedAt.values()].reduce((min, sk) => (sk < min ? sk : min), '\uffff');
  // A pending unit adds to the commit's transaction only its anchors' proofs (its records and its keys' answers
  // are written after the commit); a unit written with the commit, its records and its keys' answers too.
  const itemsOf = (drafts: BlockDraft[], inline: boolean) => (inline ? transactionItems(drafts) : drafts.filter((d) => d.proof).length);
  const fits = (drafts: BlockDraft[]) =>
    units.length === 0 ||
    (blocks + drafts.length <= a.options.batchMax &&
      items + itemsOf(drafts, false) <= MAX_TRANSACTION_ITEMS &&
      bytes + drafts.reduce((n, d) => n + draftBytes(d), 0) <= MAX_ROUND_BYTES);
  const take = (unit: Unit) => {
    units.push(unit);
    items += itemsOf(unit.drafts, unit.inline === true);
    bytes += unit.drafts.reduce((n, d) => n + draftBytes(d), 0);
    blocks += unit.drafts.length;
    if (!unit.inline && unit.ref.sk > cursorAfter) cursorAfter = unit.ref.sk;
  };
  const anchored = new Set<string>();
  if (own) {
    take(own);
    for (const chain of anchoredChains(own.drafts)) anchored.add(chain);
  }
  for (const pending of pendings) {
    if (pending.ref.sk > limit) break;
    let drafts: BlockDraft[] | undefined;
    try {
      drafts = JSON.parse(pending.drafts) as BlockDraft[];
    } catch {
      drafts = undefined; // not ours to read: passed by, never sealed
    }
    if (!drafts || refused.has(refKey(pending.ref))) {
      // Refused (its writer reads why) or unreadable: the cursor passes it with the others.
      if (pending.ref.sk > cursorAfter) cursorAfter = pending.ref.sk;
      continue;
    }
    // A second anchor of a Sub-Chain waits for the next round, where the first has landed and it is refused as superseded.
    if (!fits(drafts) || anchorsAgain(anchored, drafts)) break;
    for (const chain of anchoredChains(drafts)) anchored.add(chain);
    take({ drafts, ref: pending.ref });
  }
  return { units, cursorAfter };
}

/** Whether a round's read found the chain's pending shards crowded (PENDING_PER_SHARD): `others`' keys say when they were written. */
export function crowded(found: number, others: readonly PendingAppend[], shards: number): boolean {
  if (found >= 2 * PENDING_PER_SHARD * shards) return true;
  if (others.length < PENDING_PER_SHARD * shards) return false;
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  for (const p of others) {
    const ms = pendingSkMs(p.ref.sk);
    first = Math.min(first, ms);
    last = Math.max(last, ms);
  }
  return ((others.length - 1) * 1000) / Math.max(1, last - first) >= GROW_RATE_PER_SHARD * shards;
}

/**
 * The pending shards a chain should spread over after a round's read (undefined: as many as it has): doubled
 * while the read would still find them crowded, up to `most`, so that a cold burst (hundreds of writers at once
 * on a chain of one shard) spreads in one round rather than one doubling a round, while its first writers'
 * receipts all come from one partition.
 */
export function spreadTo(found: number, others: readonly PendingAppend[], shards: number, most: number): number | undefined {
  let to = shards;
  while (to * 2 <= most && crowded(found, others, to)) to *= 2;
  return to > shards ? to : undefined;
}
