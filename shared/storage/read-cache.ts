/**
 * What a warm instance keeps of the ledger's immutable items between requests (docs/rules.md, "Caching"):
 * block records (keyed by the block's hash), segments of block metadata (keyed by chain and last index), full
 * tiles, kept pages of 100 blocks (keyed by chain and first index), and evidence against a fixed tree size
 * (keyed by the request). None of them ever changes once written, so a kept copy is never stale and needs no invalidation. Only stored items are kept, as stored: an
 * erasable event's details stay sealed here (in evidence too) and are opened with its subject's key at every
 * read, so an erasure shows at once, cache or not.
 *
 * One cache per repository (the composition root makes one per process), bounded in bytes, least recently
 * used first out. It counts its hits and misses by kind for /metrics. On Lambda an instance serves one
 * request at a time: the cache only helps an instance's later requests, never a concurrent one.
 */

export type CacheKind = 'record' | 'segment' | 'tile' | 'evidence' | 'page';

/** What an entry costs beside its value: the key, the Map's slot, the object around the value. */
const ENTRY_OVERHEAD = 96;

export interface ReadCacheCounts {
  /** Items served from memory, by kind. */
  hits: Record<CacheKind, number>;
  /** Reads that went to DynamoDB, by kind (a record or tile looked up and not held; a segment Query sent). */
  misses: Record<CacheKind, number>;
}

export interface ReadCache {
  get<T>(kind: CacheKind, key: string): T | undefined;
  /** `get`, counted: a hit, or a miss (the caller then reads DynamoDB). */
  lookup<T>(kind: CacheKind, key: string): T | undefined;
  /** Keeps `value`, which costs `bytes`; a value larger than the whole cache is not kept. */
  set(kind: CacheKind, key: string, value: unknown, bytes: number): void;
  /** Lets an entry go (a listener of its kind is told, as when it is pushed out). */
  forget(kind: CacheKind, key: string): void;
  hit(kind: CacheKind, n?: number): void;
  miss(kind: CacheKind, n?: number): void;
  /** Called with the key of each entry pushed out to make room. */
  onEvict(kind: CacheKind, listener: (key: string) => void): void;
  readonly counts: ReadCacheCounts;
  /** Bytes held now. */
  readonly bytes: number;
}

const zero = (): Record<CacheKind, number> => ({ record: 0, segment: 0, tile: 0, evidence: 0, page: 0 });

export function createReadCache(maxBytes: number): ReadCache {
  // A Map keeps insertion order: re-inserting on a hit makes its first key the least recently used.
  const entries = new Map<string, { kind: CacheKind; value: unknown; bytes: number }>();
  const listeners: Partial<Record<CacheKind, (key: string) => void>> = {};
  const counts: ReadCacheCounts = { hits: zero(), misses: zero() };
  let bytes = 0;
  const slot = (kind: CacheKind, key: string) => `${kind}|${key}`;

  function drop(id: string): void {
    const entry = entries.get(id);
    if (!entry) return;
    entries.delete(id);
    bytes -= entry.bytes;
    listeners[entry.kind]?.(id.slice(entry.kind.length + 1));
  }

  function get<T>(kind: CacheKind, key: string): T | undefined {
    const id = slot(kind, key);
    const entry = entries.get(id);
    if (!entry) return undefined;
    entries.delete(id);
    entries.set(id, entry);
    return entry.value as T;
  }

  return {
    get,
    lookup<T>(kind: CacheKind, key: string): T | undefined {
      const value = get<T>(kind, key);
      counts[value === undefined ? 'misses' : 'hits'][kind] += 1;
      return value;
    },
    set(kind, key, value, valueBytes) {
      if (maxBytes <= 0) return;
      const id = slot(kind, key);
      const cost = valueBytes + id.length + ENTRY_OVERHEAD;
      if (cost > maxBytes) return;
      drop(id);
      while (bytes + cost > maxBytes) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        drop(oldest.value);
      }
      entries.set(id, { kind, value, bytes: cost });
      bytes += cost;
    },
    forget(kind, key) {
      drop(slot(kind, key));
    },
    hit(kind, n = 1) {
      counts.hits[kind] += n;
    },
    miss(kind, n = 1) {
      counts.misses[kind] += n;
    },
    onEvict(kind, listener) {
      listeners[kind] = listener;
    },
    counts,
    get bytes() {
      return bytes;
    },
  };
}
