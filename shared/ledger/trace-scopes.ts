/**
 * One page of an entity's trace read from the entity index scopes its caller reads (shared/ledger/names.ts,
 * entityScopeOf): each scope in trace order (time, chain, index), merged by the smallest position, so that every entry
 * up to the last one taken was read in every scope, and a position is where all of them go on. Several scopes are first
 * looked at with one entry each (most hold none of an entity's events), then share what is left of the page's cap.
 */
import type { LedgerRepository } from './repository.ts';
import type { Block, LedgerEvent } from './types.ts';

/** The most index queries a trace sends at once (a caller of many channels looks at each). */
const TRACE_QUERIES_AT_ONCE = 64;

export interface TraceScopesRead {
  /** null: the chains any reader reads; else a channel's chain. */
  scopes: (string | null)[];
  /** The position the page goes on after (a trace's decoded cursor). */
  after: string | undefined;
  /** The chain the trace is filtered to, if any. */
  chainName: string | undefined;
  limit: number;
  /** The most index entries read for the page (its looks at several scopes come on top). */
  scanMax: number;
  /** Whether the caller may see a chain's events, checked on each entry read. */
  visible: ((chainName: string) => Promise<boolean>) | undefined;
}

/**
 * The page's events and chains, and the position the next page goes on after: after the last event answered when
 * another event the caller may see follows; where every scope was read to when the cap stopped the read; else null.
 */
export async function readTraceScopes(
  repository: LedgerRepository,
  entityId: string,
  { scopes, after, chainName, limit, scanMax: pageScanMax, visible }: TraceScopesRead,
): Promise<{ events: LedgerEvent[]; chains: string[]; next: string | null }> {
  const sources = scopes.map((scope) => ({
    scope,
    buffer: [] as { block: Block; position: string }[],
    after,
    /** Every entry of this scope up to here was read (and taken, or filtered out by the chain). */
    through: after,
    done: false,
  }));
  const events: LedgerEvent[] = [];
  const chains: string[] = [];
  // A cursor is answered only when another entry this caller may see follows the page (read ahead for it, within
  // the cap): a cursor after a page of fewer events, or after hidden entries only, had told a reader that an
  // entity has events on chains it may not read, and how many (filtered pages counted them one by one).
  let lastAnswered: string | undefined;
  let lastTaken: string | undefined;
  let more = false;
  let capped = false;
  let read = 0;
  let rounds = 0;
  // Several scopes are first looked at with one entry each (most hold none of an entity's events): the cap is for the pages read after.
  const probing = sources.length > 1;
  const scanMax = pageScanMax + (probing ? sources.length : 0);
  const later = (a: string | undefined, b: string | undefined) => (a === undefined ? b : b === undefined || a > b ? a : b);
  for (;;) {
    const empty = sources.filter((source) => source.buffer.length === 0 && !source.done);
    if (empty.length > 0) {
      const budget = scanMax - read;
      if (budget <= 0) {
        capped = true;
        break;
      }
      // One scope reads its page and one more; several are looked at first, then share what is left of the cap.
      const first = rounds === 0;
      rounds += 1;
      const each = first && probing ? 1 : Math.max(1, Math.min(first ? limit + 1 : budget, Math.floor(budget / empty.length)));
      const pages: Awaited<ReturnType<LedgerRepository['queryEntityPage']>>[] = [];
      for (let at = 0; at < empty.length; at += TRACE_QUERIES_AT_ONCE)
        pages.push(
          ...(await Promise.all(
            empty
              .slice(at, at + TRACE_QUERIES_AT_ONCE)
              .map((source) => repository.queryEntityPage(entityId, { scope: source.scope, limit: each, after: source.after, chainName })),
          )),
        );
      pages.forEach((page, i) => {
        const source = empty[i]!;
        read += page.read;
        source.buffer = page.blocks.map((block, j) => ({ block, position: page.positions[j]! }));
        source.after = page.next ?? undefined;
        source.done = page.next === null;
        if (source.buffer.length === 0) source.through = later(source.through, page.next ?? undefined);
      });
      continue;
    }
    // The smallest position among the scopes' next entries; none left: the trace is read to its end.
    let from: (typeof sources)[number] | undefined;
    for (const source of sources) if (source.buffer.length > 0 && (!from || source.buffer[0]!.position < from.buffer[0]!.position)) from = source;
    if (!from) break;
    const { block, position } = from.buffer.shift()!;
    from.through = position;
    lastTaken = position;
    if (from.buffer.length === 0 && !from.done) from.through = later(position, from.after);
    if (chainName !== undefined && block.chain_name !== chainName) continue;
    if (visible && !(await visible(block.chain_name))) continue;
    const its = block.events.filter((event) => event.entity_id === entityId);
    if (its.length === 0) continue;
    if (events.length >= limit) {
      more = true;
      break;
    }
    for (const event of its) {
      events.push(event);
      if (!chains.includes(event.chain_name)) chains.push(event.chain_name);
    }
    lastAnswered = position;
  }
  // Past the cap, the next page goes on where every scope was read to: the least of them, none before the last taken.
  let resume: string | undefined;
  if (capped && !more) {
    for (const source of sources) {
      if (source.done && source.buffer.length === 0) continue;
      const through = later(source.through, lastTaken);
      if (through !== undefined && (resume === undefined || through < resume)) resume = through;
    }
  }
  const next = more ? lastAnswered! : capped ? (resume ?? null) : null;
  return { events, chains, next };
}
