/**
 * What the explorer shows, checked in the browser with the verified client's own code (client/src): a block is
 * verified when it hashes to its `hash`, and that hash is proven (RFC 6962 inclusion) into a checkpoint signed by the
 * node's key, consistent with the last checkpoint this browser verified. The key is pinned at first use and the last
 * checkpoint of each chain kept, both in this origin's localStorage, as the client keeps them in a file: a server that
 * later shows a changed block, an older checkpoint or another history is caught, and the page says so in words.
 */
import { computeBlockHash, LedgerClient, type StateStore, VerificationError, verifyConsistency } from '../../client/src/index.ts';
import { fromBase64, fromHex, leafHash, rootFromInclusion, toHex } from '../../client/src/tlog.ts';
import { apiKey, apiKeyHeader, type Block, configuredWitnesses } from './api.ts';

const PREFIX = 'ledger-explorer:';

/** The client's trusted state (the pinned key, each chain's last checkpoint) in localStorage. */
const browserStore: StateStore = {
  get: async (key) => localStorage.getItem(PREFIX + key) ?? undefined,
  set: async (key, value) => localStorage.setItem(PREFIX + key, value),
};

let client: { key: string; ledger: LedgerClient } | undefined;

/**
 * The witnesses whose cosignatures a checkpoint must carry: those the service named the first time this browser asked
 * (pinned, as the node's key is), every one of them required. None pinned: cosignatures are counted, not checked.
 * The pinned list only grows: a witness the service names later is added (and required too), one it stops naming
 * stays required. An empty list was pinned for good, so that a browser that came before the operator named the
 * witnesses never checked them (2026-12-06 red team).
 */
export function pinnedWitnesses(): string[] {
  const stored = localStorage.getItem(`${PREFIX}witnesses`);
  const pinned = stored === null ? [] : (JSON.parse(stored) as string[]);
  const added = configuredWitnesses().filter((witness) => !pinned.includes(witness));
  if (added.length === 0) return pinned;
  const grown = [...pinned, ...added];
  localStorage.setItem(`${PREFIX}witnesses`, JSON.stringify(grown));
  return grown;
}

function ledger(): LedgerClient {
  const key = apiKey.get();
  if (client?.key !== key) {
    const witnesses = pinnedWitnesses();
    client = {
      key,
      ledger: new LedgerClient({
        baseUrl: location.origin,
        ...(key ? { apiKey: key } : {}),
        apiKeyHeader: apiKeyHeader(),
        store: browserStore,
        ...(witnesses.length ? { witnesses: { keys: witnesses, required: witnesses.length } } : {}),
        retry: { attempts: 1 },
      }),
    };
  }
  return client.ledger;
}

export type Verdict = { verified: true; words: string } | { verified: false; words: string };

const short = (hex: string) => `${hex.slice(0, 12)}…`;

/** Whether `block`, as shown, is the chain's block at its index, proven into a signed checkpoint; why not, in words. */
export async function verifyBlock(block: Block): Promise<Verdict> {
  try {
    if (computeBlockHash(block as never) !== block.hash) {
      return { verified: false, words: `Not verified: block ${block.index} as shown does not hash to ${short(block.hash)}, the hash it shows` };
    }
    const proven = await ledger().block(block.chain_name, block.index);
    if (proven.hash !== block.hash) {
      return {
        verified: false,
        words: `Not verified: the block shown is ${short(block.hash)}; the one proven at index ${block.index} is ${short(proven.hash)}`,
      };
    }
    const state = await ledger().trustedState(block.chain_name);
    const root = state ? toHex(fromBase64(state.root)!) : '';
    return {
      verified: true,
      words: `Verified: in the checkpoint of ${state?.size ?? '?'} blocks (root ${short(root)}) signed by the node's key, consistent with the last checkpoint this browser saw`,
    };
  } catch (error) {
    if (error instanceof VerificationError) return { verified: false, words: `Not verified: ${error.message} (${error.failure})` };
    return { verified: false, words: `Could not verify: ${(error as Error).message}` };
  }
}

/** Signature lines of a signed note (`— name base64`): the node's, then any witnesses' cosignatures. */
const signatureLines = (note: string) => (note.split('\n\n')[1] ?? '').split('\n').filter((line) => line.startsWith('\u2014 '));

export type CheckpointVerdict = Verdict & { size?: number; rootHex?: string };

/**
 * The chain's latest signed checkpoint, verified: signed by the pinned key, naming this chain, and consistent with the
 * last checkpoint this browser verified of it (which it then becomes).
 */
export async function verifyCheckpoint(chain: string): Promise<CheckpointVerdict> {
  try {
    const state = await ledger().checkpoint(chain);
    const rootHex = toHex(fromBase64(state.root)!);
    const lines = signatureLines(state.checkpoint);
    const cosignatures = lines.length - 1;
    // A C2SP checkpoint carries no time; a witness's cosignature (cosignature/v1) does: key id, 8-byte seconds, signature.
    const times = lines
      .slice(1)
      .map((line) => fromBase64(line.split(' ')[2] ?? ''))
      .filter((bytes): bytes is Uint8Array => bytes?.length === 4 + 8 + 64)
      .map((bytes) => Number(new DataView(bytes.buffer, bytes.byteOffset + 4, 8).getBigUint64(0)));
    const when = times.length ? ` · cosigned at ${new Date(Math.max(...times) * 1000).toISOString()}` : '';
    const pinned = pinnedWitnesses().length;
    const witnesses = pinned
      ? ` · cosigned by the ${pinned} witness${pinned > 1 ? 'es' : ''} this browser pinned`
      : cosignatures > 0
        ? ` · ${cosignatures} witness cosignature${cosignatures > 1 ? 's' : ''} (not checked here: this page pins no witness key)`
        : ' · no witness cosignature';
    return {
      verified: true,
      size: state.size,
      rootHex,
      words: `Verified checkpoint: ${state.size} blocks · root ${short(rootHex)} · signed by the node's key · consistent with the last this browser saw${witnesses}${when}`,
    };
  } catch (error) {
    if (error instanceof VerificationError) return { verified: false, words: `Checkpoint not verified: ${error.message} (${error.failure})` };
    return { verified: false, words: `Checkpoint could not be verified: ${(error as Error).message}` };
  }
}

/**
 * A Sub-Chain's anchor, verified: the Main Chain block that holds it is proven (as any block), it names this
 * Sub-Chain at that tree size and root, and the Sub-Chain's verified checkpoint extends that tree (a consistency proof
 * from the anchored size to the checkpoint's, against both roots).
 */
export async function verifyAnchor(
  sub: string,
  anchor: { mainIndex: number; treeSize: number; root: string },
  checkpoint: CheckpointVerdict,
): Promise<Verdict> {
  try {
    const block = await ledger().block('main', anchor.mainIndex);
    const holds = block.events.some((event) => {
      const details = (event.details ?? {}) as { sub_chain?: string; tree_size?: number; merkle_root?: string };
      return (
        event.event_type === 'sub_chain_proof' && details.sub_chain === sub && details.tree_size === anchor.treeSize && details.merkle_root === anchor.root
      );
    });
    if (!holds) return { verified: false, words: `Anchor not verified: Main Chain block ${anchor.mainIndex} does not hold this anchor` };
    if (!checkpoint.verified || checkpoint.size === undefined || !checkpoint.rootHex)
      return { verified: false, words: 'Anchor not verified: the chain has no verified checkpoint' };
    if (checkpoint.size < anchor.treeSize) {
      return { verified: false, words: `Anchor not verified: it anchors ${anchor.treeSize} blocks, the verified checkpoint has ${checkpoint.size}` };
    }
    const anchored = fromHex(anchor.root);
    const current = fromHex(checkpoint.rootHex);
    if (checkpoint.size === anchor.treeSize) {
      if (toHex(anchored) !== checkpoint.rootHex) return { verified: false, words: `Anchor not verified: two roots for ${anchor.treeSize} blocks (fork)` };
    } else {
      // The proof's hashes are the server's; the roots it is checked against are the anchor's and the checkpoint's.
      const { data, error } = await ledger().api.GET('/api/v1/chains/{chain_name}/consistency', {
        params: { path: { chain_name: sub }, query: { first: String(anchor.treeSize), second: String(checkpoint.size) } },
      });
      if (error || !data) return { verified: false, words: 'Anchor not verified: no consistency proof from the anchored tree' };
      verifyConsistency(anchor.treeSize, checkpoint.size, data.proof.map(fromHex), anchored, current, sub);
    }
    return {
      verified: true,
      words: `Verified anchor: main #${anchor.mainIndex} proven, and the checkpoint of ${checkpoint.size} blocks extends the ${anchor.treeSize} it anchors`,
    };
  } catch (error) {
    if (error instanceof VerificationError) return { verified: false, words: `Anchor not verified: ${error.message} (${error.failure})` };
    return { verified: false, words: `Anchor could not be verified: ${(error as Error).message}` };
  }
}

/**
 * An inclusion proof drawn for people: from the block's hash to the root, each step the hash of the running node and
 * its sibling, computed by the client's own RFC 9162 walk; the last line says whether the root it reaches is the proof's.
 */
export function drawInclusion(proof: { leaf_index: number; tree_size: number; block_hash: string; proof: string[]; root: string }): {
  title: string;
  steps: string[];
} {
  const steps: string[] = [];
  const leaf = leafHash(fromHex(proof.block_hash));
  steps.push(`leaf ${proof.leaf_index}: H(0x00 ‖ block hash) = ${toHex(leaf)}`);
  let reached: string;
  let ok: boolean;
  try {
    const root = rootFromInclusion(proof.leaf_index, proof.tree_size, leaf, proof.proof.map(fromHex), undefined, (sibling, left, node) =>
      steps.push(`level ${steps.length}: sibling ${toHex(sibling)} on the ${left ? 'left' : 'right'} → ${toHex(node)}`),
    );
    reached = toHex(root);
    ok = reached === proof.root;
  } catch (error) {
    reached = `nothing (${(error as Error).message})`;
    ok = false;
  }
  steps.push(ok ? `root ${reached}: the proof's root, reached from the block` : `the path reaches ${reached}, not the proof's root ${proof.root}`);
  return {
    title: `Block ${proof.leaf_index} in the tree of ${proof.tree_size} blocks: ${ok ? 'the path below reaches its root' : 'the path below does not reach its root'}`,
    steps,
  };
}
