/**
 * HTTP caching of what cannot change (docs/rules.md, "Caching"), over HTTP against the running local stack: a
 * written block, a page or a proof against a fixed tree size and a full tile carry a strong ETag and a
 * year's immutable lifetime, and a conditional GET naming the tag is 304 with no body; what can still change is
 * revalidated; what erasure can change (a data subject's events), resolved payloads and errors are never kept.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { LedgerClient } from '#client/client';
import { MIN_COMPRESSED_BYTES } from '#shared/http/compression';
import { verifyLedger } from '#shared/verify/verifier';
import { call, startStack, stopAndRemove, type Stack } from '#test/support/stack';

let stack: Stack;
const B = '/api/v1/chains/cached';
const IMMUTABLE = 'public, max-age=31536000, immutable';

before(async () => {
  // Every instance adds its counts to /metrics after each request (as it does every few seconds by default).
  stack = await startStack({ env: { SVC_METRICS_FLUSH_MS: '0' } });
  assert.equal((await call(stack.url, 'POST', `${B}/create`)).status, 201);
  const events = Array.from({ length: 99 }, (_, i) => ({ entity_id: `e-${i}`, event_type: 'recorded', details: { i } }));
  for (let i = 0; i < 3; i += 1) assert.equal((await call(stack.url, 'POST', `${B}/events/batch`, { events })).status, 200);
});
after(() => stopAndRemove(stack));

const get = (path: string, headers: Record<string, string> = {}) => call(stack.url, 'GET', path, undefined, headers);

/** A GET whose body is what came over the wire (fetch would decode it). */
function raw(path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${stack.url}${path}`, { headers, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** Appends an erasable event of a data subject; answers its block's index. */
async function appendPersonal(entity: string, name: string, subject: string): Promise<string> {
  const added = await call(stack.url, 'POST', `${B}/events`, { entity_id: entity, event_type: 'registered', details: { name }, subject_id: subject });
  assert.equal(added.status, 200, added.text);
  return added.body.event_id.split('_').at(-2);
}

/** A counter of /metrics, by its name and labels as printed (`name{label="x"}`). */
async function metric(series: string): Promise<number> {
  const text = await (await fetch(`${stack.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}
/** What the read caches of every instance served, and the reads they sent on to DynamoDB. */
const counters = async () => ({
  recordHits: await metric('ledger_read_cache_hits_total{cache="record"}'),
  segmentHits: await metric('ledger_read_cache_hits_total{cache="segment"}'),
  tileHits: await metric('ledger_read_cache_hits_total{cache="tile"}'),
  evidenceHits: await metric('ledger_read_cache_hits_total{cache="evidence"}'),
  pageHits: await metric('ledger_read_cache_hits_total{cache="page"}'),
  misses:
    (await metric('ledger_read_cache_misses_total{cache="record"}')) +
    (await metric('ledger_read_cache_misses_total{cache="segment"}')) +
    (await metric('ledger_read_cache_misses_total{cache="tile"}')) +
    (await metric('ledger_read_cache_misses_total{cache="evidence"}')) +
    (await metric('ledger_read_cache_misses_total{cache="page"}')),
});

describe('HTTP caching', () => {
  it('serves a written block, by index or hash, with a strong ETag, immutable, and answers 304 to a request naming the tag', async () => {
    const first = await get(`${B}/blocks/1`);
    assert.equal(first.status, 200);
    const tag = first.headers.get('etag')!;
    assert.match(tag, /^"[A-Za-z0-9_-]{43}"$/);
    assert.equal(first.headers.get('cache-control'), IMMUTABLE);
    const byHash = await get(`${B}/blocks/${first.body.hash}`);
    assert.equal(byHash.headers.get('etag'), tag, 'the same block, the same tag');

    for (const ifNoneMatch of [tag, `W/${tag}`, `"other", ${tag}`, '*']) {
      const again = await get(`${B}/blocks/1`, { 'If-None-Match': ifNoneMatch });
      assert.equal(again.status, 304, ifNoneMatch);
      assert.equal(again.text, '', 'no body');
      assert.equal(again.headers.get('etag'), tag);
      assert.equal(again.headers.get('cache-control'), IMMUTABLE);
    }
    const other = await get(`${B}/blocks/2`, { 'If-None-Match': tag });
    assert.equal(other.status, 200, "another block's tag does not match");
  });

  it('keeps a page read at a named tree size for good; revalidates one without, whose total grows with the chain', async () => {
    const fixed = await get(`${B}/blocks?limit=100&offset=200&tree_size=250`);
    assert.equal(fixed.status, 200, fixed.text);
    assert.equal(fixed.body.total, 250);
    assert.deepEqual(
      fixed.body.blocks.map((b: { index: number }) => b.index),
      Array.from({ length: 50 }, (_, i) => 200 + i),
      'the first 250 blocks only',
    );
    assert.equal(fixed.headers.get('cache-control'), IMMUTABLE, 'the same forever, even short of a full page');
    assert.equal((await get(`${B}/blocks?limit=100&offset=200&tree_size=250`, { 'If-None-Match': fixed.headers.get('etag')! })).status, 304);
    const beyond = await get(`${B}/blocks?limit=100&offset=0&tree_size=100000`);
    assert.equal(beyond.status, 422, 'a size the chain has not reached');
    assert.deepEqual(beyond.body.detail[0].loc, ['query', 'tree_size']);

    const full = await get(`${B}/blocks?limit=100&offset=0`);
    assert.equal(full.headers.get('cache-control'), 'public, no-cache', 'its total can still grow');
    const tail = await get(`${B}/blocks?limit=100&offset=200`);
    assert.equal(tail.body.blocks.length, 98);
    assert.equal(tail.headers.get('cache-control'), 'public, no-cache');
    const tag = tail.headers.get('etag')!;
    assert.equal((await get(`${B}/blocks?limit=100&offset=200`, { 'If-None-Match': tag })).status, 304);
    assert.equal((await call(stack.url, 'POST', `${B}/events`, { entity_id: 'late', event_type: 'recorded' })).status, 200);
    const grown = await get(`${B}/blocks?limit=100&offset=200`, { 'If-None-Match': tag });
    assert.equal(grown.status, 200, 'the page grew: the old tag no longer matches');
    assert.equal(grown.body.blocks.length, 99);
    const fullNow = await get(`${B}/blocks?limit=100&offset=0`, { 'If-None-Match': full.headers.get('etag')! });
    assert.equal(fullNow.status, 200, 'the same blocks, but a larger total: a copy kept before would show the old one');
    assert.equal(fullNow.body.total, full.body.total + 1);
    assert.deepEqual(fullNow.body.blocks, full.body.blocks);
    const stillFixed = await get(`${B}/blocks?limit=100&offset=200&tree_size=250`, { 'If-None-Match': fixed.headers.get('etag')! });
    assert.equal(stillFixed.status, 304, 'a page at a named tree size did not change');
    assert.equal(
      (await get(`${B}/blocks?limit=10&order=desc`)).headers.get('cache-control'),
      'public, no-cache',
      'a descending page shifts as the chain grows',
    );
  });

  it('sends a large answer compressed to a caller that accepts it, the same JSON, with its own tag; a small one as it is', async () => {
    const path = `${B}/blocks?limit=100&offset=0&tree_size=100`;
    const plain = await raw(path, { 'accept-encoding': 'identity' });
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.headers.vary, 'Accept-Encoding', 'caches must keep the codings of one URL apart');
    assert.ok(plain.body.byteLength > MIN_COMPRESSED_BYTES, `a page of 100 blocks is ${plain.body.byteLength} bytes`);
    const tag = plain.headers.etag as string;
    for (const [coding, accept, decode] of [
      ['br', 'gzip, deflate, br', brotliDecompressSync],
      ['gzip', 'gzip, deflate', gunzipSync],
    ] as const) {
      const packed = await raw(path, { 'accept-encoding': accept });
      assert.equal(packed.headers['content-encoding'], coding);
      assert.equal(packed.headers['cache-control'], IMMUTABLE);
      assert.ok(packed.body.byteLength * 4 < plain.body.byteLength, `${coding}: ${packed.body.byteLength} of ${plain.body.byteLength} bytes`);
      assert.deepEqual(decode(packed.body), plain.body, 'the same bytes, once decoded');
      assert.equal(packed.headers.etag, `${tag.slice(0, -1)}-${coding}"`, 'a strong tag names exact bytes: each coding has its own');
      // Revalidation by either tag: the 304 names what the caller holds.
      const held = await raw(path, { 'accept-encoding': accept, 'if-none-match': packed.headers.etag as string });
      assert.equal(held.status, 304);
      assert.equal(held.headers.etag, packed.headers.etag);
      assert.equal(held.headers.vary, 'Accept-Encoding');
      assert.equal(held.body.byteLength, 0);
      assert.equal((await raw(path, { 'accept-encoding': accept, 'if-none-match': tag })).status, 304);
    }
    assert.equal(
      (await raw(path, { 'accept-encoding': 'identity', 'if-none-match': `${tag.slice(0, -1)}-br"` })).status,
      200,
      'not what this caller would get',
    );
    const block = await raw(`${B}/blocks/1`, { 'accept-encoding': 'br, gzip' });
    assert.equal(block.status, 200);
    assert.equal(block.headers['content-encoding'], undefined, `a block of ${block.body.byteLength} bytes goes in one flight as it is`);
    assert.equal(block.headers.vary, undefined);
  });

  it('is verified whole by ledger-verify when its pages come compressed, as a node across a network sends them', async () => {
    const codings: string[] = [];
    // What a verifier elsewhere asks for (shared/verify/pages.ts), in place of the identity it asks a node here for.
    const remote: typeof fetch = async (url, init) => {
      const res = await fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), 'Accept-Encoding': 'br, gzip' } });
      codings.push(res.headers.get('content-encoding') ?? 'identity');
      return res;
    };
    const total = (await get(`${B}/blocks?limit=1`)).body.total;
    const verdict = await verifyLedger({ url: stack.url, chain: 'cached', fetch: remote });
    assert.equal(verdict.problem, null);
    assert.equal(verdict.verified, true);
    assert.ok(verdict.blocks >= total, `${verdict.blocks} of ${total} blocks`);
    assert.ok(codings.filter((c) => c === 'br').length >= 2, `full pages came as brotli: ${codings.join(' ')}`);
  });

  it('keeps a proof against a named tree size for good, and revalidates one against the latest tree', async () => {
    const fixed = await get(`${B}/blocks/5/proof?tree_size=100`);
    assert.equal(fixed.status, 200, fixed.text);
    assert.equal(fixed.headers.get('cache-control'), IMMUTABLE);
    assert.equal((await get(`${B}/blocks/5/proof?tree_size=100`, { 'If-None-Match': fixed.headers.get('etag')! })).status, 304);
    assert.equal((await get(`${B}/blocks/5/proof`)).headers.get('cache-control'), 'public, no-cache');
  });

  it("keeps a verified client's evidence against a named tree size for good, blocks and all; the latest is not kept", async () => {
    for (const query of ['leaves=5,9&tree_size=100', 'leaves=5&tree_size=100&blocks=true']) {
      const fixed = await get(`${B}/evidence?${query}`);
      assert.equal(fixed.status, 200, fixed.text);
      assert.equal(fixed.headers.get('cache-control'), IMMUTABLE, query);
      const again = await get(`${B}/evidence?${query}`, { 'If-None-Match': fixed.headers.get('etag')! });
      assert.equal(again.status, 304, query);
    }
    const withBlock = await get(`${B}/evidence?leaves=5&tree_size=100&blocks=true`);
    const without = await get(`${B}/evidence?leaves=5&tree_size=100`);
    assert.notEqual(withBlock.headers.get('etag'), without.headers.get('etag'), 'the answer with its block has a tag of its own');
    const latest = await get(`${B}/evidence?leaves=5`);
    assert.equal(latest.status, 200);
    assert.equal(latest.headers.get('etag'), null, 'a signed checkpoint of the latest tree is not kept');
    assert.equal(latest.headers.get('cache-control'), 'no-store', 'nor kept by any cache (the default of every answer that declares nothing)');
  });

  it('keeps a full tile for good with its tag; a partial tile and the checkpoint for seconds', async () => {
    const tile = await get('/tlog/cached/tile/0/000');
    assert.equal(tile.status, 200);
    assert.equal(tile.headers.get('cache-control'), IMMUTABLE);
    assert.equal((await get('/tlog/cached/tile/0/000', { 'If-None-Match': tile.headers.get('etag')! })).status, 304);
    const checkpoint = await get('/tlog/cached/checkpoint');
    assert.equal(checkpoint.headers.get('cache-control'), 'public, max-age=5');
    assert.ok(checkpoint.headers.get('etag'));
  });

  it("never lets a cache keep a data subject's events, resolved payloads or errors, so erasure shows at once", async () => {
    const index = await appendPersonal('customer-1', 'Ada', 'subj-ada');
    const personal = await get(`${B}/blocks/${index}`);
    assert.equal(personal.body.events[0].details.name, 'Ada');
    assert.equal(personal.headers.get('cache-control'), 'no-store');
    assert.equal(personal.headers.get('etag'), null);
    const page = await get(`${B}/blocks?limit=1&offset=${index}`);
    assert.equal(page.headers.get('cache-control'), 'no-store', 'a page holding it too');
    assert.equal((await call(stack.url, 'POST', '/api/v1/subjects/subj-ada/erase', { reason: 'test' })).status, 200);
    const erased = await get(`${B}/blocks/${index}`);
    assert.equal(erased.body.events[0].details, null);
    assert.equal(erased.headers.get('cache-control'), 'no-store');

    assert.equal((await get(`${B}/blocks/1?resolve_cid=true`)).headers.get('cache-control'), 'no-store');
    const missing = await get(`${B}/blocks/99999`);
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('cache-control'), 'no-store');
  });
});

describe('the instance read cache', () => {
  // Requests one after another go to the same warm instance (the pool's first idle one), as a warm Lambda instance takes them.
  it('answers a block read again from memory, its metadata and record alike, and counts the hits in /metrics', async () => {
    const first = await get(`${B}/blocks/150`);
    assert.equal(first.status, 200);
    const before = await counters();
    const again = await get(`${B}/blocks/150`);
    assert.deepEqual(again.body, first.body);
    const after = await counters();
    assert.equal(after.misses, before.misses, 'nothing read from DynamoDB the second time');
    assert.equal(after.recordHits, before.recordHits + 1);
    assert.equal(after.segmentHits, before.segmentHits + 1);
    const byHash = await get(`${B}/blocks/${first.body.hash}`);
    assert.equal(byHash.body.index, 150);
    assert.equal((await counters()).misses, before.misses, 'by its hash too');

    const tile = async () => (await fetch(`${stack.url}/tlog/cached/tile/0/000`)).arrayBuffer();
    const bytes = Buffer.from(await tile());
    assert.equal(bytes.length, 8192);
    const tileBefore = await counters();
    assert.deepEqual(Buffer.from(await tile()), bytes);
    const tileAfter = await counters();
    assert.equal(tileAfter.tileHits, tileBefore.tileHits + 1);
    assert.equal(tileAfter.misses, tileBefore.misses, 'a full tile read again is not read from DynamoDB');
  });

  it("keeps a verified client's evidence against a fixed tree size whole: read again, it is neither built nor read", async () => {
    const query = `${B}/evidence?leaves=42,43&tree_size=120&blocks=true`;
    const first = await get(query); // the instance learns the chain reached 120 blocks (a read of its head)
    assert.equal(first.status, 200);
    assert.deepEqual((await get(query)).body, first.body); // built at that size, and kept
    const before = await counters();
    const again = await get(query);
    assert.deepEqual(again.body, first.body);
    const after = await counters();
    assert.equal(after.evidenceHits, before.evidenceHits + 1);
    assert.equal(after.misses, before.misses, 'no proof node, block or head read from DynamoDB');
    assert.equal(after.recordHits + after.segmentHits, before.recordHits + before.segmentHits, 'nor from the other caches: the answer is kept whole');
  });

  it("shows an erasure at once though the erased event's block is held", async () => {
    const index = await appendPersonal('customer-2', 'Grace', 'subj-grace');
    assert.equal((await get(`${B}/blocks/${index}`)).body.events[0].details.name, 'Grace');
    assert.equal((await get(`${B}/blocks/${index}`)).body.events[0].details.name, 'Grace');
    assert.equal((await call(stack.url, 'POST', '/api/v1/subjects/subj-grace/erase', { reason: 'test' })).status, 200);
    const before = await counters();
    const erased = await get(`${B}/blocks/${index}`);
    assert.equal((await counters()).recordHits, before.recordHits + 1, 'served from the cache');
    assert.equal(erased.body.events[0].details, null);
    assert.equal(erased.body.events[0].erased, true);
  });

  it('keeps a full page of 100 blocks whole once read: read again, it is one kept item, byte for byte the same answer', async () => {
    const first = await get(`${B}/blocks?limit=100&offset=100`);
    assert.equal(first.status, 200);
    assert.deepEqual(
      first.body.blocks.map((b: { index: number }) => b.index),
      Array.from({ length: 100 }, (_, i) => 100 + i),
    );
    const before = await counters();
    const again = await get(`${B}/blocks?limit=100&offset=100`);
    const after = await counters();
    assert.equal(again.text, first.text);
    assert.equal(again.headers.get('etag'), first.headers.get('etag'));
    assert.equal(after.pageHits, before.pageHits + 1, 'the kept page');
    assert.equal(after.recordHits, before.recordHits, 'not its 100 records');
    assert.equal(after.misses, before.misses, 'nothing read from DynamoDB');
  });

  it("opens a data subject's event on a kept page at every read, and shows its erasure at once", async () => {
    const P = '/api/v1/chains/paged-people';
    assert.equal((await call(stack.url, 'POST', `${P}/create`)).status, 201);
    const personal = await call(stack.url, 'POST', `${P}/events`, {
      entity_id: 'c-9',
      event_type: 'registered',
      details: { name: 'Linus' },
      subject_id: 'subj-linus',
    });
    assert.equal(personal.status, 200, personal.text);
    const events = Array.from({ length: 98 }, (_, i) => ({ entity_id: `p-${i}`, event_type: 'recorded', details: { i } }));
    assert.equal((await call(stack.url, 'POST', `${P}/events/batch`, { events })).status, 200);
    const page = () => get(`${P}/blocks?limit=100&offset=0`);
    const first = await page();
    assert.equal(first.body.blocks.length, 100);
    assert.equal(first.body.blocks[1].events[0].details.name, 'Linus');
    const before = await counters();
    const kept = await page();
    assert.equal((await counters()).pageHits, before.pageHits + 1, 'read from the kept page');
    assert.equal(kept.body.blocks[1].events[0].details.name, 'Linus', 'opened with its subject key');
    assert.equal(kept.headers.get('cache-control'), 'no-store');
    assert.equal((await call(stack.url, 'POST', '/api/v1/subjects/subj-linus/erase', { reason: 'test' })).status, 200);
    const erased = await page();
    assert.equal(erased.body.blocks[1].events[0].details, null);
    assert.equal(erased.body.blocks[1].events[0].erased, true);
    assert.deepEqual(erased.body.blocks[2], first.body.blocks[2], 'the other blocks as they were');
  });

  it("gives a verified client a data subject's event opened, then erased, though its proof comes in one answer with a kept block", async () => {
    const client = new LedgerClient({ baseUrl: stack.url });
    await client.checkpoint('cached');
    const index = Number(await appendPersonal('customer-3', 'Hedy', 'subj-hedy'));
    await client.checkpoint('cached'); // the trusted size now covers it: the block comes with its proof at that size
    assert.equal((await client.block('cached', index)).events[0]?.details?.name, 'Hedy');
    assert.equal((await client.block('cached', index)).events[0]?.details?.name, 'Hedy');
    assert.equal((await call(stack.url, 'POST', '/api/v1/subjects/subj-hedy/erase', { reason: 'test' })).status, 200);
    const erased = (await client.block('cached', index)).events[0]!;
    assert.equal(erased.details, null);
    assert.equal((erased as { erased?: boolean }).erased, true);
    // A plain block beside it comes in the one answer, as the chain holds it.
    const plain = await client.block('cached', 5);
    assert.deepEqual(plain, (await get(`${B}/blocks/5`)).body);
  });
});
