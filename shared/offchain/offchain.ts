/**
 * Off-chain payloads (docs/rules.md, "Off-chain payloads"): a JSON value, encrypted into an envelope bound to its
 * scope, stored in IPFS; the chain keeps only the CID and the nonce. Reading checks that the nonce on chain is the
 * envelope's, and asks the caller's opener whether it may read the envelope's scope before anything is decrypted:
 * this is the one place a payload is opened, whichever event, route or reference names it.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { MalformedPayloadReferenceError, UnreadablePayloadError } from '../errors.ts';
import { beforeRead, chargeFetched } from '../read-allowance.ts';
import { type OffchainStore, type PayloadOpener, type PayloadScope, payloadScope, type Sealer } from '../ledger/offchain-port.ts';
import { open, parseEnvelope, seal, type Envelope } from './envelope.ts';
import type { IpfsStore } from './ipfs-store.ts';
import type { KeyProvider } from './key-providers.ts';

export const CID_PATTERN = /^(Qm[1-9A-HJ-NP-Za-km-z]{44}|b[a-z2-7]{20,})$/;
export const NONCE_PATTERN = /^[0-9a-f]{24}$/;

async function encrypt(keys: KeyProvider, value: unknown, scope: PayloadScope): Promise<{ envelope: Envelope; size: number }> {
  const plaintext = Buffer.from(JSON.stringify(value), 'utf8');
  const key = await keys.dataKey(scope);
  return { envelope: seal(plaintext, key.plaintext, key.wrapped, key.kek, scope), size: plaintext.length };
}

/**
 * The refusal a caller outside a payload's scope gets: the same words whatever the scope, so that it learns
 * nothing of it (a collection's name is its channel's members' only).
 */
export const OUTSIDE_SCOPE = 'the payload belongs to a chain, collection or organization this key may not read';

/** The envelope in `bytes`, and its scope once `opener` allows it; UnreadablePayloadError (OUTSIDE_SCOPE) otherwise. */
async function openable(bytes: Uint8Array, opener: PayloadOpener) {
  const envelope = parseEnvelope(bytes);
  const scope = (envelope.scope as PayloadScope | undefined) ?? null;
  if (!(await opener(scope))) throw new UnreadablePayloadError(OUTSIDE_SCOPE);
  return { envelope, scope };
}

async function decrypt(keys: KeyProvider, bytes: Uint8Array, opener: PayloadOpener, nonce?: string): Promise<unknown> {
  // The scope first: to a caller outside it, the nonce it gave is neither right nor wrong (no oracle of either).
  const { envelope, scope } = await openable(bytes, opener);
  if (nonce !== undefined && envelope.nonce !== nonce) throw new UnreadablePayloadError('the nonce does not match the stored payload');
  const dataKey = await keys.unwrap(Buffer.from(envelope.wrapped_key, 'base64'), envelope.kek, scope ?? undefined);
  const plaintext = open(envelope, dataKey);
  try {
    return JSON.parse(plaintext.toString('utf8'));
  } catch {
    throw new UnreadablePayloadError('the decrypted payload is not JSON');
  }
}

/** The version byte of a token (sealToken). */
const TOKEN_VERSION = 1;
/** What a token's additional data starts with: a token made for one use never opens for another. */
const TOKEN_AAD = 'verifiable-ledger/token\n';

/**
 * A token: base64url of version (1 byte) ‖ the wrapped data key's length (2 bytes) ‖ the wrapped data key ‖ nonce (12)
 * ‖ tag (16) ‖ ciphertext, AES-256-GCM under a data key of the `service` scope, with `context` as additional data.
 * Unlike an envelope it names no key encryption key: an envelope's `kek` is a KMS key's ARN (its account and region),
 * fine in storage, not in a cursor every reader sees (red team). Only this service's own key unwraps it.
 */
async function sealToken(keys: KeyProvider, value: unknown, context: string): Promise<string> {
  const key = await keys.dataKey(payloadScope.service);
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key.plaintext, nonce);
  cipher.setAAD(Buffer.from(TOKEN_AAD + context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  const length = Buffer.alloc(2);
  length.writeUInt16BE(key.wrapped.length);
  return Buffer.concat([Buffer.from([TOKEN_VERSION]), length, key.wrapped, nonce, cipher.getAuthTag(), ciphertext]).toString('base64url');
}

async function unsealToken(keys: KeyProvider, token: string, context: string): Promise<unknown> {
  const unreadable = () => new UnreadablePayloadError('the token is not one this service sealed for this use');
  if (!/^[A-Za-z0-9_-]+$/.test(token)) throw unreadable();
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.length < 3 || bytes[0] !== TOKEN_VERSION) throw unreadable();
  // Only the canonical spelling: base64url's last character has unused bits that decode alike.
  if (bytes.toString('base64url') !== token) throw unreadable();
  const wrappedEnd = 3 + bytes.readUInt16BE(1);
  // An empty wrapped key went to KMS as it was, which refused it as a malformed request: a 500 (red team).
  if (wrappedEnd === 3 || bytes.length < wrappedEnd + 12 + 16) throw unreadable();
  const dataKey = await keys.unwrapOwn(bytes.subarray(3, wrappedEnd), payloadScope.service);
  try {
    const decipher = createDecipheriv('aes-256-gcm', dataKey, bytes.subarray(wrappedEnd, wrappedEnd + 12));
    decipher.setAAD(Buffer.from(TOKEN_AAD + context, 'utf8'));
    decipher.setAuthTag(bytes.subarray(wrappedEnd + 12, wrappedEnd + 28));
    const plaintext = Buffer.concat([decipher.update(bytes.subarray(wrappedEnd + 28)), decipher.final()]);
    return JSON.parse(plaintext.toString('utf8'));
  } catch {
    throw unreadable();
  }
}

export function createSealer({ keys }: { keys: KeyProvider }): Sealer {
  return {
    seal: async (value, scope) => JSON.stringify((await encrypt(keys, value, scope)).envelope),
    unseal: (sealed, opener) => decrypt(keys, Buffer.from(sealed, 'utf8'), opener),
    sealToken: (value, context) => sealToken(keys, value, context),
    unsealToken: (token, context) => unsealToken(keys, token, context),
  };
}

export function createOffchainStore({ ipfs, keys }: { ipfs: IpfsStore; keys: KeyProvider }): OffchainStore {
  return {
    ...createSealer({ keys }),

    async put(value, scope) {
      const { envelope, size } = await encrypt(keys, value, scope);
      const cid = await ipfs.add(Buffer.from(JSON.stringify(envelope), 'utf8'));
      return { cid, nonce: envelope.nonce, size };
    },

    async get(cid, nonce, opener, fetched) {
      if (!CID_PATTERN.test(cid)) throw new MalformedPayloadReferenceError(`'${cid}' is not a CID`);
      if (!NONCE_PATTERN.test(nonce)) throw new MalformedPayloadReferenceError('the nonce must be 24 hex characters');
      // A request's reads are capped (shared/read-allowance.ts): IPFS bytes count, before anything is decrypted.
      await beforeRead();
      const bytes = await ipfs.cat(cid);
      try {
        chargeFetched(bytes.length);
      } catch (limit) {
        // Past the request's allowance: said only to who may read the payload. To anyone else the refusal would tell
        // that it exists, and about how large it is (a batch spending its allowance on its own payloads first).
        await openable(bytes, opener);
        throw limit;
      }
      fetched?.(bytes.length);
      return decrypt(keys, bytes, opener, nonce);
    },

    ping: () => ipfs.ping(),

    remove: (cid) => ipfs.remove(cid),
  };
}
