/**
 * C2SP tlog-tiles (c2sp.org/tlog-tiles), pure: tile paths, widths, and what a tile holds.
 *
 * A tile at level L, index N is 256 consecutive Merkle tree hashes at tree height 8·L: hash i is
 * MTH(D[(N·256 + i)·256^L : (N·256 + i + 1)·256^L]) — the perfect-subtree node (level 8L, index N·256 + i)
 * that shared/ledger/merkle.ts already names. A tree of size s has floor(s / 256^L) such hashes at
 * level L: tiles below that are full (256 hashes, 8,192 bytes, never change); the last one is partial
 * (`.p/<W>`, W = its width, 1…255). Entry bundles hold the leaves themselves, each as a big-endian
 * uint16 length and the leaf's bytes; our leaves are the 32 raw bytes of each block hash.
 *
 * Paths: `tile/<L>/<N>[.p/<W>]` and `tile/entries/<N>[.p/<W>]`, N in zero-padded 3-digit elements, all but
 * the last prefixed with `x` (1234067 → `x001/x234/067`); L and W without leading zeros.
 */
export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;
export const HASH_BYTES = 32;

/** A hash tile (`level` ≥ 0) or an entry bundle (`level` = 'entries'); `width` 256 for a full one. */
export interface TileRef {
  level: number | 'entries';
  index: number;
  width: number;
}

/** Hash tiles of levels above this would cover more leaves than a chain can have (2^53). */
const MAX_LEVEL = 6;

/** N as C2SP spells it: `x001/x234/067`. */
export function formatTileIndex(index: number): string {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`tile index ${index} is not a non-negative integer`);
  let n = index;
  const parts = [String(n % 1000).padStart(3, '0')];
  n = Math.floor(n / 1000);
  while (n > 0) {
    parts.unshift(`x${String(n % 1000).padStart(3, '0')}`);
    n = Math.floor(n / 1000);
  }
  return parts.join('/');
}

/** The path of a tile below the log's prefix, e.g. `tile/0/x001/234.p/7`. */
export function tilePath(tile: TileRef): string {
  const partial = tile.width < TILE_WIDTH ? `.p/${tile.width}` : '';
  return `tile/${tile.level}/${formatTileIndex(tile.index)}${partial}`;
}

/** Why a tile path was refused: 'malformed' (400) or 'not-found' for well-formed paths no tile can have. */
export class TilePathError extends Error {
  readonly kind: 'malformed' | 'not-found';
  constructor(kind: 'malformed' | 'not-found', message: string) {
    super(message);
    this.kind = kind;
  }
}

/**
 * Parses what follows `tile/` (`0/x001/234.p/7`, `entries/005`). Throws TilePathError: malformed paths
 * (leading zeros, bad elements, traversal, W outside 1…255) and levels beyond any tree.
 */
export function parseTilePath(path: string): TileRef {
  const segments = path.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..')) throw new TilePathError('malformed', 'A tile path has no empty, "." or ".." elements');
  const [levelPart, ...rest] = segments as [string, ...string[]];
  let level: number | 'entries';
  if (levelPart === 'entries') level = 'entries';
  else if (/^(0|[1-9][0-9]?)$/.test(levelPart)) level = Number(levelPart);
  else throw new TilePathError('malformed', `The tile level '${levelPart}' is not 'entries' or a level 0…63 without leading zeros`);
  if (typeof level === 'number' && level > 63) throw new TilePathError('malformed', 'Tile levels are 0…63');

  let width = TILE_WIDTH;
  if (rest.length >= 2 && rest[rest.length - 2]!.endsWith('.p')) {
    const w = rest.pop()!;
    rest[rest.length - 1] = rest[rest.length - 1]!.slice(0, -2);
    if (!/^[1-9][0-9]{0,2}$/.test(w) || Number(w) > 255)
      throw new TilePathError('malformed', `A partial tile's width is 1…255 without leading zeros, not '${w}'`);
    width = Number(w);
  }
  if (rest.length === 0) throw new TilePathError('malformed', 'A tile path names a tile index');
  let index = 0;
  rest.forEach((element, i) => {
    const last = i === rest.length - 1;
    if (!(last ? /^[0-9]{3}$/ : /^x[0-9]{3}$/).test(element)) {
      throw new TilePathError(
        'malformed',
        `Tile index elements are three digits, all but the last after an 'x' (1234067 is x001/x234/067); '${element}' is not`,
      );
    }
    index = index * 1000 + Number(last ? element : element.slice(1));
  });
  if (rest.length > 1 && rest[0] === 'x000') throw new TilePathError('malformed', 'A tile index has no leading x000 elements');
  if (!Number.isSafeInteger(index)) throw new TilePathError('malformed', 'The tile index is too large');
  if (typeof level === 'number' && level > MAX_LEVEL) throw new TilePathError('not-found', `No chain reaches tile level ${level}`);
  return { level, index, width };
}

/** How many hashes the tree of `size` leaves has at tile level `level` (entries: level 0). */
export function hashesAtLevel(level: number, size: number): number {
  return Math.floor(size / TILE_WIDTH ** level);
}

/** The widest the tile can be in a tree of `size` leaves: 0 if the tree does not reach it. */
export function availableWidth(tile: Pick<TileRef, 'level' | 'index'>, size: number): number {
  const level = tile.level === 'entries' ? 0 : tile.level;
  return Math.max(0, Math.min(TILE_WIDTH, hashesAtLevel(level, size) - tile.index * TILE_WIDTH));
}

/** The tree nodes (level, index) of a hash tile's hashes. */
export function tileNodes(tile: TileRef): { level: number; index: number }[] {
  if (tile.level === 'entries') throw new TypeError('entry bundles hold leaves, not nodes');
  const level = tile.level * TILE_HEIGHT;
  return Array.from({ length: tile.width }, (_, i) => ({ level, index: tile.index * TILE_WIDTH + i }));
}

/** An entry bundle: each entry as a big-endian uint16 length, then its bytes. */
export function encodeEntryBundle(entries: readonly Uint8Array[]): Buffer {
  const out = Buffer.allocUnsafe(entries.reduce((n, e) => n + 2 + e.length, 0));
  let at = 0;
  for (const entry of entries) {
    if (entry.length > 0xffff) throw new RangeError('an entry is at most 65,535 bytes');
    out.writeUInt16BE(entry.length, at);
    out.set(entry, at + 2);
    at += 2 + entry.length;
  }
  return out;
}

/** The entries of a bundle; throws when the bytes are not a whole bundle. */
export function decodeEntryBundle(bytes: Uint8Array): Buffer[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const entries: Buffer[] = [];
  let at = 0;
  while (at < buffer.length) {
    if (at + 2 > buffer.length) throw new RangeError('the bundle ends inside an entry length');
    const length = buffer.readUInt16BE(at);
    if (at + 2 + length > buffer.length) throw new RangeError('the bundle ends inside an entry');
    entries.push(buffer.subarray(at + 2, at + 2 + length));
    at += 2 + length;
  }
  return entries;
}

/** The hashes of a hash tile, 32 bytes each; throws unless the bytes are whole hashes. */
export function splitHashes(bytes: Uint8Array): Buffer[] {
  if (bytes.length % HASH_BYTES !== 0) throw new RangeError('a hash tile is a whole number of 32-byte hashes');
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Array.from({ length: bytes.length / HASH_BYTES }, (_, i) => buffer.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES));
}
