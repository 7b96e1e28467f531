/** Ed25519 public keys as the service stores them: 32 raw bytes, 64 lowercase hex. */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { UnprocessableError } from './errors.ts';

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** The field's prime, 2^255 - 19: a key's y-coordinate at or above it is not in its canonical encoding. */
const P = 2n ** 255n - 19n;
/** A y-coordinate from a key's 32 little-endian bytes, the sign of x (the top bit) aside. */
function yOf(raw: Buffer): bigint {
  let y = 0n;
  for (let i = 31; i >= 0; i -= 1) y = (y << 8n) | BigInt(i === 31 ? raw[i]! & 0x7f : raw[i]!);
  return y;
}
/** The order-8 points' y-coordinate (libsodium's list of small-order encodings, whose other order-8 entry is P minus it). */
const Y8 = yOf(Buffer.from('26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', 'hex'));
/** The y-coordinates of the eight points of small order: identity (1), order 2 (P - 1), order 4 (0), order 8. */
const SMALL_ORDER_Y = new Set([0n, 1n, P - 1n, Y8, P - Y8]);

/**
 * Why 32 raw bytes are a key no signature under proves anything by, if they are: a point of small order (the identity,
 * say: `01` then 63 zeros, with a zero S, verifies for every message under it, red team 2026-12-07), or a y-coordinate
 * not reduced (the same point written another way, so that one key passes for two).
 */
export function weakKeyReason(raw: Buffer): string | undefined {
  const y = yOf(raw);
  if (y >= P) return 'not in its canonical encoding';
  if (SMALL_ORDER_Y.has(y)) return 'a point of small order';
  return undefined;
}

/** A KeyObject from 64 hex characters; throws when they are not an Ed25519 key, or a weak one (`weakKeyReason`). */
export function publicKeyFromHex(hex: string): KeyObject {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError('an Ed25519 public key is 64 hex characters');
  const raw = Buffer.from(hex, 'hex');
  const weak = weakKeyReason(raw);
  if (weak) throw new WeakKeyError(weak);
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

class WeakKeyError extends TypeError {}

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

/**
 * An Ed25519 public key given as 64 hex characters or PEM, as 64 lowercase hex; 422 otherwise, and for a weak key
 * (`weakKeyReason`), which no signature check accepts either (`verifyEd25519`).
 */
export function parsePublicKey(text: string, field = 'public_key'): string {
  try {
    const trimmed = text.trim();
    const hex = /^[0-9a-fA-F]{64}$/.test(trimmed) ? trimmed.toLowerCase() : publicKeyToHex(createPublicKey(trimmed));
    publicKeyFromHex(hex); // an Ed25519 key, and not a weak one
    return hex;
  } catch (error) {
    if (error instanceof WeakKeyError) {
      throw new UnprocessableError(`${field} is a weak Ed25519 key (${error.message}): a signature under it would prove nothing`);
    }
    throw new UnprocessableError(`${field} must be an Ed25519 public key, as 64 hex characters or PEM`);
  }
}
