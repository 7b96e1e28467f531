import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { DependencyUnavailableError, ReadLimitExceededError, UnreadablePayloadError } from '#shared/errors';
import { withReadAllowance } from '#shared/read-allowance';
import { open, parseEnvelope, seal } from '#shared/offchain/envelope';
import { KmsKeyProvider, LocalKeyProvider } from '#shared/offchain/key-providers';
import { createOffchainStore, createSealer, OUTSIDE_SCOPE } from '#shared/offchain/offchain';
import { createIdentityDocument, openIdentityDocumentSealed } from '#shared/admin/identity';
import { createAdmin } from '#shared/admin/admin';
import type { AdminRepository } from '#shared/admin/repository';

const KEK = { provider: 'local', key_id: 'local:test' };

describe('Envelope (AES-256-GCM)', () => {
  it('round-trips, and carries the algorithm, format version, scope and wrapped key', () => {
    const key = randomBytes(32);
    const envelope = seal(Buffer.from('{"secret":"value"}'), key, Buffer.from('wrapped'), KEK, 'chain:orders');
    assert.equal(envelope.alg, 'AES-256-GCM');
    assert.equal(envelope.version, 2);
    assert.equal(envelope.scope, 'chain:orders');
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

  it('binds the scope: an envelope whose scope was changed (to be read in another chain, collection or organization) does not open', () => {
    const key = randomBytes(32);
    const envelope = seal(Buffer.from('{"price":"42.50 EUR"}'), key, Buffer.alloc(1), KEK, 'collection:supply/prices');
    assert.equal(open(envelope, key).toString(), '{"price":"42.50 EUR"}');
    for (const scope of ['public', 'chain:plain', 'org:globex', 'collection:supply/other'])
      assert.throws(() => open({ ...envelope, scope }, key), UnreadablePayloadError, scope);
    // Nor by passing it off as an envelope from before scopes.
    const { scope: _, ...unscoped } = envelope;
    assert.throws(() => open({ ...unscoped, version: 1 }, key), UnreadablePayloadError);
    assert.throws(() => parseEnvelope(Buffer.from(JSON.stringify(unscoped))), UnreadablePayloadError, 'version 2 without a scope is no envelope');
  });

  it('still opens an envelope written before scopes (version 1), and writes one only when no scope is given', () => {
    const key = randomBytes(32);
    const old = seal(Buffer.from('"v1"'), key, Buffer.alloc(1), KEK);
    assert.equal(old.version, 1);
    assert.equal('scope' in old, false);
    assert.equal(open(parseEnvelope(Buffer.from(JSON.stringify(old))), key).toString(), '"v1"');
  });

  it('refuses objects that are not envelopes', () => {
    assert.throws(() => parseEnvelope(Buffer.from('not json')), UnreadablePayloadError);
    assert.throws(() => parseEnvelope(Buffer.from('{"format":"other"}')), UnreadablePayloadError);
  });
});

describe("docs/api.md's decrypt.mjs, as printed", () => {
  it('opens an envelope the service sealed, with the local master key, and fails on another scope', async () => {
    const api = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    const code = /```js\n(\/\/ decrypt\.mjs:[\s\S]*?)```/.exec(api)?.[1];
    assert.ok(code, 'api.md shows decrypt.mjs');
    const outputs = new URL('../../test-output/', import.meta.url).pathname;
    mkdirSync(outputs, { recursive: true });
    const dir = mkdtempSync(join(outputs, 'decrypt-'));
    try {
      const keys = LocalKeyProvider.fromFile(join(dir, 'master.key'), { create: true });
      const store = createOffchainStore({
        ipfs: {
          add: async (bytes) => {
            writeFileSync(join(dir, 'envelope.json'), bytes);
            return 'QmStored';
          },
          cat: async () => Buffer.alloc(0),
          ping: async () => {},
          remove: async () => true,
        },
        keys,
      });
      await store.put({ price: '42.50 EUR' }, 'collection:supply/prices');
      // Beside the repository's node_modules (canonicalize), as a reader in a clone runs it.
      writeFileSync(join(dir, 'decrypt.mjs'), code);
      const run = (envelope: string) =>
        spawnSync(process.execPath, [join(dir, 'decrypt.mjs'), envelope, join(dir, 'master.key')], { encoding: 'utf8', cwd: dir });
      const opened = run(join(dir, 'envelope.json'));
      assert.equal(opened.status, 0, opened.stderr);
      assert.deepEqual(JSON.parse(opened.stdout), { price: '42.50 EUR' });
      // The scope is in both additional data: the same envelope claiming another scope does not open.
      const moved = { ...JSON.parse(readFileSync(join(dir, 'envelope.json'), 'utf8')), scope: 'org:globex' };
      writeFileSync(join(dir, 'moved.json'), JSON.stringify(moved));
      assert.notEqual(run(join(dir, 'moved.json')).status, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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
    const key = await first.dataKey('chain:orders');
    const second = LocalKeyProvider.fromFile(file, { create: false });
    assert.deepEqual(await second.unwrap(key.wrapped, key.kek, 'chain:orders'), key.plaintext);
    assert.notDeepEqual((await first.dataKey('chain:orders')).plaintext, key.plaintext, 'a fresh data key each time');
  });

  it('binds the scope into the wrapping: a data key wrapped for one scope does not unwrap for another, nor for none', async () => {
    const keys = LocalKeyProvider.fromFile(file, { create: true });
    const key = await keys.dataKey('org:acme');
    await assert.rejects(keys.unwrap(key.wrapped, key.kek, 'org:globex'), UnreadablePayloadError);
    await assert.rejects(keys.unwrap(key.wrapped, key.kek), UnreadablePayloadError);
    // A key wrapped before scopes (a data subject's) unwraps with none.
    const subject = await keys.freshDataKey();
    assert.deepEqual(await keys.unwrap(subject.wrapped, subject.kek), subject.plaintext);
  });

  it('refuses a key wrapped under another master key, saying so', async () => {
    const other = join(dir, 'other.key');
    const foreign = await LocalKeyProvider.fromFile(other, { create: true }).dataKey('public');
    await assert.rejects(LocalKeyProvider.fromFile(file, { create: false }).unwrap(foreign.wrapped, foreign.kek, 'public'), UnreadablePayloadError);
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

  it('asks KMS for a data key once per lifetime and scope, with the scope as encryption context, then again', async () => {
    let t = 0;
    const { kms, keys } = provider(() => t);
    const a = await keys.dataKey('chain:orders');
    const b = await keys.dataKey('chain:orders');
    assert.deepEqual(a.plaintext, plaintext);
    assert.equal(a.kek.provider, 'aws-kms');
    assert.equal(b, a);
    assert.equal(kms.commandCalls(GenerateDataKeyCommand).length, 1);
    assert.deepEqual(kms.commandCalls(GenerateDataKeyCommand)[0]!.args[0].input, {
      KeyId: 'alias/ledger',
      KeySpec: 'AES_256',
      EncryptionContext: { 'verifiable-ledger:scope': 'chain:orders' },
    });
    // Another scope never shares a data key: its own GenerateDataKey, its own context.
    assert.notEqual(await keys.dataKey('org:acme'), a);
    assert.deepEqual(kms.commandCalls(GenerateDataKeyCommand)[1]!.args[0].input.EncryptionContext, { 'verifiable-ledger:scope': 'org:acme' });
    t = 60_001;
    await keys.dataKey('chain:orders');
    assert.equal(kms.commandCalls(GenerateDataKeyCommand).length, 3);
    kms.restore();
  });

  it("never hands out a data subject's key again: each fresh key is its own GenerateDataKey, not the payload key in use", async () => {
    const { kms, keys } = provider(() => 0);
    const payload = await keys.dataKey('public');
    const a = await keys.freshDataKey();
    const b = await keys.freshDataKey();
    assert.notEqual(a, payload);
    assert.notEqual(b, a);
    assert.equal(kms.commandCalls(GenerateDataKeyCommand).length, 3, 'one call per fresh key, none reused');
    assert.equal(await keys.dataKey('public'), payload, 'payload keys are still reused for their lifetime');
    kms.restore();
  });

  it('bounds how many payloads one data key encrypts', async () => {
    const { kms, keys } = provider(() => 0, 3);
    for (let i = 0; i < 7; i += 1) await keys.dataKey('public');
    assert.equal(kms.commandCalls(GenerateDataKeyCommand).length, 3);
    kms.restore();
  });

  it('unwraps with Decrypt and the scope as encryption context, cached for the lifetime and that scope only', async () => {
    let t = 0;
    const { kms, keys } = provider(() => t);
    const other = randomBytes(64);
    assert.deepEqual(await keys.unwrap(other, { provider: 'aws-kms', key_id: 'k' }, 'org:acme'), plaintext);
    await keys.unwrap(other, { provider: 'aws-kms', key_id: 'k' }, 'org:acme');
    assert.equal(kms.commandCalls(DecryptCommand).length, 1);
    assert.deepEqual(kms.commandCalls(DecryptCommand)[0]!.args[0].input.EncryptionContext, { 'verifiable-ledger:scope': 'org:acme' });
    // The same wrapped key asked for in another scope is KMS's to refuse: never answered from the cache.
    await keys.unwrap(other, { provider: 'aws-kms', key_id: 'k' }, 'org:globex');
    assert.equal(kms.commandCalls(DecryptCommand).length, 2);
    assert.deepEqual(kms.commandCalls(DecryptCommand)[1]!.args[0].input.EncryptionContext, { 'verifiable-ledger:scope': 'org:globex' });
    await keys.unwrap(other, { provider: 'aws-kms', key_id: 'k' });
    assert.equal(kms.commandCalls(DecryptCommand).length, 3);
    assert.equal(kms.commandCalls(DecryptCommand)[2]!.args[0].input.EncryptionContext, undefined, 'a key wrapped before scopes: no context');
    t = 120_000;
    await keys.unwrap(other, { provider: 'aws-kms', key_id: 'k' }, 'org:acme');
    assert.equal(kms.commandCalls(DecryptCommand).length, 4);
    kms.restore();
  });

  it('keeps the 1,000 keys unwrapped last: a key in use stays cached while a thousand others pass (red team: the cache was emptied whole)', async () => {
    const { kms, keys } = provider(() => 0);
    const kek = { provider: 'aws-kms' as const, key_id: 'k' };
    const busy = randomBytes(64);
    await keys.unwrap(busy, kek, 'chain:busy');
    for (let i = 0; i < 1_500; i += 1) {
      await keys.unwrap(randomBytes(64), kek, `chain:c${i}`);
      if (i % 100 === 0) await keys.unwrap(busy, kek, 'chain:busy');
    }
    const busyCalls = kms.commandCalls(DecryptCommand).filter((c) => c.args[0].input.EncryptionContext?.['verifiable-ledger:scope'] === 'chain:busy');
    assert.equal(busyCalls.length, 1, 'the key in use was never unwrapped again');
    assert.equal(kms.commandCalls(DecryptCommand).length, 1_501);
    kms.restore();
  });

  it('turns a refused key into an unreadable payload, and an unreachable KMS into a 503', async () => {
    const kms = mockClient(KMSClient);
    const keys = new KmsKeyProvider({ client: new KMSClient({ region: 'us-east-1' }), keyId: 'k' });
    kms.on(DecryptCommand).rejects(Object.assign(new Error('bad'), { name: 'InvalidCiphertextException' }));
    await assert.rejects(keys.unwrap(randomBytes(8), { provider: 'aws-kms', key_id: 'k' }), UnreadablePayloadError);
    kms.on(GenerateDataKeyCommand).rejects(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    await assert.rejects(keys.dataKey('public'), DependencyUnavailableError);
    await assert.rejects(keys.unwrap(randomBytes(8), { provider: 'local', key_id: 'x' }), UnreadablePayloadError);
    kms.restore();
  });
});

describe("Tokens: the service's own state handed to a caller (a trace's cursor)", () => {
  const context = '{"c":null,"e":"ship-7","use":"trace-cursor"}';

  it('round-trips under the local master key, bound to its context, and refuses a changed byte or another master key', async () => {
    const sealer = createSealer({ keys: new LocalKeyProvider(randomBytes(32)) });
    const token = await sealer.sealToken('0001733500000000#open-trace#000000000002', context);
    assert.match(token, /^[A-Za-z0-9_-]+$/);
    assert.ok(token.length < 250, `compact: ${token.length} characters`);
    assert.equal(await sealer.unsealToken(token, context), '0001733500000000#open-trace#000000000002');
    await assert.rejects(sealer.unsealToken(token, context.replace('ship-7', 'ship-8')), UnreadablePayloadError, 'another entity');
    const bytes = Buffer.from(token, 'base64url');
    bytes[bytes.length - 1]! ^= 1;
    await assert.rejects(sealer.unsealToken(bytes.toString('base64url'), context), UnreadablePayloadError);
    for (const bad of ['', 'AQ', 'not a token!', Buffer.from([1, 0, 200]).toString('base64url')])
      await assert.rejects(sealer.unsealToken(bad, context), UnreadablePayloadError, bad);
    await assert.rejects(createSealer({ keys: new LocalKeyProvider(randomBytes(32)) }).unsealToken(token, context), UnreadablePayloadError);
  });

  it('names no key: an envelope carries the KMS key ARN (account and region), a token does not, and opens with the configured key (red team)', async () => {
    const kms = mockClient(KMSClient);
    const plaintext = randomBytes(32);
    kms.on(GenerateDataKeyCommand).resolves({ Plaintext: plaintext, CiphertextBlob: randomBytes(184), KeyId: 'arn:aws:kms:eu-west-1:123456789012:key/k' });
    kms.on(DecryptCommand).resolves({ Plaintext: plaintext });
    const sealer = createSealer({ keys: new KmsKeyProvider({ client: new KMSClient({ region: 'eu-west-1' }), keyId: 'alias/ledger' }) });
    assert.match(await sealer.seal({ p: 1 }, 'service'), /123456789012/, 'an envelope names its key: fine in storage');
    const token = await sealer.sealToken('position', context);
    const shown = Buffer.from(token, 'base64url').toString('latin1');
    assert.doesNotMatch(shown, /arn:|123456789012|eu-west-1|alias|aws-kms|kek|key_id/);
    // Another instance (its cache empty) opens it with Decrypt under the configured key and the service scope.
    const other = createSealer({ keys: new KmsKeyProvider({ client: new KMSClient({ region: 'eu-west-1' }), keyId: 'alias/ledger' }) });
    assert.equal(await other.unsealToken(token, context), 'position');
    const decrypt = kms.commandCalls(DecryptCommand).at(-1)!.args[0].input;
    assert.equal(decrypt.KeyId, 'alias/ledger');
    assert.deepEqual(decrypt.EncryptionContext, { 'verifiable-ledger:scope': 'service' });
    kms.restore();
  });

  it('refuses, as unreadable and never a 500, a token with an empty wrapped key, one KMS cannot parse, or another spelling of a good one (red team)', async () => {
    const kms = mockClient(KMSClient);
    const plaintext = randomBytes(32);
    kms.on(GenerateDataKeyCommand).resolves({ Plaintext: plaintext, CiphertextBlob: randomBytes(184), KeyId: 'arn:aws:kms:eu-west-1:1:key/k' });
    const validation = Object.assign(new Error('1 validation error detected: ciphertextBlob'), {
      name: 'ValidationException',
      $metadata: { httpStatusCode: 400 },
    });
    kms.on(DecryptCommand).rejects(validation);
    const sealer = createSealer({ keys: new KmsKeyProvider({ client: new KMSClient({ region: 'eu-west-1' }), keyId: 'alias/ledger' }) });
    // An empty wrapped key is refused before KMS is asked.
    const empty = Buffer.concat([Buffer.from([1, 0, 0]), Buffer.alloc(40)]).toString('base64url');
    await assert.rejects(sealer.unsealToken(empty, context), UnreadablePayloadError);
    assert.equal(kms.commandCalls(DecryptCommand).length, 0);
    // KMS's own refusal of a malformed ciphertext is an unreadable token too.
    const garbage = Buffer.concat([Buffer.from([1, 0, 5]), randomBytes(5 + 40)]).toString('base64url');
    await assert.rejects(sealer.unsealToken(garbage, context), UnreadablePayloadError);
    assert.equal(kms.commandCalls(DecryptCommand).length, 1);
    kms.restore();
    // base64url's last character carries unused bits: a token answered once opens under one spelling only.
    const local = createSealer({ keys: new LocalKeyProvider(randomBytes(32)) });
    const token = await local.sealToken('p', context);
    const last = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const twins = [...last]
      .map((c) => token.slice(0, -1) + c)
      .filter((t) => t !== token && Buffer.from(t, 'base64url').equals(Buffer.from(token, 'base64url')));
    assert.ok(twins.length > 0, 'the token has other spellings to try');
    for (const twin of twins) await assert.rejects(local.unsealToken(twin, context), UnreadablePayloadError, twin);
  });
});

describe('Off-chain store: a payload opens only for a caller entitled to its scope', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-offchain-'));
  const keys = LocalKeyProvider.fromFile(join(dir, 'master.key'), { create: true });
  const objects = new Map<string, Buffer>();
  const ipfs = {
    add: async (bytes: Uint8Array) => {
      const cid = `bafy${createHash('sha256')
        .update(bytes)
        .digest('hex')
        .slice(0, 52)
        .replace(/[0189]/g, 'a')}`;
      objects.set(cid, Buffer.from(bytes));
      return cid;
    },
    cat: async (cid: string) => objects.get(cid) ?? Promise.reject(new UnreadablePayloadError('not found')),
    ping: async () => undefined,
    remove: async (cid: string) => objects.delete(cid),
  };
  const store = createOffchainStore({ ipfs, keys });

  it("asks the opener for the envelope's scope before it decrypts, and refuses in the same words whatever the scope", async () => {
    const stored = await store.put({ price: '42.50 EUR' }, 'collection:supply/prices');
    const asked: unknown[] = [];
    const unwrap = keys.unwrap.bind(keys);
    let unwrapped = 0;
    keys.unwrap = async (...args) => {
      unwrapped += 1;
      return unwrap(...args);
    };
    const refused = await store
      .get(stored.cid, stored.nonce, async (scope) => {
        asked.push(scope);
        return false;
      })
      .then(
        () => assert.fail('opened'),
        (error: Error) => error,
      );
    assert.ok(refused instanceof UnreadablePayloadError);
    assert.equal(refused.message, OUTSIDE_SCOPE);
    assert.ok(!refused.message.includes('supply') && !refused.message.includes('prices'), 'the scope is not named to who may not read it');
    assert.deepEqual(asked, ['collection:supply/prices']);
    assert.equal(unwrapped, 0, 'no data key was unwrapped for a refused caller');
    // The scope is asked before the nonce: to a caller outside it, a wrong nonce tells nothing either (red team).
    const wrongNonce = await store.get(stored.cid, '0'.repeat(24), async () => false).catch((error: Error) => error);
    assert.equal((wrongNonce as Error).message, OUTSIDE_SCOPE);
    assert.deepEqual(await store.get(stored.cid, stored.nonce, async (scope) => scope === 'collection:supply/prices'), { price: '42.50 EUR' });
    const sealed = await store.seal('inline', 'chain:orders');
    await assert.rejects(
      store.unseal(sealed, async () => false),
      UnreadablePayloadError,
    );
    assert.equal(await store.unseal(sealed, async (scope) => scope === 'chain:orders'), 'inline');
    keys.unwrap = unwrap;
  });

  it("refuses a payload over the request's read allowance as out of scope to who may not read it (red team)", async () => {
    // A batch that spent its allowance on its own payloads first learnt, from the limit's refusal, that another
    // scope's payload existed and about how large it was: a CID nobody stored answers the generic refusal.
    const stored = await store.put({ blob: 'x'.repeat(200_000) }, 'chain:secret');
    const outsider = await withReadAllowance(10, () => store.get(stored.cid, stored.nonce, async () => false)).catch((error: Error) => error);
    assert.ok(outsider instanceof UnreadablePayloadError, String(outsider));
    assert.equal((outsider as Error).message, OUTSIDE_SCOPE);
    const reader = await withReadAllowance(10, () => store.get(stored.cid, stored.nonce, async () => true)).catch((error: Error) => error);
    assert.ok(reader instanceof ReadLimitExceededError, `its reader is told the limit: ${String(reader)}`);
  });

  it('gives an envelope from before scopes the scope null, for the opener to decide', async () => {
    const key = await keys.freshDataKey();
    const old = seal(Buffer.from('"old"'), key.plaintext, key.wrapped, key.kek);
    const cid = await ipfs.add(Buffer.from(JSON.stringify(old)));
    const asked: unknown[] = [];
    assert.equal(
      await store.get(cid, old.nonce, async (scope) => {
        asked.push(scope);
        return true;
      }),
      'old',
    );
    assert.deepEqual(asked, [null]);
  });

  it('cleans up', () => rmSync(dir, { recursive: true, force: true }));
});

/** An identity document as one made before 2026-12-07 is: its key sealed under `service`. */
async function sealedAsBefore(document: string, sealer: ReturnType<typeof createSealer>): Promise<string> {
  const parsed = JSON.parse(document);
  const { pkcs8 } = (await sealer.unseal(parsed.private_key, async () => true)) as { pkcs8: string };
  return `${JSON.stringify({ ...parsed, private_key: await sealer.seal({ pkcs8 }, 'service') })}\n`;
}

/** A sealer over a master key of its own, and a node identity made with it, for `run`; its folder removed after. */
async function withIdentity(run: (sealer: ReturnType<typeof createSealer>, made: Awaited<ReturnType<typeof createIdentityDocument>>) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), 'identity-scope-'));
  try {
    const sealer = createSealer({ keys: LocalKeyProvider.fromFile(join(dir, 'master.key'), { create: true }) });
    await run(sealer, await createIdentityDocument(sealer));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the node identity under a KMS scope of its own', () => {
  it("seals a new identity's key under `identity`, and seals one made under `service` again under it, the same key", () =>
    withIdentity(async (sealer, made) => {
      const opened = await openIdentityDocumentSealed(made.document, sealer, sealer);
      assert.equal(opened.sealedAs, 'identity', 'a new identity: the roles that do not sign are denied its scope');
      assert.equal(opened.resealed, undefined);
      assert.equal(opened.identity.nodeId, made.identity.nodeId);
      // One made before: its key under `service`, the scope every function may unwrap (cursor tokens).
      const document = JSON.parse(made.document);
      const old = await openIdentityDocumentSealed(await sealedAsBefore(made.document, sealer), sealer, sealer);
      assert.equal(old.sealedAs, 'service');
      assert.equal(old.identity.publicKey, made.identity.publicKey, 'it still opens');
      const again = await openIdentityDocumentSealed(old.resealed!, sealer);
      assert.equal(again.sealedAs, 'identity');
      assert.equal(again.identity.publicKey, made.identity.publicKey, 'the same key, sealed anew');
      assert.equal(JSON.parse(old.resealed!).node_id, document.node_id);
    }));
});

describe("the node identity kept in the registry (the cloud's store)", () => {
  it('is sealed again under its own scope by the first signer that opens one made before, once, and keeps its key', () =>
    withIdentity(async (sealer, made) => {
      let stored = await sealedAsBefore(made.document, sealer);
      const replaced: string[] = [];
      const repository = {
        getIdentity: async () => stored,
        putIdentity: async () => false,
        replaceIdentity: async (current: string, next: string) => {
          if (current !== stored) return false;
          replaced.push(next);
          stored = next;
          return true;
        },
      } as unknown as AdminRepository;
      const admin = () => createAdmin({ repository, sealer, identity: { kind: 'registry' } } as unknown as Parameters<typeof createAdmin>[0]);
      assert.equal((await admin().identity()).publicKey, made.identity.publicKey);
      assert.equal(replaced.length, 1, 'sealed again once');
      assert.equal((await openIdentityDocumentSealed(stored, sealer)).sealedAs, 'identity');
      assert.equal((await admin().identity()).publicKey, made.identity.publicKey, 'the same node after');
      assert.equal(replaced.length, 1, 'not again once it is under its scope');
    }));
});
