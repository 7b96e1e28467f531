/**
 * RFC 6962 (Certificate Transparency) Merkle tree hashing, pure and storage-free.
 * Leaf hash = SHA-256(0x00 || leaf), node hash = SHA-256(0x01 || left || right); the tree over n leaves
 * splits at the largest power of two below n, which equals building bottom-up and carrying an unpaired
 * last node up unchanged (the form used here: linear time, no recursion).
 */
import { createHash } from 'node:crypto';

const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

/** SHA-256 of the empty string: the RFC 6962 head of an empty tree. */
export const EMPTY_TREE_ROOT = createHash('sha256').digest();

export function leafHash(leaf: Uint8Array): Buffer {
  return createHash('sha256').update(LEAF_PREFIX).update(leaf).digest();
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest();
}

/** The Merkle tree head over already-hashed leaves. */
export function rootFromLeafHashes(leafHashes: readonly Uint8Array[]): Buffer {
  if (leafHashes.length === 0) return Buffer.from(EMPTY_TREE_ROOT);
  let level: Uint8Array[] = [...leafHashes];
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    level = next;
  }
  return Buffer.from(level[0]!);
}

/** The Merkle tree head (MTH) over raw leaves. */
export function merkleRoot(leaves: readonly Uint8Array[]): Buffer {
  return rootFromLeafHashes(leaves.map(leafHash));
}

/**
 * The root a Sub-Chain's proof carries (contract.md §3): leaves are the 32 raw bytes of each block hash,
 * in index order. Answers lowercase hex.
 */
export function blockHashesRoot(blockHashesHex: readonly string[]): string {
  return merkleRoot(blockHashesHex.map((h) => Buffer.from(h, 'hex'))).toString('hex');
}
