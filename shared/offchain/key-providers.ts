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

export interface DataKey {
  plaintext: Buffer;
  wrapped: Buffer;
  kek: KekRef;
}

export interface KeyProvider {
  /** A data key to encrypt one payload with (fresh, or reused within a bounded lifetime). */
  dataKey(): Promise<DataKey>;
  /** A data key never handed out before nor after: one that is destroyed by deleting its wrapped form (a data subject's). */
  freshDataKey(): Promise<DataKey>;
  /** The plaintext of a wrapped data key; UnreadablePayloadError when this provider cannot unwrap it. */
  unwrap(wrapped: Buffer, kek: KekRef): Promise<Buffer>;
}

/**
 * The local stand-in for KMS: a 256-bit master key in a file (mode 0600) under the data dir, made on
 * first start. Data keys are wrapped with AES-256-GCM under it: wrapped = iv(12) ‖ ciphertext(32) ‖ tag(16).
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
    const hex = readFileSync(path, 'utf8').trim();
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`the master key file ${path} is not 64 hex characters`);
    return new LocalKeyProvider(Buffer.from(hex, 'hex'));
  }

  /** Every local data key is fresh. */
  dataKey(): Promise<DataKey> {
    return this.freshDataKey();
  }

  async freshDataKey(): Promise<DataKey> {
    const plaintext = randomBytes(32);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.master, iv);
    const wrapped = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return { plaintext, wrapped, kek: { provider: 'local', key_id: this.keyId } };
  }

  async unwrap(wrapped: Buffer, kek: KekRef): Promise<Buffer> {
    if (kek.provider !== 'local' || kek.key_id !== this.keyId || wrapped.length !== 60) {
      throw new UnreadablePayloadError(`the payload's key (${kek.provider} ${kek.key_id}) is not this service's master key`);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.master, wrapped.subarray(0, 12));
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

const KMS_UNREADABLE = new Set([
  'InvalidCiphertextException',
  'IncorrectKeyException',
  'AccessDeniedException',
  'NotFoundException',
  'DisabledException',
  'KMSInvalidStateException',
]);

/**
 * AWS KMS: GenerateDataKey for new payloads, Decrypt to unwrap. Generated keys are reused for a bounded
 * time and number of payloads, and unwrapped keys cached for a bounded time, so a busy service does not
 * call KMS per payload.
 */
export class KmsKeyProvider implements KeyProvider {
  private current: { key: DataKey; expires: number; uses: number } | undefined;
  private readonly unwrapped = new Map<string, { plaintext: Buffer; expires: number }>();
  private readonly cacheMs: number;
  private readonly maxUses: number;
  private readonly now: () => number;

  constructor(private readonly options: KmsKeyProviderOptions) {
    this.cacheMs = options.cacheMs ?? 5 * 60_000;
    this.maxUses = options.maxUses ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  async dataKey(): Promise<DataKey> {
    const now = this.now();
    if (this.current && this.current.expires > now && this.current.uses < this.maxUses) {
      this.current.uses += 1;
      return this.current.key;
    }
    const key = await this.freshDataKey();
    this.current = { key, expires: now + this.cacheMs, uses: 1 };
    this.unwrapped.set(key.wrapped.toString('base64'), { plaintext: key.plaintext, expires: now + this.cacheMs });
    return key;
  }

  /** GenerateDataKey, never cached for reuse. */
  async freshDataKey(): Promise<DataKey> {
    const out = await this.call(() => this.options.client.send(new GenerateDataKeyCommand({ KeyId: this.options.keyId, KeySpec: 'AES_256' })));
    if (!out.Plaintext || !out.CiphertextBlob) throw new Error('KMS GenerateDataKey answered without a key');
    return {
      plaintext: Buffer.from(out.Plaintext),
      wrapped: Buffer.from(out.CiphertextBlob),
      kek: { provider: 'aws-kms', key_id: out.KeyId ?? this.options.keyId },
    };
  }

  async unwrap(wrapped: Buffer, kek: KekRef): Promise<Buffer> {
    if (kek.provider !== 'aws-kms') throw new UnreadablePayloadError(`the payload's key is a ${kek.provider} key, not a KMS key`);
    const id = wrapped.toString('base64');
    const now = this.now();
    const hit = this.unwrapped.get(id);
    if (hit && hit.expires > now) return hit.plaintext;
    const out = await this.call(() => this.options.client.send(new DecryptCommand({ CiphertextBlob: wrapped, KeyId: kek.key_id })));
    if (!out.Plaintext) throw new UnreadablePayloadError('KMS did not unwrap the data key');
    const plaintext = Buffer.from(out.Plaintext);
    if (this.unwrapped.size >= 1_000) this.unwrapped.clear();
    this.unwrapped.set(id, { plaintext, expires: now + this.cacheMs });
    return plaintext;
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
