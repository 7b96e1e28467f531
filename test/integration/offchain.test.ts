/**
 * Off-chain payloads over HTTP against the running local stack and its embedded IPFS node, and the
 * embedded node itself through kubo-rpc-client.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { create } from 'kubo-rpc-client';
import { startIpfsNode } from '#infra/local/ipfs-node';
import { freePort } from '#infra/local/ports';
import { call, isAlive, removeDir, sharedStack, startStack, stopAndRemove, tempDataDir, type Stack } from '#test/support/stack';

async function catAll(url: string, cid: string): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of create({ url }).cat(cid)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Files under a directory, recursively. */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

describe('The embedded IPFS node through kubo-rpc-client', () => {
  const dir = tempDataDir('ipfs');
  after(() => removeDir(dir));

  it("gives Kubo's CID for 'hello world\\n' and round-trips bytes", async () => {
    const node = await startIpfsNode({ dir });
    try {
      const client = create({ url: node.url });
      const added = await client.add(new TextEncoder().encode('hello world\n'));
      assert.equal(added.cid.toString(), 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o');
      const binary = randomBytes(600_000); // several 256 KiB chunks
      const big = await client.add(binary);
      assert.ok((await catAll(node.url, big.cid.toString())).equals(binary));
      const v1 = await client.add(new TextEncoder().encode('hello world\n'), { cidVersion: 1 });
      assert.match(v1.cid.toString(), /^bafk/);
      assert.match((await client.id()).id.toString(), /^12D3KooW/);
      assert.ok((await client.version()).version);
      const pinned = [];
      for await (const pin of client.pin.ls({ paths: [added.cid] })) pinned.push(pin.cid.toString());
      assert.deepEqual(pinned, [added.cid.toString()]);
      await assert.rejects(catAll(node.url, 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5X'), /not found/);
    } finally {
      await node.close();
    }
  });

  it('keeps its data across a restart', async () => {
    const node = await startIpfsNode({ dir });
    try {
      assert.equal((await catAll(node.url, 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o')).toString(), 'hello world\n');
    } finally {
      await node.close();
    }
  });
});

describe('Off-chain payloads on the local stack', () => {
  let stack: Stack;
  let base: string;
  let ipfsUrl: string;
  before(async () => {
    stack = await sharedStack();
    base = `${stack.url}/api/v1`;
    ipfsUrl = /IPFS: (http:\/\/\S+)/.exec(stack.output())![1]!;
    assert.equal((await call(base, 'POST', '/chains/docs/create')).status, 201);
  });
  after(() => stopAndRemove(stack));

  /** Appends a payload of about `bytes` bytes with a distinctive marker; answers the event's block and the original. */
  async function appendLarge(bytes: number, entity: string) {
    const marker = `PLAINTEXT-MARKER-${randomBytes(8).toString('hex')}`;
    const details = { marker, body: 'y'.repeat(bytes - marker.length), unicode: 'ünïcødé ✓', n: 1.5 };
    const res = await call(base, 'POST', '/chains/docs/events', { entity_id: entity, event_type: 'stored', details });
    assert.equal(res.status, 200, res.text.slice(0, 300));
    const index = Number(res.body.event_id.split('_')[1]);
    const block = (await call(base, 'GET', `/chains/docs/blocks/${index}`)).body;
    return { details, marker, block, index };
  }

  for (const [label, size] of [
    ['200 KB', 200_000],
    ['~4.9 MB', 4_900_000],
  ] as const) {
    it(`offloads a ${label} event: the block holds only the CID and nonce, IPFS only ciphertext, resolve the original`, async () => {
      const { details, marker, block, index } = await appendLarge(size, `big-${size}`);
      const [event] = block.events;
      assert.deepEqual(event.details, {});
      assert.equal(event.is_offchain, true);
      assert.match(event.details_cid, /^Qm/);
      assert.match(event.details_nonce, /^[0-9a-f]{24}$/);
      const raw = await catAll(ipfsUrl, event.details_cid);
      assert.ok(!raw.includes(marker), 'the IPFS object contains the plaintext');
      assert.ok(!raw.includes('y'.repeat(64)), 'the IPFS object contains the plaintext');
      const resolved = await call(base, 'GET', `/chains/docs/blocks/${index}?resolve_cid=true`);
      assert.equal(resolved.status, 200);
      assert.equal(JSON.stringify(resolved.body.events[0].details), JSON.stringify(details), 'byte for byte');
      assert.equal(resolved.body.hash, block.hash, 'resolving does not change the stored block');
    });
  }

  it('resolves in the blocks page and the trace too, and leaves events on chain alone', async () => {
    await call(base, 'POST', '/chains/docs/events', { entity_id: 'mixed', event_type: 'small', details: { a: 1 } });
    const { details } = await appendLarge(70_000, 'mixed');
    const trace = await call(base, 'GET', '/entities/mixed/trace?resolve_cid=true');
    assert.deepEqual(
      trace.body.events.map((e: any) => e.details.a ?? e.details.marker),
      [1, details.marker],
    );
    const page = await call(base, 'GET', '/chains/docs/blocks?resolve_cid=true&order=desc&limit=2');
    assert.equal(page.body.blocks[0].events[0].details.marker, details.marker);
    const plain = await call(base, 'GET', '/entities/mixed/trace');
    assert.deepEqual(plain.body.events[1].details, {});
  });

  it('keeps small events on chain', async () => {
    const res = await call(base, 'POST', '/chains/docs/events', { entity_id: 'small', event_type: 't', details: { x: 'z'.repeat(1000) } });
    const block = (await call(base, 'GET', `/chains/docs/blocks/${res.body.event_id.split('_')[1]}`)).body;
    assert.equal(block.events[0].is_offchain, false);
    assert.equal(block.events[0].details.x.length, 1000);
  });

  it('accepts a client-side upload, then an event that references it, which resolves', async () => {
    const data = { invoice: 'INV-7', lines: [{ sku: 'a', qty: 2 }], note: 'ä' };
    const up = await call(base, 'POST', '/offchain', { data });
    assert.equal(up.status, 201);
    assert.match(up.body.cid, /^Qm/);
    assert.match(up.body.nonce, /^[0-9a-f]{24}$/);
    assert.equal(up.body.size, Buffer.byteLength(JSON.stringify(data)));
    const ev = await call(base, 'POST', '/chains/docs/events', {
      entity_id: 'inv-7',
      event: 'invoiced',
      details_cid: up.body.cid,
      details_nonce: up.body.nonce,
    });
    assert.equal(ev.status, 200, ev.text);
    const trace = await call(base, 'GET', '/entities/inv-7/trace?resolve_cid=true');
    assert.deepEqual(trace.body.events[0].details, data);
    assert.equal(trace.body.events[0].event_type, 'invoiced');
  });

  it('answers 422 to a made-up CID, a wrong nonce, or a CID without its nonce', async () => {
    const made = await call(base, 'POST', '/chains/docs/events', {
      entity_id: 'x',
      event_type: 't',
      details_cid: 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5X',
      details_nonce: '0'.repeat(24),
    });
    assert.equal(made.status, 422, made.text);
    assert.match(made.body.detail, /cannot be fetched and decrypted/);
    const up = await call(base, 'POST', '/offchain', { data: { a: 1 } });
    const wrong = await call(base, 'POST', '/chains/docs/events', { entity_id: 'x', event_type: 't', details_cid: up.body.cid, details_nonce: 'f'.repeat(24) });
    assert.equal(wrong.status, 422);
    const missing = await call(base, 'POST', '/chains/docs/events', { entity_id: 'x', event_type: 't', details_cid: up.body.cid });
    assert.equal(missing.status, 422);
    assert.deepEqual(missing.body.detail[0].loc, ['body', 'details_nonce']);
    assert.equal((await call(base, 'POST', '/offchain', { nothing: 1 })).status, 422);
  });

  it('marks one tampered payload with resolve_error instead of failing the page', async () => {
    const { block, index } = await appendLarge(80_000, 'tampered');
    await call(base, 'POST', '/chains/docs/events', { entity_id: 'after', event_type: 't', details: { ok: true } });
    // Flip one ciphertext character in the block file on disk (as a corrupt disk or a hostile node would).
    const cipherAt = (text: string) => text.indexOf('"ciphertext":"');
    const file = files(join(stack.dataDir, 'ipfs', 'blocks')).find((f) => {
      const text = readFileSync(f, 'latin1');
      return cipherAt(text) >= 0 && readFileSync(f).includes(block.events[0].details_nonce);
    });
    assert.ok(file, 'the envelope block on disk');
    const bytes = readFileSync(file!);
    const at = cipherAt(bytes.toString('latin1')) + '"ciphertext":"'.length + 40;
    bytes[at] = bytes[at] === 0x41 ? 0x42 : 0x41;
    writeFileSync(file!, bytes);
    const page = await call(base, 'GET', `/chains/docs/blocks?offset=${index}&limit=2&resolve_cid=true`);
    assert.equal(page.status, 200);
    const [bad, good] = page.body.blocks;
    assert.match(bad.events[0].resolve_error, /altered|decrypt/);
    assert.deepEqual(bad.events[0].details, {});
    assert.deepEqual(good.events[0].details, { ok: true });
    assert.equal(good.events[0].resolve_error, undefined);
  });

  it('decodes a payload for an admin (the explorer CID decoder)', async () => {
    const up = await call(base, 'POST', '/offchain', { data: ['decode', 'me'] });
    const res = await call(stack.url, 'POST', '/api/admin/ipfs/decode', { cid: up.body.cid, nonce: up.body.nonce });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { cid: up.body.cid, nonce: up.body.nonce, data: ['decode', 'me'] });
    assert.equal((await call(stack.url, 'POST', '/api/admin/ipfs/decode', { cid: up.body.cid, nonce: '1'.repeat(24) })).status, 422);
    assert.equal((await call(stack.url, 'POST', '/api/admin/ipfs/decode', { cid: up.body.cid })).status, 422);
  });
});

describe('IPFS stopped under a running service', () => {
  let ipfs: ChildProcess;
  let stack: Stack;
  const ipfsDir = tempDataDir('ipfs-alone');
  before(async () => {
    const port = await freePort();
    ipfs = spawn(process.execPath, ['--import', 'tsx', 'infra/local/ipfs-node.ts', '--dir', ipfsDir, '--port', String(port)], {
      cwd: new URL('../../', import.meta.url).pathname,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((ready) => ipfs.stdout!.on('data', (c) => String(c).includes('ready') && ready()));
    stack = await startStack({ env: { SVC_IPFS_API_URL: `http://127.0.0.1:${port}`, SVC_IPFS_TIMEOUT_MS: '2000' } });
    await call(stack.url, 'POST', '/api/v1/chains/c/create');
  });
  after(async () => {
    if (ipfs.exitCode === null) ipfs.kill('SIGKILL');
    await stack?.stop();
    if (stack) removeDir(stack.dataDir);
    removeDir(ipfsDir);
  });

  it('answers 503 where IPFS is needed, serves the rest, and reports degraded health', async () => {
    const big = { blob: 'q'.repeat(100_000) };
    const before = await call(stack.url, 'POST', '/api/v1/chains/c/events', { entity_id: 'e', event_type: 't', details: big });
    assert.equal(before.status, 200);
    assert.match(stack.output(), /IPFS: http:\/\/127\.0\.0\.1:\d+ \(SVC_IPFS_API_URL\)/);

    ipfs.kill('SIGTERM');
    await new Promise((r) => ipfs.once('exit', r));
    assert.ok(!isAlive(ipfs.pid!));

    const offload = await call(stack.url, 'POST', '/api/v1/chains/c/events', { entity_id: 'e', event_type: 't', details: big });
    assert.equal(offload.status, 503, offload.text);
    assert.ok(Number(offload.headers.get('retry-after')) >= 1);
    assert.match(offload.body.detail, /IPFS/);
    const small = await call(stack.url, 'POST', '/api/v1/chains/c/events', { entity_id: 'e', event_type: 't', details: { s: 1 } });
    assert.equal(small.status, 200);
    const resolve = await call(stack.url, 'GET', '/api/v1/chains/c/blocks/1?resolve_cid=true');
    assert.equal(resolve.status, 503);
    const plain = await call(stack.url, 'GET', '/api/v1/chains/c/blocks/1');
    assert.equal(plain.status, 200);
    const health = await call(stack.url, 'GET', '/api/ledger/health');
    assert.equal(health.status, 503);
    assert.deepEqual({ status: health.body.status, checks: health.body.checks }, { status: 'degraded', checks: { dynamodb: 'ok', ipfs: 'unavailable' } });
  });
});
