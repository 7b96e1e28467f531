/**
 * ledger-verify's pages, checked in its own thread or in worker threads (shared/verify/page-workers.ts), against a
 * node served from memory here: an untouched chain verifies either way, and a chain with a forged block, a broken
 * link across pages or a missing block gets the same verdict either way, naming the first bad block.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { sealBlock } from '#shared/ledger/hashing';
import { blockHashesRoot } from '#shared/ledger/merkle';
import type { Block } from '#shared/ledger/types';
import { type PagePool, startPagePool } from '#shared/verify/page-workers';
import { MAX_PAGES_IN_FLIGHT, NODE_ATTEMPTS, type NodeWait, nodeHeaders, PageWindow, retryAfterSeconds } from '#shared/verify/pages';
import { verifyLedger } from '#shared/verify/verifier';
import { signedChain } from '#test/support/signed-chain';

const SIZE = 350;
const { chain, fields, signCheckpoint, publicKeyHex, answer } = signedChain(SIZE);

/** What the node answers now: the chain as it is, or as a test has spoiled it. */
let served: Block[] = chain;
/** A test's refusals: the answer a request gets in place of its own, if any. */
let refuse: ((path: string) => { status: number; headers: Record<string, string> } | undefined) | undefined;
/** A test's malformed answer for a path, if any (sent as JSON in place of the real one). */
let malformed: ((path: string) => unknown) | undefined;
let server: Server;
let url: string;
let pool: PagePool;
const poolWaits: NodeWait[] = [];

before(async () => {
  server = createServer((req, res) => {
    const at = new URL(req.url ?? '/', 'http://unit');
    const body = answer(at, served);
    const refused = refuse?.(at.pathname);
    if (refused) {
      res.writeHead(refused.status, { 'content-type': 'application/json', ...refused.headers });
      res.end(JSON.stringify({ detail: 'Rate limit exceeded' }));
      return;
    }
    const replaced = malformed?.(at.pathname);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(replaced === undefined ? body : replaced));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  pool = startPagePool({ base: url, headers: {}, threads: 2, minBlocks: 0, onWait: (wait) => poolWaits.push(wait) });
});
after(async () => {
  await pool.close();
  server.close();
});

/** The verdict in this thread, and with the pool: they must agree. */
async function verdicts() {
  const here = await verifyLedger({ url, chain: 'main', publicKey: publicKeyHex });
  const threaded = await verifyLedger({ url, chain: 'main', publicKey: publicKeyHex, pages: pool });
  const { notes: _a, ...a } = here;
  const { notes: _b, ...b } = threaded;
  assert.deepEqual(b, a, 'the same verdict with worker threads');
  return here;
}

describe('ledger-verify: pages checked here or in worker threads', () => {
  it('verifies an untouched chain of several pages', async () => {
    served = chain;
    let checked = 0;
    const counted = {
      ...pool,
      check: (request: Parameters<PagePool['check']>[0]) => {
        checked += 1;
        return pool.check(request);
      },
    };
    assert.equal((await verifyLedger({ url, chain: 'main', pages: counted })).verified, true);
    assert.equal(checked, 4, 'every page went to the pool');
    assert.equal((await verifyLedger({ url, chain: 'main', pages: { ...counted, minBlocks: SIZE } })).verified, true);
    assert.equal(checked, 4, 'none of a chain as short as the pool is told to leave');
    const verdict = await verdicts();
    assert.equal(verdict.verified, true, verdict.problem ?? '');
    assert.equal(verdict.blocks, SIZE);
    assert.equal(verdict.root, fields.root);
  });

  it('tells a verifier the node never let in (401, 403 from its first request: nothing checked) from a node that withheld pages it could serve, here or in worker threads', async () => {
    try {
      refuse = () => ({ status: 401, headers: {} });
      const out = await verdicts();
      assert.deepEqual({ verified: out.verified, refused: out.refused }, { verified: false, refused: true });
      assert.match(out.problem ?? '', /answered 401/);
      // The checkpoint served, then its pages refused: the node withholds what it showed it has (a tamper alarm, exit 1).
      refuse = (path) => (path.endsWith('/blocks') ? { status: 403, headers: {} } : undefined);
      const withheld = await verdicts();
      assert.deepEqual({ verified: withheld.verified, refused: withheld.refused }, { verified: false, refused: false });
      assert.match(withheld.problem ?? '', /answered 403/);
    } finally {
      refuse = undefined;
    }
  });

  it('names a forged block in a later page', async () => {
    served = chain.map((b) => (b.index === 257 ? { ...b, events: [{ ...b.events[0]!, details: { i: 'forged' } }] } : b));
    const verdict = await verdicts();
    assert.equal(verdict.verified, false);
    assert.equal(verdict.firstBadBlock, 257);
    assert.equal(verdict.problem, "block 257 of 'main': its hash does not match its contents");
  });

  it("names a page's first block that does not link to the page before, though it hashes right", async () => {
    served = chain.map((b) => (b.index === 200 ? sealBlock({ ...b, previous_hash: 'ab'.repeat(32) }) : b));
    const verdict = await verdicts();
    assert.equal(verdict.firstBadBlock, 200);
    assert.equal(verdict.problem, "block 200 of 'main' does not link to block 199");
  });

  it('checks a saved checkpoint whose size falls inside a page, here and in worker threads, naming its last block when it disagrees', async () => {
    served = chain;
    const at = 237; // blocks 0…236: inside the page of 200…299
    const saved = { ...fields, tree_size: at, root: blockHashesRoot(chain.slice(0, at).map((b) => b.hash)) };
    const signed = (root: string) => signCheckpoint({ ...saved, root });
    for (const pages of [undefined, pool]) {
      const good = await verifyLedger({
        url,
        chain: 'main',
        publicKey: publicKeyHex,
        savedCheckpoint: signed(saved.root),
        ...(pages ? { pages } : {}),
      });
      assert.equal(good.verified, true, good.problem ?? '');
      const bad = await verifyLedger({
        url,
        chain: 'main',
        publicKey: publicKeyHex,
        savedCheckpoint: signed('ab'.repeat(32)),
        ...(pages ? { pages } : {}),
      });
      assert.equal(bad.verified, false);
      assert.equal(bad.firstBadBlock, at - 1);
      assert.match(bad.problem ?? '', /^blocks 0…236 no longer make the root of the checkpoint saved at 237 blocks/);
    }
  });

  it('names the gap a missing block leaves, and the first of two faults', async () => {
    served = chain.filter((b) => b.index !== 120 && b.index !== 300);
    const verdict = await verdicts();
    assert.equal(verdict.firstBadBlock, 120);
    assert.equal(verdict.problem, "block 120 of 'main' is missing (the next block is 121)");
    served = chain.filter((b) => b.index < 340);
    assert.equal((await verdicts()).problem, "block 340 of 'main' is missing");
  });
});

describe('ledger-verify: answers of another shape (red team: a TypeError and its stack, no verdict)', () => {
  it('gives a verdict, not verified, naming what it could not read, here and in worker threads', async () => {
    served = chain;
    try {
      malformed = (path) => (path.endsWith('/checkpoint') ? null : undefined);
      assert.equal((await verdicts()).problem, 'the checkpoint is not a checkpoint');
      malformed = (path) => (path.endsWith('/blocks') ? { items: [] } : undefined);
      assert.equal((await verdicts()).problem, "the node's page of 'main' from block 0 holds no list of blocks");
      malformed = undefined;
      for (const spoiled of [{ events: 'x' }, { events: [null] }, { events: undefined }]) {
        served = chain.map((b) => (b.index === 130 ? ({ ...b, ...spoiled } as unknown as Block) : b));
        const verdict = await verdicts();
        assert.equal(verdict.verified, false);
        assert.equal(verdict.firstBadBlock, 130, JSON.stringify(spoiled));
        assert.equal(verdict.problem, "block 130 of 'main' is malformed (not a block with a list of events)");
      }
      served = chain;
      malformed = (path) => (path.endsWith('/blocks') ? { blocks: [null, 7] } : undefined);
      assert.equal((await verdicts()).problem, "block 0 of 'main' is malformed (not a block with a list of events)");
      malformed = (path) => (path.endsWith('/identity') ? { public_key: 42 } : undefined);
      const verdict = await verifyLedger({ url, chain: 'main' });
      assert.equal(verdict.verified, false);
      assert.match(verdict.problem ?? '', /not one a verifier can read|no signature|not signed/);
    } finally {
      malformed = undefined;
      served = chain;
    }
  });
});

describe('ledger-verify: an old checkpoint (red team: a replayed one passed without a word)', () => {
  it('tells when the checkpoint was signed, if long before now: a node signs its checkpoint as it answers', async () => {
    served = chain;
    const old = await verifyLedger({ url, chain: 'main', publicKey: publicKeyHex });
    assert.equal(old.verified, true);
    assert.ok(
      old.notes.some((n) => /^the checkpoint was signed \d+ days ago \(2025-11-24T.*a mirror or cache may be showing an old state/.test(n)),
      old.notes.join('\n'),
    );
    try {
      malformed = (path) => (path.endsWith('/checkpoint') ? signCheckpoint({ ...fields, timestamp: Math.floor(Date.now() / 1000) - 5 }) : undefined);
      const fresh = await verifyLedger({ url, chain: 'main', publicKey: publicKeyHex });
      assert.equal(fresh.verified, true);
      assert.ok(!fresh.notes.some((n) => /was signed/.test(n)), fresh.notes.join('\n'));
    } finally {
      malformed = undefined;
    }
  });
});

describe('ledger-verify: a checkpoint signed but not well formed (red team: an empty tree verified as nothing)', () => {
  it('refuses a signed checkpoint of no blocks, of a size no tree has, or without a root, pinned key or not', async () => {
    served = chain;
    try {
      for (const [at, problem] of [
        [{ ...fields, tree_size: 0, root: '' }, /signs a tree of 0 blocks: a chain has at least its genesis block/],
        [{ ...fields, tree_size: -1 }, /signs a tree of -1 blocks/],
        [{ ...fields, tree_size: 2.5 }, /signs a tree of 2.5 blocks/],
        [{ ...fields, root: '' }, /signs no root \(64 hex digits\)/],
      ] as const) {
        malformed = (path) => (path.endsWith('/checkpoint') ? signCheckpoint(at as typeof fields) : undefined);
        for (const pinned of [{ publicKey: publicKeyHex }, {}]) {
          const verdict = await verifyLedger({ url, chain: 'main', ...pinned });
          assert.equal(verdict.verified, false, JSON.stringify(at));
          assert.match(verdict.problem ?? '', problem);
        }
      }
    } finally {
      malformed = undefined;
    }
  });
});

describe("ledger-verify of a Sub-Chain: the Main Chain's checkpoint must be the Main Chain's", () => {
  it("refuses another chain's signed checkpoint answered as the Main Chain's (red team)", async () => {
    served = chain;
    const orders = signCheckpoint({ ...fields, chain_name: 'orders' });
    try {
      malformed = (path) => (path === '/api/v1/chains/main/checkpoint' || path === '/api/v1/chains/orders/checkpoint' ? orders : undefined);
      const verdict = await verifyLedger({ url, chain: 'orders', publicKey: publicKeyHex });
      assert.equal(verdict.verified, false);
      assert.equal(verdict.problem, "the Main Chain's checkpoint is of chain 'orders', not 'main'");
    } finally {
      malformed = undefined;
    }
  });
});

describe('ledger-verify: what it asks a node for', () => {
  it('sends its API key, asks a node on this machine for uncompressed answers (nothing to save over loopback), and others for brotli', () => {
    assert.deepEqual(nodeHeaders('http://127.0.0.1:3000', 'k'), { 'X-API-Key': 'k', 'Accept-Encoding': 'identity' });
    assert.deepEqual(nodeHeaders('http://localhost:3000/'), { 'Accept-Encoding': 'identity' });
    assert.deepEqual(nodeHeaders('http://[::1]:3000'), { 'Accept-Encoding': 'identity' });
    // A node elsewhere: brotli or gzip, which a node answers pages in at a sixth of their size.
    assert.deepEqual(nodeHeaders('https://ledger.example.com', 'k', 'X-Key'), { 'X-Key': 'k', 'Accept-Encoding': 'br, gzip' });
    assert.deepEqual(nodeHeaders('https://127.example.com'), { 'Accept-Encoding': 'br, gzip' });
  });
});

describe('ledger-verify: a node that asks it to wait', () => {
  it('waits as a rate-limited node asks (429, Retry-After), says so, and verifies the chain, here and in worker threads', async () => {
    served = chain;
    // The first two pages asked for are refused, as a node over its limit refuses the requests in flight at once.
    let refusals = 2;
    refuse = (path) => (path.endsWith('/blocks') && refusals-- > 0 ? { status: 429, headers: { 'Retry-After': '1', 'X-RateLimit-Limit': '100' } } : undefined);
    try {
      const waits: NodeWait[] = [];
      const started = Date.now();
      const here = await verifyLedger({ url, chain: 'main', publicKey: publicKeyHex, onWait: (w) => waits.push(w) });
      assert.equal(here.verified, true, here.problem ?? '');
      assert.ok(waits.length >= 1, 'the wait was told');
      assert.deepEqual(waits[0], { status: 429, seconds: 1, limit: 100, path: `/api/v1/chains/main/blocks?limit=100&offset=0&tree_size=${SIZE}` });
      assert.ok(Date.now() - started >= 1_000, 'it waited the second the node asked for');
      refusals = 2;
      poolWaits.length = 0;
      const threaded = await verifyLedger({ url, chain: 'main', publicKey: publicKeyHex, pages: pool });
      assert.equal(threaded.verified, true, threaded.problem ?? '');
      assert.ok(poolWaits.length >= 1 && poolWaits.every((w) => w.status === 429 && w.seconds === 1 && w.limit === 100), 'the workers told the pool');
    } finally {
      refuse = undefined;
    }
  });

  it('gives up with the node’s answer when it keeps refusing, or asks for longer than a run should wait', async () => {
    served = chain;
    let asked = 0;
    refuse = (path) => {
      if (!path.endsWith('/checkpoint')) return undefined;
      asked += 1;
      return { status: 503, headers: { 'Retry-After': '0' } };
    };
    try {
      const verdict = await verifyLedger({ url, chain: 'main' });
      assert.equal(verdict.verified, false);
      assert.match(verdict.problem ?? '', /checkpoint answered 503/);
      assert.equal(asked, NODE_ATTEMPTS, 'sent as many times as it may be, no more');
      asked = 0;
      refuse = (path) => (path.endsWith('/checkpoint') ? { status: 429, headers: { 'Retry-After': '3600' } } : undefined);
      const started = Date.now();
      const refused = await verifyLedger({ url, chain: 'main' });
      assert.match(refused.problem ?? '', /checkpoint answered 429: "Rate limit exceeded"/);
      assert.ok(Date.now() - started < 5_000, 'an hour is not waited');
    } finally {
      refuse = undefined;
    }
  });

  it('reads Retry-After as seconds or as a date', () => {
    assert.equal(retryAfterSeconds('7'), 7);
    assert.equal(retryAfterSeconds(null), 1);
    assert.equal(retryAfterSeconds('soon'), 1);
    const inTen = new Date(Date.now() + 10_000).toUTCString();
    assert.ok([9, 10, 11].includes(retryAfterSeconds(inTen)), retryAfterSeconds(inTen).toString());
    assert.equal(retryAfterSeconds(new Date(Date.now() - 60_000).toUTCString()), 0);
  });
});

describe('ledger-verify: how many pages it keeps in flight', () => {
  it('as many as a lane needs while it checks one, from the quickest page seen, between its least and its cap', () => {
    const window = new PageWindow(2, 6);
    assert.equal(window.size, 6, 'before any page: the least');
    window.observe(undefined);
    assert.equal(window.size, 6);
    window.observe({ fetchMs: 4, checkMs: 2 });
    assert.equal(window.size, 6, 'a node on this machine: 2 lanes × (1 + 4/2) = 6');
    window.observe({ fetchMs: 40, checkMs: 2 });
    assert.equal(window.size, 6, 'a page that queued behind others does not widen it: the quickest counts');
    const far = new PageWindow(1, 6);
    far.observe({ fetchMs: 20, checkMs: 2 });
    assert.equal(far.size, 11, '1 lane × (1 + 20/2)');
    far.observe({ fetchMs: 100, checkMs: 2 });
    assert.equal(far.size, 11);
    const distant = new PageWindow(2, 6);
    distant.observe({ fetchMs: 100, checkMs: 2 });
    assert.equal(distant.size, MAX_PAGES_IN_FLIGHT, 'a node 100 ms away: the cap');
  });

  it('keeps more than 6 pages in flight to a distant node, and no more than its cap', async () => {
    const SIZE_FAR = 4_000;
    const { answer: farAnswer, publicKeyHex: farKey } = signedChain(SIZE_FAR);
    let open = 0;
    let most = 0;
    // 40 ms away: each answer sent that much after its request.
    const distant = createServer((req, res) => {
      const at = new URL(req.url ?? '/', 'http://far');
      const isPage = at.pathname.endsWith('/blocks');
      if (isPage) most = Math.max(most, ++open);
      setTimeout(() => {
        if (isPage) open -= 1;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(farAnswer(at)));
      }, 40);
    });
    await new Promise<void>((done) => distant.listen(0, '127.0.0.1', done));
    try {
      const verdict = await verifyLedger({
        url: `http://127.0.0.1:${(distant.address() as AddressInfo).port}`,
        chain: 'main',
        publicKey: farKey,
      });
      assert.equal(verdict.verified, true, verdict.problem ?? '');
      assert.equal(verdict.blocks, SIZE_FAR);
      assert.ok(most > 6, `more than 6 pages in flight (${most})`);
      assert.ok(most <= MAX_PAGES_IN_FLIGHT, `no more than the cap (${most})`);
    } finally {
      distant.close();
    }
  });
});
