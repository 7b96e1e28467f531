/**
 * The CLI's GET of a node (shared/verify/node-get.ts): answers read whole and decoded as `fetch` decodes them,
 * redirects followed, headers and error statuses handed back as they came, and a node out of reach an error.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { nodeGet, redirected } from '#shared/verify/node-get';
import { askNode, fromFetch, getJson } from '#shared/verify/pages';

const PAGE = JSON.stringify({ blocks: Array.from({ length: 50 }, (_, i) => ({ index: i, note: 'x'.repeat(100) })) });
/** 64 MB of spaces in 64 KB of gzip. */
const BOMB = gzipSync(Buffer.alloc(64 * 1024 * 1024, 32), { level: 9 });
let server: Server;
let base: string;
const seen: Record<string, string | undefined>[] = [];

before(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url, key: req.headers['x-api-key'] as string | undefined, accept: req.headers['accept-encoding'] as string | undefined });
    switch (req.url) {
      case '/plain':
        res.writeHead(200, { 'content-type': 'application/json' }).end(PAGE);
        break;
      case '/br':
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'br' }).end(brotliCompressSync(PAGE));
        break;
      case '/gzip':
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(PAGE));
        break;
      case '/moved':
        res.writeHead(308, { location: '/plain' }).end();
        break;
      case '/elsewhere':
        // Another origin (the same host under another name): the caller's key stays with the node it named.
        res.writeHead(302, { location: `http://localhost:${(server.address() as AddressInfo).port}/plain` }).end();
        break;
      case '/limited':
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3600', 'x-ratelimit-limit': '100' }).end('{"detail":"Rate limit exceeded"}');
        break;
      case '/cut':
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write(PAGE.slice(0, 100), () => res.destroy());
        break;
      case '/endless':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('[');
        break;
      case '/huge':
        // Past the cap, on the wire: written until the client goes.
        res.writeHead(200, { 'content-type': 'application/json' });
        (function more() {
          if (!res.destroyed && res.write(Buffer.alloc(1024 * 1024, 32))) setImmediate(more);
          else if (!res.destroyed) res.once('drain', more);
        })();
        break;
      case '/bomb':
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(BOMB);
        break;
      case '/odd':
        res.writeHead(200, { 'content-encoding': 'zstd' }).end('??');
        break;
      default:
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not found"}');
    }
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

const init = () => ({ headers: { 'X-API-Key': 'k', 'Accept-Encoding': 'br, gzip' }, signal: AbortSignal.timeout(5_000) });

describe("ledger-verify's GET of a node (node:http)", () => {
  it('reads an answer whole, decoded from br or gzip as fetch decodes it, sending the headers given', async () => {
    for (const path of ['/plain', '/br', '/gzip']) {
      const answer = await nodeGet(`${base}${path}`, init());
      assert.equal(answer.status, 200);
      assert.equal(answer.body.toString('utf8'), PAGE, path);
      assert.equal(answer.headers.get('Content-Type'), 'application/json');
    }
    assert.deepEqual(seen.at(-1), { path: '/gzip', key: 'k', accept: 'br, gzip' });
  });

  it('answers what fetch answers for the same node: statuses, headers and bodies, a redirect followed', async () => {
    for (const path of ['/plain', '/br', '/moved', '/limited', '/missing']) {
      const mine = await nodeGet(`${base}${path}`, init());
      const theirs = await fromFetch(fetch)(`${base}${path}`, init());
      assert.equal(mine.status, theirs.status, path);
      assert.equal(mine.body.toString('utf8'), theirs.body.toString('utf8'), path);
      assert.equal(mine.headers.get('retry-after'), theirs.headers.get('retry-after'), path);
    }
    assert.equal((await nodeGet(`${base}/moved`, init())).body.toString('utf8'), PAGE);
  });

  it('follows a redirect to another origin without the API key, and refuses one from https to plain http', async () => {
    seen.length = 0;
    assert.equal((await nodeGet(`${base}/elsewhere`, init())).body.toString('utf8'), PAGE);
    assert.deepEqual(
      seen.map(({ path, key }) => ({ path, key })),
      [
        { path: '/elsewhere', key: 'k' },
        { path: '/plain', key: undefined },
      ],
    );
    seen.length = 0;
    await nodeGet(`${base}/moved`, init());
    assert.deepEqual(seen.at(-1), { path: '/plain', key: 'k', accept: 'br, gzip' }, 'on its own origin the key goes along');
    const secure = new URL('https://ledger.example/api/v1/identity');
    assert.throws(
      () => redirected(secure, new URL('http://ledger.example/api/v1/identity'), init()),
      /ledger\.example redirected to http:\/\/ledger\.example, off https: not followed/,
    );
    assert.deepEqual(redirected(secure, new URL('https://cdn.example/x'), init()).headers, { 'Accept-Encoding': 'br, gzip' });
    assert.deepEqual(redirected(secure, new URL('https://ledger.example/x'), init()).headers, init().headers);
  });

  it("hands the verifier's requests what they read: a JSON page, the node's refusal named with its status", async () => {
    const node = { http: nodeGet, base, headers: {} };
    assert.equal((await getJson<{ blocks: unknown[] }>(node, '/br')).blocks.length, 50);
    await assert.rejects(getJson(node, '/missing'), /\/missing answered 404: "Not found"/);
    // A wait longer than a run should wait is not waited: the answer is the caller's.
    assert.equal((await askNode(node, '/limited')).status, 429);
  });

  it('fails, never hangs, on a node out of reach or an answer it cannot decode', async () => {
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await assert.rejects(nodeGet(`http://127.0.0.1:${port}/plain`, init()), /ECONNREFUSED/);
    await assert.rejects(askNode({ http: nodeGet, base: `http://127.0.0.1:${port}`, headers: {} }, '/plain'), /cannot reach http:\/\/127\.0\.0\.1/);
    await assert.rejects(nodeGet(`${base}/odd`, init()), /content-encoding zstd is not one a verifier asks for/);
    await assert.rejects(nodeGet(`${base}/plain`, { headers: {}, signal: AbortSignal.abort() }), /abort/i);
    await assert.rejects(nodeGet(`${base}/cut`, init()), /cut short|aborted|socket hang up/);
    // An answer larger than any node's, on the wire or decoded, is refused as it comes (red team: 2.8 GB held before).
    await assert.rejects(nodeGet(`${base}/huge`, init()), /larger than 32 MB/);
    await assert.rejects(nodeGet(`${base}/bomb`, init()), /could not be decoded: .*larger than 33554432 bytes/);
    // An answer that never ends ends at the request's deadline.
    await assert.rejects(nodeGet(`${base}/endless`, { headers: {}, signal: AbortSignal.timeout(300) }), /abort|timeout|cut short/i);
  });
});
