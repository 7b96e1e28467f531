/** An IPFS node in memory, for offline tests: CIDv0-shaped ids (Qm + 44 base58 characters) from each object's hash. */
import { createHash } from 'node:crypto';
import type { IpfsStore } from '#shared/offchain/ipfs-store';

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export function createMemoryIpfs(): IpfsStore & { blobs: Map<string, Uint8Array> } {
  const blobs = new Map<string, Uint8Array>();
  return {
    blobs,
    async add(bytes) {
      const cid = `Qm${[...createHash('sha512').update(bytes).digest().subarray(0, 44)].map((b) => ALPHABET[b % 58]).join('')}`;
      blobs.set(cid, bytes);
      return cid;
    },
    cat: async (cid) => blobs.get(cid)!,
    ping: async () => undefined,
    remove: async (cid) => blobs.delete(cid),
  };
}
