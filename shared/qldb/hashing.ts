/**
 * Amazon QLDB's hashing, by QLDB's own rules (AWS developer guide, "Data verification in Amazon QLDB"; the
 * rules as AWS's verifier samples apply them), for checking a QLDB journal export before its history is
 * imported (docs/qldb-import.md):
 *
 * - a value's hash is its Ion hash (the Ion Hash specification) with SHA-256;
 * - two hashes are joined ("dot") by SHA-256 of their concatenation, the smaller first, where hashes are
 *   compared from their last byte to their first, each byte as a signed number (Java's `byte`); an empty
 *   hash joined with another gives the other;
 * - a list of hashes has a Merkle root: hashes joined in pairs, level by level, an odd last one carried up
 *   to the next level unchanged;
 * - a revision's hash joins its metadata's hash and its data's (a revision that carries only a hash, a
 *   system one or one whose data was redacted, is checked by its hash alone);
 * - a block's `entriesHash` is the Merkle root of its `entriesHashList`, which holds (among hashes of QLDB's
 *   internal metadata) the hash of its `transactionInfo` and the Merkle root of its revisions' hashes;
 * - a block's `blockHash` joins its `entriesHash` and its `previousBlockHash`.
 *
 * Checked against a real QLDB block (test/unit/qldb-hashing.test.ts) and the Ion project's Ion Hash vectors.
 */
import { createHash } from 'node:crypto';
import * as ion from 'ion-js';
import { type IonHasherProvider, ionHashValue } from './ion-hash.ts';

export type Hash = Buffer;

/** QLDB's order of two hashes: from the last byte to the first, each byte signed. */
export function compareHashes(a: Uint8Array, b: Uint8Array): number {
  for (let i = a.length - 1, j = b.length - 1; i >= 0 && j >= 0; i -= 1, j -= 1) {
    const x = (a[i]! << 24) >> 24;
    const y = (b[j]! << 24) >> 24;
    if (x !== y) return x - y;
  }
  return a.length - b.length;
}

/** QLDB's join of two hashes ("dot"). */
export function dot(a: Uint8Array, b: Uint8Array): Hash {
  if (a.length === 0) return Buffer.from(b);
  if (b.length === 0) return Buffer.from(a);
  const [first, second] = compareHashes(a, b) < 0 ? [a, b] : [b, a];
  return createHash('sha256').update(first).update(second).digest();
}

/** The Merkle root of a list of hashes as QLDB builds it (empty for an empty list). */
export function merkleRoot(hashes: readonly Uint8Array[]): Hash {
  if (hashes.length === 0) return Buffer.alloc(0);
  let level: Hash[] = hashes.map((h) => Buffer.from(h));
  while (level.length > 1) {
    const next: Hash[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? dot(level[i]!, level[i + 1]!) : level[i]!);
    level = next;
  }
  return level[0]!;
}

/**
 * The Ion hash of a value (an ion-js DOM value), or of the first value in `source` (Ion text or binary), with
 * SHA-256 unless another hasher is given (the Ion project's vectors check the bytes hashed with an identity
 * hasher). The hashing itself is ./ion-hash.ts.
 */
export function ionHash(source: string | Uint8Array | ion.dom.Value, provider?: IonHasherProvider): Hash {
  // A DOM value first: ion-js's blob and clob values are Uint8Arrays too, and had been read as binary Ion (found by
  // the property test against ion-hash-js: a blob hashed alone gave another hash; inside a struct it did not).
  const isValue = typeof (source as { getType?: unknown }).getType === 'function';
  const value = isValue ? (source as ion.dom.Value) : ion.load(source as string | Uint8Array);
  if (value === null) throw new RangeError('no Ion value to hash');
  return Buffer.from(ionHashValue(value, provider));
}

/** A revision's hash from its metadata and data (each Ion: text, binary, or a value read). */
export function revisionHash(metadata: string | Uint8Array | ion.dom.Value, data: string | Uint8Array | ion.dom.Value): Hash {
  return dot(ionHash(metadata), ionHash(data));
}

/** A block's hash from its entries hash and the previous block's hash. */
export function blockHash(entriesHash: Uint8Array, previousBlockHash: Uint8Array): Hash {
  return dot(entriesHash, previousBlockHash);
}

/**
 * The Merkle root of a long list of hashes, one hash at a time, in memory of its logarithm: the perfect
 * subtrees so far (sizes the binary digits of the count), joined from the right at the end. It equals
 * merkleRoot's level-by-level pairing with an odd last hash carried up (the same shape as RFC 6962's tree).
 * QLDB's digest is this root over a strand's block hashes from its first block to the digest's tip.
 */
export class MerkleAccumulator {
  #subtrees: { size: number; hash: Hash }[] = [];
  #count = 0;

  get count(): number {
    return this.#count;
  }

  push(hash: Uint8Array): void {
    let node: { size: number; hash: Hash } = { size: 1, hash: Buffer.from(hash) };
    while (this.#subtrees.length > 0 && this.#subtrees.at(-1)!.size === node.size) {
      const left = this.#subtrees.pop()!;
      node = { size: left.size * 2, hash: dot(left.hash, node.hash) };
    }
    this.#subtrees.push(node);
    this.#count += 1;
  }

  root(): Hash {
    if (this.#subtrees.length === 0) return Buffer.alloc(0);
    let acc = this.#subtrees.at(-1)!.hash;
    for (let i = this.#subtrees.length - 2; i >= 0; i -= 1) acc = dot(this.#subtrees[i]!.hash, acc);
    return acc;
  }
}
