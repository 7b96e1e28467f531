/**
 * What must hold after every simulated run, whatever the interleaving and the faults (docs/simulation.md):
 *
 * 1. The chain verifies: every block hashes to its `hash`, links to the one before, and the head's stored
 *    Merkle tree is the tree of the blocks.
 * 2. No fork: no two different blocks were ever observed at one index (receipts, and what the monitor read),
 *    and every checkpoint observed during the run is the tree of the final chain's first blocks at its size
 *    (so each is consistent with every later one).
 * 3. Every acknowledged append is on the chain exactly once, at the index its answer named.
 * 4. An append answered 503 (with no other attempt acknowledged or unknown) is not on the chain; nothing is
 *    on it twice, whatever its attempts; one Idempotency-Key lands once.
 * 5. No invocation runs past its deadline: every answer comes before the function's timeout, and no
 *    invocation is stopped by it; nothing answers a 5xx the service does not document (only 503).
 *
 * The chain is read for these checks past every TTL (scenario.ts, HORIZON_MS), by index, every block by its hash, and
 * as a C2SP log client reads it, in tiles (checkTiles): what is only held up by items that expire fails them.
 */
import { ZERO_HASH, hashBlock } from '#shared/ledger/hashing';
import { appendLeaf, frontierRoot, leafHash, rootFromLeafHashes } from '#shared/ledger/merkle';
import type { LedgerRepository } from '#shared/ledger/repository';
import type { Block } from '#shared/ledger/types';
import { TILE_WIDTH, decodeEntryBundle, hashesAtLevel, splitHashes, tileNodes, tilePath, type TileRef } from '#shared/tlog/tiles';
import { createTlog } from '#shared/tlog/tlog';

/** What happened to one append the workload asked for, over all its attempts. */
export interface AppendRecord {
  entity: string;
  key?: string;
  /** Which body of its key it is: an attempt with the same key and another body is 'other' (absent: the first). */
  body?: 'other';
  attempts: AttemptOutcome[];
}

export type AttemptOutcome =
  | { kind: 'acked'; index: number; hash: string; eventId: string; replayed: boolean }
  | { kind: 'refused'; status: number; message: string }
  /** Lost (the instance was stopped) or an error that says nothing of the outcome. */
  | { kind: 'unknown'; why: string };

export interface Observations {
  /** Blocks seen during the run (receipts, reads), by index: every hash seen there. */
  blocks: Map<number, Set<string>>;
  /** Checkpoints seen during the run: a size and the root of that tree (hex). */
  checkpoints: { size: number; root: string }[];
  /** Invocations that ran past the function's timeout or answered past their deadline. */
  overruns: string[];
}

export function observe(observations: Observations, index: number, hash: string): void {
  const seen = observations.blocks.get(index) ?? new Set<string>();
  seen.add(hash);
  observations.blocks.set(index, seen);
}

/** Reads the whole chain strongly consistent, in pages. */
export async function readChain(repository: LedgerRepository, chainName: string): Promise<{ blocks: Block[]; frontier: string[] }> {
  const head = await repository.getHead(chainName);
  if (!head) throw new Error(`the chain '${chainName}' is gone`);
  const blocks: Block[] = [];
  for (let from = 0; from <= head.headIndex; from += 100) {
    blocks.push(...(await repository.getBlockRange(chainName, from, Math.min(head.headIndex, from + 99), false, true)));
  }
  return { blocks, frontier: head.frontier ?? [] };
}

/**
 * Reads the chain as a C2SP log client reads it, through the service's tile code (shared/tlog/tlog.ts): every entry
 * bundle and every hash tile of its size, each built from what the chain keeps (the blocks' records and metadata
 * segments, the tree's nodes); answers where they differ from the blocks read by index (their hashes, and each tree
 * node rebuilt from them). Full tiles are kept in a store of this read's own, as the service keeps them.
 */
export async function checkTiles(repository: LedgerRepository, chainName: string, blocks: readonly Block[]): Promise<string[]> {
  const problems: string[] = [];
  const kept = new Map<string, Buffer>();
  const tlog = createTlog({
    repository,
    tiles: { get: async (_, path) => kept.get(path), put: async (_, path, bytes) => void kept.set(path, bytes) },
    signer: async () => {
      throw new Error('the simulation reads tiles, it signs nothing');
    },
    origin: () => 'simulation',
  });
  const size = blocks.length;
  const leaves = blocks.map((b) => leafHash(Buffer.from(b.hash, 'hex')));
  const read = async (tile: TileRef): Promise<Buffer | undefined> => {
    try {
      // The route's path below `tile/`, as GET /tlog/{chain}/tile/{path} hands it on.
      return (await tlog.tile(chainName, tilePath(tile).slice('tile/'.length))).bytes;
    } catch (error) {
      problems.push(`${tilePath(tile)} cannot be read past the horizon: ${(error as Error).message}`);
      return undefined;
    }
  };
  for (let index = 0; index * TILE_WIDTH < size; index += 1) {
    const width = Math.min(TILE_WIDTH, size - index * TILE_WIDTH);
    const bytes = await read({ level: 'entries', index, width });
    if (!bytes) continue;
    const entries = decodeEntryBundle(bytes);
    if (entries.length !== width) problems.push(`entry bundle ${index} holds ${entries.length} entries, not ${width}`);
    entries.forEach((entry, i) => {
      const at = index * TILE_WIDTH + i;
      if (entry.toString('hex') !== blocks[at]?.hash) problems.push(`entry ${at} of the tiles is not block ${at}'s hash`);
    });
  }
  for (let level = 0; hashesAtLevel(level, size) > 0; level += 1) {
    const count = hashesAtLevel(level, size);
    for (let index = 0; index * TILE_WIDTH < count; index += 1) {
      const tile = { level, index, width: Math.min(TILE_WIDTH, count - index * TILE_WIDTH) };
      const bytes = await read(tile);
      if (!bytes) continue;
      const hashes = splitHashes(bytes);
      tileNodes(tile).forEach((node, i) => {
        const span = 2 ** node.level;
        if (!hashes[i]?.equals(rootFromLeafHashes(leaves.slice(node.index * span, (node.index + 1) * span))))
          problems.push(`${tilePath(tile)}'s hash ${i} is not the tree node of blocks ${node.index * span}–${(node.index + 1) * span - 1}`);
      });
    }
  }
  return problems;
}

/** Every invariant that fails, as sentences; empty when the run is sound. */
export function check(chain: { blocks: Block[]; frontier: string[] }, appends: AppendRecord[], observations: Observations): string[] {
  const problems: string[] = [];
  const { blocks } = chain;

  // 1. The chain verifies, and the stored tree is its tree.
  let previous = ZERO_HASH;
  let frontier: Buffer[] = [];
  const roots: string[] = [];
  blocks.forEach((block, i) => {
    if (block.index !== i) problems.push(`block ${i} is missing (found index ${block.index} there)`);
    if (hashBlock(block) !== block.hash) problems.push(`block ${i}'s hash does not match its contents`);
    if (block.previous_hash !== previous) problems.push(`block ${i} does not link to block ${i - 1}`);
    previous = block.hash;
    frontier = appendLeaf(frontier, i, leafHash(Buffer.from(block.hash, 'hex'))).frontier;
    roots.push(frontierRoot(frontier).toString('hex'));
  });
  const stored = frontierRoot(chain.frontier.map((h) => Buffer.from(h, 'hex'))).toString('hex');
  if (blocks.length > 0 && stored !== roots.at(-1)) problems.push('the head’s Merkle tree is not the tree of the blocks');

  // 2. No fork, and every checkpoint observed is a prefix of the final chain.
  for (const [index, hashes] of observations.blocks) {
    if (hashes.size > 1) problems.push(`fork: ${hashes.size} different blocks were observed at index ${index}`);
    const final = blocks[index];
    if (!final) problems.push(`block ${index} was observed, and is not on the final chain`);
    else if (!hashes.has(final.hash)) problems.push(`block ${index} observed during the run is not the final chain's block ${index}`);
  }
  for (const { size, root } of observations.checkpoints) {
    if (size > blocks.length) problems.push(`a checkpoint of ${size} blocks was observed; the chain has ${blocks.length}`);
    else if (size > 0 && roots[size - 1] !== root) problems.push(`the checkpoint observed at size ${size} is not the final chain's tree at that size`);
  }

  // 3 and 4. Exactly once for what was acknowledged; never for what was refused; never twice.
  const where = new Map<string, number[]>();
  for (const block of blocks) for (const event of block.events) where.set(event.entity_id, [...(where.get(event.entity_id) ?? []), block.index]);
  for (const append of appends) {
    const found = where.get(append.entity) ?? [];
    const acked = append.attempts.filter((a): a is Extract<AttemptOutcome, { kind: 'acked' }> => a.kind === 'acked');
    // What says nothing of whether an earlier attempt lands: a lost invocation, a 500, a 409 (the key is
    // held by an attempt still in flight). A 503 and every other 4xx promise this attempt did not land.
    const unknown = append.attempts.some((a) => a.kind === 'unknown' || (a.kind === 'refused' && (a.status === 409 || (a.status >= 500 && a.status !== 503))));
    if (found.length > 1)
      problems.push(`${append.entity} is on the chain ${found.length} times (blocks ${found.join(', ')})${append.key ? `, under one Idempotency-Key` : ''}`);
    if (acked.length > 0) {
      const indices = new Set(acked.map((a) => a.index));
      if (indices.size > 1) problems.push(`${append.entity} was acknowledged at ${indices.size} different blocks (${[...indices].join(', ')})`);
      if (found.length === 0) problems.push(`${append.entity} was acknowledged (block ${acked[0]!.index}) and is not on the chain: a lost acknowledged append`);
      else if (!indices.has(found[0]!)) problems.push(`${append.entity} was acknowledged at block ${acked[0]!.index} and is at block ${found[0]}`);
    } else if (!unknown && found.length > 0) {
      const statuses = append.attempts.map((a) => (a.kind === 'refused' ? a.status : a.kind)).join(', ');
      problems.push(`${append.entity} was refused (${statuses}) and is on the chain at block ${found[0]}: a 503 landed after it was answered`);
    }
    for (const attempt of append.attempts) {
      if (attempt.kind === 'refused' && attempt.status >= 500 && attempt.status !== 503)
        problems.push(`${append.entity}: an undocumented ${attempt.status} (${attempt.message})`);
    }
  }
  // A key names one request: of its bodies, one lands at most (each attempt answered with its own body's blocks is
  // checked above: an answer with another body's blocks names a block its entity is not at).
  const bodies = new Map<string, Set<string>>();
  for (const append of appends) {
    if (!append.key || !where.has(append.entity)) continue;
    bodies.set(append.key, (bodies.get(append.key) ?? new Set()).add(append.body ?? 'first'));
  }
  for (const [key, landed] of bodies) if (landed.size > 1) problems.push(`two bodies of the Idempotency-Key ${key} are on the chain`);
  const asked = new Set(appends.map((a) => a.entity));
  for (const entity of where.keys()) if (!asked.has(entity)) problems.push(`an event nobody appended is on the chain: ${entity}`);

  // 5. Deadlines.
  problems.push(...observations.overruns);
  return problems;
}
