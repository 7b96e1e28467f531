/**
 * The checks a verifying client makes, pure and portable (Node 20+ and browsers: Uint8Array, no Buffer):
 * RFC 6962/9162 Merkle proofs, C2SP signed notes and checkpoints (c2sp.org/signed-note,
 * c2sp.org/tlog-checkpoint) and Ed25519 cosignatures (c2sp.org/tlog-cosignature, `cosignature/v1`).
 * Each check throws VerificationError naming what failed.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { VerificationError } from './errors.ts';
import { sha256 } from './sha256.ts';

const encoder = new TextEncoder();
export const utf8 = (text: string): Uint8Array => encoder.encode(text);

export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** Each character code's 6-bit value, or -1 for what is not in the alphabet. */
const SEXTETS = Int8Array.from({ length: 128 }, (_, code) => BASE64.indexOf(String.fromCharCode(code)));

/**
 * Strict base64 (RFC 4648, canonical: padded to 4 characters, unused bits zero), or undefined. Decoded by table:
 * a verified read decodes a dozen proof hashes, and this was the client's costliest step.
 */
export function fromBase64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined;
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const chars = text.length - pad;
  const out = new Uint8Array((text.length / 4) * 3 - pad);
  let bits = 0;
  let held = 0;
  let at = 0;
  for (let i = 0; i < chars; i += 1) {
    const code = text.charCodeAt(i);
    const value = code < 128 ? SEXTETS[code]! : -1;
    if (value < 0) return undefined;
    bits = (bits << 6) | value;
    held += 6;
    if (held >= 8) {
      held -= 8;
      out[at++] = (bits >> held) & 0xff;
    }
  }
  // What is left over must be the zero bits of a canonical encoding.
  return (bits & ((1 << held) - 1)) === 0 ? out : undefined;
}

export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

/** Each character code's 4-bit value in lowercase hex, or -1. */
const NIBBLES = Int8Array.from({ length: 128 }, (_, code) => '0123456789abcdef'.indexOf(String.fromCharCode(code)));

export function fromHex(text: string): Uint8Array {
  if (text.length % 2 !== 0) throw new TypeError('not lowercase hex');
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i += 1) {
    const hi = text.charCodeAt(2 * i);
    const lo = text.charCodeAt(2 * i + 1);
    const a = hi < 128 ? NIBBLES[hi]! : -1;
    const b = lo < 128 ? NIBBLES[lo]! : -1;
    if (a < 0 || b < 0) throw new TypeError('not lowercase hex');
    out[i] = (a << 4) | b;
  }
  return out;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i += 1) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

// ---------------------------------------------------------------------------------------------------
// RFC 6962 / RFC 9162 Merkle trees

const LEAF = Uint8Array.of(0);
const NODE = Uint8Array.of(1);
export const leafHash = (leaf: Uint8Array): Uint8Array => sha256(LEAF, leaf);
export const nodeHash = (left: Uint8Array, right: Uint8Array): Uint8Array => sha256(NODE, left, right);

const fail = (failure: 'inclusion' | 'consistency', message: string, chain?: string): never => {
  throw new VerificationError(failure, message, chain);
};

/**
 * RFC 9162 §2.1.3.2: the root an inclusion proof leads to. `step` is told each sibling, whether it is on the left, and
 * the node the two make (the explorer draws the path with it).
 */
export function rootFromInclusion(
  index: number,
  size: number,
  leaf: Uint8Array,
  proof: readonly Uint8Array[],
  chain?: string,
  step?: (sibling: Uint8Array, left: boolean, node: Uint8Array) => void,
): Uint8Array {
  // Whole numbers a double holds exactly: 2.5 had walked leaf 2's proof as if it were 2 (red team).
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size)) fail('inclusion', `leaf ${index} of ${size} is not a whole number`, chain);
  if (leaf.length !== 32) fail('inclusion', 'the leaf hash is not 32 bytes', chain);
  if (!(index >= 0 && index < size)) fail('inclusion', `leaf ${index} is not below tree size ${size}`, chain);
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (p.length !== 32) fail('inclusion', 'a proof hash is not 32 bytes', chain);
    if (sn === 0) fail('inclusion', `the inclusion proof of leaf ${index} is longer than the tree is deep`, chain);
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      step?.(p, true, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = nodeHash(r, p);
      step?.(p, false, r);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) fail('inclusion', `the inclusion proof of leaf ${index} is shorter than the tree is deep`, chain);
  return r;
}

export function verifyInclusion(index: number, size: number, leaf: Uint8Array, proof: readonly Uint8Array[], root: Uint8Array, chain?: string): void {
  if (!equalBytes(rootFromInclusion(index, size, leaf, proof, chain), root)) {
    fail('inclusion', `block ${index} is not in the tree of ${size} blocks the log signed`, chain);
  }
}

/** RFC 9162 §2.1.4.2: the tree of `second` leaves (root `secondRoot`) extends the tree of `first` (root `firstRoot`). */
function isPowerOfTwo(n: number): boolean {
  return n > 0 && 2 ** Math.floor(Math.log2(n)) === n;
}

export function verifyConsistency(
  first: number,
  second: number,
  proof: readonly Uint8Array[],
  firstRoot: Uint8Array,
  secondRoot: Uint8Array,
  chain?: string,
): void {
  const bad = (why: string) => fail('consistency', `the tree of ${second} blocks does not extend the trusted tree of ${first}: ${why}`, chain);
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(second) || first < 0) bad('a size is not a whole number');
  if (second < first) bad('it is smaller');
  if (first === second) {
    if (proof.length > 0 || !equalBytes(firstRoot, secondRoot)) bad('same size, another root');
    return;
  }
  // Every tree extends the empty tree, with nothing to prove: a proof sent for it is not one.
  if (first === 0) {
    if (proof.length > 0) bad('a proof from the empty tree must be empty');
    return;
  }
  if (proof.some((p) => p.length !== 32)) bad('a proof hash is not 32 bytes');
  // Arithmetic, not bitwise: `&` reads its operands as 32-bit integers, and trees grow past 2^32 blocks.
  const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : [...proof];
  if (path.length === 0) bad('the proof is empty');
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) bad('the proof is too long');
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) bad('the proof is too short');
  if (!equalBytes(fr, firstRoot)) bad('the proof does not lead to the trusted root');
  if (!equalBytes(sr, secondRoot)) bad('the proof does not lead to the new root');
}

// ---------------------------------------------------------------------------------------------------
// Signed notes, checkpoints, cosignatures

const SIGNATURE_PREFIX = '\u2014 ';
/** Signature types of verifier keys: 0x01 a log's Ed25519 key, 0x04 an Ed25519 cosigner's. */
export const ED25519_NOTE = 0x01;
export const ED25519_COSIGNATURE = 0x04;

export interface NoteKey {
  name: string;
  /** 4 bytes. */
  id: Uint8Array;
  type: number;
  /** 32 bytes. */
  publicKey: Uint8Array;
  /** The vkey text it was read from. */
  vkey: string;
}

export function keyId(name: string, type: number, publicKey: Uint8Array): Uint8Array {
  return sha256(utf8(`${name}\n`), Uint8Array.of(type), publicKey).subarray(0, 4);
}

/** The field's prime, 2^255 - 19. */
const P = 2n ** 255n - 19n;
/** A key's y-coordinate: its 32 little-endian bytes, the sign of x (the top bit) aside. */
function yOf(key: Uint8Array): bigint {
  let y = 0n;
  for (let i = 31; i >= 0; i -= 1) y = (y << 8n) | BigInt(i === 31 ? key[i]! & 0x7f : key[i]!);
  return y;
}
/** The order-8 points' y (libsodium's list of small-order encodings; the other order-8 y is P minus it). */
const Y8 = yOf(fromHex('26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05'));
const SMALL_ORDER_Y = new Set([0n, 1n, P - 1n, Y8, P - Y8]);

/**
 * Why an Ed25519 public key proves nothing, if it does not: a point of small order (under the identity, `01` and 63
 * zero bytes verify for every message: a forged checkpoint, a witness's cosignature with no private key, red team
 * 2026-12-07), or a coordinate not reduced (one point written two ways, two witnesses of one key). The service refuses
 * the same keys (shared/ed25519.ts).
 */
export function weakKeyReason(publicKey: Uint8Array): string | undefined {
  const y = yOf(publicKey);
  if (y >= P) return 'not in its canonical encoding';
  if (SMALL_ORDER_Y.has(y)) return 'a point of small order';
  return undefined;
}

/** Ed25519 as RFC 8032 checks it, not ZIP-215's looser rules (@noble/curves' default), which take non-canonical forms. */
const STRICT = { zip215: false } as const;

/** An Ed25519 signature checked as RFC 8032 does, under a key that is not weak (`weakKeyReason`). */
export function verifyEd25519(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64 || weakKeyReason(publicKey)) return false;
  try {
    return ed25519.verify(signature, message, publicKey, STRICT);
  } catch {
    return false;
  }
}

/** A C2SP verifier key `<name>+<hex id>+<base64(type ‖ key)>`, Ed25519 log (0x01) or cosigner (0x04); weak keys refused. */
export function parseVkey(vkey: string): NoteKey {
  const text = vkey.trim();
  const parts = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/=]+)$/.exec(text);
  if (!parts) throw new TypeError(`'${text}' is not a verifier key <name>+<8 hex id>+<base64 key>`);
  const [, name, idHex, keyB64] = parts as unknown as [string, string, string, string];
  const key = fromBase64(keyB64);
  if (key?.length !== 33 || (key[0] !== ED25519_NOTE && key[0] !== ED25519_COSIGNATURE)) {
    throw new TypeError(`the verifier key of '${name}' is not an Ed25519 key (type 0x01 or 0x04, 32 bytes)`);
  }
  const type = key[0]!;
  const publicKey = key.subarray(1);
  const weak = weakKeyReason(publicKey);
  if (weak) throw new TypeError(`the verifier key of '${name}' is a weak Ed25519 key (${weak}): a signature under it would prove nothing`);
  const id = keyId(name, type, publicKey);
  if (toHex(id) !== idHex) throw new TypeError(`the verifier key id of '${name}' does not match its name and key`);
  return { name, id, type, publicKey, vkey: text };
}

export interface NoteSignature {
  name: string;
  id: Uint8Array;
  /** The signature bytes after the key id. */
  bytes: Uint8Array;
}

/** A signed note split into its text and signature lines (nothing verified yet). */
export function splitNote(note: string, chain?: string): { text: string; signatures: NoteSignature[] } {
  const bad = (why: string): never => {
    throw new VerificationError('signature', `the checkpoint is not a signed note: ${why}`, chain);
  };
  if (!note.endsWith('\n')) bad('it does not end in a newline');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  if (/[\x00-\x09\x0b-\x1f]/.test(note)) bad('it holds control characters');
  const split = note.lastIndexOf('\n\n');
  if (split < 0) bad('it has no signatures');
  const text = note.slice(0, split + 1);
  const signatures = note
    .slice(split + 2, -1)
    .split('\n')
    .map((line) => {
      if (!line.startsWith(SIGNATURE_PREFIX)) bad('a signature line is malformed');
      const [name, b64, extra] = line.slice(SIGNATURE_PREFIX.length).split(' ');
      const bytes = b64 === undefined ? undefined : fromBase64(b64);
      if (!name || !bytes || extra !== undefined || bytes.length < 5) bad('a signature line is malformed');
      return { name: name!, id: bytes!.subarray(0, 4), bytes: bytes!.subarray(4) };
    });
  return { text, signatures };
}

const signedBy = (s: NoteSignature, key: NoteKey) => s.name === key.name && equalBytes(s.id, key.id);

/**
 * Opens a note with the log's key: its text when a signature by that key verifies. Signatures by other
 * keys are left for the cosignature check (the signed-note spec says to ignore unknown keys).
 */
export function openNote(note: string, key: NoteKey, chain?: string): { text: string; signatures: NoteSignature[] } {
  const { text, signatures } = splitNote(note, chain);
  const own = signatures.filter((s) => signedBy(s, key));
  if (own.length === 0) {
    throw new VerificationError('signature', `the checkpoint is not signed by the pinned key ${key.name}+${toHex(key.id)}`, chain);
  }
  for (const s of own) {
    if (s.bytes.length !== 64 || !ed25519.verify(s.bytes, utf8(text), key.publicKey, STRICT)) {
      throw new VerificationError('signature', `the signature by ${key.name} on the checkpoint does not verify`, chain);
    }
  }
  return { text, signatures };
}

export interface Checkpoint {
  origin: string;
  size: number;
  root: Uint8Array;
}

export function parseCheckpoint(text: string, chain?: string): Checkpoint {
  const lines = text.split('\n');
  const bad = (why: string): never => {
    throw new VerificationError('missing-proof', `the checkpoint is malformed: ${why}`, chain);
  };
  if (lines.length < 4 || lines[lines.length - 1] !== '') bad('fewer than three lines');
  const [origin, sizeLine, rootLine] = lines as [string, string, string];
  if (!origin) bad('no origin');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeLine) || !Number.isSafeInteger(Number(sizeLine))) bad('the size is not a decimal number');
  const root = fromBase64(rootLine);
  if (root?.length !== 32) bad('the root is not 32 bytes of base64');
  return { origin, size: Number(sizeLine), root: root! };
}

/** The message an Ed25519 `cosignature/v1` signs: header, time line, then the checkpoint's note text. */
export function cosignedMessage(text: string, timestamp: bigint): Uint8Array {
  return utf8(`cosignature/v1\ntime ${timestamp}\n${text}`);
}

/**
 * The cosigners of `keys` whose `cosignature/v1` on the note's text verifies (timestamp ‖ signature).
 * A line by a known key that fails to verify is an error, as a bad log signature is.
 */
export function verifiedCosigners(text: string, signatures: readonly NoteSignature[], keys: readonly NoteKey[], chain?: string): NoteKey[] {
  const good: NoteKey[] = [];
  for (const key of keys) {
    const line = signatures.find((s) => signedBy(s, key));
    if (!line) continue;
    const ok =
      line.bytes.length === 72 &&
      ed25519.verify(
        line.bytes.subarray(8),
        cosignedMessage(text, new DataView(line.bytes.buffer, line.bytes.byteOffset, 8).getBigUint64(0)),
        key.publicKey,
        STRICT,
      );
    if (!ok) throw new VerificationError('witnesses', `the cosignature by witness ${key.name} does not verify`, chain);
    good.push(key);
  }
  return good;
}
