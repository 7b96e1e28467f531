/**
 * Verifiable by anyone, over HTTP against the running local stack: signed checkpoints, inclusion and
 * consistency proofs, anchors, the verify endpoint, and `npx ledger-verify` — and what each of them says
 * when a block is edited, deleted, or rewritten with its successors directly in DynamoDB.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteItemCommand, DynamoDBClient, GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { type BlockMeta, packRun, unpackRun } from '#shared/ledger/block-meta';
import { buildBlocks } from '#shared/ledger/blocks';
import { checkpointMessage } from '#shared/ledger/checkpoint';
import { hashBlock, sealBlock, ZERO_HASH } from '#shared/ledger/hashing';
import { leafHash, verifyConsistency, verifyInclusion } from '#shared/ledger/merkle';
import type { Block } from '#shared/ledger/types';
import { assertError } from '#test/support/contract';
import { createDynamoClient } from '#shared/storage/client';
import { blockPk, blockSk, pendingPk, recordPk, segmentPk } from '#shared/storage/keys';
import { blockItem, recordItem } from '#shared/storage/ledger-items';
import { createLedgerRepository } from '#shared/storage/ledger-repository';
import { call, removeDir, startStack, tempDataDir, type Stack, dynamoConfigOf } from '#test/support/stack';

const ROOT = new URL('../../', import.meta.url).pathname;
const hex = (h: string) => Buffer.from(h, 'hex');

let stack: Stack;
let base: string;
let ddb: DynamoDBClient;
let publicKey: string;
const work = mkdtempSync(join(tmpdir(), 'ledger-verify-'));

/**
 * `npx ledger-verify …` as a user runs it: the package's bin (bin/ledger-verify.mjs) in a process of its own; answers the
 * exit code and everything printed. Started by node itself: npx's own start is 1.5 s of CPU a run against 0.2 s for the
 * command (the hidden blocks' case below, the manual's walk and the verifier package's test go through npx).
 */
function ledgerVerify(...args: string[]): { code: number | null; out: string } {
  const out = spawnSync(process.execPath, ['bin/ledger-verify.mjs', '--url', stack.url, ...args], { cwd: ROOT, encoding: 'utf8' });
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

/** A block's metadata (its hash, where its drafts waited) as the chain keeps it. */
async function metaOf(chain: string, index: number): Promise<BlockMeta> {
  const repository = createLedgerRepository({
    client: createDynamoClient({ region: 'us-east-1', endpoint: stack.dynamoEndpoint, accessKeyId: stack.dynamoAccessKeyId }),
    tableName: stack.tables.ledger,
  });
  const { blocks } = await repository.readMeta(chain, index, index, true);
  return blocks[0]!;
}

const recordKey = (meta: Pick<BlockMeta, 'hash' | 'index'>) => ({ pk: { S: recordPk(meta.hash) }, sk: { S: blockSk(meta.index) } });

/** Reads a stored block record straight from DynamoDB. */
async function storedBlock(chain: string, index: number) {
  const out = await ddb.send(new GetItemCommand({ TableName: stack.tables.ledger, Key: recordKey(await metaOf(chain, index)) }));
  return out.Item!;
}

async function rewriteBlockJson(chain: string, index: number, json: string): Promise<void> {
  await ddb.send(
    new UpdateItemCommand({
      TableName: stack.tables.ledger,
      Key: recordKey(await metaOf(chain, index)),
      UpdateExpression: 'SET block_json = :j',
      ExpressionAttributeValues: { ':j': { S: json } },
    }),
  );
}

/** Deletes a block's body: its record, and the pending append its drafts waited in, if any. */
async function deleteBlock(chain: string, index: number): Promise<void> {
  const meta = await metaOf(chain, index);
  await ddb.send(new DeleteItemCommand({ TableName: stack.tables.ledger, Key: recordKey(meta) }));
  if (meta.ref)
    await ddb.send(new DeleteItemCommand({ TableName: stack.tables.ledger, Key: { pk: { S: pendingPk(chain, meta.ref.shard) }, sk: { S: meta.ref.sk } } }));
}

/**
 * Replaces a block with another of a new hash, as an attacker with table access would: the new record,
 * and the hash in every run of metadata that names it (segments, the head), and as `prev` of the next.
 */
async function replaceBlock(chain: string, block: Block): Promise<void> {
  const old = await metaOf(chain, block.index);
  await ddb.send(new DeleteItemCommand({ TableName: stack.tables.ledger, Key: recordKey(old) }));
  await ddb.send(new PutItemCommand({ TableName: stack.tables.ledger, Item: marshall(recordItem(block)) }));
  const patch = (bytes: Uint8Array): Uint8Array => {
    const run = unpackRun(bytes);
    if (run.blocks[0]?.index === block.index + 1) run.prev = block.hash;
    for (const meta of run.blocks) if (meta.index === block.index) meta.hash = block.hash;
    return packRun(run);
  };
  const segments = await ddb.send(
    new QueryCommand({ TableName: stack.tables.ledger, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': { S: segmentPk(chain) } } }),
  );
  for (const item of segments.Items ?? [])
    await ddb.send(new PutItemCommand({ TableName: stack.tables.ledger, Item: { ...item, run: { B: patch(item.run!.B!) } } }));
  const head = await ddb.send(new GetItemCommand({ TableName: stack.tables.ledger, Key: { pk: { S: `CHAIN#${chain}` }, sk: { S: 'HEAD' } } }));
  if (head.Item?.recent_blocks?.B) {
    await ddb.send(
      new UpdateItemCommand({
        TableName: stack.tables.ledger,
        Key: { pk: { S: `CHAIN#${chain}` }, sk: { S: 'HEAD' } },
        UpdateExpression: 'SET recent_blocks = :r',
        ExpressionAttributeValues: { ':r': { B: patch(head.Item.recent_blocks.B) } },
      }),
    );
  }
}

before(async () => {
  const dataDir = tempDataDir('verify');
  spawnSync(process.execPath, ['bin/run.mjs', 'infra/local/identity.ts', 'init'], { cwd: ROOT, env: { ...process.env, SVC_DATA_DIR: dataDir } });
  // These tests rewrite the table under the running service, as an attacker with write access to DynamoDB could.
  // A warm instance never reads again what it keeps (a written block cannot change), so it would go on answering
  // some blocks as they were: without the read cache, every answer shows the table as it is now.
  stack = await startStack({ dataDir, env: { SVC_READ_CACHE_BYTES: '0' } });
  base = `${stack.url}/api/v1`;
  ddb = new DynamoDBClient(dynamoConfigOf(stack));
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

  it("refuses a Sub-Chain's old checkpoint served to hide blocks the Main Chain anchors", async () => {
    await call(base, 'POST', '/chains/hidden/create');
    await addEvents('hidden', 3);
    const old = (await call(base, 'GET', '/chains/hidden/checkpoint')).body; // genuinely signed, at 4 blocks (the genesis block and three)
    await addEvents('hidden', 3);
    assert.equal((await call(base, 'POST', '/chains/hidden/submit-proof')).status, 200);
    // A mirror that answers that old checkpoint and passes everything else through (no key needed to lie so).
    const mirror = createServer(async (req, res) => {
      const path = req.url ?? '/';
      if (path === '/api/v1/chains/hidden/checkpoint') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(old));
      }
      const upstream = await fetch(`${stack.url}${path}`, { headers: { accept: req.headers.accept ?? '*/*' } });
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((done) => mirror.listen(0, '127.0.0.1', done));
    try {
      const url = `http://127.0.0.1:${(mirror.address() as AddressInfo).port}`;
      const run = spawn('npx', ['--no-install', 'ledger-verify', '--url', url, '--chain', 'hidden', '--public-key', publicKey], { cwd: ROOT });
      let out = '';
      run.stdout.on('data', (d) => (out += d));
      run.stderr.on('data', (d) => (out += d));
      const code = await new Promise<number | null>((done) => run.on('close', done));
      assert.equal(code, 1, out);
      assert.match(out, /the Main Chain anchors 7 blocks of 'hidden' \(anchor hidden_\d+\), its checkpoint shows 4: blocks are being hidden/);
    } finally {
      await new Promise((done) => mirror.close(done));
    }
    // Through the node itself: verified, the anchor checked.
    const { code, out } = ledgerVerify('--chain', 'hidden', '--public-key', publicKey);
    assert.equal(code, 0, out);
    assert.match(out, /verified: 'hidden', 7 blocks/);
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
    await deleteBlock('gappy', 3);
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
      await replaceBlock('rewritten', { ...rest, hash });
      previous = hash;
    }
    await ddb.send(
      new UpdateItemCommand({
        TableName: stack.tables.ledger,
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
  it('get their tree built once, then prove, append (as records from then on) and verify as any chain', async () => {
    // A chain as the earliest versions stored it: block items spread over 16 partitions, no tree nodes, no frontier.
    const genesis = sealBlock({ index: 0, chain_name: 'legacy', timestamp: 1_700_000_000, previous_hash: ZERO_HASH, events: [] });
    const drafts = Array.from({ length: 9 }, (_, i) => ({
      events: [
        { entity_id: `legacy-e${i}`, event_type: 'step', details: { i }, details_cid: null, details_nonce: null, details_metadata: null, is_offchain: false },
      ],
    }));
    const blocks = [genesis, ...buildBlocks('legacy', { headIndex: 0, headHash: genesis.hash }, drafts, () => 1_700_000_001)];
    for (const block of blocks)
      await ddb.send(new PutItemCommand({ TableName: stack.tables.ledger, Item: marshall({ ...blockItem(block, 16), gsi_hash: block.hash }) }));
    const last = blocks.at(-1)!;
    await ddb.send(
      new PutItemCommand({
        TableName: stack.tables.ledger,
        Item: marshall({
          pk: 'CHAIN#legacy',
          sk: 'HEAD',
          chain_name: 'legacy',
          kind: 'sub',
          head_index: last.index,
          head_hash: last.hash,
          event_count: 9,
          proof_count: 0,
          created_at: 1_700_000_000,
          block_shards: 16,
        }),
      }),
    );
    await ddb.send(
      new PutItemCommand({
        TableName: stack.tables.ledger,
        Item: marshall({ pk: 'CHAINS', sk: '1#legacy', chain_name: 'legacy', kind: 'sub', created_at: 1_700_000_000 }),
      }),
    );
    const checkpoint = (await call(base, 'GET', '/chains/legacy/checkpoint')).body;
    assert.equal(checkpoint.tree_size, 10);
    const item = await ddb.send(new GetItemCommand({ TableName: stack.tables.ledger, Key: { pk: { S: blockPk('legacy', 1, 16) }, sk: { S: blockSk(1) } } }));
    assert.ok(item.Item?.tree_nodes, 'the nodes are on the blocks now');
    await addEvents('legacy', 3);
    const p = (await call(base, 'GET', '/chains/legacy/blocks/4/proof')).body;
    verifyInclusion(4, p.tree_size, leafHash(hex(p.block_hash)), p.proof.map(hex), hex(p.root));
    const q = (await call(base, 'GET', '/chains/legacy/blocks/11/proof')).body;
    verifyInclusion(11, q.tree_size, leafHash(hex(q.block_hash)), q.proof.map(hex), hex(q.root));
    assert.equal((await call(base, 'GET', `/chains/legacy/blocks/${blocks[5]!.hash}`)).body.index, 5, 'an old block by hash');
    assert.equal((await call(base, 'GET', '/chains/legacy/verify')).body.valid, true);
    const { code, out } = ledgerVerify('--chain', 'legacy', '--public-key', publicKey);
    assert.equal(code, 0, out);
  });
});
