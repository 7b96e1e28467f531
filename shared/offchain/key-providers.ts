/**
 * Data keys for envelope encryption, wrapped by a key-encryption key (KEK) that never leaves its home:
 * AWS KMS in the cloud, a local master key file on a laptop. Both behind one interface.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DecryptCommand, GenerateDataKeyCommand, type KMSClient } from '@aws-sdk/client-kms';
import { translateAwsError } from '../storage/errors.ts';
import { UnreadablePayloadError } from '../errors.ts';
import type { KekRef } from './envelope.ts';
import { notOwnFile } from '../own-file.ts';

export interface DataKey {
  plaintext: Buffer;
  wrapped: Buffer;
  kek: KekRef;
}

/**
 * The name a payload's scope has in KMS's encryption context: KMS binds it to the wrapped key (Decrypt with another
 * context fails), CloudTrail logs it, and a key policy may hold it (`kms:EncryptionContext:verifiable-ledger:scope`).
 */
export const SCOPE_CONTEXT_KEY = 'verifiable-ledger:scope';

export interface KeyProvider {
  /**
   * A data key to encrypt one payload of `scope` with (fresh, or reused for that scope within a bounded lifetime),
   * wrapped with the scope bound in.
   */
  dataKey(scope: string): Promise<DataKey>;
  /** A data key never handed out before nor after: one that is destroyed by deleting its wrapped form (a data subject's). */
  freshDataKey(scope?: string): Promise<DataKey>;
  /**
   * The plaintext of a wrapped data key, given the scope it was wrapped for (none for keys wrapped before scopes);
   * UnreadablePayloadError when this provider cannot unwrap it, or the scope is not the one bound in.
   */
  unwrap(wrapped: Buffer, kek: KekRef, scope?: string): Promise<Buffer>;
  /**
   * As unwrap, under this provider's own key encryption key (the local master key, or the configured KMS key): for
   * tokens that name no key (shared/offchain/offchain.ts, sealToken).
   */
  unwrapOwn(wrapped: Buffer, scope: string): Promise<Buffer>;
}

/**
 * The local stand-in for KMS: a 256-bit master key in a file (mode 0600) under the data dir, made on
 * first start. Data keys are wrapped with AES-256-GCM under it: wrapped = iv(12) ‖ ciphertext(32) ‖ tag(16), with
 * the payload's scope (UTF-8) as additional data when it has one.
 */
export class LocalKeyProvider implements KeyProvider {
  private readonly master: Buffer;
  readonly keyId: string;

  constructor(master: Buffer) {
    if (master.length !== 32) throw new Error('the master key must be 32 bytes');
    this.master = master;
    // Names the master key without revealing it, so that a payload under another key says so.
    this.keyId = `local:${createHash('sha256').update(master).digest('hex').slice(0, 16)}`;
  }

  /** Reads the master key file, creating it (0600) when `create` and it does not exist. */
  static fromFile(path: string, options: { create: boolean }): LocalKeyProvider {
    if (!existsSync(path)) {
      if (!options.create) throw new Error(`no master key at ${path}: start the local stack once to create it`);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
      chmodSync(path, 0o600);
    }
    const planted = notOwnFile(path);
    if (planted) throw new Error(planted);
    const hex = readFileSync(path, 'utf8').trim();
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`the master key file ${path} is not 64 hex characters`);
    return new LocalKeyProvider(Buffer.from(hex, 'hex'));
  }

  /** Every local data key is fresh. */
  dataKey(scope: string): Promise<DataKey> {
    return this.freshDataKey(scope);
  }

  async freshDataKey(scope?: string): Promise<DataKey> {
    const plaintext = randomBytes(32);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.master, iv);
    if (scope !== undefined) cipher.setAAD(Buffer.from(scope, 'utf8'));
    const wrapped = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return { plaintext, wrapped, kek: { provider: 'local', key_id: this.keyId } };
  }

  unwrapOwn(wrapped: Buffer, scope: string): Promise<Buffer> {
    return this.unwrap(wrapped, { provider: 'local', key_id: this.keyId }, scope);
  }

  async unwrap(wrapped: Buffer, kek: KekRef, scope?: string): Promise<Buffer> {
    if (kek.provider !== 'local' || kek.key_id !== this.keyId || wrapped.length !== 60) {
      throw new UnreadablePayloadError(`the payload's key (${kek.provider} ${kek.key_id}) is not this service's master key`);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.master, wrapped.subarray(0, 12));
      if (scope !== undefined) decipher.setAAD(Buffer.from(scope, 'utf8'));
      decipher.setAuthTag(wrapped.subarray(44));
      return Buffer.concat([decipher.update(wrapped.subarray(12, 44)), decipher.final()]);
    } catch {
      throw new UnreadablePayloadError('the wrapped data key does not unwrap under the master key');
    }
  }
}

export interface KmsKeyProviderOptions {
  client: KMSClient;
  keyId: string;
  /** How long one generated data key encrypts new payloads, and an unwrapped key stays cached. */
  cacheMs?: number;
  /** How many payloads one generated data key may encrypt. */
  maxUses?: number;
  now?: () => number;
}

/** KMS's encryption context for a scope (none for keys wrapped before scopes). */
const context = (scope: string | undefined) => (scope === undefined ? {} : { EncryptionContext: { [SCOPE_CONTEXT_KEY]: scope } });
const cacheKey = (wrapped: Buffer, scope: string | undefined) => `${scope === undefined ? '-' : `=${scope}`} ${wrapped.toString('base64')}`;

const KMS_UNREADABLE = new Set([
  'InvalidCiphertextException',
  // A ciphertext KMS cannot even parse (an empty or oversized wrapped key in a caller's envelope or cursor).
  'ValidationException',
  'IncorrectKeyException',
  'AccessDeniedException',
  'NotFoundException',
  'DisabledException',
  'KMSInvalidStateException',
]);

/**
 * AWS KMS: GenerateDataKey for new payloads, Decrypt to unwrap, each with the payload's scope as encryption
 * context. Generated keys are reused for a bounded time and number of payloads within one scope (never across
 * two), and unwrapped keys cached for a bounded time by wrapped key and scope, so a busy service does not call KMS
 * per payload.
 */
export class KmsKeyProvider implements KeyProvider {
  private readonly current = new Map<string, { key: DataKey; expires: number; uses: number }>();
  private readonly unwrapped = new Map<string, { plaintext: Buffer; expires: number }>();
  private readonly cacheMs: number;
  private readonly maxUses: number;
  private readonly now: () => number;

  private readonly options: KmsKeyProviderOptions;
  constructor(options: KmsKeyProviderOptions) {
    this.options = options;
    this.cacheMs = options.cacheMs ?? 5 * 60_000;
    this.maxUses = options.maxUses ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  async dataKey(scope: string): Promise<DataKey> {
    const now = this.now();
    const current = this.current.get(scope);
    if (current && current.expires > now && current.uses < this.maxUses) {
      current.uses += 1;
      return current.key;
    }
    const key = await this.freshDataKey(scope);
    if (this.current.size >= 1_000) this.current.clear();
    this.current.set(scope, { key, expires: now + this.cacheMs, uses: 1 });
    this.remember(key.wrapped, scope, key.plaintext, now);
    return key;
  }

  /** GenerateDataKey, never cached for reuse. */
  async freshDataKey(scope?: string): Promise<DataKey> {
    const out = await this.call(() =>
      this.options.client.send(new GenerateDataKeyCommand({ KeyId: this.options.keyId, KeySpec: 'AES_256', ...context(scope) })),
    );
    if (!out.Plaintext || !out.CiphertextBlob) throw new Error('KMS GenerateDataKey answered without a key');
    return {
      plaintext: Buffer.from(out.Plaintext),
      wrapped: Buffer.from(out.CiphertextBlob),
      kek: { provider: 'aws-kms', key_id: out.KeyId ?? this.options.keyId },
    };
  }

  /** Decrypt names the configured key (an alias, or its ARN), as GenerateDataKey did. */
  unwrapOwn(wrapped: Buffer, scope: string): Promise<Buffer> {
    return this.unwrap(wrapped, { provider: 'aws-kms', key_id: this.options.keyId }, scope);
  }

  async unwrap(wrapped: Buffer, kek: KekRef, scope?: string): Promise<Buffer> {
    if (kek.provider !== 'aws-kms') throw new UnreadablePayloadError(`the payload's key is a ${kek.provider} key, not a KMS key`);
    const now = this.now();
    // Cached by wrapped key and scope: a key unwrapped for one scope is never handed to another.
    const hit = this.unwrapped.get(cacheKey(wrapped, scope));
    if (hit && hit.expires > now) {
      // Used again: moved to the end, the last to be let go (remember).
      const key = cacheKey(wrapped, scope);
      this.unwrapped.delete(key);
      this.unwrapped.set(key, hit);
      return hit.plaintext;
    }
    const out = await this.call(() => this.options.client.send(new DecryptCommand({ CiphertextBlob: wrapped, KeyId: kek.key_id, ...context(scope) })));
    if (!out.Plaintext) throw new UnreadablePayloadError('KMS did not unwrap the data key');
    const plaintext = Buffer.from(out.Plaintext);
    this.remember(wrapped, scope, plaintext, now);
    return plaintext;
  }

  /**
   * Keeps an unwrapped key, the least recently used one let go past 1,000 (a Map keeps insertion order: a key used
   * again is moved to the end). It had emptied the whole cache at 1,000: more than 1,000 keys in turn, and every
   * read unwrapped again (red team).
   */
  private remember(wrapped: Buffer, scope: string | undefined, plaintext: Buffer, now: number): void {
    const key = cacheKey(wrapped, scope);
    this.unwrapped.delete(key);
    if (this.unwrapped.size >= 1_000) this.unwrapped.delete(this.unwrapped.keys().next().value!);
    this.unwrapped.set(key, { plaintext, expires: now + this.cacheMs });
  }

  private async call<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof Error && KMS_UNREADABLE.has(error.name)) {
        throw new UnreadablePayloadError(`KMS refused the data key (${error.name})`);
      }
      throw translateAwsError(error, 'KMS');
    }
  }
}
