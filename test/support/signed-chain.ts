/**
 * A chain of `size` blocks (one event each), a checkpoint of it signed by a fresh Ed25519 key, and what a node holding it
 * answers a verifier: built in memory for tests that serve it themselves.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { publicKeyToHex } from '#shared/ed25519';
import { buildBlocks, type BlockDraft } from '#shared/ledger/blocks';
import { checkpointMessage } from '#shared/ledger/checkpoint';
import { sealBlock, ZERO_HASH } from '#shared/ledger/hashing';
import { blockHashesRoot } from '#shared/ledger/merkle';
import type { Block } from '#shared/ledger/types';

export function signedChain(size: number) {
  const genesis = sealBlock({ index: 0, chain_name: 'main', timestamp: 1_764_000_000, previous_hash: ZERO_HASH, events: [] });
  const drafts: BlockDraft[] = Array.from({ length: size - 1 }, (_, i) => ({
    events: [
      { entity_id: `e-${i}`, event_type: 'recorded', details: { i }, details_cid: null, details_nonce: null, details_metadata: null, is_offchain: false },
    ],
  }));
  const chain: Block[] = [genesis, ...buildBlocks('main', { headIndex: 0, headHash: genesis.hash }, drafts, () => 1_764_000_000.5)];
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const fields = { chain_name: 'main', tree_size: size, root: blockHashesRoot(chain.map((b) => b.hash)), timestamp: 1_764_000_001, node_id: 'unit' };
  /** A checkpoint of these fields, signed by the chain's key. */
  const signCheckpoint = (at: typeof fields) => ({ ...at, signature: sign(null, checkpointMessage(at), privateKey).toString('hex') });
  const checkpoint = signCheckpoint(fields);
  const publicKeyHex = publicKeyToHex(publicKey);
  /** What a node holding `served` (by default the chain as built) answers a verifier's GET of `url`. */
  const answer = (url: URL, served: Block[] = chain) => {
    const offset = Number(url.searchParams.get('offset'));
    return url.pathname === '/api/v1/identity'
      ? { node_id: 'unit', public_key: publicKeyHex }
      : url.pathname === '/api/v1/chains/main/checkpoint'
        ? checkpoint
        : { chain_name: 'main', total: size, limit: 100, offset, blocks: served.filter((b) => b.index >= offset && b.index < offset + 100) };
  };
  return { chain, fields, checkpoint, signCheckpoint, publicKeyHex, answer };
}
