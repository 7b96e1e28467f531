/**
 * The chains as C2SP transparency logs, checked by Go's own sumdb libraries (no code of ours in the
 * checker: test/interop/tlog), and the HTTP surface a CDN and a monitor see: content types, caching,
 * 404 beyond the tree, 400 for malformed paths, full tiles kept once computed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSync, sign } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { allOrStop, call, sharedStack, stopAndRemove, type Stack, dynamoConfigOf } from '#test/support/stack';
import { buildTlogCheck, GO_BUILD_CACHE, runTlogCheck } from '#test/support/go-tlog';
import { ROOT } from '../../infra/bundling.ts';
import { publicKeyToHex } from '#shared/ed25519';
import { signNote } from '#shared/tlog/note';

let stack: Stack;
let checker: string;
const dir = mkdtempSync(join(tmpdir(), 'tlog-test-'));
const CHAIN = 'audited';

async function appendBlocks(count: number): Promise<void> {
  for (let done = 0; done < count; done += 99) {
    const events = Array.from({ length: Math.min(99, count - done) }, (_, i) => ({
      entity_id: `item-${done + i}`,
      event_type: 'recorded',
      details: { n: done + i },
    }));
    const res = await call(stack.url, 'POST', `/api/v1/chains/${CHAIN}/events/batch`, { events });
    assert.equal(res.status, 200, res.text);
  }
}

async function text(path: string): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(`${stack.url}${path}`);
  return { status: res.status, body: await res.text(), headers: res.headers };
}

async function bytes(path: string): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const res = await fetch(`${stack.url}${path}`);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

let oldCheckpoint: string;

before(async () => {
  [stack, checker] = await allOrStop<[Stack, string]>([sharedStack(), buildTlogCheck()]);
  assert.equal((await call(stack.url, 'POST', `/api/v1/chains/${CHAIN}/create`)).status, 201);
  await appendBlocks(300); // 301 blocks with the genesis: one full level-0 tile and a partial one
  oldCheckpoint = (await text(`/tlog/${CHAIN}/checkpoint`)).body;
  writeFileSync(join(dir, 'old.checkpoint'), oldCheckpoint);
  await appendBlocks(250); // 551 blocks: two full tiles, the tree grown past the old checkpoint
});

after(() => stopAndRemove(stack));

describe('Go x/mod/sumdb audits a chain', () => {
  it("builds Go's checker with a build cache of this checkout's, never one at a shared path another local user could make first (red team)", () => {
    assert.ok(GO_BUILD_CACHE.startsWith(join(ROOT, 'node_modules', '.cache')), GO_BUILD_CACHE);
    const mode = statSync(GO_BUILD_CACHE).mode;
    assert.equal(mode & 0o022, 0, `no one else may write it: ${(mode & 0o777).toString(8)}`);
  });

  it('opens the checkpoint with the served key, proves every entry, and proves the tree extends the old checkpoint', async () => {
    const { code, result, stderr } = await runTlogCheck(checker, ['-url', stack.url, '-chain', CHAIN, '-old', join(dir, 'old.checkpoint')]);
    assert.equal(code, 0, stderr);
    const stats = (await call(stack.url, 'GET', `/api/v1/chains/${CHAIN}/stats`)).body;
    const blocks = stats.total_blocks ?? stats.block_count ?? stats.blocks;
    assert.equal(result!.tree_size, 551);
    assert.equal(result!.records_proven, 551, 'every block proven in the tree');
    if (blocks !== undefined) assert.equal(blocks, 551);
    assert.equal(result!.consistent_with, 301);
    // The same tree as the JSON checkpoint: one root, two encodings.
    const json = (await call(stack.url, 'GET', `/api/v1/chains/${CHAIN}/checkpoint`)).body;
    assert.equal(Buffer.from(String(result!.root), 'base64').toString('hex'), json.root);
    assert.equal(json.tree_size, 551);
  });

  it('refuses a checkpoint whose root was changed after signing', async () => {
    const now = (await text(`/tlog/${CHAIN}/checkpoint`)).body;
    const lines = now.split('\n');
    lines[2] = Buffer.alloc(32, 7).toString('base64');
    writeFileSync(join(dir, 'forged.checkpoint'), lines.join('\n'));
    const { code, stderr } = await runTlogCheck(checker, ['-url', stack.url, '-chain', CHAIN, '-checkpoint', join(dir, 'forged.checkpoint')]);
    assert.equal(code, 1);
    assert.match(stderr, /note\.Open/);
  });

  it("refuses a checkpoint signed by another key under the node's key name", async () => {
    const vkey = (await text('/tlog/vkey')).body.trim();
    const name = vkey.split('+')[0]!;
    const { privateKey } = generateKeyPairSync('ed25519');
    const honest = (await text(`/tlog/${CHAIN}/checkpoint`)).body;
    const body = honest.slice(0, honest.indexOf('\n\n') + 1);
    writeFileSync(
      join(dir, 'other-key.checkpoint'),
      signNote(body, name, publicKeyToHex(privateKey), (b) => sign(null, b, privateKey)),
    );
    const { code, stderr } = await runTlogCheck(checker, ['-url', stack.url, '-chain', CHAIN, '-checkpoint', join(dir, 'other-key.checkpoint')]);
    assert.equal(code, 1);
    assert.match(stderr, /note\.Open/);
  });

  it('refuses an old checkpoint of a tree the log does not extend', async () => {
    // Signed by the node for another chain: a valid note, but not this log's history.
    await call(stack.url, 'POST', '/api/v1/chains/elsewhere/create');
    writeFileSync(join(dir, 'elsewhere.checkpoint'), (await text('/tlog/elsewhere/checkpoint')).body);
    const { code, stderr } = await runTlogCheck(checker, ['-url', stack.url, '-chain', CHAIN, '-old', join(dir, 'elsewhere.checkpoint')]);
    assert.equal(code, 1);
    assert.match(stderr, /old checkpoint is of/);
  });
});

describe('the tlog HTTP surface', () => {
  it('serves the verifier key and a signed-note checkpoint as text', async () => {
    const vkey = await text('/tlog/vkey');
    assert.equal(vkey.status, 200);
    assert.match(vkey.body, /^[^\s+]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}\n$/);
    const identity = (await call(stack.url, 'GET', '/api/ledger/identity')).body;
    const key = /^[^+]+\+[0-9a-f]{8}\+(.+)$/.exec(vkey.body.trim())![1]!;
    assert.equal(Buffer.from(key, 'base64').subarray(1).toString('hex'), identity.public_key, 'the node identity key');
    const cp = await text(`/tlog/${CHAIN}/checkpoint`);
    assert.equal(cp.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.match(cp.body, new RegExp(`^${vkey.body.split('+')[0]!.replace(/[.]/g, '\\.')}/${CHAIN}\\n551\\n[A-Za-z0-9+/]{43}=\\n\\n\u2014 \\S+ \\S+\\n$`));
  });

  it('caches full tiles for a year and partial ones briefly', async () => {
    const full = await bytes(`/tlog/${CHAIN}/tile/0/000`);
    assert.equal(full.status, 200);
    assert.equal(full.body.length, 8192);
    assert.equal(full.headers.get('content-type'), 'application/octet-stream');
    assert.equal(full.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    const partial = await bytes(`/tlog/${CHAIN}/tile/0/002.p/39`);
    assert.equal(partial.status, 200);
    assert.equal(partial.body.length, 39 * 32);
    assert.match(partial.headers.get('cache-control')!, /^public, max-age=\d{1,2}$/);
    const entries = await bytes(`/tlog/${CHAIN}/tile/entries/001`);
    assert.equal(entries.body.length, 256 * 34);
    const block256 = (await call(stack.url, 'GET', `/api/v1/chains/${CHAIN}/blocks/256`)).body;
    assert.equal(entries.body.readUInt16BE(0), 32);
    assert.equal(entries.body.subarray(2, 34).toString('hex'), block256.hash, "entry 256 is block 256's hash");
  });

  it('keeps a full tile once computed (an item in the ledger table)', async () => {
    await bytes(`/tlog/${CHAIN}/tile/entries/000`);
    const client = DynamoDBDocumentClient.from(new DynamoDBClient(dynamoConfigOf(stack)));
    const item = await client.send(new GetCommand({ TableName: stack.tables.ledger, Key: { pk: `TILE#${CHAIN}#0`, sk: 'tile/entries/000' } }));
    assert.ok(item.Item, 'the full entry bundle is stored');
    assert.equal((item.Item.bytes as Uint8Array).length, 256 * 34);
    client.destroy();
  });

  it('answers 404 beyond the tree and for unknown chains, 400 for malformed paths and chain names', async () => {
    for (const path of [
      `/tlog/${CHAIN}/tile/0/003`,
      `/tlog/${CHAIN}/tile/0/002.p/40`,
      `/tlog/${CHAIN}/tile/1/000`,
      `/tlog/${CHAIN}/tile/entries/005`,
      '/tlog/nope/checkpoint',
      '/tlog/nope/tile/0/000',
    ]) {
      const res = await call(stack.url, 'GET', path);
      assert.equal(res.status, 404, `${path}: ${res.text}`);
      assert.equal(typeof res.body.detail, 'string');
    }
    for (const path of [
      'tile/0/1234',
      'tile/-1/000',
      'tile/0/000.p/0',
      'tile/0/000.p/256',
      'tile/0/%2E%2E/000',
      'tile/0/..%2F..%2Fvkey',
      'tile/00/000',
      'tile/0/x000/001',
      'tile/0/000.p/01',
      'tile/entries/abc',
    ]) {
      const res = await call(stack.url, 'GET', `/tlog/${CHAIN}/${path}`);
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.equal(typeof res.body.detail, 'string');
    }
    const badName = await call(stack.url, 'GET', '/tlog/bad%20name/checkpoint');
    assert.equal(badName.status, 400, badName.text);
  });

  it('refuses to sign, as a peer challenge, bytes shaped like a checkpoint', async () => {
    const forged = Buffer.from(`x/${CHAIN}\n999\n${Buffer.alloc(32).toString('base64')}\n`).toString('hex');
    const res = await call(stack.url, 'POST', '/api/admin/verify-identity', { challenge: forged });
    assert.equal(res.status, 422, res.text);
  });
});
