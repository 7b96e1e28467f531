/**
 * The off-chain envelope (docs/rules.md, "Off-chain payloads"): what is stored in IPFS for one payload. JSON, so that an
 * auditor can open it with their own tools (docs/api.md, "Off-chain payloads"):
 *
 *   {
 *     "format": "verifiable-ledger/offchain", "version": 2, "alg": "AES-256-GCM",
 *     "kek": { "provider": "local" | "aws-kms", "key_id": "…" },   who wrapped the data key
 *     "scope": "chain:orders",                                      where it may be read (below)
 *     "wrapped_key": "<base64>",                                    the data key, wrapped by the KEK
 *     "nonce": "<24 hex>",                                          96-bit GCM nonce, also on chain
 *     "ciphertext": "<base64>", "tag": "<base64, 16 bytes>"
 *   }
 *
 * The additional authenticated data is the RFC 8785 JSON of {format, version, alg, kek, nonce, scope}: the
 * header, its scope included, cannot be altered without the tag failing; the data key is wrapped with the same
 * scope bound in (the local master key's AAD, KMS's encryption context). The plaintext is the UTF-8 JSON of the
 * payload. A fresh data key per payload (or, with KMS, one per scope cached for a bounded time) and a fresh
 * random nonce.
 *
 * Version 1 (before scopes) has no `scope`, and its AAD none: it is still read (shared/offchain/offchain.ts says
 * for whom), never written. A data subject's seal (shared/subjects) is a version 1 envelope under the subject's key.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { UnreadablePayloadError } from '../errors.ts';
import { canonicalJson } from '../ledger/hashing.ts';

export const ENVELOPE_FORMAT = 'verifiable-ledger/offchain';
/** The version written: 2, with a scope. */
export const ENVELOPE_VERSION = 2;
/** Before scopes: read, never written, except as a data subject's seal (its key is its scope). */
export const UNSCOPED_ENVELOPE_VERSION = 1;
export const ENVELOPE_ALG = 'AES-256-GCM';

export interface KekRef {
  provider: string;
  key_id: string;
}

export interface Envelope {
  format: typeof ENVELOPE_FORMAT;
  version: typeof ENVELOPE_VERSION | typeof UNSCOPED_ENVELOPE_VERSION;
  alg: typeof ENVELOPE_ALG;
  kek: KekRef;
  /** Version 2: where the payload may be read (shared/ledger/offchain-port.ts, PayloadScope). */
  scope?: string;
  wrapped_key: string;
  nonce: string;
  ciphertext: string;
  tag: string;
}

function aad(header: Pick<Envelope, 'format' | 'version' | 'alg' | 'kek' | 'nonce' | 'scope'>): Buffer {
  const { format, version, alg, kek, nonce, scope } = header;
  return Buffer.from(canonicalJson(version === UNSCOPED_ENVELOPE_VERSION ? { format, version, alg, kek, nonce } : { format, version, alg, kek, nonce, scope }));
}

/**
 * Encrypts `plaintext` under `dataKey` (32 bytes) with a fresh nonce: a version 2 envelope bound to `scope`, or,
 * with none, a version 1 envelope (only a data subject's seal, whose key is its scope).
 */
export function seal(plaintext: Uint8Array, dataKey: Uint8Array, wrappedKey: Uint8Array, kek: KekRef, scope?: string): Envelope {
  const nonce = randomBytes(12);
  const header =
    scope === undefined
      ? ({ format: ENVELOPE_FORMAT, version: UNSCOPED_ENVELOPE_VERSION, alg: ENVELOPE_ALG, kek, nonce: nonce.toString('hex') } as const)
      : ({ format: ENVELOPE_FORMAT, version: ENVELOPE_VERSION, alg: ENVELOPE_ALG, kek, scope, nonce: nonce.toString('hex') } as const);
  const cipher = createCipheriv('aes-256-gcm', dataKey, nonce);
  cipher.setAAD(aad(header));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return {
    ...header,
    wrapped_key: Buffer.from(wrappedKey).toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  };
}

/** Reads an envelope's JSON, checking its shape; throws UnreadablePayloadError otherwise. */
export function parseEnvelope(bytes: Uint8Array): Envelope {
  let value: Partial<Envelope>;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw new UnreadablePayloadError('the stored object is not an off-chain envelope');
  }
  const b64 = /^[A-Za-z0-9+/]*={0,2}$/;
  if (
    value?.format !== ENVELOPE_FORMAT ||
    (value.version !== ENVELOPE_VERSION && value.version !== UNSCOPED_ENVELOPE_VERSION) ||
    (value.version === ENVELOPE_VERSION ? typeof value.scope !== 'string' || value.scope.length === 0 : value.scope !== undefined) ||
    value.alg !== ENVELOPE_ALG ||
    typeof value.kek?.provider !== 'string' ||
    typeof value.kek?.key_id !== 'string' ||
    !/^[0-9a-f]{24}$/.test(value.nonce ?? '') ||
    !b64.test(value.wrapped_key ?? '!') ||
    !b64.test(value.ciphertext ?? '!') ||
    !b64.test(value.tag ?? '!')
  ) {
    throw new UnreadablePayloadError('the stored object is not an off-chain envelope of a known version');
  }
  return value as Envelope;
}

/** Decrypts an envelope with its unwrapped data key; a wrong key or any altered byte fails the tag. */
export function open(envelope: Envelope, dataKey: Uint8Array): Buffer {
  try {
    const decipher = createDecipheriv('aes-256-gcm', dataKey, Buffer.from(envelope.nonce, 'hex'));
    decipher.setAAD(aad(envelope));
    decipher.setAuthTag(Buffer.from(envelope.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(envelope.ciphertext, 'base64')), decipher.final()]);
  } catch {
    throw new UnreadablePayloadError('the payload does not decrypt: it was altered, or wrapped under another key');
  }
}
