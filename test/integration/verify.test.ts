/**
 * Verifiable by anyone, over HTTP against the running local stack: signed checkpoints, inclusion and
 * consistency proofs, anchors, the verify endpoint, and `npx ledger-verify` — and what each of them says
 * when a block is edited, deleted, or rewritten with its successors directly in DynamoDB.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteItemCommand, DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { checkpointMessage } from '#shared/ledger/checkpoint';
import { hashBlock } from '#shared/ledger/hashing';
import { leafHash, verifyConsistency, verifyInclusion } from '#shared/ledger/merkle';
import { assertError } from '#test/support/contract';
import { BLOCK_SHARDS, blockPk, blockSk } from '#shared/storage/keys';
import { call, removeDir, startStack, tempDataDir, type Stack } from '#test/support/stack';

const ROOT = new URL('../../', import.meta.url).pathname;
const hex = (h: string) => Buffer.from(h, 'hex');

let stack: Stack;
let base: string;
let ddb: DynamoDBClient;
let publicKey: string;
const work = mkdtempSync(join(tmpdir(), 'ledger-verify-'));

/** `npx ledger-verify …` as a user runs it; answers the exit code and everything printed. */
function ledgerVerify(...args: string[]): { code: number | null; out: string } {
  const out = spawnSync('npx', ['--no-install', 'ledger-verify', '--url', stack.url, ...args], { cwd: ROOT, encoding: 'utf8' });
  return { code: out.status, out: `${out.stdout}${out.stderr}` };
}

async function addEvents(chain: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) {
    assert.equal(
      (await call(base, 'POST', `/chains/${chain}/events`, { entity_id: `${chain}-e${i}`, event_type: 'step', details: { i, note: 'original text' } })).status,
      200,
    );
  }
}

/** A block's key as the table stores it (a new chain's blocks are spread over BLOCK_SHARDS partitions). */
function blockKey(chain: string, index: number) {
  return { pk: { S: blockPk(chain, index, BLOCK_SHARDS) }, sk: { S: blockSk(index) } };
}

/** Reads a stored block item straight from DynamoDB. */
async function storedBlock(chain: string, index: number) {
  const out = await ddb.send(new GetItemCommand({ TableName: 'ledger', Key: blockKey(chain, index) }));
  return out.Item!;
}

async function rewriteBlockJson(chain: string, index: number, json: string, hash?: string): Promise<void> {
  await ddb.send(
    new UpdateItemCommand({
      TableName: 'ledger',
      Key: blockKey(chain, index),
      UpdateExpression: hash ? 'SET block_json = :j, #h = :h, gsi_hash = :h' : 'SET block_json = :j',
      ExpressionAttributeValues: { ':j': { S: json }, ...(hash ? { ':h': { S: hash } } : {}) },
      ...(hash ? { ExpressionAttributeNames: { '#h': 'hash' } } : {}),
    }),
  );
}

before(async () => {
  const dataDir = tempDataDir('verify');
  spawnSync(process.execPath, ['--import', 'tsx', 'infra/local/identity.ts', 'init'], { cwd: ROOT, env: { ...process.env, SVC_DATA_DIR: dataDir } });
  stack = await startStack({ dataDir });
  base = `${stack.url}/api/v1`;
  const endpoint = stack.dynamoEndpoint;
  ddb = new DynamoDBClient({ region: 'us-east-1', endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  publicKey = (await call(stack.url, 'GET', '/api/admin/identity')).body.public_key;
  await call(base, 'POST', '/chains/audit/create');
  await addEvents('audit', 10);
  await call(base, 'POST', '/chains/audit/submit-proof');
  await addEvents('audit', 6);
  await call(base, 'POST', '/chains/audit/submit-proof');
  await addEvents('audit', 2);
});

after(async () => {
  ddb?.destroy();
  await stack?.stop();
  if (stack) removeDir(stack.dataDir);
  rmSync(work, { recursive: true, force: true });
});

describe('Proofs a client can check', () => {
  it('signs a checkpoint over the documented bytes with the node key', async () => {
    const c = (await call(base, 'GET', '/chains/audit/checkpoint')).body;
    assert.equal(c.tree_size, 19);
    assert.match(c.root, /^[0-9a-f]{64}$/);
    const key = createPublicKey({ key: Buffer.concat([hex('302a300506032b6570032100'), hex(publicKey)]), format: 'der', type: 'spki' });
    assert.ok(verify(null, checkpointMessage(c), key, hex(c.signature)));
    assert.ok(!verify(null, checkpointMessage({ ...c, tree_size: 18 }), key, hex(c.signature)));
    const same = await call(stack.url, 'GET', '/api/ledger/chains/audit/checkpoint');
    assert.equal(same.body.root, c.root);
  });

  it('refuses to sign a challenge that could pass for a checkpoint', async () => {
    const forged = Buffer.from('verifiable-ledger checkpoint v1\n{"chain_name":"audit"}').toString('hex');
    assertError(await call(stack.url, 'POST', '/api/admin/verify-identity', { challenge: forged }), 422, /may not start/);
  });

  it('proves every block into the signed root, and into older tree sizes', async () => {
    const c = (await call(base, 'GET', '/chains/audit/checkpoint')).body;
    for (let i = 0; i < c.tree_size; i += 1) {
      const p = (await call(base, 'GET', `/chains/audit/blocks/${i}/proof`)).body;
      const block = (await call(base, 'GET', `/chains/audit/blocks/${i}`)).body;
      assert.equal(p.block_hash, block.hash);
      verifyInclusion(i, c.tree_size, leafHash(hex(block.hash)), p.proof.map(hex), hex(c.root));
    }
    const older = (await call(base, 'GET', '/chains/audit/blocks/3/proof?tree_size=7')).body;
    const oldRoot = (await call(base, 'GET', '/chains/audit/consistency?first=7&second=19')).body.first_root;
    assert.equal(older.root, oldRoot);
    verifyInclusion(3, 7, leafHash(hex(older.block_hash)), older.proof.map(hex), hex(oldRoot));
  });

  it('answers 404 for a block past the tree and 422 for bad sizes', async () => {
    assertError(await call(base, 'GET', '/chains/audit/blocks/7/proof?tree_size=7'), 404);
    assertError(await call(base, 'GET', '/chains/audit/blocks/99/proof'), 404);
    assertError(await call(base, 'GET', '/chains/audit/blocks/1/proof?tree_size=500'), 422);
    assertError(await call(base, 'GET', '/chains/audit/blocks/abc/proof'), 422);
    assertError(await call(base, 'GET', '/chains/audit/consistency?first=5&second=3'), 422);
    assertError(await call(base, 'GET', '/chains/audit/consistency?first=0&second=3'), 422);
    assertError(await call(base, 'GET', '/chains/audit/consistency?second=3'), 422);
    assertError(await call(base, 'GET', '/chains/ghost/checkpoint'), 404);
  });

  it('proves consistency between every pair of sizes', async () => {
    for (let first = 1; first <= 19; first += 1) {
      for (let second = first; second <= 19; second += 3) {
        const p = (await call(base, 'GET', `/chains/audit/consistency?first=${first}&second=${second}`)).body;
        verifyConsistency(first, second, p.proof.map(hex), hex(p.first_root), hex(p.second_root));
      }
    }
  });

  it("ties a Sub-Chain block to the Main Chain: into the anchor's root, and the anchor into the Main Chain's signed root", async () => {
    for (const i of [0, 4, 10, 11, 16]) {
      const a = (await call(base, 'GET', `/chains/audit/blocks/${i}/anchor`)).body;
      assert.equal(a.anchor.head_index, i <= 10 ? 10 : 16);
      verifyInclusion(i, a.anchor.tree_size, leafHash(hex(a.block_hash)), a.proof.map(hex), hex(a.anchor.merkle_root));
      const anchorBlock = (await call(base, 'GET', `/chains/main/blocks/${a.anchor.main_block_index}`)).body;
      assert.equal(hashBlock(anchorBlock), a.anchor.main_block_hash);
      assert.equal(anchorBlock.events[0].details.merkle_root, a.anchor.merkle_root);
      const main = (await call(base, 'GET', '/chains/main/checkpoint')).body;
      assert.equal(a.main.root, main.root);
      verifyInclusion(a.anchor.main_block_index, a.main.tree_size, leafHash(hex(a.anchor.main_block_hash)), a.main.proof.map(hex), hex(main.root));
    }
    assertError(await call(base, 'GET', '/chains/audit/blocks/17/anchor'), 404, /not anchored yet/);
    assertError(await call(base, 'GET', '/chains/main/blocks/1/anchor'), 400);
  });

  it('finds nothing wrong with an untouched chain, on the server and offline', async () => {
    assert.deepEqual((await call(base, 'GET', '/chains/audit/verify')).body, {
      chain_name: 'audit',
      valid: true,
      checked_blocks: 19,
      first_invalid_index: null,
      reason: null,
      anchors_checked: 2,
    });
    const saved = join(work, 'audit-checkpoint.json');
    const { code, out } = ledgerVerify('--chain', 'audit', '--public-key', publicKey, '--save-checkpoint', saved);
    assert.equal(code, 0, out);
    assert.match(out, /verified: 'audit', 19 blocks/);
    assert.match(out, /2 anchors checked/);
    assert.equal(ledgerVerify('--chain', 'audit', '--public-key', publicKey, '--checkpoint', saved).code, 0);
    const main = ledgerVerify('--chain', 'main', '--public-key', publicKey);
    assert.equal(main.code, 0, main.out);
  });

  it("refuses a key that is not the node's", () => {
    const { code, out } = ledgerVerify('--chain', 'audit', '--public-key', 'ab'.repeat(32));
    assert.equal(code, 1);
    assert.match(out, /not the pinned/);
  });
});

describe('Tampering directly in DynamoDB', () => {
  it('names a block whose stored bytes were edited', async () => {
    await call(base, 'POST', '/chains/edited/create');
    await addEvents('edited', 8);
    const item = await storedBlock('edited', 5);
    await rewriteBlockJson('edited', 5, item.block_json!.S!.replace('original text', 'original texT'));
    const report = (await call(base, 'GET', '/chains/edited/verify')).body;
    assert.deepEqual({ valid: report.valid, first: report.first_invalid_index }, { valid: false, first: 5 });
    assert.match(report.reason, /block 5's hash does not match/);
    const { code, out } = ledgerVerify('--chain', 'edited', '--public-key', publicKey);
    assert.equal(code, 1);
    assert.match(out, /NOT VERIFIED: block 5 of 'edited': its hash does not match its contents/);
    assert.match(out, /first bad block: 5/);
  });

  it('reports the gap a deleted block leaves', async () => {
    await call(base, 'POST', '/chains/gappy/create');
    await addEvents('gappy', 6);
    await ddb.send(new DeleteItemCommand({ TableName: 'ledger', Key: blockKey('gappy', 3) }));
    const report = (await call(base, 'GET', '/chains/gappy/verify')).body;
    assert.deepEqual(
      { valid: report.valid, first: report.first_invalid_index, reason: report.reason },
      { valid: false, first: 3, reason: 'block 3 is missing' },
    );
    const { code, out } = ledgerVerify('--chain', 'gappy', '--public-key', publicKey);
    assert.equal(code, 1);
    assert.match(out, /block 3 of 'gappy' is missing/);
  });

  it('exposes a block rewritten with all its successors re-hashed: the anchors and the saved checkpoint disagree', async () => {
    await call(base, 'POST', '/chains/rewritten/create');
    await addEvents('rewritten', 6);
    await call(base, 'POST', '/chains/rewritten/submit-proof');
    await addEvents('rewritten', 2);
    const saved = join(work, 'rewritten-checkpoint.json');
    assert.equal(ledgerVerify('--chain', 'rewritten', '--public-key', publicKey, '--save-checkpoint', saved).code, 0);

    // Edit block 3 and make every later block consistent again, as a careful attacker with table access would.
    const head = (await call(base, 'GET', '/chains/rewritten/stats')).body.total_blocks - 1;
    let previous = (await call(base, 'GET', '/chains/rewritten/blocks/2')).body.hash;
    for (let i = 3; i <= head; i += 1) {
      const block = JSON.parse((await storedBlock('rewritten', i)).block_json!.S!);
      if (i === 3) block.events[0].details.note = 'forged text';
      block.previous_hash = previous;
      const { hash: _old, ...rest } = block;
      const hash = hashBlock(rest);
      await rewriteBlockJson('rewritten', i, JSON.stringify({ ...rest, hash }), hash);
      previous = hash;
    }
    await ddb.send(
      new UpdateItemCommand({
        TableName: 'ledger',
        Key: { pk: { S: 'CHAIN#rewritten' }, sk: { S: 'HEAD' } },
        UpdateExpression: 'SET head_hash = :h',
        ExpressionAttributeValues: { ':h': { S: previous } },
      }),
    );

    const report = (await call(base, 'GET', '/chains/rewritten/verify')).body;
    assert.equal(report.valid, false);
    assert.match(report.reason, /anchor rewritten_\d+ .* does not match blocks 0…6/);
    const offline = ledgerVerify('--chain', 'rewritten', '--public-key', publicKey);
    assert.equal(offline.code, 1);
    assert.match(offline.out, /anchor rewritten_\d+ does not match blocks 0…6/);
    const withSaved = ledgerVerify('--chain', 'rewritten', '--public-key', publicKey, '--checkpoint', saved);
    assert.equal(withSaved.code, 1);
    assert.match(withSaved.out, /NOT VERIFIED/);
  });
});

describe('Chains made before trees were kept', () => {
  it('get their tree built once, then prove and append as any chain', async () => {
    await call(base, 'POST', '/chains/legacy/create');
    await addEvents('legacy', 9);
    const before = (await call(base, 'GET', '/chains/legacy/checkpoint')).body.root;
    // Strip the tree: the head's frontier and every block's nodes.
    await ddb.send(new UpdateItemCommand({ TableName: 'ledger', Key: { pk: { S: 'CHAIN#legacy' }, sk: { S: 'HEAD' } }, UpdateExpression: 'REMOVE frontier' }));
    for (let i = 0; i <= 9; i += 1) {
      await ddb.send(new UpdateItemCommand({ TableName: 'ledger', Key: blockKey('legacy', i), UpdateExpression: 'REMOVE tree_nodes' }));
    }
    const rebuilt = (await call(base, 'GET', '/chains/legacy/checkpoint')).body;
    assert.equal(rebuilt.root, before);
    assert.ok((await storedBlock('legacy', 1)).tree_nodes, 'the nodes are back on the blocks');
    await addEvents('legacy', 3);
    const p = (await call(base, 'GET', '/chains/legacy/blocks/4/proof')).body;
    verifyInclusion(4, p.tree_size, leafHash(hex(p.block_hash)), p.proof.map(hex), hex(p.root));
    assert.equal((await call(base, 'GET', '/chains/legacy/verify')).body.valid, true);
  });
});
