/**
 * The sim's KMS: the template's keys, answering the KMS JSON protocol (`X-Amz-Target: TrentService.<op>`)
 * for the operations the service uses (GenerateDataKey, Decrypt, Encrypt), so that the functions run
 * their cloud code path (`SVC_KMS_KEY_ID`, the AWS SDK's KMS client) and every KMS call is seen, authorized
 * and recorded like any other AWS call (infra/sim/aws-endpoint.ts).
 *
 * A ciphertext blob is AES-256-GCM under one local root key (made on first start, mode 0600) with the
 * key's ARN bound in as additional data: `SIMKMS1` ‖ len ‖ key ARN ‖ iv(12) ‖ tag(16) ‖ ciphertext. Decrypt
 * finds the key in the blob, as KMS does for symmetric keys. An `EncryptionContext` is bound in too (the ARN, then
 * the context's pairs sorted by key): Decrypt with another context, or none, fails as KMS's does. Errors are KMS's own: a status 400 with
 * `__type` NotFoundException, InvalidCiphertextException or ValidationException.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { dirname } from 'node:path';

const MAGIC = Buffer.from('SIMKMS1');

export class KmsError extends Error {
  readonly type: 'NotFoundException' | 'InvalidCiphertextException' | 'ValidationException' | 'UnsupportedOperationException';
  constructor(type: 'NotFoundException' | 'InvalidCiphertextException' | 'ValidationException' | 'UnsupportedOperationException', message: string) {
    super(message);
    this.type = type;
  }
}

export interface LocalKms {
  /** The key a request names (its KeyId, or the key its ciphertext was made under): its ARN. */
  keyOf(operation: string, body: Record<string, unknown>): string;
  /** Answers one operation; throws KmsError as KMS would answer it. */
  answer(operation: string, body: Record<string, unknown>): Record<string, unknown>;
}

function rootKey(path: string): Buffer {
  if (!existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(path, 0o600);
  }
  const hex = readFileSync(path, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`the sim's KMS root key ${path} is not 64 hex characters`);
  return Buffer.from(hex, 'hex');
}

/** `keys`: the template's keys, by ARN. */
export function createLocalKms(options: { keyFile: string; keys: readonly string[] }): LocalKms {
  const root = rootKey(options.keyFile);
  const keys = new Set(options.keys);

  const keyArn = (keyId: unknown): string => {
    if (typeof keyId !== 'string' || !keyId) throw new KmsError('ValidationException', 'KeyId is required');
    const arn = keys.has(keyId) ? keyId : [...keys].find((k) => k.endsWith(`:key/${keyId}`));
    if (!arn) throw new KmsError('NotFoundException', `Key '${keyId}' does not exist`);
    return arn;
  };
  const blob = (value: unknown): Buffer => {
    const bytes = typeof value === 'string' ? Buffer.from(value, 'base64') : Buffer.alloc(0);
    if (bytes.length < MAGIC.length + 2 + 12 + 16 || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw new KmsError('InvalidCiphertextException', '');
    return bytes;
  };
  const keyOfBlob = (bytes: Buffer): string => {
    const length = bytes.readUInt16BE(MAGIC.length);
    return bytes.subarray(MAGIC.length + 2, MAGIC.length + 2 + length).toString('utf8');
  };

  /** The additional data: the key's ARN, then the encryption context (none: the ARN alone, as blobs made before). */
  const aad = (arn: string, context: unknown): Buffer => {
    if (context !== undefined && (typeof context !== 'object' || context === null || Array.isArray(context)))
      throw new KmsError('ValidationException', 'EncryptionContext must be a map of strings');
    const pairs = Object.entries((context ?? {}) as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (pairs.some(([, v]) => typeof v !== 'string')) throw new KmsError('ValidationException', 'EncryptionContext must be a map of strings');
    return Buffer.from(pairs.length === 0 ? arn : `${arn}\n${JSON.stringify(pairs)}`);
  };

  function seal(arn: string, plaintext: Buffer, context: unknown): string {
    const name = Buffer.from(arn);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', root, iv);
    cipher.setAAD(aad(arn, context));
    const sealed = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const length = Buffer.alloc(2);
    length.writeUInt16BE(name.length);
    return Buffer.concat([MAGIC, length, name, iv, cipher.getAuthTag(), sealed]).toString('base64');
  }

  function open(bytes: Buffer, context: unknown): { arn: string; plaintext: Buffer } {
    const arn = keyOfBlob(bytes);
    if (!keys.has(arn)) throw new KmsError('InvalidCiphertextException', '');
    const at = MAGIC.length + 2 + Buffer.byteLength(arn);
    try {
      const decipher = createDecipheriv('aes-256-gcm', root, bytes.subarray(at, at + 12));
      decipher.setAAD(aad(arn, context));
      decipher.setAuthTag(bytes.subarray(at + 12, at + 28));
      return { arn, plaintext: Buffer.concat([decipher.update(bytes.subarray(at + 28)), decipher.final()]) };
    } catch {
      throw new KmsError('InvalidCiphertextException', '');
    }
  }

  return {
    keyOf(operation, body) {
      if (operation === 'Decrypt') return body.KeyId ? keyArn(body.KeyId) : keyOfBlob(blob(body.CiphertextBlob));
      return keyArn(body.KeyId);
    },
    answer(operation, body) {
      switch (operation) {
        case 'GenerateDataKey': {
          const arn = keyArn(body.KeyId);
          const bytes = body.KeySpec === 'AES_128' ? 16 : body.KeySpec === 'AES_256' ? 32 : Number(body.NumberOfBytes ?? Number.NaN);
          if (!Number.isInteger(bytes) || bytes < 1 || bytes > 1024) throw new KmsError('ValidationException', 'KeySpec or NumberOfBytes is required');
          const plaintext = randomBytes(bytes);
          return { KeyId: arn, Plaintext: plaintext.toString('base64'), CiphertextBlob: seal(arn, plaintext, body.EncryptionContext) };
        }
        case 'Encrypt': {
          const arn = keyArn(body.KeyId);
          const plaintext = Buffer.from(String(body.Plaintext ?? ''), 'base64');
          if (plaintext.length < 1 || plaintext.length > 4096) throw new KmsError('ValidationException', 'Plaintext must be 1 to 4096 bytes');
          return { KeyId: arn, CiphertextBlob: seal(arn, plaintext, body.EncryptionContext), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
        }
        case 'Decrypt': {
          const { arn, plaintext } = open(blob(body.CiphertextBlob), body.EncryptionContext);
          if (body.KeyId && keyArn(body.KeyId) !== arn) throw new KmsError('InvalidCiphertextException', '');
          return { KeyId: arn, Plaintext: plaintext.toString('base64'), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
        }
        default:
          throw new KmsError('UnsupportedOperationException', `the sim's KMS does not answer ${operation}`);
      }
    },
  };
}
