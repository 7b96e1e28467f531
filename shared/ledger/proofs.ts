/**
 * What lets a client check the ledger without trusting the server (contract extensions of issue #8):
 * signed checkpoints, inclusion and consistency proofs (RFC 6962), the proof that a Sub-Chain block is
 * covered by a Main Chain anchor, and a full re-verification of a chain.
 *
 * Checkpoints are signed as shared/ledger/checkpoint.ts says.
 */
import { BadRequestError, NotFoundError, NotWitnessedYetError, ValidationError } from '../errors.ts';
import { checkpointMessage, type CheckpointFields } from './checkpoint.ts';
import { ZERO_HASH, hashBlock } from './hashing.ts';
import { signatureProblem } from './signed-events.ts';
import { appendLeaf, consistencyRanges, frontierRoot, inclusionRanges, leafHash, nodesForRanges, rangeHash, type NodeReader } from './merkle.ts';
import { MAIN_CHAIN } from './names.ts';
import type { LedgerRepository } from './repository.ts';
import { ensureTree, headRoot, readNodes, toHex } from './tree.ts';
import type { Block, ChainHead, ProofDetails } from './types.ts';
import { PROOF_EVENT_TYPE, requireChainHead, treeSizeNotReached } from './ledger.ts';
import { sizesSeen } from './sizes-seen.ts';

/** The most leaves one evidence request proves or returns. */
export const MAX_EVIDENCE_LEAVES = 100;

export interface EvidenceRequest {
  /** Block indices, ascending and distinct (at most MAX_EVIDENCE_LEAVES). */
  leaves: readonly number[];
  /** Prove against this size (one the client already trusts) instead of the latest signed checkpoint. */
  treeSize?: number;
  /** The size the client trusts: with the latest checkpoint, the consistency proof from it. */
  knownSize?: number;
  /** Also answer the blocks, as stored (as hashed). */
  withBlocks?: boolean;
  /** Prove against the newest checkpoint the witnesses cosigned (witnessing it now if it does not cover the leaves). */
  witnessed?: boolean;
}

/** The witnesses' side of the checkpoints (shared/tlog/witnessing.ts), when the node has witnesses. */
export interface WitnessedCheckpoints {
  latest(chainName: string): Promise<{ size: number; root: string; lines: string[] } | undefined>;
  /** Sends the chain's current checkpoint to the witnesses now, if its turn is free. */
  witnessNow(chainName: string): Promise<void>;
}

/**
 * Everything a verifying client needs to check some blocks, in one answer (docs/clients.md):
 * - `checkpoint`: the latest signed checkpoint (a C2SP signed note, the same as /tlog/<chain>/checkpoint),
 *   unless the client named a `tree_size` it already trusts;
 * - `consistency`: the RFC 9162 consistency proof from `known_size` to that checkpoint;
 * - `inclusion`: for each run of consecutive leaves, the inclusion proof of its last leaf only: the
 *   blocks before it in the run are pinned by their hash links (block i+1 names block i's hash);
 * - `blocks`: the blocks as stored, if asked.
 * Hashes are base64 (32 bytes each), as in the tlog formats.
 */
export interface Evidence {
  chain_name: string;
  tree_size: number;
  checkpoint: string | null;
  consistency: { from: number; proof: string[] } | null;
  inclusion: { leaf_index: number; proof: string[] }[];
  blocks?: Block[];
}

/** Runs of consecutive indices in ascending `leaves`: [[3,4,5],[9]]. */
export function runsOf(leaves: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const leaf of leaves) {
    const last = runs[runs.length - 1];
    if (last && leaf === last[1] + 1) last[1] = leaf;
    else runs.push([leaf, leaf]);
  }
  return runs;
}

/** What signs checkpoints: the node identity. */
export interface Signer {
  nodeId: string;
  publicKey: string;
  sign(bytes: Uint8Array): Buffer;
}

export interface VerifyReport {
  chain_name: string;
  valid: boolean;
  checked_blocks: number;
  first_invalid_index: number | null;
  reason: string | null;
  anchors_checked: number;
}

interface Anchor {
  block: Block;
  details: ProofDetails;
  proofId: string;
}

const hex = (b: Uint8Array) => toHex(b);

/** A byte-bounded keep of immutable evidence, by request (chain, tree size, blocks or not, leaves). */
export interface KeptEvidence {
  get(key: string): Evidence | undefined;
  /** Keeps `evidence` (frozen: every later request is answered the same object). */
  set(key: string, evidence: Evidence): void;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export function createProofs({
  repository,
  signer,
  signedNote,
  witnessed,
  kept,
  now = () => Date.now() / 1000,
}: {
  repository: LedgerRepository;
  /**
   * Where an instance keeps evidence against a fixed tree size between requests (the read cache, bounded in
   * bytes): that answer never changes, so it is built once. Absent, every request builds it.
   */
  kept?: KeptEvidence;
  signer: () => Promise<Signer>;
  /** The chain's C2SP checkpoint (a signed note) at a size and root: the tlog's, so both always agree. */
  signedNote?: (chainName: string, size: number, rootHex: string) => Promise<string>;
  witnessed?: WitnessedCheckpoints;
  now?: () => number;
}) {
  /** A proof against a tree no larger than a size this instance saw needs no read of the head (its nodes are in segments, which never change). */
  const seen = sizesSeen();
  async function treeHead(chainName: string): Promise<ChainHead> {
    const head = await ensureTree(repository, await requireChainHead(repository, chainName));
    seen.note(head.chainName, sizeOf(head));
    return head;
  }

  function sizeOf(head: ChainHead): number {
    return head.headIndex + 1;
  }

  /** Reads the nodes for `ranges` and the roots of `sizes`, in one batch. */
  async function reader(chainName: string, ranges: readonly (readonly [number, number])[]): Promise<NodeReader> {
    // Strongly consistent: the newest nodes sit on blocks committed moments before the head was read.
    return readNodes(repository, chainName, nodesForRanges(ranges), true);
  }

  /** The anchor that Main Chain block `mainIndex` is, if it is one of `chainName`'s. */
  async function anchorAt(chainName: string, mainIndex: number): Promise<Anchor | undefined> {
    const block = await repository.getBlock(MAIN_CHAIN, mainIndex);
    return block ? anchorIn(chainName, block) : undefined;
  }

  function anchorIn(chainName: string, block: Block): Anchor | undefined {
    const event = block.events[0];
    if (block.chain_name !== MAIN_CHAIN || event?.event_type !== PROOF_EVENT_TYPE) return undefined;
    const details = event.details as unknown as ProofDetails;
    if (details.sub_chain !== chainName) return undefined;
    return { block, details, proofId: `${chainName}_${block.index}` };
  }

  /**
   * The Sub-Chain's anchors from its anchor items (one a proof, repository.putAnchor), read by the head they anchor:
   * what any writer adds to the entity index named after the chain is never read. Where items are missing (the
   * head counts more proofs than there are items: chains anchored before the items existed, or a proof whose item
   * was not written), the list is rebuilt once from the entity index, and the missing items are written.
   */
  async function anchorsOf(head: ChainHead): Promise<Anchor[]> {
    const chainName = head.chainName;
    let noted = await repository.listAnchors(chainName);
    if (noted.length < head.proofCount) noted = await rebuildAnchors(chainName);
    const anchors: Anchor[] = [];
    for (let i = 0; i < noted.length; i += 16) {
      const read = await Promise.all(noted.slice(i, i + 16).map((n) => anchorAt(chainName, n.mainIndex)));
      for (const anchor of read) if (anchor) anchors.push(anchor);
    }
    return anchors.sort((a, b) => a.block.index - b.block.index);
  }

  /**
   * The first anchor of the Sub-Chain noted that covers block `index` (its anchored head at or past it), if any: one
   * query of one item. Where that anchor's own item is missing (its write failed after the proof committed), a later
   * anchor is answered, which covers the block as well, until a verify of the chain rebuilds the list.
   */
  async function firstAnchorCovering(head: ChainHead, index: number): Promise<Anchor | undefined> {
    if (head.lastProofHeadIndex === null || head.lastProofHeadIndex < index) return undefined;
    let [first] = await repository.listAnchors(head.chainName, { fromHeadIndex: index, limit: 1 });
    if (!first) [first] = (await rebuildAnchors(head.chainName)).filter((n) => n.headIndex >= index);
    return first ? anchorAt(head.chainName, first.mainIndex) : undefined;
  }

  /** The anchor items, written again from the entity index (the one unbounded read, once a missing item). */
  async function rebuildAnchors(chainName: string): Promise<{ headIndex: number; mainIndex: number }[]> {
    const found = (await repository.queryEntityBlocks(chainName)).flatMap((block) => {
      const anchor = anchorIn(chainName, block);
      return anchor ? [{ headIndex: anchor.details.head_index, mainIndex: block.index }] : [];
    });
    for (const { headIndex, mainIndex } of found) await repository.putAnchor(chainName, headIndex, mainIndex);
    return found.sort((a, b) => a.headIndex - b.headIndex);
  }

  /**
   * The inclusion proofs of `leaves` (one per run, by its last leaf) in the chain's first `size` blocks, 404 for a
   * leaf past them; their nodes read in one batch with those of `more` ranges, whose hashes `b64` answers.
   */
  async function inclusionAt(chainName: string, size: number, leaves: readonly number[], more: (readonly [number, number])[] = []) {
    const last = leaves[leaves.length - 1];
    if (last !== undefined && last >= size) throw new NotFoundError(`Block ${last} is not in the first ${size} blocks of '${chainName}'`);
    const runs = runsOf(leaves);
    const proofs = runs.map(([, end]) => ({ leaf: end, ranges: inclusionRanges(end, size) }));
    const ranges = [...proofs.flatMap((i) => i.ranges), ...more];
    const node = ranges.length ? await reader(chainName, ranges) : undefined;
    const b64 = (range: readonly [number, number]) => rangeHash(range, node!).toString('base64');
    return { runs, node, b64, inclusion: proofs.map((i) => ({ leaf_index: i.leaf, proof: i.ranges.map(b64) })) };
  }

  /**
   * The blocks of `runs`, all below a size the chain has reached. An eventually consistent read (`consistent`
   * false: no read of the head when the instance keeps them) that misses one is made again consistently.
   */
  async function blocksOf(chainName: string, runs: readonly (readonly [number, number])[], count: number, consistent: boolean): Promise<Block[]> {
    const read = async (strong: boolean) => (await Promise.all(runs.map(([from, to]) => repository.getBlockRange(chainName, from, to, false, strong)))).flat();
    let blocks = await read(consistent);
    if (blocks.length !== count && !consistent) blocks = await read(true);
    if (blocks.length !== count) throw new Error(`'${chainName}' is missing blocks below its head`);
    return blocks;
  }

  function parseIndex(raw: string): number {
    if (!/^\d{1,15}$/.test(raw)) throw ValidationError.single(['path', 'index_or_hash'], 'Expected a block index (digits)');
    return Number(raw);
  }

  return {
    async checkpoint(chainName: string) {
      const head = await treeHead(chainName);
      const node = await signer();
      const fields: CheckpointFields = {
        chain_name: head.chainName,
        tree_size: sizeOf(head),
        root: headRoot(head),
        timestamp: Math.round(now() * 1000) / 1000,
        node_id: node.nodeId,
      };
      return { ...fields, signature: node.sign(checkpointMessage(fields)).toString('hex'), public_key: node.publicKey, algorithm: 'ed25519' as const };
    },

    async inclusion(chainName: string, rawIndex: string, treeSize?: number) {
      const index = parseIndex(rawIndex);
      const head = await treeHead(chainName);
      const size = treeSize ?? sizeOf(head);
      if (size > sizeOf(head)) throw treeSizeNotReached(sizeOf(head));
      if (index >= size) throw new NotFoundError(`Block ${index} is not in the first ${size} blocks of '${chainName}'`);
      const ranges = inclusionRanges(index, size);
      const node = await reader(chainName, [...ranges, [index, index + 1], [0, size]]);
      const blockHash = (await repository.readTreeData(chainName, [index], true)).get(index)!.hash;
      return {
        chain_name: chainName,
        leaf_index: index,
        tree_size: size,
        block_hash: blockHash,
        leaf_hash: hex(node(0, index)),
        proof: ranges.map((r) => hex(rangeHash(r, node))),
        root: hex(rangeHash([0, size], node)),
      };
    },

    async evidence(chainName: string, request: EvidenceRequest): Promise<Evidence> {
      // Against a fixed tree this instance knows the chain has reached (a verified client's trusted size), the
      // answer never changes: no read of the head, the nodes and blocks from segments and records (kept in memory
      // once read).
      const fixed = request.treeSize !== undefined && seen.covers(chainName, request.treeSize);
      if (fixed) {
        // Its blocks are as stored (an erasable event's details sealed), so an erasure changes nothing in it either.
        const key = `${chainName}|${request.treeSize}|${request.withBlocks ? 'blocks' : ''}|${request.leaves.join(',')}`;
        const known = kept?.get(key);
        if (known) return known;
        const { runs, inclusion } = await inclusionAt(chainName, request.treeSize!, request.leaves);
        const evidence: Evidence = { chain_name: chainName, tree_size: request.treeSize!, checkpoint: null, consistency: null, inclusion };
        if (request.withBlocks) evidence.blocks = await blocksOf(chainName, runs, request.leaves.length, false);
        kept?.set(key, deepFreeze(evidence));
        return evidence;
      }
      const head = await treeHead(chainName);
      const latest = sizeOf(head);
      const last = request.leaves[request.leaves.length - 1];
      if (request.treeSize !== undefined && request.treeSize > latest) {
        throw treeSizeNotReached(latest);
      }
      const notIn = (size: number) => new NotFoundError(`Block ${last} is not in the first ${size} blocks of '${chainName}'`);
      let size = request.treeSize ?? latest;
      if (last !== undefined && last >= size) throw notIn(size);
      let cosigned: Awaited<ReturnType<WitnessedCheckpoints['latest']>>;
      if (request.treeSize === undefined && witnessed) {
        cosigned = await witnessed.latest(head.chainName);
        if (request.witnessed) {
          // Only what the log has is worth waiting for: the leaves (checked above) and a known size up to the
          // log's. A known size past the log is no reason to "retry later" (it never comes): it is answered
          // with no consistency proof, as without witnesses, and the client sees the rollback.
          const known = request.knownSize !== undefined && request.knownSize <= latest ? request.knownSize : 0;
          const needed = Math.max(last === undefined ? 0 : last + 1, known);
          const covers = (c: typeof cosigned) => c !== undefined && c.size >= needed;
          if (!covers(cosigned)) {
            await witnessed.witnessNow(head.chainName);
            cosigned = await witnessed.latest(head.chainName);
          }
          if (!covers(cosigned)) throw new NotWitnessedYetError(head.chainName, Math.max(needed, 1), cosigned?.size);
          size = cosigned!.size;
        }
      }
      // A known size above the log's is answered with no consistency proof: the client sees the rollback.
      const known = request.treeSize === undefined ? request.knownSize : undefined;
      const consistency = known !== undefined && known >= 1 && known < size ? consistencyRanges(known, size) : [];
      const { runs, node, b64, inclusion } = await inclusionAt(chainName, size, request.leaves, [
        ...consistency,
        ...(size < latest ? [[0, size] as const] : []),
      ]);
      let checkpoint: string | null = null;
      if (request.treeSize === undefined) {
        if (!signedNote) throw new Error('evidence needs the signed-note checkpoints of the tlog');
        const rootHex = size === latest ? headRoot(head) : hex(rangeHash([0, size], node!));
        // The cosignatures go with the tree they are of (the same size and root), else none.
        const same = cosigned && cosigned.size === size && cosigned.root === Buffer.from(rootHex, 'hex').toString('base64');
        checkpoint = (await signedNote(head.chainName, size, rootHex)) + (same ? cosigned!.lines.join('') : '');
      }
      const evidence: Evidence = {
        chain_name: head.chainName,
        tree_size: size,
        checkpoint,
        consistency: known !== undefined && known >= 1 && known <= size ? { from: known, proof: consistency.map(b64) } : null,
        inclusion,
      };
      if (request.withBlocks) evidence.blocks = await blocksOf(chainName, runs, request.leaves.length, true);
      return evidence;
    },

    async consistency(chainName: string, first: number, second: number) {
      const head = await treeHead(chainName);
      if (second > sizeOf(head)) throw ValidationError.single(['query', 'second'], `The chain has ${sizeOf(head)} blocks`, 'less_than_equal');
      if (first > second) throw ValidationError.single(['query', 'first'], 'Must not exceed second', 'less_than_equal');
      const ranges = consistencyRanges(first, second);
      const node = await reader(chainName, [...ranges, [0, first], [0, second]]);
      return {
        chain_name: chainName,
        first,
        second,
        first_root: hex(rangeHash([0, first], node)),
        second_root: hex(rangeHash([0, second], node)),
        proof: ranges.map((r) => hex(rangeHash(r, node))),
      };
    },

    async anchor(chainName: string, rawIndex: string) {
      const index = parseIndex(rawIndex);
      if (chainName === MAIN_CHAIN) throw new BadRequestError('Main Chain blocks are not anchored; Sub-Chain blocks are');
      const head = await treeHead(chainName);
      if (index >= sizeOf(head)) throw new NotFoundError(`Block ${index} not found on chain '${chainName}'`);
      const anchor = await firstAnchorCovering(head, index);
      if (!anchor) throw new NotFoundError(`Block ${index} of '${chainName}' is not anchored yet: submit a proof`);
      const sub = inclusionRanges(index, anchor.details.tree_size);
      const subNodes = await reader(chainName, [...sub, [index, index + 1]]);
      const main = await treeHead(MAIN_CHAIN);
      const mainRanges = inclusionRanges(anchor.block.index, sizeOf(main));
      const mainNodes = await reader(MAIN_CHAIN, [...mainRanges, [0, sizeOf(main)]]);
      const blockHash = (await repository.readTreeData(chainName, [index], true)).get(index)!.hash;
      return {
        chain_name: chainName,
        block_index: index,
        block_hash: blockHash,
        anchor: {
          proof_id: anchor.proofId,
          main_block_index: anchor.block.index,
          main_block_hash: anchor.block.hash,
          head_index: anchor.details.head_index,
          head_hash: anchor.details.head_hash,
          tree_size: anchor.details.tree_size,
          merkle_root: anchor.details.merkle_root,
        },
        /** Inclusion of the block (leaf `block_index`) in the anchored tree, whose root is `anchor.merkle_root`. */
        proof: sub.map((r) => hex(rangeHash(r, subNodes))),
        /** Inclusion of the anchor block (leaf `main_block_index`) in the Main Chain's tree now. */
        main: {
          tree_size: sizeOf(main),
          root: hex(rangeHash([0, sizeOf(main)], mainNodes)),
          proof: mainRanges.map((r) => hex(rangeHash(r, mainNodes))),
        },
      };
    },

    /**
     * Re-checks everything stored about a chain: each block's hash from its content, each link, no gap,
     * the stored tree against the blocks, and (Sub-Chains) each anchor's root and head against the blocks.
     */
    async verify(chainName: string): Promise<VerifyReport> {
      const head = await requireChainHead(repository, chainName);
      const anchors = chainName === MAIN_CHAIN ? [] : await anchorsOf(head);
      const bySize = new Map<number, Anchor[]>();
      for (const a of anchors) bySize.set(a.details.tree_size, [...(bySize.get(a.details.tree_size) ?? []), a]);
      const report = (checked: number, index: number | null, reason: string | null, anchorsChecked: number): VerifyReport => ({
        chain_name: chainName,
        valid: reason === null,
        checked_blocks: checked,
        first_invalid_index: index,
        reason,
        anchors_checked: anchorsChecked,
      });

      let frontier: Buffer[] = [];
      let previous = ZERO_HASH;
      let anchorsChecked = 0;
      const total = sizeOf(head);
      for (let from = 0; from < total; from += 100) {
        // The blocks' records themselves, not a kept page of them: this checks the chain as stored.
        const page = await repository.readStoredRange(chainName, from, Math.min(total - 1, from + 99));
        let expected = from;
        for (const block of page) {
          if (block.index !== expected) return report(expected, expected, `block ${expected} is missing`, anchorsChecked);
          if (block.chain_name !== chainName) return report(expected, expected, `block ${expected} names another chain`, anchorsChecked);
          if (hashBlock(block) !== block.hash) return report(expected, expected, `block ${expected}'s hash does not match its contents`, anchorsChecked);
          const unsigned = signatureProblem(block);
          if (unsigned) return report(expected, expected, `block ${expected}: ${unsigned}`, anchorsChecked);
          if (block.previous_hash !== previous) return report(expected, expected, `block ${expected} does not link to block ${expected - 1}`, anchorsChecked);
          frontier = appendLeaf(frontier, expected, leafHash(Buffer.from(block.hash, 'hex'))).frontier;
          for (const a of bySize.get(expected + 1) ?? []) {
            anchorsChecked += 1;
            if (a.details.head_hash !== block.hash || a.details.merkle_root !== hex(frontierRoot(frontier))) {
              return report(
                expected + 1,
                a.details.head_index,
                `anchor ${a.proofId} (Main Chain block ${a.block.index}) does not match blocks 0…${a.details.head_index}: they were rewritten after it was made`,
                anchorsChecked,
              );
            }
          }
          previous = block.hash;
          expected += 1;
        }
        if (expected < Math.min(total, from + 100)) return report(expected, expected, `block ${expected} is missing`, anchorsChecked);
      }
      if (previous !== head.headHash) return report(total, total - 1, `the chain head names another last block than block ${total - 1}`, anchorsChecked);
      const tree = (await ensureTree(repository, head)).frontier!;
      if (hex(frontierRoot(tree.map((h) => Buffer.from(h, 'hex')))) !== hex(frontierRoot(frontier))) {
        return report(total, null, 'the stored Merkle tree does not match the blocks: blocks were rewritten after they were appended', anchorsChecked);
      }
      return report(total, null, null, anchorsChecked);
    },
  };
}

export type Proofs = ReturnType<typeof createProofs>;
