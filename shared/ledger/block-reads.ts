/**
 * Block reads over any LedgerStorage, whatever layout each block is in (docs/appending.md, "Storage"):
 * - a chain's blocks from `recordsFrom` on: the metadata (index → hash, tree nodes, where the drafts wait)
 *   from segments, or for the newest blocks from the head; the body from the block's record, or, when
 *   its record is not written yet (its leader is writing it, or died first: the next leader writes it),
 *   rebuilt from the pending append its metadata names and checked against its hash;
 * - blocks before `recordsFrom` (chains of earlier versions): their block items.
 */
import { blocksIn, type BlockMeta, type MetaRun, prevHashOf } from './block-meta.ts';
import { type BlockDraft, buildBlocks } from './blocks.ts';
import { type BlockReads, type BlockTreeData, KEPT_PAGE, type LedgerRepository, type LedgerStorage } from './repository.ts';
import type { Block, ChainHead } from './types.ts';
import { logger } from '../log.ts';

/**
 * Whether a read of a page gave all of it, as the chain holds it: every block from `first` on, in order, each
 * linked to the one before. A block a lagging read missed leaves the page short, and it is not kept.
 */
function isWholePage(chainName: string, first: number, blocks: readonly Block[]): boolean {
  return (
    blocks.length === KEPT_PAGE &&
    blocks.every((b, i) => b.chain_name === chainName && b.index === first + i && (i === 0 || b.previous_hash === blocks[i - 1]!.hash))
  );
}

/** Segments read per query. */
const SEGMENTS_PER_READ = 16;
/** Wanted blocks this close together are read as one span of metadata rather than apart. */
const SPAN_GAP = 64;
/** Spans of metadata read at once by one call. */
const SPANS_AT_ONCE = 16;

/** Segments to read from the one holding `from` on: no more than could hold blocks up to `to` (each holds one at least). */
const segmentLimit = (from: number, to: number) => Math.max(1, Math.min(SEGMENTS_PER_READ, to - from + 1));

interface Layout {
  /** Set once a head names it; it never changes after. */
  recordsFrom?: number;
  /** Blocks up to here are legacy block items (seen on a head without `recordsFrom`). */
  legacyThrough: number;
}

export function withBlockReads(storage: LedgerStorage): LedgerRepository {
  const layouts = new Map<string, Layout>();
  /**
   * Per chain, the newest blocks' metadata this instance last read on the head (blocks the head committed, so it
   * never changes): a proof against a size the instance has seen needs the nodes of blocks near that size, which
   * stay on the head until their segment is written (a lone writer's, for a while), and are then read from here
   * rather than with a segment Query and a read of the head every time.
   */
  const tails = new Map<string, MetaRun>();
  const keepTail = (chainName: string, run: MetaRun | undefined) => {
    if (!run || run.blocks.length === 0) return;
    const kept = tails.get(chainName);
    if (kept && kept.blocks.at(-1)!.index >= run.blocks.at(-1)!.index) return;
    if (tails.size > 10_000) tails.clear();
    tails.set(chainName, run);
  };

  const note = (head: ChainHead | undefined): ChainHead | undefined => {
    if (!head) return head;
    const known = layouts.get(head.chainName) ?? { legacyThrough: -1 };
    if (head.recordsFrom !== undefined) known.recordsFrom = head.recordsFrom;
    else known.legacyThrough = Math.max(known.legacyThrough, head.headIndex);
    if (layouts.size > 10_000) layouts.clear();
    layouts.set(head.chainName, known);
    return head;
  };

  /** Where blocks from `index` on are: 'legacy', 'records', or unknown without reading the head. */
  function layoutAt(chainName: string, index: number): 'legacy' | 'records' | undefined {
    const known = layouts.get(chainName);
    if (!known) return undefined;
    if (index <= known.legacyThrough) return 'legacy';
    if (known.recordsFrom !== undefined) return index < known.recordsFrom ? 'legacy' : 'records';
    return undefined;
  }

  async function recordsFrom(chainName: string): Promise<number | undefined> {
    const known = layouts.get(chainName);
    if (known?.recordsFrom !== undefined) return known.recordsFrom;
    const head = note(await storage.getHead(chainName));
    return head?.recordsFrom ?? (head ? head.headIndex + 1 : undefined);
  }

  /**
   * How far the segments read (in index order) hold every block from `next` on, and whether they stop at a
   * gap. A round's segments are written in one wave after its commit, and a wave cut short (a request failed,
   * and its leader died before writing it again) leaves a later segment written and an earlier one not. The
   * round's metadata is still on the head then, since it leaves the head only once the whole wave is written,
   * so a read stops at the gap and goes on from the head. Before, a read went past the gap, and the blocks in
   * it read as missing: a committed batch answered 404 by index, and its key's retry 500 (found by the
   * simulation's large batches, seed 10).
   */
  function reach(found: readonly MetaRun[], next: number): { next: number; gap: boolean } {
    for (const run of found) {
      if (run.blocks[0]!.index > next) return { next, gap: true };
      next = Math.max(next, run.blocks.at(-1)!.index + 1);
    }
    return { next, gap: false };
  }

  /** The head's unflushed metadata, read now (and kept as the chain's tail). */
  async function headRun(head: ChainHead): Promise<MetaRun | undefined> {
    const recent = head.recent;
    if (!recent) return undefined;
    const run = 'run' in recent ? recent.run : await storage.getRound(head.chainName, recent.round.id);
    keepTail(head.chainName, run);
    return run;
  }

  /**
   * Metadata of blocks from…to of a records chain: segments, then the head's newest. A read that wants the
   * newest blocks (consistent) reads the head beside the segments, as it is often needed; a caller reading
   * several spans at once passes one read of the head for all of them (`head`), made only if a span needs it
   * (spans in segments an instance keeps need none).
   */
  async function readMeta(
    chainName: string,
    from: number,
    to: number,
    consistent: boolean,
    shared?: () => Promise<ChainHead | undefined>,
  ): Promise<{ blocks: BlockMeta[]; runs: MetaRun[] }> {
    const runs: MetaRun[] = [];
    let next = from;
    // Blocks the kept tail holds are read from it; segments are read for those before it.
    const tail = tails.get(chainName);
    const tailFrom = tail && tail.blocks.at(-1)!.index >= to ? tail.blocks[0]!.index : Number.POSITIVE_INFINITY;
    const segmentsTo = Math.min(to, tailFrom - 1);
    let early: Promise<ChainHead | undefined> | undefined = consistent && !shared && segmentsTo === to ? storage.getHead(chainName).then(note) : undefined;
    early?.catch(() => undefined);
    // Segments, as many reads as it takes (a page of blocks is one or two); every read moves `next` on, up to
    // a gap if there is one (the head holds what is missing: see reach).
    while (next <= segmentsTo) {
      const limit = segmentLimit(next, segmentsTo);
      const found = await storage.readSegments(chainName, next, limit, consistent, segmentsTo);
      if (found.length === 0) break;
      runs.push(...found);
      const reached = reach(found, next);
      if (reached.next <= next) break;
      next = reached.next;
      if (reached.gap || found.length < limit) break;
    }
    if (tail && next >= tailFrom && next <= to) {
      runs.push(tail);
      next = to + 1;
    }
    if (next <= to) {
      // The newest blocks are on the head until their segment is written. A segment written between the two
      // reads took them off the head: then they are in it.
      for (let attempt = 0; attempt < 3 && next <= to; attempt += 1) {
        const head = early ? await early : shared ? await shared() : note(await storage.getHead(chainName));
        early = undefined;
        if (!head || head.headIndex < next) break;
        const run = await headRun(head);
        if (run && run.blocks.length > 0 && run.blocks[0]!.index <= next) {
          runs.push(run);
          next = Math.max(next, run.blocks.at(-1)!.index + 1);
          break;
        }
        const more = await storage.readSegments(chainName, next, segmentLimit(next, to), true, to);
        runs.push(...more);
        next = reach(more, next).next;
      }
    }
    return { blocks: blocksIn(runs, from, to), runs };
  }

  /**
   * The blocks the metadata names: their records, or, for a record not written yet, the block rebuilt from
   * its pending append (checked against its hash). Reads write nothing.
   */
  async function bodies(chainName: string, metas: BlockMeta[], runs: MetaRun[], consistent: boolean): Promise<Block[]> {
    if (metas.length === 0) return [];
    const found = await storage.getRecords(chainName, metas, consistent);
    const missing = metas.filter((m) => !found.has(m.index));
    if (missing.length > 0) for (const block of await rebuild(chainName, missing, runs)) found.set(block.index, block);
    return metas.flatMap((m) => (found.has(m.index) ? [found.get(m.index)!] : []));
  }

  async function rebuild(chainName: string, metas: BlockMeta[], runs: MetaRun[]): Promise<Block[]> {
    const refs = metas.flatMap((m) => (m.ref ? [m.ref] : []));
    if (refs.length === 0) return [];
    const drafts = await storage.getPendings(chainName, refs);
    const blocks: Block[] = [];
    for (const meta of metas) {
      if (!meta.ref) continue;
      const json = drafts.get(`${meta.ref.shard}|${meta.ref.sk}`);
      const prev = prevHashOf(runs, meta.index);
      if (json === undefined || prev === undefined) continue;
      const draft = (JSON.parse(json) as BlockDraft[])[meta.position];
      if (!draft) continue;
      const [block] = buildBlocks(chainName, { headIndex: meta.index - 1, headHash: prev }, [draft], () => meta.timestamp);
      if (block && block.hash === meta.hash) blocks.push(block);
    }
    return blocks;
  }

  async function recordsRange(chainName: string, from: number, to: number, consistent: boolean): Promise<Block[]> {
    const { blocks, runs } = await readMeta(chainName, from, to, consistent);
    return bodies(chainName, blocks, runs, consistent);
  }

  /** Blocks from…to, ascending: legacy block items, then records. */
  async function readRange(chainName: string, from: number, to: number, consistent: boolean): Promise<Block[]> {
    const split = (await recordsFrom(chainName)) ?? to + 1;
    const legacy = from < split ? await storage.getLegacyBlocks(chainName, from, Math.min(to, split - 1), false, consistent) : [];
    const records = to >= split ? await recordsRange(chainName, Math.max(from, split), to, consistent) : [];
    return [...legacy, ...records];
  }

  /**
   * Keeps a page read whole for later reads. It is already answered from its blocks: a page that cannot be kept
   * (a throttled or failed write) is logged and read from its blocks again next time, never an error to the reader.
   */
  async function keepPage(chainName: string, first: number, blocks: Block[]): Promise<void> {
    try {
      await storage.putPage(chainName, first, blocks);
    } catch (error) {
      logger.warn('page of blocks not kept', { chain: chainName, first, error });
    }
  }

  const reads: BlockReads = {
    readMeta,

    async getBlock(chainName, index, consistent = false) {
      let layout = layoutAt(chainName, index);
      if (layout === undefined) {
        const from = await recordsFrom(chainName);
        if (from === undefined) return undefined;
        layout = index < from ? 'legacy' : 'records';
      }
      if (layout === 'legacy') return (await storage.getLegacyBlocks(chainName, index, index, false, consistent))[0];
      return (await recordsRange(chainName, index, index, consistent))[0];
    },

    async findBlockByHash(chainName, hash) {
      const record = await storage.findRecord(hash);
      if (record) return record.chain_name === chainName ? record : undefined;
      const head = note(await storage.getHead(chainName));
      if (!head) return undefined;
      // Not written yet: it may be among the newest blocks, whose metadata is on the head.
      const run = await headRun(head);
      const meta = run?.blocks.find((b) => b.hash === hash);
      if (meta && run) return (await bodies(chainName, [meta], [run], true))[0];
      if (head.recordsFrom === 0) return undefined;
      return storage.findLegacyBlock(chainName, hash);
    },

    async getBlockRange(chainName, from, to, descending, consistent = false) {
      if (to < from) return [];
      // A full page at a multiple of 100 is read as one kept item once it has been read whole (docs/appending.md, "Kept pages").
      const page = to - from + 1 === KEPT_PAGE && from % KEPT_PAGE === 0;
      const kept = page ? await storage.getPage(chainName, from) : undefined;
      const blocks = kept ?? (await readRange(chainName, from, to, consistent));
      if (page && !kept && isWholePage(chainName, from, blocks)) await keepPage(chainName, from, blocks);
      return descending ? [...blocks].reverse() : blocks;
    },

    readStoredRange: (chainName, from, to, consistent = false) => (to < from ? Promise.resolve([]) : readRange(chainName, from, to, consistent)),

    async listBlockHashes(chainName, toIndex) {
      const split = (await recordsFrom(chainName)) ?? toIndex + 1;
      const legacy = split > 0 ? await storage.listLegacyHashes(chainName, Math.min(toIndex, split - 1)) : [];
      if (toIndex < split) return legacy;
      const { blocks } = await readMeta(chainName, split, toIndex, true);
      return [...legacy, ...blocks.map((b) => b.hash)];
    },

    async readTreeData(chainName, indices, consistent = false) {
      const found = new Map<number, BlockTreeData>();
      if (indices.length === 0) return found;
      const split = (await recordsFrom(chainName)) ?? Math.max(...indices) + 1;
      const legacy = indices.filter((i) => i < split);
      if (legacy.length > 0) for (const [i, data] of await storage.readLegacyTreeData(chainName, legacy, consistent)) found.set(i, data);
      const wanted = [...new Set(indices.filter((i) => i >= split))].sort((a, b) => a - b);
      // Close indices (a tile's leaves) are one span read in order; far ones (a proof's nodes) a read each, in parallel.
      const spans: [number, number][] = [];
      for (const i of wanted) {
        const last = spans[spans.length - 1];
        if (last && i - last[1] <= SPAN_GAP) last[1] = i;
        else spans.push([i, i]);
      }
      // A tile of level 1 is 256 spans, 256 blocks apart: one read of the head serves them all (made only if one
      // needs it), and at most SPANS_AT_ONCE are read at a time (hundreds of requests at once time out on a busy table).
      let headRead: Promise<ChainHead | undefined> | undefined;
      const head = consistent ? () => (headRead ??= storage.getHead(chainName).then(note)) : undefined;
      const runs: MetaRun[] = [];
      for (let i = 0; i < spans.length; i += SPANS_AT_ONCE) {
        const read = await Promise.all(spans.slice(i, i + SPANS_AT_ONCE).map(([from, to]) => readMeta(chainName, from, to, consistent, head)));
        for (const r of read) runs.push(...r.runs);
      }
      const byIndex = new Map<number, BlockMeta>();
      for (const run of runs) for (const meta of run.blocks) byIndex.set(meta.index, meta);
      for (const i of wanted) {
        const meta = byIndex.get(i);
        if (meta) found.set(i, { hash: meta.hash, treeNodes: meta.nodes });
      }
      return found;
    },
  };

  return {
    ...storage,
    ...reads,
    getHead: async (chainName) => note(await storage.getHead(chainName)),
    listHeads: async () => (await storage.listHeads()).map((h) => note(h)!),
    acquireLease: async (...args) => {
      const outcome = await storage.acquireLease(...args);
      note(outcome.head);
      return outcome;
    },
  };
}
