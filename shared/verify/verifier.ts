/**
 * The offline verifier: checks a chain of a running node trusting nothing but the node's public key.
 * It downloads the blocks, recomputes every hash from the public rule (RFC 8785 + SHA-256), follows
 * every link, recomputes the RFC 6962 tree, checks the node's signed checkpoint against it, and — for a
 * Sub-Chain — checks every Main Chain anchor of it against the blocks, after verifying the Main Chain
 * the same way. Pure client code: HTTP in, a verdict out.
 */
import { SERVICE_EVENT } from '../ledger/event-types.ts';
import { checkpointMessage, type CheckpointFields } from '../ledger/checkpoint.ts';
import { HASH_PATTERN, ZERO_HASH } from '../ledger/hashing.ts';
import { appendSubtree, frontierRoot } from '../ledger/merkle.ts';
import { verifyEd25519 } from '../ed25519.ts';
import {
  type Block,
  type CheckedPage,
  Failure,
  fetchPage,
  fromFetch,
  getJson,
  type NodeGet,
  type NodeLink,
  type NodeWait,
  nodeHeaders,
  notingSuccess,
  PAGE,
  type PageRequest,
  PageWindow,
} from './pages.ts';

export interface SignedCheckpoint extends CheckpointFields {
  signature: string;
}

export interface VerifierOptions {
  url: string;
  chain: string;
  /** The node's Ed25519 public key (64 hex), pinned by the user; otherwise the node's own word is taken. */
  publicKey?: string | undefined;
  apiKey?: string | undefined;
  apiKeyHeader?: string;
  /** A checkpoint saved earlier: the chain must still have the same root at that size. */
  savedCheckpoint?: SignedCheckpoint | undefined;
  /** Called as blocks are checked. */
  progress?: (what: string, done: number, total: number) => void;
  /** Called with each block once it is checked, in order (the Main Chain's first, for a Sub-Chain). */
  onBlock?: (chain: string, block: Block) => void;
  fetch?: typeof fetch;
  /** How requests are sent, in place of `fetch` (the CLI's: node-get.ts, node:http, cheaper). */
  get?: NodeGet;
  /** Called when the node asks to wait (over its rate limit, or busy) before a request is sent again. */
  onWait?: (wait: NodeWait) => void;
  /**
   * Where pages are fetched and checked (page-workers.ts: in worker threads, every core at work); by default here,
   * with `fetch`. `inFlight`: pages asked for ahead of the one being linked, at least (more as a distant node needs:
   * pages.ts, PageWindow); `threads`: pages checked at once (1 by default); `minBlocks`: chains of this many blocks or
   * fewer are checked here all the same.
   */
  pages?: { check: (request: PageRequest) => Promise<CheckedPage>; inFlight: number; minBlocks: number; threads?: number };
}

export interface Verdict {
  verified: boolean;
  chain: string;
  blocks: number;
  root: string | null;
  nodeId: string | null;
  anchorsChecked: number;
  /** The first block that failed, when one can be named. */
  firstBadBlock: number | null;
  problem: string | null;
  /** The node refused a request (401, 403): `problem` says which; nothing was found wrong, nothing verified. */
  refused: boolean;
  notes: string[];
  checkpoint: SignedCheckpoint | null;
}

export type { Block };

/** Pages requested ahead of the one being checked, at least. */
const PAGES_IN_FLIGHT = 6;

/** Past this, a checkpoint's signing time is told: a node signs its checkpoint as it answers (never cached). */
const OLD_CHECKPOINT_S = 600;

/**
 * A note when a checkpoint was signed long before now (or after: a clock off): what it verified may be an old state,
 * replayed by a mirror or a cache, which no check of the blocks can tell from the node's present one.
 */
export function oldCheckpointNote(what: string, signedAt: number, now: number): string | undefined {
  const age = now - signedAt;
  if (!Number.isFinite(age) || Math.abs(age) <= OLD_CHECKPOINT_S) return undefined;
  const at = new Date(signedAt * 1000).toISOString();
  if (age < 0) return `${what} is signed ${Math.round(-age / 60)} minutes in the future (${at}): the node's clock or this machine's is off`;
  const span = age < 7_200 ? `${Math.round(age / 60)} minutes` : age < 172_800 ? `${Math.round(age / 3_600)} hours` : `${Math.round(age / 86_400)} days`;
  return `${what} was signed ${span} ago (${at}): a node signs its checkpoint as it answers, so a mirror or cache may be showing an old state (ask the node itself, or keep a later one with --save-checkpoint and pass it with --checkpoint)`;
}

export async function verifyLedger(options: VerifierOptions): Promise<Verdict> {
  // Whether the node answered any request: a refusal after that is data withheld, not a verifier left out.
  const seen = { ok: false };
  const node: NodeLink = {
    http: notingSuccess(options.get ?? fromFetch(options.fetch ?? fetch), seen),
    base: options.url.replace(/\/+$/, ''),
    headers: nodeHeaders(options.url, options.apiKey, options.apiKeyHeader),
    onWait: options.onWait,
  };
  const notes: string[] = [];
  const verdict: Verdict = {
    verified: false,
    chain: options.chain,
    blocks: 0,
    root: null,
    nodeId: null,
    anchorsChecked: 0,
    firstBadBlock: null,
    problem: null,
    refused: false,
    notes,
    checkpoint: null,
  };

  const get = <T>(path: string): Promise<T> => getJson<T>(node, path);

  function checkSignature(checkpoint: SignedCheckpoint, publicKey: string, what: string): void {
    if (typeof checkpoint !== 'object' || checkpoint === null) throw new Failure(`${what} is not a checkpoint`);
    if (!/^[0-9a-f]{128}$/i.test(checkpoint.signature ?? '')) throw new Failure(`${what} carries no signature`);
    if (!verifyEd25519(publicKey, checkpointMessage(checkpoint), Buffer.from(checkpoint.signature, 'hex'))) {
      throw new Failure(`${what} is not signed by the node's key`);
    }
    // Signed is not yet well formed: a chain has its genesis block, so a tree of at least one, and a root is a SHA-256.
    // (A node whose key is not pinned signs what it likes: this stops an empty "verified" of nothing.)
    if (!Number.isSafeInteger(checkpoint.tree_size) || checkpoint.tree_size < 1)
      throw new Failure(`${what} signs a tree of ${JSON.stringify(checkpoint.tree_size)} blocks: a chain has at least its genesis block`);
    if (typeof checkpoint.root !== 'string' || !HASH_PATTERN.test(checkpoint.root)) throw new Failure(`${what} signs no root (64 hex digits)`);
  }

  /** Fetches and checks a page here, in this thread. */
  const checkHere = (request: PageRequest): Promise<CheckedPage> => fetchPage(node, request);
  const here: NonNullable<VerifierOptions['pages']> = { check: checkHere, inFlight: PAGES_IN_FLIGHT, minBlocks: 0, threads: 1 };

  /**
   * Downloads blocks 0…size−1 and checks each in order. Pages are fetched and checked ahead (a few in flight,
   * wherever `pages` checks them) while earlier ones are linked: each page's first block to the page before, and
   * every block's hash into the tree. `atSize(n, root, lastHash)` is called after block n−1 for each n in `sizes`
   * (where something was signed or anchored): the tree's root is computed only there. A page's failure is
   * reported once every block before it is linked, so the verdict names the first bad block, as a check of one
   * block after another would.
   */
  async function walk(
    chain: string,
    size: number,
    sizes: ReadonlySet<number>,
    atSize: (n: number, root: string, lastHash: string) => void,
    keep = false,
  ): Promise<Block[]> {
    const kept: Block[] = [];
    const keepBlocks = keep || options.onBlock !== undefined;
    // A short chain is checked here: a few pages are not worth a worker's start.
    const pages = options.pages && size > options.pages.minBlocks ? options.pages : here;
    let erasedEvents = 0;
    let frontier: Buffer[] = [];
    let previous = ZERO_HASH;
    const ahead: Promise<CheckedPage>[] = [];
    let nextOffset = 0;
    // At least `inFlight` pages in flight, more as the node's distance needs (pages.ts, PageWindow).
    const window = new PageWindow(pages.threads ?? 1, Math.max(1, pages.inFlight));
    const cutsAt = [...sizes].sort((a, b) => a - b);
    const refill = () => {
      while (ahead.length < window.size && nextOffset < size) {
        // The page's subtrees end at every size inside it where a root is needed.
        const cuts = cutsAt.filter((n) => n > nextOffset && n < nextOffset + PAGE);
        const page = pages.check({ chain, offset: nextOffset, size, keepBlocks, ...(cuts.length > 0 ? { cuts } : {}) });
        page.catch(() => undefined); // awaited in order below; an early failure must not go unhandled
        ahead.push(page);
        nextOffset += PAGE;
      }
    };
    for (let offset = 0; offset < size; offset += PAGE) {
      refill();
      const page = await ahead.shift()!;
      window.observe(page.timing);
      if (page.failure?.block === null) throw new Failure(page.failure.message, null, page.failure.refused === true);
      if (page.hashes.length > 0 && page.previous !== previous) throw new Failure(`block ${offset} of '${chain}' does not link to block ${offset - 1}`, offset);
      // The page's blocks into the tree, a few perfect subtrees at a time (each page's own, hashed where it was checked).
      let treeSize = offset;
      for (const { level, root } of page.subtrees) {
        frontier = appendSubtree(frontier, treeSize, level, Buffer.from(root, 'hex')).frontier;
        treeSize += 2 ** level;
        if (sizes.has(treeSize)) atSize(treeSize, frontierRoot(frontier).toString('hex'), page.hashes[treeSize - 1 - offset]!);
      }
      previous = page.hashes.at(-1) ?? previous;
      for (const block of page.blocks ?? []) {
        options.onBlock?.(chain, block);
        if (keep) kept.push(block); // only the Main Chain's are read again (for anchors): a long chain stays out of memory
      }
      erasedEvents += page.erased;
      if (page.failure) throw new Failure(page.failure.message, page.failure.block);
      const expected = offset + page.hashes.length;
      if (expected < Math.min(size, offset + PAGE)) throw new Failure(`block ${expected} of '${chain}' is missing`, expected);
      options.progress?.(chain, expected, size);
    }
    if (erasedEvents > 0) {
      notes.push(`${erasedEvents} event(s) of '${chain}' belong to erased data subjects: their details are gone, their blocks and proofs verify`);
    }
    return kept;
  }

  try {
    let publicKey = options.publicKey?.toLowerCase();
    const identity = await get<{ node_id: string; public_key: string }>('/api/v1/identity').catch((error) => {
      if (publicKey) return null; // a pinned key does not need the node to say who it is
      throw error;
    });
    if (!publicKey) {
      publicKey = identity!.public_key;
      notes.push(`the public key was taken from the node itself; pin it with --public-key ${publicKey}`);
    } else if (identity && identity.public_key !== publicKey) {
      throw new Failure(`the node's key is ${identity.public_key}, not the pinned ${publicKey}`);
    }
    if (identity && /-temporary$/.test(identity.node_id))
      notes.push('the node signs with temporary keys (no identity file): its checkpoints will not survive a restart');

    // A Sub-Chain's anchors live on the Main Chain, whose checkpoint is read first: every anchor it holds was made
    // before the Sub-Chain's checkpoint is read, so an honest node's checkpoint covers them all.
    const mainCheckpoint = options.chain === 'main' ? undefined : await get<SignedCheckpoint>('/api/v1/chains/main/checkpoint');
    const readCheckpoint = async () => {
      const read = await get<SignedCheckpoint>(`/api/v1/chains/${encodeURIComponent(options.chain)}/checkpoint`);
      checkSignature(read, publicKey, 'the checkpoint');
      if (read.chain_name !== options.chain) throw new Failure(`the checkpoint is of chain '${read.chain_name}', not '${options.chain}'`);
      return read;
    };
    let checkpoint = await readCheckpoint();
    verdict.checkpoint = checkpoint;
    verdict.nodeId = checkpoint.node_id;
    const saved = options.savedCheckpoint;
    if (saved) {
      checkSignature(saved, publicKey, 'the saved checkpoint');
      if (saved.chain_name !== options.chain) throw new Failure(`the saved checkpoint is of chain '${saved.chain_name}'`);
      if (saved.tree_size > checkpoint.tree_size)
        throw new Failure(`the chain shrank: it had ${saved.tree_size} blocks at the saved checkpoint, ${checkpoint.tree_size} now`);
    }

    // The anchors of a Sub-Chain live on the Main Chain: verify the Main Chain first, then trust them.
    const anchors: { proofId: string; headIndex: number; headHash: string; treeSize: number; root: string }[] = [];
    if (mainCheckpoint) {
      checkSignature(mainCheckpoint, publicKey, "the Main Chain's checkpoint");
      if (mainCheckpoint.chain_name !== 'main') throw new Failure(`the Main Chain's checkpoint is of chain '${mainCheckpoint.chain_name}', not 'main'`);
      let mainRoot = '';
      const mainBlocks = await walk(
        'main',
        mainCheckpoint.tree_size,
        new Set([mainCheckpoint.tree_size]),
        (_, root) => {
          mainRoot = root;
        },
        true,
      );
      if (mainRoot !== mainCheckpoint.root) throw new Failure("the Main Chain's blocks do not make the root its checkpoint signs");
      for (const block of mainBlocks) {
        const event = block.events[0];
        const details = event?.details as { sub_chain?: string; head_index?: number; head_hash?: string; tree_size?: number; merkle_root?: string } | undefined;
        if (event?.event_type === SERVICE_EVENT.subChainProof && details?.sub_chain === options.chain) {
          anchors.push({
            proofId: `${options.chain}_${block.index}`,
            headIndex: details.head_index!,
            headHash: details.head_hash!,
            treeSize: details.tree_size!,
            root: details.merkle_root!,
          });
        }
      }
    }

    // An anchor past the checkpoint: the Main Chain proves blocks the checkpoint leaves out (an old checkpoint served
    // to hide them). Read once more (a node's head read may lag a moment), then refused.
    const newest = anchors.reduce<(typeof anchors)[number] | undefined>((a, b) => (a && a.treeSize >= b.treeSize ? a : b), undefined);
    if (newest && newest.treeSize > checkpoint.tree_size) {
      checkpoint = await readCheckpoint();
      verdict.checkpoint = checkpoint;
      if (newest.treeSize > checkpoint.tree_size) {
        throw new Failure(
          `the Main Chain anchors ${newest.treeSize} blocks of '${options.chain}' (anchor ${newest.proofId}), its checkpoint shows ${checkpoint.tree_size}: blocks are being hidden`,
        );
      }
    }
    let root = '';
    const sizes = new Set([checkpoint.tree_size, ...anchors.map((a) => a.treeSize), ...(saved ? [saved.tree_size] : [])]);
    await walk(options.chain, checkpoint.tree_size, sizes, (n, rootAtN, lastHash) => {
      if (n === checkpoint.tree_size) root = rootAtN;
      if (saved && n === saved.tree_size && rootAtN !== saved.root) {
        throw new Failure(`blocks 0…${n - 1} no longer make the root of the checkpoint saved at ${saved.tree_size} blocks: they were rewritten since`, n - 1);
      }
      for (const anchor of anchors) {
        if (anchor.treeSize !== n) continue;
        if (anchor.headHash !== lastHash || anchor.root !== rootAtN) {
          throw new Failure(`anchor ${anchor.proofId} does not match blocks 0…${anchor.headIndex}: they were rewritten after it was made`, anchor.headIndex);
        }
        verdict.anchorsChecked += 1;
      }
    });
    verdict.blocks = checkpoint.tree_size;
    if (root !== checkpoint.root) throw new Failure('the blocks do not make the root the checkpoint signs');
    verdict.root = root;
    if (options.chain !== 'main' && anchors.length === 0) notes.push('no Main Chain anchor covers this chain yet (submit a proof)');
    for (const [what, signed] of [
      ['the checkpoint', checkpoint],
      ...(mainCheckpoint ? [["the Main Chain's checkpoint", mainCheckpoint] as const] : []),
    ] as const) {
      const note = oldCheckpointNote(what, signed.timestamp, Date.now() / 1000);
      if (note) notes.push(note);
    }
    verdict.verified = true;
  } catch (error) {
    // An answer of another shape than the one read (a field of the wrong type deep in it): not verified, said so.
    const failure = error instanceof TypeError ? new Failure(`an answer of the node is not one a verifier can read (${error.message})`) : error;
    if (!(failure instanceof Failure)) throw failure;
    verdict.problem = failure.message;
    verdict.firstBadBlock = failure.block;
    verdict.refused = failure.refused && !seen.ok;
  }
  return verdict;
}
