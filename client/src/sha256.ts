/**
 * SHA-256 of one or more byte strings (hashed as their concatenation). In Node, its native hash: a verified read
 * hashes a block and a dozen proof nodes, and the portable JavaScript hash was the client's costliest step. In
 * a browser (no `process.getBuiltinModule`), @noble/hashes' audited JavaScript one.
 */
import { sha256 as noble } from '@noble/hashes/sha2.js';

type Sha256 = (...parts: Uint8Array[]) => Uint8Array;
interface NativeHash {
  update(data: Uint8Array): NativeHash;
  digest(): Uint8Array;
}
type GetBuiltinModule = (id: string) => { createHash(algorithm: string): NativeHash } | undefined;

const nodeCrypto = (globalThis as { process?: { getBuiltinModule?: GetBuiltinModule } }).process?.getBuiltinModule?.('node:crypto');

export const portableSha256: Sha256 = (...parts) => {
  if (parts.length === 1) return noble(parts[0]!);
  const hash = noble.create();
  for (const part of parts) hash.update(part);
  return hash.digest();
};

/** Node's native hash, where there is one. */
export const nativeSha256: Sha256 | undefined = nodeCrypto
  ? (...parts) => {
      const hash = nodeCrypto.createHash('sha256');
      for (const part of parts) hash.update(part);
      const digest = hash.digest();
      // A plain Uint8Array view of the Buffer, as the portable hash answers.
      return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
    }
  : undefined;

export const sha256: Sha256 = nativeSha256 ?? portableSha256;
