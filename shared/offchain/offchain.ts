/**
 * Off-chain payloads (contract.md §4): a JSON value, encrypted into an envelope, stored in IPFS; the
 * chain keeps only the CID and the nonce. Reading checks that the nonce on chain is the envelope's.
 */
import { UnreadablePayloadError } from '../errors.ts';
import type { OffchainStore } from '../ledger/offchain-port.ts';
import { open, parseEnvelope, seal } from './envelope.ts';
import type { IpfsStore } from './ipfs-store.ts';
import type { KeyProvider } from './key-providers.ts';

export const CID_PATTERN = /^(Qm[1-9A-HJ-NP-Za-km-z]{44}|b[a-z2-7]{20,})$/;
export const NONCE_PATTERN = /^[0-9a-f]{24}$/;

export function createOffchainStore({ ipfs, keys }: { ipfs: IpfsStore; keys: KeyProvider }): OffchainStore {
  return {
    async put(value) {
      const plaintext = Buffer.from(JSON.stringify(value), 'utf8');
      const key = await keys.dataKey();
      const envelope = seal(plaintext, key.plaintext, key.wrapped, key.kek);
      const cid = await ipfs.add(Buffer.from(JSON.stringify(envelope), 'utf8'));
      return { cid, nonce: envelope.nonce, size: plaintext.length };
    },

    async get(cid, nonce) {
      if (!CID_PATTERN.test(cid)) throw new UnreadablePayloadError(`'${cid}' is not a CID`);
      if (!NONCE_PATTERN.test(nonce)) throw new UnreadablePayloadError('the nonce must be 24 hex characters');
      const envelope = parseEnvelope(await ipfs.cat(cid));
      if (envelope.nonce !== nonce) throw new UnreadablePayloadError('the nonce does not match the stored payload');
      const dataKey = await keys.unwrap(Buffer.from(envelope.wrapped_key, 'base64'), envelope.kek);
      const plaintext = open(envelope, dataKey);
      try {
        return JSON.parse(plaintext.toString('utf8'));
      } catch {
        throw new UnreadablePayloadError('the decrypted payload is not JSON');
      }
    },

    ping: () => ipfs.ping(),
  };
}
