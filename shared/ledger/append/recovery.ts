/**
 * Recovering a dead leader's round (docs/appending.md, "A leader that dies"): its records rebuilt from the
 * pending appends, its segment written, and the head told; and the segments every round writes.
 *
 * Invariant kept here: a round's metadata leaves the head only after its records and its segment are written,
 * and a record is rebuilt only from the drafts its metadata names, and must hash to the committed block.
 * Nothing committed is lost while its pending appends live (a week); nothing is rebuilt differently.
 */
import { randomUUID } from 'node:crypto';
import { ChainNotFoundError } from '../../errors.ts';
import { type MetaRun, packedSize } from '../block-meta.ts';
import { type BlockDraft, buildBlocks } from '../blocks.ts';
import type { Recent } from '../repository.ts';
import type { Block, ChainHead } from '../types.ts';
import type { AppenderCore } from './core.ts';
import { recordsUnwritten, sealsOf } from './parts.ts';
import { INLINE_BYTES, PENDING_TTL_SECONDS, refKey } from './settings.ts';

/**
 * Finishes the chain's newest round if its leader left it unwritten (died between its commit and its
 * records, or its writes were refused) and nobody holds the lease: its records from the pending appends,
 * its segment, and the head saying so. Nothing else: no pending append is sealed. The scheduled sweep
 * calls it, so that such a round never waits for the chain's next append (its bodies expire with TTL).
 * 'written': nothing to finish; 'leased': someone holds the lease (its holder finishes it, or a later sweep).
 */
export async function finishAbandoned(a: AppenderCore, chainName: string): Promise<'finished' | 'written' | 'leased'> {
  const head = await a.repository.getHead(chainName);
  if (!head) throw new ChainNotFoundError(chainName);
  if (!recordsUnwritten(head)) return 'written';
  if (head.turnHolder && (head.turnExpiresMs ?? 0) > a.nowMs()) return 'leased';
  const lease = await a.takeLease(chainName);
  if (!lease.head) throw new ChainNotFoundError(chainName);
  if (!lease.acquired) return 'leased';
  let held = lease.head;
  try {
    held = await flushRecent(a, held);
  } finally {
    await a.giveBack(chainName, held);
  }
  return 'finished';
}

/**
 * Makes the head's newest blocks safe to replace: writes their segment, and first their records if their
 * leader died before it could (its lease expired with them unwritten). Answers the head as if flushed.
 *
 * A leader may have written them and lost only the write that says so (its finish refused or timed out):
 * then their pending appends and round item, kept a week, may have expired since. Records already there
 * need no drafts, and a round item gone is read back from its segments: a chain is never left unwritable
 * by a round that was written whole. Only metadata or bodies that are nowhere are an error (lost data).
 */
export async function flushRecent(a: AppenderCore, head: ChainHead): Promise<ChainHead> {
  if (head.recentFlushed) return { ...head, recent: null, recentFlushed: false };
  const run = await recentRun(a, head);
  if (!run || run.blocks.length === 0) return { ...head, recent: null };
  const materialized = head.materialized ?? head.headIndex;
  const unwritten = run.blocks.filter((b) => b.index > materialized);
  const blocks: Block[] = [];
  if (unwritten.length > 0) {
    a.counters.recoveries += 1;
    const written = await a.repository.getRecords(head.chainName, unwritten, true);
    const missing = unwritten.filter((b) => !written.has(b.index));
    const refs = missing.flatMap((b) => (b.ref ? [b.ref] : []));
    const drafts = refs.length > 0 ? await a.repository.getPendings(head.chainName, refs) : new Map<string, string>();
    let prev = run.prev;
    for (const meta of run.blocks) {
      if (meta.index > materialized && !written.has(meta.index)) {
        const json = meta.ref ? drafts.get(refKey(meta.ref)) : undefined;
        const draft = json === undefined ? undefined : (JSON.parse(json) as BlockDraft[])[meta.position];
        if (!draft) throw new Error(`the drafts of block ${meta.index} of '${head.chainName}' are missing: its record cannot be written`);
        const [block] = buildBlocks(head.chainName, { headIndex: meta.index - 1, headHash: prev }, [draft], () => meta.timestamp);
        if (block!.hash !== meta.hash) throw new Error(`block ${meta.index} of '${head.chainName}' does not rebuild to its hash`);
        blocks.push(block!);
      }
      prev = meta.hash;
    }
  }
  await writeRound(a, head.chainName, blocks, run, head.pendingShards ?? 1);
  return { ...head, recent: null, materialized: head.headIndex };
}

/** The head's unflushed metadata as a run (from a round item when it is not on the head). */
export async function recentRun(a: AppenderCore, head: ChainHead): Promise<MetaRun | undefined> {
  const recent = head.recent;
  if (!recent) return undefined;
  if ('run' in recent) return recent.run;
  // A round item gone (TTL) after its segment was written: the segments have the same metadata.
  const run = (await a.repository.getRound(head.chainName, recent.round.id)) ?? (await segmentsOf(a, head.chainName, recent.round.first, recent.round.last));
  if (!run) throw new Error(`the metadata of blocks ${recent.round.first}…${recent.round.last} of '${head.chainName}' is missing`);
  return run;
}

/** Where a round's metadata goes: on the head if it packs small, else into a round item written now. */
export async function placeRecent(a: AppenderCore, chainName: string, run: MetaRun): Promise<Exclude<Recent, null>> {
  if (packedSize(run.blocks) <= INLINE_BYTES) return { run };
  const id = randomUUID();
  a.counters.roundWrites += 1;
  await a.repository.putRound(chainName, id, run, Math.ceil(a.now()) + PENDING_TTL_SECONDS);
  return { round: { id, first: run.blocks[0]!.index, last: run.blocks.at(-1)!.index } };
}

/**
 * The metadata of blocks first…last from their segments (strongly consistent), if they are all there. Up to
 * one segment per block is read (a segment holds one at least); the read is priced by its bytes, not its limit.
 */
export async function segmentsOf(a: AppenderCore, chainName: string, first: number, last: number): Promise<MetaRun | undefined> {
  const runs = await a.repository.readSegments(chainName, first, last - first + 1, true);
  const blocks = runs.flatMap((r) => r.blocks).filter((b) => b.index >= first && b.index <= last);
  const start = runs.find((r) => r.blocks.some((b) => b.index === first));
  if (!start || blocks.length !== last - first + 1) return undefined;
  const at = start.blocks.findIndex((b) => b.index === first);
  return { prev: at === 0 ? start.prev : start.blocks[at - 1]!.hash, blocks };
}

/**
 * A round's records, with what tells its writers their appends are sealed: the run's segment, and on a
 * chain spread over several pending shards, each shard's seal (its writers read that, not the segment all
 * would read). One wave of requests.
 */
export async function writeRound(a: AppenderCore, chainName: string, records: Block[], run: MetaRun, shards: number): Promise<void> {
  const seals = shards >= 2 ? sealsOf(run) : undefined;
  a.counters.roundWrites += 1;
  await a.repository.writeRound(chainName, { records, segment: run, ...(seals && seals.size > 0 ? { seals } : {}) });
}
