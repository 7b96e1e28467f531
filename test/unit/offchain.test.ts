import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { DependencyUnavailableError, UnreadablePayloadError } from '#shared/errors';
import { open, parseEnvelope, seal } from '#shared/offchain/envelope';
import { KmsKeyProvider, LocalKeyProvider } from '#shared/offchain/key-providers';

const KEK = { provider: 'local', key_id: 'local:test' };

describe('Envelope (AES-256-GCM)', () => {
  it('round-trips, and carries the algorithm, format version and wrapped key', () => {
    const key = randomBytes(32);
    const envelope = seal(Buffer.from('{"secret":"value"}'), key, Buffer.from('wrapped'), KEK);
    assert.equal(envelope.alg, 'AES-256-GCM');
    assert.equal(envelope.version, 1);
    assert.equal(Buffer.from(envelope.wrapped_key, 'base64').toString(), 'wrapped');
    const again = parseEnvelope(Buffer.from(JSON.stringify(envelope)));
    assert.equal(open(again, key).toString(), '{"secret":"value"}');
    assert.ok(!JSON.stringify(envelope).includes('secret'), 'no plaintext in the stored object');
  });

  it('uses a fresh 96-bit nonce for each of 1000 payloads', () => {
    const key = randomBytes(32);
    const nonces = new Set(Array.from({ length: 1000 }, () => seal(Buffer.from('same'), key, Buffer.alloc(1), KEK).nonce));
    assert.equal(nonces.size, 1000);
    for (const nonce of nonces) assert.match(nonce, /^[0-9a-f]{24}$/);
  });

  it('refuses a flipped ciphertext byte, an altered header, or another key', () => {
    const key = randomBytes(32);
    const envelope = seal(Buffer.from('x'.repeat(100)), key, Buffer.alloc(1), KEK);
    const bytes = Buffer.from(envelope.ciphertext, 'base64');
    bytes[10]! ^= 0x01;
    assert.throws(() => open({ ...envelope, ciphertext: bytes.toString('base64') }, key), UnreadablePayloadError);
    assert.throws(() => open({ ...envelope, kek: { provider: 'local', key_id: 'local:other' } }, key), UnreadablePayloadError);
    assert.throws(() => open(envelope, randomBytes(32)), UnreadablePayloadError);
  });

  it('refuses objects that are not envelopes', () => {
    assert.throws(() => parseEnvelope(Buffer.from('not json')), UnreadablePayloadError);
    assert.throws(() => parseEnvelope(Buffer.from('{"format":"other"}')), UnreadablePayloadError);
  });
});

describe('Class: LocalKeyProvider (real file system)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-keys-'));
  const file = join(dir, 'nested', 'master.key');

  it('creates the master key file on first start, readable by its owner only', () => {
    LocalKeyProvider.fromFile(file, { create: true });
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  it('unwraps what it wrapped, across instances reading the same file', async () => {
    const first = LocalKeyProvider.fromFile(file, { create: true });
    const key = await first.dataKey();
    const second = LocalKeyProvider.fromFile(file, { create: false });
    assert.deepEqual(await second.unwrap(key.wrapped, key.kek), key.plaintext);
    assert.notDeepEqual((await first.dataKey()).plaintext, key.plaintext, 'a fresh data key each time');
  });

  it('refuses a key wrapped under another master key, saying so', async () => {
    const other = join(dir, 'other.key');
    const foreign = await LocalKeyProvider.fromFile(other, { create: true }).dataKey();
    await assert.rejects(LocalKeyProvider.fromFile(file, { create: false }).unwrap(foreign.wrapped, foreign.kek), UnreadablePayloadError);
  });

  it('does not invent a key when asked only to read, and refuses a malformed file', () => {
    assert.throws(() => LocalKeyProvider.fromFile(join(dir, 'missing.key'), { create: false }), /no master key/);
    writeFileSync(join(dir, 'bad.key'), 'short');
    assert.throws(() => LocalKeyProvider.fromFile(join(dir, 'bad.key'), { create: false }), /64 hex/);
  });

  it('cleans up', () => rmSync(dir, { recursive: true, force: true }));
});

describe('Class: KmsKeyProvider (aws-sdk-client-mock: real KMS cannot run here)', () => {
  const plaintext = randomBytes(32);
  const blob = randomBytes(64);

  function provider(now: () => number, maxUses = 10_000) {
    const kms = mockClient(KMSClient);
    kms.on(GenerateDataKeyCommand).resolves({ Plaintext: plaintext, CiphertextBlob: blob, KeyId: 'arn:aws:kms:us-east-1:1:key/k' });
    kms.on(DecryptCommand).resolves({ Plaintext: plaintext });
    return { kms, keys: new KmsKeyProvider({ client: new KMSClient({ region: 'us-east-1' }), keyId: 'alias/ledger', cacheMs: 60_000, maxUses, now }) };
  }

  it('asks KMS for a data key once per lifetime, then again', async () => {
    let t = 0;
    const { kms, keys } = provider(() => t);
    const a = await keys.dataKey();
    const b = await keys.dataKey();
    assert.deepEqual(a.plaintext, plaintext);
    assert.equal(a.kek.provider, 'aws-kms');
    assert.equal(b, a);
    assert.equal(kms.commandCalls(GenerateDataKeyCommand).length, 1);
    assert.deepEqual(kms.commandCalls(GenerateDataKeyCommand)[0]!.args[0].input, { KeyId: 'alias/ledger', KeySpec: 'AES_256' });
    t = 60_001;
    await keys.dataKey();
    assert.equal(kms.commandCalls(GenerateDataKeyCommand).length, 2);
    kms.restore();
  });

  it("never hands out a data subject's key again: each fresh key is its own GenerateDataKey, not the payload key in use", async () => {
    const { kms, keys } = provider(() => 0);
    const payload = await keys.dataKey();
    const a = await keys.freshDataKey();
    const b = await keys.freshDataKey();
    assert.notEqual(a, payload);
    assert.notEqual(b, a);
    assert.equal(kms.commandCalls(GenerateDataKeyCommand).length, 3, 'one call per fresh key, none reused');
    assert.equal(await keys.dataKey(), payload, 'payload keys are still reused for their lifetime');
    kms.restore();
  });

  it('bounds how many payloads one data key encrypts', async () => {
    const { kms, keys } = provider(() => 0, 3);
    for (let i = 0; i < 7; i += 1) await keys.dataKey();
    assert.equal(kms.commandCalls(GenerateDataKeyCommand).length, 3);
    kms.restore();
  });

  it('unwraps with Decrypt, cached for the lifetime', async () => {
    let t = 0;
    const { kms, keys } = provider(() => t);
    const other = randomBytes(64);
    assert.deepEqual(await keys.unwrap(other, { provider: 'aws-kms', key_id: 'k' }), plaintext);
    await keys.unwrap(other, { provider: 'aws-kms', key_id: 'k' });
    assert.equal(kms.commandCalls(DecryptCommand).length, 1);
    t = 120_000;
    await keys.unwrap(other, { provider: 'aws-kms', key_id: 'k' });
    assert.equal(kms.commandCalls(DecryptCommand).length, 2);
    kms.restore();
  });

  it('turns a refused key into an unreadable payload, and an unreachable KMS into a 503', async () => {
    const kms = mockClient(KMSClient);
    const keys = new KmsKeyProvider({ client: new KMSClient({ region: 'us-east-1' }), keyId: 'k' });
    kms.on(DecryptCommand).rejects(Object.assign(new Error('bad'), { name: 'InvalidCiphertextException' }));
    await assert.rejects(keys.unwrap(randomBytes(8), { provider: 'aws-kms', key_id: 'k' }), UnreadablePayloadError);
    kms.on(GenerateDataKeyCommand).rejects(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    await assert.rejects(keys.dataKey(), DependencyUnavailableError);
    await assert.rejects(keys.unwrap(randomBytes(8), { provider: 'local', key_id: 'x' }), UnreadablePayloadError);
    kms.restore();
  });
});
