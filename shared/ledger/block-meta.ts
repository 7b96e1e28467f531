/**
 * What a chain keeps about each block beside its body (docs/appending.md, "Storage"): its hash, its
 * timestamp, the Merkle nodes it completed, and, until its record is written, where its drafts wait (the
 * pending append a leader sealed). Runs of consecutive blocks are stored packed, in binary: on the chain
 * head for the newest blocks, then in segments. Pure: no storage here.
 *
 * Packed run: version (1 byte), first index (6), the hash before the first block (32), block count (2),
 * then per block: hash (32), timestamp in ms (6), pending shard (1; 255: no pending append), pending sort
 * key (its ms: 6, its random part: 6), position in that pending append (1), and the tree nodes it
 * completed (32 each; as many as the trailing one bits of its index, so their count is not stored).
 */

/** Where a pending append lies: one of the chain's shards, and its sort key there. */
export interface PendingRef {
  shard: number;
  sk: string;
}

export interface BlockMeta {
  index: number;
  /** Lowercase hex SHA-256. */
  hash: string;
  /** Seconds since the epoch, millisecond precision: the block's own timestamp. */
  timestamp: number;
  /** Hex hashes of the perfect subtrees the block completed, levels 1, 2, … */
  nodes: string[];
  /** The pending append that holds the block's drafts; null when its record was written with its commit. */
  ref: PendingRef | null;
  /** Which draft of that pending append the block is (a batch's blocks share one pending append). */
  position: number;
}

/** Consecutive blocks, and the hash of the block before the first. */
export interface MetaRun {
  prev: string;
  blocks: BlockMeta[];
}

const VERSION = 1;
const HEADER = 1 + 6 + 32 + 2;
const FIXED = 32 + 6 + 1 + 6 + 6 + 1;
const NO_SHARD = 255;
const RAND_HEX = 12;

/**
 * A pending append's sort key: its time (13-digit epoch ms), then 12 hex characters, random for a
 * follower's append. Keys sort by time; a leader's own append takes the key just above the cursor.
 */
export function pendingSk(epochMs: number, rand: bigint | string): string {
  const r = typeof rand === 'string' ? rand : rand.toString(16).padStart(RAND_HEX, '0');
  return `${String(Math.floor(epochMs)).padStart(13, '0')}#${r}`;
}

const SK_PATTERN = /^(\d{13})#([0-9a-f]{12})$/;

/** The sort key just above `sk` (the empty cursor: the lowest key there is). */
export function nextPendingSk(sk: string): string {
  if (sk === '') return pendingSk(0, 1n);
  const [, ms, rand] = parsePendingSk(sk);
  const next = BigInt(`0x${rand}`) + 1n;
  return next >= 1n << 48n ? pendingSk(ms + 1, 0n) : pendingSk(ms, next);
}

export function parsePendingSk(sk: string): [string, number, string] {
  const m = SK_PATTERN.exec(sk);
  if (!m) throw new RangeError(`not a pending sort key: ${sk}`);
  return [sk, Number(m[1]), m[2]!];
}

/** The epoch ms a pending sort key names (0 for the empty cursor). */
export function pendingSkMs(sk: string): number {
  return sk === '' ? 0 : parsePendingSk(sk)[1];
}

/** Tree nodes the block at `index` completes: one per trailing one bit of its index. */
export function completedNodeCount(index: number): number {
  let n = 0;
  let i = index;
  while (i % 2 === 1) {
    n += 1;
    i = (i - 1) / 2;
  }
  return n;
}

function writeUint48(buf: Buffer, value: number, offset: number): void {
  if (!Number.isSafeInteger(value) || value < 0 || value >= 2 ** 48) throw new RangeError(`out of range for 6 bytes: ${value}`);
  buf.writeUIntBE(value, offset, 6);
}

/** Where a block's drafts wait, packed in 13 bytes at `at`: shard (1), the sort key's ms (6) and random part (6). */
function writeRef(buf: Buffer, ref: PendingRef, at: number): void {
  const [, ms, rand] = parsePendingSk(ref.sk);
  buf.writeUInt8(ref.shard, at);
  writeUint48(buf, ms, at + 1);
  Buffer.from(rand, 'hex').copy(buf, at + 7);
}

function readRef(buf: Buffer, at: number): PendingRef {
  return { shard: buf.readUInt8(at), sk: pendingSk(buf.readUIntBE(at + 1, 6), buf.subarray(at + 7, at + 13).toString('hex')) };
}

/** The bytes one block takes in a packed run: its fixed fields and the tree nodes it completed. */
const blockBytes = (index: number) => FIXED + 32 * completedNodeCount(index);

/** The bytes a run takes packed. */
export function packedSize(blocks: readonly Pick<BlockMeta, 'index'>[]): number {
  return HEADER + blocks.reduce((n, b) => n + blockBytes(b.index), 0);
}

/**
 * The most bytes one segment packs: with its keys it stays under 4 KB, so that reading it (a proof reads one
 * segment per tree node) costs one read unit, strongly consistent. A round of 256 blocks packs about 21 KB.
 */
export const SEGMENT_MAX_BYTES = 3_900;

/** A run cut into consecutive runs of at most `maxBytes` packed (one block at least each), each linked to the one before. */
export function splitRun(run: MetaRun, maxBytes = SEGMENT_MAX_BYTES): MetaRun[] {
  const pieces: MetaRun[] = [];
  let piece: MetaRun = { prev: run.prev, blocks: [] };
  let size = HEADER;
  for (const block of run.blocks) {
    const adds = blockBytes(block.index);
    if (piece.blocks.length > 0 && size + adds > maxBytes) {
      pieces.push(piece);
      piece = { prev: piece.blocks.at(-1)!.hash, blocks: [] };
      size = HEADER;
    }
    piece.blocks.push(block);
    size += adds;
  }
  if (piece.blocks.length > 0) pieces.push(piece);
  return pieces;
}

export function packRun(run: MetaRun): Uint8Array {
  const buf = Buffer.alloc(packedSize(run.blocks));
  buf.writeUInt8(VERSION, 0);
  const first = run.blocks[0]?.index ?? 0;
  writeUint48(buf, first, 1);
  Buffer.from(run.prev, 'hex').copy(buf, 7);
  buf.writeUInt16BE(run.blocks.length, 39);
  let at = HEADER;
  run.blocks.forEach((block, i) => {
    if (block.index !== first + i) throw new RangeError(`a run is consecutive blocks: ${block.index} after ${first + i - 1}`);
    const expected = completedNodeCount(block.index);
    if (block.nodes.length !== expected) throw new RangeError(`block ${block.index} completes ${expected} tree nodes, not ${block.nodes.length}`);
    Buffer.from(block.hash, 'hex').copy(buf, at);
    writeUint48(buf, Math.round(block.timestamp * 1000), at + 32);
    if (block.ref) {
      if (block.ref.shard < 0 || block.ref.shard >= NO_SHARD) throw new RangeError(`pending shard out of range: ${block.ref.shard}`);
      writeRef(buf, block.ref, at + 38);
    } else {
      buf.writeUInt8(NO_SHARD, at + 38);
    }
    buf.writeUInt8(block.position, at + 51);
    at += FIXED;
    for (const node of block.nodes) {
      Buffer.from(node, 'hex').copy(buf, at);
      at += 32;
    }
  });
  return buf;
}

export function unpackRun(bytes: Uint8Array): MetaRun {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.readUInt8(0) !== VERSION) throw new Error(`unknown block metadata version ${buf.readUInt8(0)}`);
  const first = buf.readUIntBE(1, 6);
  const prev = buf.subarray(7, 39).toString('hex');
  const count = buf.readUInt16BE(39);
  const blocks: BlockMeta[] = [];
  let at = HEADER;
  for (let i = 0; i < count; i += 1) {
    const index = first + i;
    const shard = buf.readUInt8(at + 38);
    const ref = shard === NO_SHARD ? null : readRef(buf, at + 38);
    const block: BlockMeta = {
      index,
      hash: buf.subarray(at, at + 32).toString('hex'),
      timestamp: buf.readUIntBE(at + 32, 6) / 1000,
      nodes: [],
      ref,
      position: buf.readUInt8(at + 51),
    };
    at += FIXED;
    for (let n = completedNodeCount(index); n > 0; n -= 1) {
      block.nodes.push(buf.subarray(at, at + 32).toString('hex'));
      at += 32;
    }
    blocks.push(block);
  }
  if (at !== buf.length) throw new Error('block metadata has trailing bytes');
  return { prev, blocks };
}

/** The blocks of `runs` from `from` to `to` (inclusive), in order; runs may overlap (same blocks, same metadata). */
export function blocksIn(runs: readonly MetaRun[], from: number, to: number): BlockMeta[] {
  const found = new Map<number, BlockMeta>();
  for (const run of runs) for (const block of run.blocks) if (block.index >= from && block.index <= to) found.set(block.index, block);
  return [...found.values()].sort((a, b) => a.index - b.index);
}

/** The hash of the block before `index`, from the runs (the run's `prev` when it is a run's first block). */
export function prevHashOf(runs: readonly MetaRun[], index: number): string | undefined {
  for (const run of runs) {
    const first = run.blocks[0]?.index;
    if (first === undefined) continue;
    if (index === first) return run.prev;
    if (index > first && index <= first + run.blocks.length) return run.blocks[index - first - 1]!.hash;
  }
  return undefined;
}

/** A sealed block as its writer reads it from its shard's seal: its metadata (no tree nodes) and the hash before it. */
export type SealEntry = Omit<BlockMeta, 'nodes'> & { prev: string };

const SEAL_ENTRY = 6 + 32 + 32 + 6 + 1 + 6 + 6 + 1;

/**
 * Packs the blocks of one round whose pending appends were in one shard (their writers read only that):
 * version (1), count (2), then per block: index (6), the hash before it (32), hash (32), timestamp in ms
 * (6), pending shard (1), pending sort key (6 + 6), position (1).
 */
export function packSeal(entries: readonly SealEntry[]): Uint8Array {
  const buf = Buffer.alloc(3 + entries.length * SEAL_ENTRY);
  buf.writeUInt8(VERSION, 0);
  buf.writeUInt16BE(entries.length, 1);
  entries.forEach((entry, i) => {
    const at = 3 + i * SEAL_ENTRY;
    writeUint48(buf, entry.index, at);
    Buffer.from(entry.prev, 'hex').copy(buf, at + 6);
    Buffer.from(entry.hash, 'hex').copy(buf, at + 38);
    writeUint48(buf, Math.round(entry.timestamp * 1000), at + 70);
    if (!entry.ref) throw new RangeError(`a sealed block has its pending append: block ${entry.index}`);
    writeRef(buf, entry.ref, at + 76);
    buf.writeUInt8(entry.position, at + 89);
  });
  return buf;
}

export function unpackSeal(bytes: Uint8Array): SealEntry[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.readUInt8(0) !== VERSION) throw new Error(`unknown seal version ${buf.readUInt8(0)}`);
  const count = buf.readUInt16BE(1);
  if (buf.length !== 3 + count * SEAL_ENTRY) throw new Error('a seal has the wrong length');
  return Array.from({ length: count }, (_, i) => {
    const at = 3 + i * SEAL_ENTRY;
    return {
      index: buf.readUIntBE(at, 6),
      prev: buf.subarray(at + 6, at + 38).toString('hex'),
      hash: buf.subarray(at + 38, at + 70).toString('hex'),
      timestamp: buf.readUIntBE(at + 70, 6) / 1000,
      ref: readRef(buf, at + 76),
      position: buf.readUInt8(at + 89),
    };
  });
}
