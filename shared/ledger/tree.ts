/**
 * The Merkle tree of each chain, kept in storage as blocks are appended (leaves = block hashes):
 * the frontier on the head, and each perfect-subtree node on the block that completed it. Reading a
 * proof costs the O(log n) blocks that hold its nodes, never the whole chain.
 */
import { checkDeadline } from '../deadline.ts';
import type { ChainHead } from './types.ts';
import type { LedgerRepository } from './repository.ts';
import { appendLeaf, frontierRoot, leafHash, nodeHome, type NodeId, type NodeReader } from './merkle.ts';

export const toHex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const fromHex = (h: string) => Buffer.from(h, 'hex');

/** The frontier and the nodes each block completes, for blocks appended after a tree of `size` leaves. */
export function extendTree(frontierHex: readonly string[], size: number, blockHashes: readonly string[]): { frontier: string[]; treeNodes: string[][] } {
  let frontier: Buffer[] = frontierHex.map(fromHex);
  const treeNodes: string[][] = [];
  blockHashes.forEach((hash, i) => {
    const next = appendLeaf(frontier, size + i, leafHash(fromHex(hash)));
    frontier = next.frontier;
    treeNodes.push(next.completed.map(toHex));
  });
  return { frontier: frontier.map(toHex), treeNodes };
}

/** The root of a head's tree (all its blocks). */
export function headRoot(head: ChainHead): string {
  if (!head.frontier) throw new Error(`chain '${head.chainName}' has no tree yet`);
  return toHex(frontierRoot(head.frontier.map(fromHex)));
}

/**
 * Gives an older chain its tree, once: reads its block hashes, writes the nodes onto the blocks and
 * the frontier onto the head. Safe to run twice at once (the nodes are the same; one frontier wins).
 */
export async function ensureTree(repository: LedgerRepository, head: ChainHead): Promise<ChainHead> {
  let current: ChainHead | undefined = head;
  while (current && !current.frontier) {
    checkDeadline(`the tree of '${head.chainName}'`);
    const hashes = await repository.listBlockHashes(current.chainName, current.headIndex);
    const { frontier, treeNodes } = extendTree([], 0, hashes);
    await repository.storeTreeNodes(
      current.chainName,
      treeNodes.map((nodes, index) => ({ index, treeNodes: nodes })),
    );
    await repository.setFrontier(current.chainName, current.headIndex, frontier);
    current = await repository.getHead(current.chainName);
  }
  if (!current) throw new Error(`chain '${head.chainName}' vanished while its tree was built`);
  return current;
}

/** Reads exactly the blocks that hold `nodes` and answers a NodeReader over them. */
export async function readNodes(repository: LedgerRepository, chainName: string, nodes: readonly NodeId[], consistent = false): Promise<NodeReader> {
  const data = await repository.readTreeData(
    chainName,
    nodes.map((n) => nodeHome(n).leaf),
    consistent,
  );
  return (level, index) => {
    const home = nodeHome({ level, index });
    const block = data.get(home.leaf);
    if (!block) throw new Error(`block ${home.leaf} of '${chainName}' is missing: the tree cannot be read`);
    if (level === 0) return leafHash(fromHex(block.hash));
    const hash = block.treeNodes[home.position];
    if (!hash) throw new Error(`block ${home.leaf} of '${chainName}' lacks tree node ${level}/${index}`);
    return fromHex(hash);
  };
}
