/**
 * Abuse: guessing keys is stopped by 429s; slow-loris clients neither block others nor stay forever;
 * GraphQL batch, alias, fragment and directive bombs are refused by the limits, quickly; 1 000 idle
 * WebSocket connections do not halve the append rate (the rate is reported); generated WebSocket frames (bad opcodes,
 * unmasked, reserved bits, lengths that lie, invalid UTF-8, oversized control frames, broken fragments)
 * close only their own connection, never the process.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import autocannon from 'autocannon';
import WebSocket from 'ws';
import { call, keysCli, removeDir, startStack, type Stack } from '#test/support/stack';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { AS_NPM_START, CI, report } from './support.ts';

const ADMIN = 'abuse-admin-key-0123456789abcdef';
let stack: Stack;

before(async () => {
  stack = await startStack({
    env: {
      SVC_AUTH_ENABLED: 'true',
      SVC_ADMIN_API_KEY: ADMIN,
      SVC_AUTH_FAILURES_PER_MINUTE: '20',
      SVC_RATE_LIMIT_RPM: '0',
      // The frame fuzzer opens hundreds of connections with the admin key, faster than their $disconnects are
      // handled: what it measures is each frame's own connection, not the per-key cap (tested in
      // test/integration/realtime.test.ts).
      SVC_WS_CONNECTIONS_PER_KEY: '5000',
      ...AS_NPM_START,
    },
  });
});

after(async () => {
  await stack?.stop();
  if (stack) removeDir(stack.dataDir);
});

const admin = { 'X-API-Key': ADMIN };

const isAliveProcess = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('Abuse', () => {
  it('slow loris: 200 clients trickling headers do not block others, and are cut off', async (t) => {
    const url = new URL(stack.url);
    const sockets: Socket[] = [];
    let closedByServer = 0;
    const trickles: NodeJS.Timeout[] = [];
    for (let i = 0; i < 200; i += 1) {
      const socket = connect(Number(url.port), url.hostname);
      socket.on('error', () => undefined);
      socket.on('close', () => (closedByServer += 1));
      socket.write(`POST /api/v1/chains/slow/events HTTP/1.1\r\nHost: ${url.host}\r\n`);
      trickles.push(setInterval(() => socket.writable && socket.write('X-Slow: a\r\n'.slice(0, 1)), 500));
      sockets.push(socket);
    }
    // Meanwhile, others are served as usual.
    const latencies: number[] = [];
    for (let i = 0; i < 50; i += 1) {
      const started = performance.now();
      const res = await call(stack.url, 'GET', '/api/v1/health');
      assert.equal(res.status, 200);
      latencies.push(performance.now() - started);
    }
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)]!;
    // The gateway gives headers 10 s (checked every second): every slow socket is closed by then.
    const deadline = Date.now() + 15_000;
    while (closedByServer < sockets.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    trickles.forEach(clearInterval);
    sockets.forEach((s) => s.destroy());
    report(t, {
      area: 'abuse',
      what: 'slow loris on the local gateway',
      tried: `200 sockets trickling headers; 50 other requests, p99 ${Math.round(p99)} ms; ${closedByServer} slow sockets cut off within 15 s`,
      lost: 0,
      forks: 0,
      unexpected5xx: 0,
    });
    assert.ok(p99 < 1_000, `other clients were served (p99 ${Math.round(p99)} ms)`);
    assert.equal(closedByServer, 200, 'the server cut off every slow client');
  });

  it('GraphQL batch, alias, fragment and directive bombs are refused, fast', async (t) => {
    const fields = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i)).join(' ');
    const doubling = (levels: number) =>
      `query { ...F0 } ${Array.from({ length: levels }, (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`).join(' ')} fragment F${levels} on Query { chains { name } }`;
    const bombs: [string, unknown][] = [
      ['batch of 100 queries', Array.from({ length: 100 }, () => ({ query: '{ chains { name } }' }))],
      ['2 000 aliases', { query: `{ ${fields(2_000, (i) => `a${i}: chains { name }`)} }` }],
      ['fragment cycle', { query: 'query { ...A } fragment A on Query { chains { name } ...B } fragment B on Query { ...A }' }],
      ['fragments doubling 40 times', { query: doubling(40) }],
      ['1 000 directives', { query: `{ chains ${fields(1_000, () => '@include(if: true)')} { name } }` }],
      ['200 000 tokens', { query: `{ ${'chains { name } '.repeat(50_000)} }` }],
    ];
    const results: string[] = [];
    for (const [name, body] of bombs) {
      const started = performance.now();
      const res = await fetch(`${stack.url}/graphql`, {
        method: 'POST',
        headers: { ...admin, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(20_000),
      });
      const text = await res.text();
      const ms = Math.round(performance.now() - started);
      results.push(`${name} ${res.status} in ${ms} ms`);
      assert.ok(res.status >= 400 && res.status < 500, `${name}: ${res.status} ${text.slice(0, 200)}`);
      assert.ok(ms < 2_000, `${name} answered in ${ms} ms`);
    }
    const health = await call(stack.url, 'GET', '/api/v1/health');
    report(t, { area: 'abuse', what: 'GraphQL bombs', tried: results.join('; '), lost: 0, forks: 0, unexpected5xx: 0 });
    assert.equal(health.status, 200);
  });

  it('1 000 idle WebSocket connections leave appends at their pace (not halved; the rate is reported)', async (t) => {
    await call(stack.url, 'POST', '/api/v1/chains/quiet/create', undefined, admin);
    await call(stack.url, 'POST', '/api/v1/chains/busy/create', undefined, admin);
    const seconds = CI ? 4 : 8;
    const rate = async () => {
      let n = 0;
      const r = await autocannon({
        url: stack.url,
        connections: 8,
        duration: seconds,
        requests: [
          {
            method: 'POST',
            path: '/api/v1/chains/busy/events',
            headers: { ...admin, 'content-type': 'application/json' },
            setupRequest: (q) => ({ ...q, body: JSON.stringify({ entity_id: `e${n++ % 16}`, event_type: 't' }) }),
          },
        ],
      });
      assert.equal(r.non2xx, 0);
      return r['2xx'] / r.duration;
    };
    await rate(); // warm-up
    // The best of three windows each: one window's rate swings by a quarter on this shared machine.
    const best = async () => Math.max(await rate(), await rate(), await rate());
    const before = await best();
    const wsUrl = `${stack.url.replace('http', 'ws')}/ws`;
    const sockets: WebSocket[] = [];
    // Ten reader keys of 100 connections each, as many clients would hold them: a key's connections are counted at each
    // $connect (SVC_WS_CONNECTIONS_PER_KEY), so 1,000 of one key would measure that count, not idle connections.
    const readers: Record<string, string>[] = [];
    for (let k = 0; k < 10; k += 1) {
      const out = await keysCli(stack.dataDir, ['create', '--role', 'reader']);
      readers.push({ 'X-API-Key': /Key \(shown once, store it now\): (\S+)/.exec(out)![1]! });
    }
    for (let i = 0; i < 1_000; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, j) => {
          const ws = new WebSocket(wsUrl, { headers: readers[Math.floor((i + j) / 100)]! });
          sockets.push(ws);
          await new Promise<void>((resolve, reject) => {
            ws.once('open', () => resolve());
            ws.once('error', reject);
          });
          // Idle: subscribed to a chain nobody writes to, the subscription answered. Unanswered, the 1,000 subscribe
          // messages were still being handled while appends were measured: that backlog, not idle connections, took
          // appends to 76 % of their rate in one run.
          const subscribed = new Promise<void>((resolve, reject) => {
            ws.on('message', (data) => {
              if ((JSON.parse(String(data)) as { type?: string }).type === 'subscribed') resolve();
            });
            ws.once('close', () => reject(new Error('a connection closed before its subscription was answered')));
          });
          ws.send(JSON.stringify({ type: 'subscribe', chain: 'quiet' }));
          await subscribed;
        }),
      );
    }
    const open = sockets.filter((s) => s.readyState === WebSocket.OPEN).length;
    const during = await best();
    sockets.forEach((s) => s.terminate());
    // 1 000 $disconnect invocations now queue for the local WebSocket function's instances (on AWS each
    // would get its own). Leave the stack as found: a handshake answered means the queue before it drained.
    const settled = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (;;) {
      const ws = new WebSocket(wsUrl, { headers: admin, handshakeTimeout: 29_000 });
      const took = Date.now();
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      ws.terminate();
      if (Date.now() - took < 1_000) break;
      assert.ok(Date.now() - settled < 60_000, 'the disconnects of 1 000 connections were handled within a minute');
    }
    const ratio = during / before;
    report(t, {
      area: 'abuse',
      what: '1 000 idle WebSocket connections',
      tried: `appends ${Math.round(before)}/s without, ${Math.round(during)}/s with ${open} open connections (${Math.round(ratio * 100)} %)`,
      lost: 0,
      forks: 0,
      unexpected5xx: 0,
    });
    assert.equal(open, 1_000);
    // The rate is a time on a shared 2-core machine (CI's runs measured 79-108 % with nothing changed), and so is any
    // count of DynamoDB requests under 8 callers (leases, rounds and receipts fall as timing does: 4.2-9.1 requests an
    // append in runs of the same code): only a collapse fails here; the figure is in the report. Idle connections cost
    // an append nothing by construction (a push reads the subscribers of the block's chain and filters only).
    assert.ok(ratio >= 0.5, `appends kept ${Math.round(ratio * 100)} % of their rate`);
  });

  it('WebSocket frame fuzzer: every generated frame closes or answers its own connection only; the process lives', async (t) => {
    const FRAMES = CI ? 300 : 1_500;
    const SEED = Number(process.env.RELIABILITY_SEED ?? Date.now() % 100_000);
    const url = new URL(stack.url);
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${stack.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
    /** One frame as a client might send it, honest or not. */
    const frame = fc
      .record({
        fin: fc.boolean(),
        rsv: fc.constantFrom(0, 0, 0, 1, 2, 4, 7),
        opcode: fc.constantFrom(0x1, 0x1, 0x1, 0x2, 0x0, 0x8, 0x9, 0xa, 0x3, 0x7, 0xb, 0xf),
        masked: fc.boolean(),
        payload: fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc.string({ maxLength: 200 }).map((s) => new Uint8Array(Buffer.from(s))),
          fc.constantFrom(
            new Uint8Array([0xc2, 0x2a]),
            new Uint8Array([0xed, 0xa0, 0x80]),
            new Uint8Array([0xff, 0xfe]),
            new Uint8Array(Buffer.from('{"type":"subscribe","chain":"*"}')),
          ),
        ),
        lie: fc.constantFrom('none', 'none', 'none', 'longer', 'huge', 'short'),
      })
      .map(({ fin, rsv, opcode, masked, payload, lie }) => {
        const length = lie === 'longer' ? payload.length + 100 : lie === 'short' ? Math.max(0, payload.length - 1) : payload.length;
        const head: number[] = [(fin ? 0x80 : 0) | (rsv << 4) | opcode];
        const maskBit = masked ? 0x80 : 0;
        if (lie === 'huge') head.push(maskBit | 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
        else if (length < 126) head.push(maskBit | length);
        else head.push(maskBit | 126, (length >> 8) & 0xff, length & 0xff);
        const key = [1, 2, 3, 4];
        const body = masked ? payload.map((b, i) => b ^ key[i % 4]!) : payload;
        return Buffer.concat([Buffer.from(head), masked ? Buffer.from(key) : Buffer.alloc(0), Buffer.from(body)]);
      });
    const frames = fc.sample(fc.array(frame, { minLength: 1, maxLength: 3 }), { numRuns: FRAMES, seed: SEED });
    const outcomes = new Map<string, number>();
    const count = (what: string) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1);
    /** Opens a WebSocket by hand, sends the frames, and says how the server ended it. */
    const attack = (bytes: Buffer[]) =>
      new Promise<void>((resolve) => {
        const socket = connect(Number(url.port), url.hostname);
        let upgraded = false;
        let seen = Buffer.alloc(0);
        let finished = false;
        const finish = (what: string) => {
          // Once per connection: a timeout destroys the socket, whose close then comes here too.
          if (finished) return;
          finished = true;
          count(what);
          socket.destroy();
          resolve();
        };
        // The handshake may wait for a cold instance ($connect); the frames then get 1 s.
        let timer = setTimeout(() => finish('no upgrade'), 10_000);
        socket.on('error', () => undefined);
        socket.on('close', () => {
          clearTimeout(timer);
          if (!upgraded) return finish('no upgrade');
          // The close frame the server sent, if any: 0x88, length, then the code.
          const at = seen.indexOf(0x88);
          finish(at >= 0 && seen.length >= at + 4 ? `closed ${seen.readUInt16BE(at + 2)}` : 'closed');
        });
        socket.on('data', (chunk: Buffer) => {
          seen = Buffer.concat([seen, chunk]);
          if (!upgraded && seen.includes('\r\n\r\n')) {
            upgraded = seen.toString('latin1').startsWith('HTTP/1.1 101');
            seen = seen.subarray(seen.indexOf('\r\n\r\n') + 4);
            if (!upgraded) return finish('refused upgrade');
            clearTimeout(timer);
            timer = setTimeout(() => finish('still open after 1 s'), 1_000);
            for (const b of bytes) socket.write(b);
          }
        });
        socket.write(
          `GET /ws HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\nX-API-Key: ${ADMIN}\r\n\r\n`,
        );
      });
    // Memory is measured from the end of a warm-up (the first 30 %): by then the WebSocket function's
    // instances have started (each its own heap, bounded by the pool's limit).
    let rssBefore = rss();
    let rssMax = rssBefore;
    const warmUp = Math.floor(frames.length * 0.3);
    for (let i = 0; i < frames.length; i += 20) {
      await Promise.all(frames.slice(i, i + 20).map(attack));
      if (i + 20 >= warmUp && i < warmUp) rssBefore = rssMax = rss();
      rssMax = Math.max(rssMax, rss());
    }
    // Bystanders: a well-behaved connection and the HTTP API still work.
    const ws = new WebSocket(`${stack.url.replace('http', 'ws')}/ws`, { headers: admin });
    const pong = await new Promise<string>((resolve, reject) => {
      ws.once('open', () => ws.send(JSON.stringify({ type: 'ping' })));
      ws.once('message', (data) => resolve(String(data)));
      ws.once('error', reject);
    });
    ws.close();
    const health = await call(stack.url, 'GET', '/api/v1/health');
    report(t, {
      area: 'abuse',
      what: `${frames.length} generated WebSocket frame sequences`,
      tried: `seed ${SEED}; outcomes ${JSON.stringify(Object.fromEntries([...outcomes].sort()))}; service RSS after warm-up ${Math.round(rssBefore)} → max ${Math.round(rssMax)} MiB`,
      lost: 0,
      forks: 0,
      unexpected5xx: health.status >= 500 ? 1 : 0,
    });
    assert.ok(isAliveProcess(stack.pid), 'the service process is alive');
    assert.equal(health.status, 200);
    assert.equal(JSON.parse(pong).type, 'pong');
    assert.equal(outcomes.get('no upgrade') ?? 0, 0, 'every handshake was answered');
    assert.ok(rssMax - rssBefore < 300, `memory grew by ${Math.round(rssMax - rssBefore)} MiB after the warm-up`);
  });

  // Last: it locks this address out for the rest of the minute.
  it("guessing keys: after 20 unknown keys a minute the address's unknown keys get 429; a known key still passes", async (t) => {
    const statuses = new Map<number, number>();
    let retryAfter: string | null = null;
    const guess = async (n: number) => {
      for (let i = 0; i < n; i += 1) {
        const res = await fetch(`${stack.url}/api/v1/chains`, { headers: { 'X-API-Key': randomBytes(16).toString('hex') } });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 429) retryAfter = res.headers.get('retry-after');
      }
    };
    await guess(40);
    // 21 made-up keys had shut a NAT's tenants out too (red team, 2026-12-07): a known key is not a guess.
    const knownWhileOver = await call(stack.url, 'GET', '/api/v1/chains', undefined, admin);
    await guess(160);
    const knownPastBound = await call(stack.url, 'GET', '/api/v1/chains', undefined, admin);
    report(t, {
      area: 'abuse',
      what: 'auth brute force',
      tried: `200 random keys from one address: ${JSON.stringify(Object.fromEntries(statuses))}; Retry-After ${retryAfter}; a known key after 40: ${knownWhileOver.status}, after 200: ${knownPastBound.status}`,
      lost: 0,
      forks: 0,
      unexpected5xx: [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0),
    });
    assert.equal(statuses.get(401), 20, 'the first 20 guesses are told 401');
    assert.equal(statuses.get(429), 180, 'every later guess is refused');
    assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60);
    assert.equal(knownWhileOver.status, 200, 'a known key from the guessing address still passes');
    // Past six times the budget every key of the address is refused unread, but one its instance keeps (the key cache,
    // SVC_AUTH_CACHE_SECONDS): which it is here depends on the instance that answers (test/unit/http-chain.test.ts
    // holds the rule); reported above.
    assert.ok([200, 429].includes(knownPastBound.status), `${knownPastBound.status}`);
  });
});
