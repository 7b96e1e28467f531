/**
 * C2SP signed notes (c2sp.org/signed-note) with Ed25519 keys, and the tlog checkpoint they carry
 * (c2sp.org/tlog-checkpoint). Pure: the node signs with these, and `ledger-verify` checks with them.
 *
 *   vkey        <key name>+<hex key id>+base64(0x01 ‖ 32-byte public key)
 *   key id      first 4 bytes of SHA-256(key name ‖ 0x0A ‖ 0x01 ‖ public key), big-endian
 *   note        <text ending in \n>\n— <key name> base64(key id ‖ Ed25519 signature of the text)\n
 *   checkpoint  text = <origin>\n<tree size>\n<base64 root hash>\n
 *
 * Key names and origins are non-empty and hold no spaces and no '+'.
 */
import { createHash } from 'node:crypto';
import { verifyEd25519 } from '../ed25519.ts';

const ED25519_TYPE = 0x01;
const SIGNATURE_PREFIX = '\u2014 ';

/** Whether a key name or origin is usable: non-empty, printable, no Unicode spaces, no '+'. */
export function isValidKeyName(name: string): boolean {
  return name.length > 0 && !/[\s+\p{Cc}]/u.test(name);
}

/** The 4-byte key id of an Ed25519 key under `name`. */
export function keyId(name: string, publicKey: Uint8Array): Buffer {
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`, 'utf8'), Buffer.from([ED25519_TYPE]), publicKey]))
    .digest()
    .subarray(0, 4);
}

/** The verifier key line of an Ed25519 public key (64 hex characters) under `name`. */
export function verifierKey(name: string, publicKeyHex: string): string {
  if (!isValidKeyName(name)) throw new TypeError(`'${name}' cannot name a note key: it must be non-empty, without spaces or '+'`);
  const pub = Buffer.from(publicKeyHex, 'hex');
  if (pub.length !== 32) throw new TypeError('an Ed25519 public key is 32 bytes');
  return `${name}+${keyId(name, pub).toString('hex')}+${Buffer.concat([Buffer.from([ED25519_TYPE]), pub]).toString('base64')}`;
}

export interface Verifier {
  name: string;
  id: Buffer;
  /** 64 hex characters. */
  publicKeyHex: string;
}

/** Parses a verifier key line; throws a TypeError saying what is wrong. */
export function parseVerifierKey(vkey: string): Verifier {
  // Names hold no '+'; base64 may: the key is everything after the second '+'.
  const parts = /^([^+]*)\+([^+]*)\+(.*)$/s.exec(vkey.trim());
  if (!parts) throw new TypeError('a verifier key is <name>+<key id>+<base64 key>');
  const [, name, idHex, keyB64] = parts as unknown as [string, string, string, string];
  if (!isValidKeyName(name)) throw new TypeError('the verifier key has no usable name');
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new TypeError('the verifier key id is not 8 lowercase hex digits');
  const key = Buffer.from(keyB64, 'base64');
  if (key.toString('base64') !== keyB64 || key.length !== 33 || key[0] !== ED25519_TYPE)
    throw new TypeError('the verifier key is not an Ed25519 key (type 0x01 and 32 bytes)');
  const pub = key.subarray(1);
  if (!keyId(name, pub).equals(Buffer.from(idHex, 'hex'))) throw new TypeError('the verifier key id does not match its name and key');
  return { name, id: Buffer.from(idHex, 'hex'), publicKeyHex: pub.toString('hex') };
}

/** Signs `text` (which must end in a newline) as a note with one signature line. */
export function signNote(text: string, name: string, publicKeyHex: string, sign: (bytes: Uint8Array) => Uint8Array): string {
  if (!text.endsWith('\n')) throw new TypeError('a note text ends in a newline');
  const bytes = Buffer.from(text, 'utf8');
  const signature = Buffer.concat([keyId(name, Buffer.from(publicKeyHex, 'hex')), sign(bytes)]);
  return `${text}\n${SIGNATURE_PREFIX}${name} ${signature.toString('base64')}\n`;
}

/**
 * The text of a note signed by `verifier`, or an error saying why not: signatures from other keys are
 * ignored (as the spec requires); a signature from the known key that fails rejects the note.
 */
export function openNote(note: string, verifier: Verifier): { ok: true; text: string } | { ok: false; reason: string } {
  if (!note.endsWith('\n')) return { ok: false, reason: 'the note does not end in a newline' };
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  if (/[\x00-\x09\x0b-\x1f]/.test(note)) return { ok: false, reason: 'the note holds control characters' };
  const split = note.lastIndexOf('\n\n');
  if (split < 0) return { ok: false, reason: 'the note has no signatures' };
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split('\n');
  let verified = false;
  for (const line of lines) {
    if (!line.startsWith(SIGNATURE_PREFIX)) return { ok: false, reason: 'a signature line is malformed' };
    const [name, b64, extra] = line.slice(SIGNATURE_PREFIX.length).split(' ');
    if (!name || !b64 || extra !== undefined) return { ok: false, reason: 'a signature line is malformed' };
    const signature = Buffer.from(b64, 'base64');
    if (signature.toString('base64') !== b64 || signature.length < 5) return { ok: false, reason: 'a signature is not base64' };
    if (name !== verifier.name || !signature.subarray(0, 4).equals(verifier.id)) continue;
    if (!verifyEd25519(verifier.publicKeyHex, Buffer.from(text, 'utf8'), signature.subarray(4))) {
      return { ok: false, reason: `the signature by ${verifier.name} does not verify` };
    }
    verified = true;
  }
  return verified ? { ok: true, text } : { ok: false, reason: `the note is not signed by ${verifier.name}+${verifier.id.toString('hex')}` };
}

export interface CheckpointBody {
  origin: string;
  size: number;
  /** 32 bytes. */
  root: Buffer;
}

/** A tlog checkpoint's note text. */
export function checkpointText({ origin, size, root }: CheckpointBody): string {
  return `${origin}\n${size}\n${root.toString('base64')}\n`;
}

/** Parses a checkpoint's note text (extension lines are allowed and ignored). */
export function parseCheckpointText(text: string): CheckpointBody {
  const lines = text.split('\n');
  if (lines.length < 4 || lines[lines.length - 1] !== '') throw new TypeError('a checkpoint is at least three lines, each ending in a newline');
  const [origin, sizeLine, rootLine] = lines as [string, string, string];
  if (!origin) throw new TypeError('the checkpoint has no origin');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeLine) || !Number.isSafeInteger(Number(sizeLine))) throw new TypeError('the checkpoint size is not a decimal number');
  const root = Buffer.from(rootLine, 'base64');
  if (root.length !== 32 || root.toString('base64') !== rootLine) throw new TypeError('the checkpoint root is not 32 bytes of base64');
  if (lines.slice(3, -1).some((l) => l === '')) throw new TypeError('a checkpoint extension line is empty');
  return { origin, size: Number(sizeLine), root };
}

/**
 * Whether bytes someone asks the node to sign are shaped like a checkpoint's note text (a line, a
 * decimal line, a base64 hash line). The node signs challenges for peers; it must never sign one that a
 * verifier would take for a checkpoint, so such challenges are refused.
 */
export function looksLikeCheckpoint(bytes: Uint8Array): boolean {
  return /^[^\n]*\n[0-9]+\n[A-Za-z0-9+/]{43}=\n/.test(Buffer.from(bytes).toString('latin1'));
}
