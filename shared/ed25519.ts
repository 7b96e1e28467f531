/** Ed25519 public keys as the service stores them: 32 raw bytes, 64 lowercase hex. */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { UnprocessableError } from './errors.ts';

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** A KeyObject from 64 hex characters; throws when they are not an Ed25519 key. */
export function publicKeyFromHex(hex: string): KeyObject {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError('an Ed25519 public key is 64 hex characters');
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, Buffer.from(hex, 'hex')]), format: 'der', type: 'spki' });
}

/** The 64-hex form of an Ed25519 public (or private) key. */
export function publicKeyToHex(key: KeyObject): string {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  if (pub.asymmetricKeyType !== 'ed25519') throw new TypeError('not an Ed25519 key');
  return pub.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');
}

/** Whether `signature` is an Ed25519 signature of `message` by the hex public key. Never throws. */
export function verifyEd25519(publicKeyHex: string, message: Uint8Array, signature: Uint8Array): boolean {
  try {
    return verify(null, message, publicKeyFromHex(publicKeyHex), signature);
  } catch {
    return false;
  }
}

/** An Ed25519 public key given as 64 hex characters or PEM, as 64 lowercase hex; 422 otherwise. */
export function parsePublicKey(text: string, field = 'public_key'): string {
  try {
    const trimmed = text.trim();
    return publicKeyToHex(/^[0-9a-fA-F]{64}$/.test(trimmed) ? publicKeyFromHex(trimmed) : createPublicKey(trimmed));
  } catch {
    throw new UnprocessableError(`${field} must be an Ed25519 public key, as 64 hex characters or PEM`);
  }
}
