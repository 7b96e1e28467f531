/**
 * What the explorer shows, checked in the browser with the verified client's own code (client/src): a block is
 * verified when it hashes to its `hash`, and that hash is proven (RFC 6962 inclusion) into a checkpoint signed by the
 * node's key, consistent with the last checkpoint this browser verified. The key is pinned at first use and the last
 * checkpoint of each chain kept, both in this origin's localStorage, as the client keeps them in a file: a server that
 * later shows a changed block, an older checkpoint or another history is caught, and the page says so in words.
 */
import { computeBlockHash, LedgerClient, type StateStore, VerificationError } from '../../client/src/index.ts';
import { apiKey, apiKeyHeader, type Block } from './api.ts';

const PREFIX = 'ledger-explorer:';

/** The client's trusted state (the pinned key, each chain's last checkpoint) in localStorage. */
const browserStore: StateStore = {
  get: async (key) => localStorage.getItem(PREFIX + key) ?? undefined,
  set: async (key, value) => localStorage.setItem(PREFIX + key, value),
};

let client: { key: string; ledger: LedgerClient } | undefined;

function ledger(): LedgerClient {
  const key = apiKey.get();
  if (client?.key !== key) {
    client = {
      key,
      ledger: new LedgerClient({
        baseUrl: location.origin,
        ...(key ? { apiKey: key } : {}),
        apiKeyHeader: apiKeyHeader(),
        store: browserStore,
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
    const root = state ? Array.from(atob(state.root), (c) => c.charCodeAt(0).toString(16).padStart(2, '0')).join('') : '';
    return {
      verified: true,
      words: `Verified: in the checkpoint of ${state?.size ?? '?'} blocks (root ${short(root)}) signed by the node's key, consistent with the last checkpoint this browser saw`,
    };
  } catch (error) {
    if (error instanceof VerificationError) return { verified: false, words: `Not verified: ${error.message} (${error.failure})` };
    return { verified: false, words: `Could not verify: ${(error as Error).message}` };
  }
}
