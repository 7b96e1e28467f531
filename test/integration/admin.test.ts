/**
 * The admin group over HTTP against the running local stack: node identity, status, secure events, and
 * peers pinging each other across two gateways. The manual's client snippets (docs/api.md) are run as written.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, randomBytes, randomUUID, sign, verify } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import canonicalize from 'canonicalize';
import { freePort } from '#infra/local/ports';
import { LocalKeyProvider } from '#shared/offchain/key-providers';
import { createDynamoClient } from '#shared/storage/client';
import { migrateNoncesKept } from '#shared/storage/migrations';
import { createSealer } from '#shared/offchain/offchain';
import { assertError } from '#test/support/contract';
import { call, removeDir, sharedStack, startStack, stopAndRemove, tempDataDir, type Stack } from '#test/support/stack';

const ROOT = new URL('../../', import.meta.url).pathname;
const ADMIN_KEY = `peer-admin-${randomBytes(16).toString('hex')}`;

function identityInit(dataDir: string): string {
  const out = spawnSync(process.execPath, ['bin/run.mjs', 'infra/local/identity.ts', 'init'], {
    cwd: ROOT,
    env: { ...process.env, SVC_DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  assert.equal(out.status, 0, out.stderr);
  return out.stdout;
}

/** Runs a ```js block of the manual (docs/api.md) that starts with `// <name>` as a script in the repo. */
function runReadmeSnippet(name: string, args: string[]): string {
  const readme = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8');
  const block = new RegExp(`\`\`\`js\\n(// ${name.replace('.', '\\.')}[\\s\\S]*?)\`\`\``).exec(readme)?.[1];
  assert.ok(block, `docs/api.md has the ${name} snippet`);
  const file = join(ROOT, `.snippet-${randomUUID()}.mjs`);
  writeFileSync(file, block);
  try {
    const out = spawnSync(process.execPath, [file, ...args], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(out.status, 0, out.stderr);
    return out.stdout;
  } finally {
    rmSync(file, { force: true });
  }
}

function orgKeys() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { privateKey, hex: publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex') };
}

describe('Node identity', () => {
  const dataDir = tempDataDir('identity');
  let stack: Stack;
  let a: string;
  before(async () => {
    identityInit(dataDir);
    stack = await startStack({ dataDir });
    a = `${stack.url}/api/admin`;
  });
  after(async () => {
    await stack?.stop();
    removeDir(dataDir);
  });

  it('npm run identity -- show prints the key /identity publishes; on another data dir it says which, and makes nothing there (newcomer pass)', async () => {
    const show = (dir: string) =>
      spawnSync(process.execPath, ['bin/run.mjs', 'infra/local/identity.ts', 'show'], {
        cwd: ROOT,
        env: { ...process.env, SVC_DATA_DIR: dir },
        encoding: 'utf8',
      });
    const shown = show(dataDir);
    assert.equal(shown.status, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`Public key: ${(await call(a, 'GET', '/identity')).body.public_key}`));
    // Run with another data dir than npm start's (a default .data), it had made a master key there and then found no identity.
    const elsewhere = tempDataDir('identity-elsewhere');
    try {
      const missing = show(elsewhere);
      assert.equal(missing.status, 1);
      assert.match(missing.stderr, /No identity at .*\(SVC_DATA_DIR .*identity-elsewhere.*same SVC_DATA_DIR as npm start\)/);
      assert.ok(!existsSync(join(elsewhere, 'master.key')), 'show makes no master key');
    } finally {
      removeDir(elsewhere);
    }
  });

  it('signs a challenge with the key /identity publishes; another challenge does not verify', async () => {
    const identity = (await call(a, 'GET', '/identity')).body;
    assert.match(identity.node_id, /^node-[0-9a-f]{16}$/);
    assert.equal(identity.algorithm, 'ed25519');
    const challenge = randomBytes(48).toString('hex');
    const res = await call(a, 'POST', '/verify-identity', { challenge });
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'success');
    assert.equal(res.body.challenge, challenge);
    assert.equal(res.body.node_id, identity.node_id);
    const key = createPublicKey({
      key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(identity.public_key, 'hex')]),
      format: 'der',
      type: 'spki',
    });
    assert.ok(verify(null, Buffer.from(challenge, 'hex'), key, Buffer.from(res.body.signature, 'hex')));
    assert.ok(!verify(null, Buffer.from(`${challenge}00`, 'hex'), key, Buffer.from(res.body.signature, 'hex')));
  });

  it('answers 422 to a challenge that is not 1 to 1024 bytes of hex', async () => {
    for (const challenge of ['', 'abc', 'zz', 'ab'.repeat(1025)]) {
      assertError(await call(a, 'POST', '/verify-identity', { challenge }), 422);
    }
    assertError(await call(a, 'POST', '/verify-identity', {}), 422);
    assert.equal((await call(a, 'POST', '/verify-identity', { challenge: 'ab'.repeat(1024) })).status, 200);
  });

  it("verifies with the manual's five lines of Node", () => {
    assert.equal(runReadmeSnippet('verify-node.mjs', [stack.url]).trim(), 'verified');
  });

  it('keeps its identity across a restart, and its file holds no raw private key', async () => {
    const before = (await call(a, 'GET', '/identity')).body;
    await stack.stop();
    stack = await startStack({ dataDir });
    a = `${stack.url}/api/admin`;
    assert.deepEqual((await call(a, 'GET', '/identity')).body, before);
    const file = readFileSync(join(dataDir, 'identity.json'), 'utf8');
    const sealer = createSealer({ keys: LocalKeyProvider.fromFile(join(dataDir, 'master.key'), { create: false }) });
    // Sealed under the identity's own scope, which only the functions that sign may unwrap in the cloud.
    const scopes: (string | null)[] = [];
    const opener = async (scope: string | null) => {
      scopes.push(scope);
      return scope === 'identity';
    };
    const { pkcs8 } = (await sealer.unseal(JSON.parse(file).private_key, opener as never)) as { pkcs8: string };
    assert.deepEqual(scopes, ['identity']);
    const seed = Buffer.from(pkcs8, 'base64').subarray(-32);
    for (const form of [pkcs8, seed.toString('hex'), seed.toString('base64'), seed.toString('base64url')]) {
      assert.ok(!file.includes(form), 'the raw private key is in the identity file');
    }
    assert.ok(!file.includes('PRIVATE KEY'));
  });
});

describe('A fresh data directory', () => {
  const started: Stack[] = [];
  const start = async (options: Parameters<typeof startStack>[0]) => {
    const stack = await startStack(options);
    started.push(stack);
    return stack;
  };
  after(async () => {
    for (const stack of started) await stack.stop();
  });

  it('makes the node identity at first start and keeps it: the log key, node id and origin survive a restart', async () => {
    const dataDir = tempDataDir('firstid');
    try {
      const first = await start({ dataDir });
      const id1 = (await call(first.url, 'GET', '/api/admin/identity')).body;
      const vkey1 = await (await fetch(`${first.url}/tlog/vkey`)).text();
      assert.match(first.output(), new RegExp(`Created the node identity ${id1.node_id} in \\S+identity\\.json`));
      assert.doesNotMatch(first.output(), /TEMPORARY|temporary keys/);
      assert.ok(existsSync(join(dataDir, 'identity.json')));
      await first.stop();
      const second = await start({ dataDir });
      const id2 = (await call(second.url, 'GET', '/api/admin/identity')).body;
      const vkey2 = await (await fetch(`${second.url}/tlog/vkey`)).text();
      assert.doesNotMatch(second.output(), /Created the node identity/);
      assert.match(second.output(), new RegExp(`Node identity: ${id1.node_id} `));
      await second.stop();
      assert.deepEqual(id2, id1);
      assert.equal(vkey2, vkey1);
      assert.doesNotMatch(id1.node_id, /temporary/);
    } finally {
      removeDir(dataDir);
    }
  });

  it('signs with keys for one run only when SVC_TEMPORARY_IDENTITY asks, says so in one line, and writes no identity file', async () => {
    const dataDir = tempDataDir('noid');
    try {
      const first = await start({ dataDir, env: { SVC_TEMPORARY_IDENTITY: 'true' } });
      const id1 = (await call(first.url, 'GET', '/api/admin/identity')).body.node_id;
      await call(first.url, 'GET', '/tlog/vkey');
      assert.deepEqual(
        first
          .output()
          .split('\n')
          .filter((line) => /temporary/i.test(line))
          .map((line) => line.slice(0, 24)),
        ['Node identity: TEMPORARY'],
        'one line says so',
      );
      await first.stop();
      const second = await start({ dataDir, env: { SVC_TEMPORARY_IDENTITY: 'true' } });
      const id2 = (await call(second.url, 'GET', '/api/admin/identity')).body.node_id;
      await second.stop();
      assert.match(id1, /-temporary$/);
      assert.notEqual(id1, id2);
      assert.ok(!existsSync(join(dataDir, 'identity.json')));
    } finally {
      removeDir(dataDir);
    }
  });
});

describe('Identity in the registry table (the cloud stack)', () => {
  it('is one node across instances: made once, shared by every process over the same tables', async () => {
    const first = await startStack({ env: { SVC_IDENTITY_STORE: 'registry' } });
    // Same tables and the same key-encryption key, as two Lambda instances of one stack have.
    const second = await startStack({
      env: { SVC_IDENTITY_STORE: 'registry', ...first.dataEnv, SVC_MASTER_KEY_FILE: join(first.dataDir, 'master.key') },
    });
    try {
      const [a, b] = await Promise.all([first, second].map(async (s) => (await call(s.url, 'GET', '/api/admin/identity')).body));
      assert.match(a.node_id, /^node-[0-9a-f]{16}$/);
      assert.deepEqual(b, a);
      const challenge = 'c0ffee';
      const signed = await call(second.url, 'POST', '/api/admin/verify-identity', { challenge });
      const key = createPublicKey({
        key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(a.public_key, 'hex')]),
        format: 'der',
        type: 'spki',
      });
      assert.ok(verify(null, Buffer.from(challenge, 'hex'), key, Buffer.from(signed.body.signature, 'hex')));
      assert.doesNotMatch(first.output(), /TEMPORARY/);
    } finally {
      await second.stop();
      await first.stop();
      removeDir(first.dataDir);
      removeDir(second.dataDir);
    }
  });
});

describe('Status', () => {
  it('counts Sub-Chains as they are created, grows its uptime, and reports the license', async () => {
    const stack = await startStack({ env: { SVC_LICENSE_KEY: 'lic-123' } });
    try {
      const s0 = (await call(stack.url, 'GET', '/api/admin/status')).body;
      assert.deepEqual(
        { ...s0, version: undefined },
        { status: 'active', version: undefined, chains_active: 0, license_active: true, uptime: '0s', uptime_seconds: 0 },
      );
      await call(stack.url, 'POST', '/api/v1/chains/one/create');
      await call(stack.url, 'POST', '/api/v1/chains/two/create');
      const s1 = (await call(stack.url, 'GET', '/api/admin/status')).body;
      assert.equal(s1.chains_active, 2);
      await new Promise((r) => setTimeout(r, 2_100));
      const s2 = (await call(stack.url, 'GET', '/api/admin/status')).body;
      assert.ok(s2.uptime_seconds >= s1.uptime_seconds + 2, `${s1.uptime_seconds} → ${s2.uptime_seconds}`);
      assert.match(s2.uptime, /^(\d+d )?(\d+h )?(\d+m )?\d+s$/);
      assert.ok(!JSON.stringify(s2).includes('lic-123'));
    } finally {
      await stack.stop();
      removeDir(stack.dataDir);
    }
  });
});

describe('Secure events', () => {
  let stack: Stack;
  let base: string;
  const org = orgKeys();
  before(async () => {
    stack = await sharedStack();
    base = stack.url;
    await call(base, 'POST', '/api/v1/chains/gates/create');
    await call(base, 'POST', '/api/business/organizations', { org_id: 'port-authority', name: 'Port Authority', public_key: org.hex });
    await call(base, 'POST', '/api/business/organizations', { org_id: 'keyless', name: 'No Key' });
  });
  after(() => stopAndRemove(stack));

  function signed(chain: string, overrides: Record<string, unknown> = {}) {
    const event = { entity_id: 'ship-9', event_type: 'cleared', details: { berth: 12 }, nonce: `n-${randomUUID()}`, ...overrides };
    const message = canonicalize({ chain_name: chain, entity_id: event.entity_id, event_type: event.event_type, details: event.details, nonce: event.nonce })!;
    return { ...event, org_id: 'port-authority', signature: sign(null, Buffer.from(message), org.privateKey).toString('hex') };
  }
  const events = async () => (await call(base, 'GET', '/api/v1/chains/gates/stats')).body.total_events as number;

  it('appends a correctly signed event and answers who signed it', async () => {
    const body = signed('gates');
    const res = await call(base, 'POST', '/api/admin/chains/gates/secure-events', body);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.success, true);
    assert.equal(res.body.verified, true);
    assert.equal(res.body.signer, 'port-authority');
    const block = await call(base, 'GET', `/api/v1/chains/gates/blocks/${res.body.event_id.split('_')[1]}`);
    assert.deepEqual(block.body.events[0].details, { berth: 12 });
    assert.equal(block.body.events[0].event_type, 'cleared');
  });

  it('records who signed it in the block, so that anyone can check it again and tell it from a copy a writer appends (red team)', async () => {
    const body = signed('gates');
    const res = await call(base, 'POST', '/api/admin/chains/gates/secure-events', body);
    assert.equal(res.status, 200, res.text);
    const index = Number(res.body.event_id.split('_')[1]);
    const event = (await call(base, 'GET', `/api/v1/chains/gates/blocks/${index}`)).body.events[0];
    assert.deepEqual(event.signed, { org_id: 'port-authority', public_key: org.hex, nonce: body.nonce, signature: body.signature });
    // Checked again from the block alone, with the key it names: the bytes the organization signed.
    const message = canonicalize({
      chain_name: 'gates',
      entity_id: event.entity_id,
      event_type: event.event_type,
      details: event.details,
      nonce: event.signed.nonce,
    })!;
    const key = createPublicKey({
      key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(event.signed.public_key, 'hex')]),
      format: 'der',
      type: 'spki',
    });
    assert.ok(verify(null, Buffer.from(message), key, Buffer.from(event.signed.signature, 'hex')));
    // A writer's copy of the same event is not signed, and a `signed` it sends is not recorded.
    const copy = await call(base, 'POST', '/api/v1/chains/gates/events', {
      entity_id: event.entity_id,
      event_type: event.event_type,
      details: event.details,
      signed: event.signed,
    });
    assert.equal(copy.status, 200, copy.text);
    const copied = (await call(base, 'GET', `/api/v1/chains/gates/blocks/${copy.body.event_id.split('_')[1]}`)).body.events[0];
    assert.equal(copied.signed, undefined);
    // A trace answers it as the block does.
    const trace = await call(base, 'GET', `/api/v1/entities/${event.entity_id}/trace?chain_name=gates&limit=100`);
    assert.deepEqual(trace.body.events.find((e: { event_id: string }) => e.event_id === event.event_id)?.signed, event.signed);
    // The node's audit checks the signature too, and GraphQL answers it.
    assert.equal((await call(base, 'GET', '/api/v1/chains/gates/verify')).body.valid, true);
    const gql = await call(base, 'POST', '/graphql', {
      query: `{ block(chainName: "gates", index: ${index}) { events { signed { orgId publicKey nonce signature } } } }`,
    });
    assert.deepEqual(gql.body.data.block.events[0].signed, { orgId: 'port-authority', publicKey: org.hex, nonce: body.nonce, signature: body.signature });
  });

  it('refuses a flipped signature bit with 422 and appends nothing', async () => {
    const before = await events();
    const body = signed('gates');
    const bytes = Buffer.from(body.signature, 'hex');
    bytes[5]! ^= 0x01;
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', { ...body, signature: bytes.toString('hex') }), 422, /signature/);
    const tampered = signed('gates');
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', { ...tampered, details: { berth: 13 } }), 422, /signature/);
    const elsewhere = signed('gates');
    await call(base, 'POST', '/api/v1/chains/gates-other/create');
    assertError(await call(base, 'POST', '/api/admin/chains/gates-other/secure-events', elsewhere), 422, /signature/);
    assert.equal(await events(), before, 'nothing was appended');
  });

  it('signs details_metadata with the event when it is sent: metadata added to a signed event is refused (red team)', async () => {
    const before = await events();
    // Signed without metadata, sent with it: the metadata had been stored unsigned beside a "verified" event.
    const added = { ...signed('gates'), details_metadata: { amount_override: 1_000_000 } };
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', added), 422, /signature/);
    assert.equal(await events(), before, 'nothing was appended');
    // Signed with it: stored as signed.
    const event = { entity_id: 'ship-9', event_type: 'cleared', details: { berth: 12 }, details_metadata: { pilot: 'r. ortiz' }, nonce: `n-${randomUUID()}` };
    const message = canonicalize({ chain_name: 'gates', ...event })!;
    const res = await call(base, 'POST', '/api/admin/chains/gates/secure-events', {
      ...event,
      org_id: 'port-authority',
      signature: sign(null, Buffer.from(message), org.privateKey).toString('hex'),
    });
    assert.equal(res.status, 200, res.text);
    const block = await call(base, 'GET', `/api/v1/chains/gates/blocks/${res.body.event_id.split('_')[1]}`);
    assert.deepEqual(block.body.events[0].details_metadata, { pilot: 'r. ortiz' });
  });

  it('takes a node_id signed with the event: good on that node only, and refused when added to a body signed without it', async () => {
    const { node_id } = (await call(base, 'GET', '/api/admin/identity')).body;
    const signedFor = (nodeId: string) => {
      const event = { entity_id: 'ship-9', event_type: 'cleared', details: { berth: 14 }, node_id: nodeId, nonce: `n-${randomUUID()}` };
      const message = canonicalize({ chain_name: 'gates', ...event })!;
      return { ...event, org_id: 'port-authority', signature: sign(null, Buffer.from(message), org.privateKey).toString('hex') };
    };
    const before = await events();
    // Signed for another node (one that registered the same organization's key): refused here, saying so.
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', signedFor('node-elsewhere')), 422, /signed for node 'node-elsewhere'/);
    // A node_id added to a body signed without one, or changed, breaks the signature.
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', { ...signed('gates'), node_id }), 422, /signature/);
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', { ...signedFor('node-elsewhere'), node_id }), 422, /signature/);
    assert.equal(await events(), before, 'nothing was appended');
    const res = await call(base, 'POST', '/api/admin/chains/gates/secure-events', signedFor(node_id));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.verified, true);
  });

  it('refuses a replayed nonce with 409', async () => {
    const body = signed('gates');
    assert.equal((await call(base, 'POST', '/api/admin/chains/gates/secure-events', body)).status, 200);
    const before = await events();
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', body), 409, /already used/);
    assert.equal(await events(), before);
  });

  it("keeps a nonce for good, and npm run migrate keeps those written before: an expired or an organization's nonce let the same signed body in again (red team)", async () => {
    const db = DynamoDBDocumentClient.from(createDynamoClient({ region: 'us-east-1', endpoint: stack.dynamoEndpoint, accessKeyId: stack.dynamoAccessKeyId }));
    try {
      const nonceItem = async (signer: string, nonce: string) =>
        (await db.send(new GetCommand({ TableName: stack.tables.registry, Key: { pk: `NONCE#${signer}`, sk: nonce }, ConsistentRead: true }))).Item;
      const fresh = signed('gates');
      assert.equal((await call(base, 'POST', '/api/admin/chains/gates/secure-events', fresh)).status, 200);
      const kept = await nonceItem(`key:${org.hex}`, fresh.nonce);
      assert.ok(kept, 'the nonce is recorded under the signing key');
      assert.equal(kept.ttl, undefined, 'with no expiry: DynamoDB would have deleted it, and the body been appended again');
      // Written as earlier versions did: one with an expiry, one in the organization's partition (before 2026-12-06).
      const [expiring, legacy] = [signed('gates'), signed('gates')];
      const past = Math.floor(Date.now() / 1000) + 60;
      await db.send(new PutCommand({ TableName: stack.tables.registry, Item: { pk: `NONCE#key:${org.hex}`, sk: expiring.nonce, ttl: past } }));
      await db.send(new PutCommand({ TableName: stack.tables.registry, Item: { pk: 'NONCE#port-authority', sk: legacy.nonce, ttl: past } }));
      await db.send(new DeleteCommand({ TableName: stack.tables.registry, Key: { pk: 'MIGRATION', sk: 'nonces-kept' } }));
      const report = await migrateNoncesKept(db, stack.tables.registry);
      assert.ok(report.migrated >= 2, JSON.stringify(report));
      assert.equal((await nonceItem(`key:${org.hex}`, expiring.nonce))?.ttl, undefined, 'its expiry removed');
      assert.ok(await nonceItem(`key:${org.hex}`, legacy.nonce), "the organization's nonce written under its key");
      const before = await events();
      for (const body of [expiring, legacy]) {
        assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', body), 409, /already used/);
      }
      assert.equal(await events(), before, 'neither appended again');
      assert.deepEqual(await migrateNoncesKept(db, stack.tables.registry), { name: 'nonces-kept', migrated: 0 }, 'once');
    } finally {
      db.destroy();
    }
  });

  it("appends one signature once, whichever organization a relay names with it; a public key is one organization's (red team)", async () => {
    // The red team registered another organization's published key for its own, then relayed one signed event as
    // each of the two: the nonces were kept per organization, and the event landed twice.
    assertError(
      await call(base, 'POST', '/api/business/organizations', { org_id: 'port-copy', name: 'Copy', public_key: org.hex }),
      409,
      /Another organization is registered with this public_key/,
    );
    assert.equal((await call(base, 'GET', '/api/business/organizations/port-copy')).status, 404, 'nothing registered');
    // Two organizations that share a key from before the rule (written as the registry held them then).
    const db = DynamoDBDocumentClient.from(createDynamoClient({ region: 'us-east-1', endpoint: stack.dynamoEndpoint, accessKeyId: stack.dynamoAccessKeyId }));
    await db.send(
      new PutCommand({
        TableName: stack.tables.registry,
        Item: {
          pk: 'ORGS',
          sk: 'port-legacy',
          org_id: 'port-legacy',
          name: 'Legacy',
          msp_id: 'port-legacyMSP',
          public_key: org.hex,
          created_at: new Date().toISOString(),
        },
      }),
    );
    db.destroy();
    const before = await events();
    const body = signed('gates');
    assert.equal((await call(base, 'POST', '/api/admin/chains/gates/secure-events', body)).status, 200);
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', { ...body, org_id: 'port-legacy' }), 409, /already used/);
    assert.equal(await events(), before + 1, 'the signed event is on the chain once');
  });

  it('refuses an unknown organization, one with no key, and malformed input with 422; an unknown chain with 404', async () => {
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', { ...signed('gates'), org_id: 'nobody' }), 422, /Unknown organization/);
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', { ...signed('gates'), org_id: 'keyless' }), 422, /no public key/);
    assertError(await call(base, 'POST', '/api/admin/chains/gates/secure-events', { ...signed('gates'), signature: 'abc' }), 422);
    const ghost = signed('gates-ghost');
    assertError(await call(base, 'POST', '/api/admin/chains/gates-ghost/secure-events', ghost), 404);
    await call(base, 'POST', '/api/v1/chains/gates-ghost/create');
    assert.equal(
      (await call(base, 'POST', '/api/admin/chains/gates-ghost/secure-events', ghost)).status,
      200,
      'a nonce whose event was not appended can be used again',
    );
  });

  it('signs and sends an event as the manual shows', () => {
    const out = runReadmeSnippet('sign-event.mjs', [base, 'gates']);
    assert.match(out, /^200 /);
    assert.match(out, /"verified":true/);
  });
});

describe('Peers', () => {
  let one: Stack;
  let two: Stack;
  before(async () => {
    const [d1, d2] = [tempDataDir('peer1'), tempDataDir('peer2')];
    identityInit(d1);
    identityInit(d2);
    one = await startStack({ dataDir: d1 });
    // The second node requires keys: the first reaches its admin routes with the key registered for it.
    two = await startStack({ dataDir: d2, env: { SVC_AUTH_ENABLED: 'true', SVC_ADMIN_API_KEY: ADMIN_KEY } });
  });
  after(async () => {
    for (const s of [one, two]) {
      await s?.stop();
      if (s) removeDir(s.dataDir);
    }
  });

  it('pings each other: reachable and verified both ways', async () => {
    const key1 = (await call(one.url, 'GET', '/api/admin/identity')).body.public_key;
    const key2 = (await call(two.url, 'GET', '/api/admin/identity', undefined, { 'X-API-Key': ADMIN_KEY })).body.public_key;
    const reg1 = await call(one.url, 'POST', '/api/admin/peers', { peer_id: 'two', url: two.url, public_key: key2, api_key: ADMIN_KEY });
    assert.equal(reg1.status, 201);
    assert.deepEqual(Object.keys(reg1.body).sort(), ['created_at', 'peer_id', 'public_key', 'success', 'url']);
    assert.equal((await call(two.url, 'POST', '/api/admin/peers', { peer_id: 'one', url: one.url, public_key: key1 }, { 'X-API-Key': ADMIN_KEY })).status, 201);
    // A peer's id is a path segment of the ping's route: `..` could never be pinged (red team).
    const dots = await call(one.url, 'POST', '/api/admin/peers', { peer_id: '..', url: two.url, public_key: key2, api_key: ADMIN_KEY });
    assert.equal(dots.status, 422);
    assert.match(JSON.stringify(dots.body.detail), /not \. or \.\./);

    const ping12 = await call(one.url, 'GET', '/api/ledger/network/ping/two');
    assert.equal(ping12.status, 200);
    assert.deepEqual(
      { ...ping12.body, latency_ms: typeof ping12.body.latency_ms },
      { target_id: 'two', reachable: true, latency_ms: 'number', verified: true },
    );
    const ping21 = await call(two.url, 'GET', '/api/ledger/network/ping/one', undefined, { 'X-API-Key': ADMIN_KEY });
    assert.deepEqual({ ...ping21.body, latency_ms: undefined }, { target_id: 'one', reachable: true, latency_ms: undefined, verified: true });
    const listed = await call(one.url, 'GET', '/api/admin/peers');
    assert.ok(!listed.text.includes(ADMIN_KEY), 'a peer key is never answered');
    assert.deepEqual(
      listed.body.map((p: any) => p.peer_id),
      ['two'],
    );
  });

  it('is reachable but not verified with the wrong key, or without the key a peer requires', async () => {
    const wrong = orgKeys().hex;
    await call(one.url, 'POST', '/api/admin/peers', { peer_id: 'impostor', url: two.url, public_key: wrong, api_key: ADMIN_KEY });
    const res = await call(one.url, 'GET', '/api/ledger/network/ping/impostor');
    assert.deepEqual({ reachable: res.body.reachable, verified: res.body.verified }, { reachable: true, verified: false });
    const key2 = (await call(two.url, 'GET', '/api/admin/identity', undefined, { 'X-API-Key': ADMIN_KEY })).body.public_key;
    await call(one.url, 'POST', '/api/admin/peers', { peer_id: 'keyless', url: two.url, public_key: key2 });
    const keyless = await call(one.url, 'GET', '/api/ledger/network/ping/keyless');
    assert.deepEqual({ reachable: keyless.body.reachable, verified: keyless.body.verified }, { reachable: true, verified: false });
  });

  it('answers reachable: false for a dead port, 404 for an unknown peer, and 409 for a duplicate', async () => {
    const key = orgKeys().hex;
    await call(one.url, 'POST', '/api/admin/peers', { peer_id: 'dead', url: `http://127.0.0.1:${await freePort()}`, public_key: key });
    const dead = await call(one.url, 'GET', '/api/ledger/network/ping/dead');
    assert.equal(dead.status, 200);
    assert.deepEqual(dead.body, { target_id: 'dead', reachable: false, latency_ms: null, verified: false });
    assertError(await call(one.url, 'GET', '/api/ledger/network/ping/nobody'), 404);
    assertError(await call(one.url, 'POST', '/api/admin/peers', { peer_id: 'dead', url: 'http://127.0.0.1:1', public_key: key }), 409);
    assertError(await call(one.url, 'POST', '/api/admin/peers', { peer_id: 'bad', url: 'ftp://x', public_key: key }), 422);
    assertError(await call(one.url, 'POST', '/api/admin/peers', { peer_id: 'bad', url: 'http://x', public_key: 'nope' }), 422);
  });

  it("never follows a peer's redirect with the key it keeps for that peer (red team)", async () => {
    // A peer (or whoever sits on an http peer's path) answering 307 to a host of its choosing had received the key.
    const seen: (string | undefined)[] = [];
    const elsewhere = createServer((req, res) => {
      seen.push(req.headers['x-api-key'] as string | undefined);
      res.end('{}');
    });
    const redirecting = createServer((req, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}${req.url}` }).end();
    });
    await Promise.all([elsewhere, redirecting].map((server) => new Promise<void>((done) => server.listen(0, '127.0.0.1', done))));
    try {
      const url = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}`;
      await call(one.url, 'POST', '/api/admin/peers', { peer_id: 'mover', url, public_key: orgKeys().hex, api_key: 'peer-secret-key-0123456789' });
      const res = await call(one.url, 'GET', '/api/ledger/network/ping/mover');
      assert.equal(res.status, 200);
      assert.equal(res.body.verified, false);
      assert.deepEqual(seen, [], 'nothing reached the host the peer redirected to');
    } finally {
      for (const server of [elsewhere, redirecting]) server.close();
    }
  });

  it('is served under /api/ledger only, not /api/v1', async () => {
    assertError(await call(one.url, 'GET', '/api/v1/network/ping/two'), 404);
  });
});
