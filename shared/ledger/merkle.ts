/**
 * RFC 6962 / RFC 9162 Merkle trees, pure and storage-free (the way transparency-dev/merkle and Tessera
 * keep them): leaf hash = SHA-256(0x00 ‖ leaf), node hash = SHA-256(0x01 ‖ left ‖ right); the tree over
 * n leaves splits at the largest power of two below n.
 *
 * Proofs are produced against a `NodeReader`: node(level, index) is the root of the perfect subtree over
 * leaves [index·2^level, (index+1)·2^level). Any range the RFC recursion asks for decomposes into
 * O(log n) such nodes, so a store that keeps them answers a proof with O(log n) reads
 * (`nodesFor…` say which). Appends keep a compact range (the frontier): the roots of the perfect
 * subtrees that make up the tree, largest first — enough for the current root and for the nodes each new
 * leaf completes.
 */
import { createHash, hash } from 'node:crypto';

const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);
const HASH_BYTES = 32;

/** SHA-256 of the empty string: the RFC 6962 head of an empty tree. */
export const EMPTY_TREE_ROOT = createHash('sha256').digest();

// One-shot hashing of one buffer is about a fifth faster than a streaming Hash with three updates;
// the verifier computes three of these per block.
export function leafHash(leaf: Uint8Array): Buffer {
  const input = Buffer.allocUnsafe(1 + leaf.length);
  input[0] = LEAF_PREFIX[0]!;
  input.set(leaf, 1);
  return hash('sha256', input, 'buffer');
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  const input = Buffer.allocUnsafe(1 + left.length + right.length);
  input[0] = NODE_PREFIX[0]!;
  input.set(left, 1);
  input.set(right, 1 + left.length);
  return hash('sha256', input, 'buffer');
}

/** The Merkle tree head over already-hashed leaves (bottom-up, carrying an unpaired last node up). */
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

/** The root a Sub-Chain's proof carries (docs/rules.md, "Anchors"): leaves are the 32 raw bytes of each block hash. */
export function blockHashesRoot(blockHashesHex: readonly string[]): string {
  return merkleRoot(blockHashesHex.map((h) => Buffer.from(h, 'hex'))).toString('hex');
}

// ---------------------------------------------------------------------------------------------------
// Ranges and nodes

/** A perfect subtree: leaves [index·2^level, (index+1)·2^level). */
export interface NodeId {
  level: number;
  index: number;
}

/** Leaves [start, end). */
export type Range = readonly [start: number, end: number];

export type NodeReader = (level: number, index: number) => Uint8Array;

function largestPowerOfTwoBelow(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && Number.isInteger(Math.log2(n));
}

/** The perfect subtrees whose hashes make MTH(D[start:end]), in the RFC's split order. */
export function nodesForRange([start, end]: Range): NodeId[] {
  const size = end - start;
  if (size <= 0) throw new RangeError(`empty range [${start}, ${end})`);
  if (isPowerOfTwo(size) && start % size === 0) return [{ level: Math.log2(size), index: start / size }];
  const k = largestPowerOfTwoBelow(size);
  return [...nodesForRange([start, start + k]), ...nodesForRange([start + k, end])];
}

/** MTH(D[start:end]) from perfect-subtree nodes. */
export function rangeHash([start, end]: Range, node: NodeReader): Buffer {
  const size = end - start;
  if (size <= 0) throw new RangeError(`empty range [${start}, ${end})`);
  if (isPowerOfTwo(size) && start % size === 0) return Buffer.from(node(Math.log2(size), start / size));
  const k = largestPowerOfTwoBelow(size);
  return nodeHash(rangeHash([start, start + k], node), rangeHash([start + k, end], node));
}

/** RFC 6962 PATH(m, D[start:end]): the ranges whose hashes form an inclusion proof, leaf upwards. */
export function inclusionRanges(leafIndex: number, treeSize: number): Range[] {
  if (!(leafIndex >= 0 && leafIndex < treeSize)) throw new RangeError(`leaf ${leafIndex} is not in a tree of ${treeSize}`);
  const path = (m: number, start: number, end: number): Range[] => {
    const n = end - start;
    if (n === 1) return [];
    const k = largestPowerOfTwoBelow(n);
    return m < k ? [...path(m, start, start + k), [start + k, end]] : [...path(m - k, start + k, end), [start, start + k]];
  };
  return path(leafIndex, 0, treeSize);
}

/** RFC 6962 PROOF(m, D[n]): the ranges whose hashes form a consistency proof from size m to size n. */
export function consistencyRanges(first: number, second: number): Range[] {
  if (!(first >= 1 && first <= second)) throw new RangeError(`no consistency proof from ${first} to ${second}`);
  const subproof = (m: number, start: number, end: number, whole: boolean): Range[] => {
    const n = end - start;
    if (m === n) return whole ? [] : [[start, end]];
    const k = largestPowerOfTwoBelow(n);
    return m <= k ? [...subproof(m, start, start + k, whole), [start + k, end]] : [...subproof(m - k, start + k, end, false), [start, start + k]];
  };
  return subproof(first, 0, second, true);
}

/** Every node the ranges need, each once. */
export function nodesForRanges(ranges: readonly Range[]): NodeId[] {
  const seen = new Map<string, NodeId>();
  for (const range of ranges) for (const n of nodesForRange(range)) seen.set(`${n.level}/${n.index}`, n);
  return [...seen.values()];
}

export function inclusionProof(leafIndex: number, treeSize: number, node: NodeReader): Buffer[] {
  return inclusionRanges(leafIndex, treeSize).map((range) => rangeHash(range, node));
}

export function consistencyProof(first: number, second: number, node: NodeReader): Buffer[] {
  return consistencyRanges(first, second).map((range) => rangeHash(range, node));
}

/** A NodeReader over the full list of leaf hashes: from scratch, for tests and small trees. */
export function nodesFromLeafHashes(leafHashes: readonly Uint8Array[]): NodeReader {
  const levels: Uint8Array[][] = [leafHashes.slice()];
  return (level, index) => {
    while (levels.length <= level) {
      const below = levels[levels.length - 1]!;
      const next: Uint8Array[] = [];
      for (let i = 0; i + 1 < below.length; i += 2) next.push(nodeHash(below[i]!, below[i + 1]!));
      levels.push(next);
    }
    const value = levels[level]![index];
    if (!value) throw new RangeError(`no node ${level}/${index} in a tree of ${leafHashes.length}`);
    return value;
  };
}

// ---------------------------------------------------------------------------------------------------
// The frontier (compact range) kept as leaves are appended

/** The levels of the frontier of a tree of `size` leaves: its set bits, largest first. */
export function frontierLevels(size: number): number[] {
  const levels: number[] = [];
  for (let level = Math.floor(Math.log2(Math.max(size, 1))); level >= 0; level -= 1) {
    if (Math.floor(size / 2 ** level) % 2 === 1) levels.push(level);
  }
  return size === 0 ? [] : levels;
}

/**
 * Appends one leaf to a frontier of a tree of `size` leaves. Answers the new frontier and the nodes the
 * leaf completed, lowest level first (levels 1, 2, …: node (L, j) with (j+1)·2^L − 1 = size).
 */
export function appendLeaf(frontier: readonly Buffer[], size: number, leaf: Buffer): { frontier: Buffer[]; completed: Buffer[] } {
  return appendSubtree(frontier, size, 0, leaf);
}

/**
 * Appends the root of a perfect subtree of 2^level leaves to a frontier of a tree of `size` leaves (a
 * multiple of 2^level): the same as appending its leaves one by one. `completed` holds the nodes above
 * `level` it completed, lowest first (levels level+1, level+2, …).
 */
export function appendSubtree(frontier: readonly Buffer[], size: number, level: number, root: Buffer): { frontier: Buffer[]; completed: Buffer[] } {
  if (size % 2 ** level !== 0) throw new Error(`a subtree of 2^${level} leaves cannot follow ${size} leaves`);
  const levels = frontierLevels(size);
  if (levels.length !== frontier.length) throw new Error(`a frontier of ${frontier.length} nodes does not fit a tree of ${size}`);
  const stack = frontier.map((hash, i) => ({ level: levels[i]!, hash }));
  stack.push({ level, hash: root });
  const completed: Buffer[] = [];
  while (stack.length >= 2 && stack[stack.length - 1]!.level === stack[stack.length - 2]!.level) {
    const right = stack.pop()!;
    const left = stack.pop()!;
    const merged = { level: left.level + 1, hash: nodeHash(left.hash, right.hash) };
    completed.push(merged.hash);
    stack.push(merged);
  }
  return { frontier: stack.map((n) => n.hash), completed };
}

/**
 * The perfect subtrees that cover leaves `start`…`start + leaves.length − 1` of a tree, in order: each as large as
 * its alignment allows (2^level leaves from a multiple of 2^level), none crossing a size in `cuts`. Appending them
 * to a frontier of `start` leaves (appendSubtree) gives the frontier appending the leaves one by one would, and
 * after each the tree has a size of `cuts` wherever one falls inside. A verifier's workers cover their pages so, and
 * the verifier appends a few subtrees a page instead of a hundred leaves.
 */
export function alignedSubtrees(start: number, leaves: readonly Uint8Array[], cuts: readonly number[] = []): { level: number; root: Buffer }[] {
  const end = start + leaves.length;
  const bounds = [...cuts.filter((cut) => cut > start && cut < end), end].sort((a, b) => a - b);
  const subtrees: { level: number; root: Buffer }[] = [];
  let at = start;
  for (const bound of bounds) {
    while (at < bound) {
      let level = 0;
      while (at % 2 ** (level + 1) === 0 && at + 2 ** (level + 1) <= bound) level += 1;
      subtrees.push({ level, root: rootFromLeafHashes(leaves.slice(at - start, at - start + 2 ** level)) });
      at += 2 ** level;
    }
  }
  return subtrees;
}

/** The tree head from a frontier: its nodes folded right to left. */
export function frontierRoot(frontier: readonly Uint8Array[]): Buffer {
  if (frontier.length === 0) return Buffer.from(EMPTY_TREE_ROOT);
  let acc: Buffer = Buffer.from(frontier[frontier.length - 1]!);
  for (let i = frontier.length - 2; i >= 0; i -= 1) acc = nodeHash(frontier[i]!, acc);
  return acc;
}

/** Where node (level, index) is kept: on the leaf (block) that completed it, at position level − 1. */
export function nodeHome({ level, index }: NodeId): { leaf: number; position: number } {
  return level === 0 ? { leaf: index, position: -1 } : { leaf: (index + 1) * 2 ** level - 1, position: level - 1 };
}

// ---------------------------------------------------------------------------------------------------
// Verification (RFC 9162 §2.1.3.2 and §2.1.4.2), as a client would do it

export class ProofError extends Error {
  override name = 'ProofError';
}

function checkHash(hash: Uint8Array, what: string): void {
  if (hash.length !== HASH_BYTES) throw new ProofError(`${what} is ${hash.length} bytes, not ${HASH_BYTES}`);
}

/** The root an inclusion proof leads to; throws ProofError when the proof cannot fit the sizes. */
/** A leaf index or tree size: a whole number a double holds exactly (2.5 had walked a proof as if it were 2, red team). */
function checkCount(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new ProofError(`${what} ${n} is not a whole number of leaves`);
}

export function rootFromInclusionProof(leafIndex: number, treeSize: number, leaf: Uint8Array, proof: readonly Uint8Array[]): Buffer {
  checkCount(leafIndex, 'the leaf index');
  checkCount(treeSize, 'the tree size');
  if (!(leafIndex >= 0 && leafIndex < treeSize)) throw new ProofError(`leaf index ${leafIndex} is not below tree size ${treeSize}`);
  checkHash(leaf, 'the leaf hash');
  let fn = leafIndex;
  let sn = treeSize - 1;
  let r: Buffer = Buffer.from(leaf);
  for (const p of proof) {
    checkHash(p, 'a proof hash');
    if (sn === 0) throw new ProofError('the proof is longer than the tree is deep');
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) throw new ProofError('the proof is shorter than the tree is deep');
  return r;
}

export function verifyInclusion(leafIndex: number, treeSize: number, leaf: Uint8Array, proof: readonly Uint8Array[], root: Uint8Array): void {
  checkHash(root, 'the root');
  const computed = rootFromInclusionProof(leafIndex, treeSize, leaf, proof);
  if (!computed.equals(Buffer.from(root))) throw new ProofError('the proof leads to another root');
}

export function verifyConsistency(first: number, second: number, proof: readonly Uint8Array[], firstRoot: Uint8Array, secondRoot: Uint8Array): void {
  checkCount(first, 'the first size');
  checkCount(second, 'the second size');
  if (second < first) throw new ProofError(`the second size ${second} is smaller than the first ${first}`);
  if (first < 1) throw new ProofError('a consistency proof from an empty tree proves nothing');
  if (first === second) {
    // Same tree: nothing to prove but that the roots are the same bytes (as the peers' vectors have it, whatever bytes).
    if (proof.length > 0) throw new ProofError('equal sizes need an empty proof');
    if (!Buffer.from(firstRoot).equals(Buffer.from(secondRoot))) throw new ProofError('equal sizes but different roots');
    return;
  }
  checkHash(firstRoot, 'the first root');
  checkHash(secondRoot, 'the second root');
  if (proof.length === 0) throw new ProofError('the proof is empty');
  for (const p of proof) checkHash(p, 'a proof hash');
  const path: Uint8Array[] = isPowerOfTwo(first) ? [Buffer.from(firstRoot), ...proof] : [...proof];
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr: Buffer = Buffer.from(path[0]!);
  let sr: Buffer = Buffer.from(path[0]!);
  for (const c of path.slice(1)) {
    if (sn === 0) throw new ProofError('the proof is longer than the trees are deep');
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) throw new ProofError('the proof is shorter than the trees are deep');
  if (!fr.equals(Buffer.from(firstRoot))) throw new ProofError('the proof does not lead to the first root');
  if (!sr.equals(Buffer.from(secondRoot))) throw new ProofError('the proof does not lead to the second root');
}
