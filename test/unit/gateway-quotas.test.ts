/**
 * The quotas API Gateway and Lambda enforce, as the local gateway and `npm run sim` enforce them, with the
 * status and body AWS gives (docs/sim.md, "Quotas", gives each value's source). The HTTP API's at their real
 * values; the WebSocket API's lifetime and idle timeout at small ones (the gateway takes them as options).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import WebSocket from 'ws';
import fc from 'fast-check';
import { type IntegrationFailure, HTTP_API_QUOTAS, payloadBound, startGateway } from '#infra/local/gateway';
import { WEBSOCKET_QUOTAS, attachWebSocketApi, frameScanner, fromLoopback, managementPathOf } from '#infra/local/websocket';
import { steadyNow } from '#shared/clock';

describe('HTTP API and Lambda quotas at the local gateway', async () => {
  const failures: IntegrationFailure[] = [];
  let invoked = 0;
  const gateway = await startGateway({
    host: '127.0.0.1',
    port: 0,
    routes: [
      { method: 'POST', path: '/echo', routeKey: 'POST /echo', group: 'echo' },
      { method: 'GET', path: '/big/{bytes}', routeKey: 'GET /big/{bytes}', group: 'big' },
    ],
    handlers: {
      echo: async (event) => {
        invoked += 1;
        return { statusCode: 200, body: String(Buffer.from(String(event.body ?? ''), event.isBase64Encoded ? 'base64' : 'utf8').length) };
      },
      big: async (event) => ({ statusCode: 200, body: 'x'.repeat(Number(event.pathParameters?.bytes)) }),
      fallback: async () => ({ statusCode: 404 }),
    },
    defaultGroup: 'fallback',
    onIntegrationError: (failure) => failures.push(failure),
  });
  after(() => gateway.close());
  const post = (bytes: number) => fetch(`${gateway.url}/echo`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'a'.repeat(bytes) });

  it('refuses a request payload over 10 MB with 413 before any function runs, and passes one of exactly 10 MB', async () => {
    assert.equal(HTTP_API_QUOTAS.requestPayloadBytes, 10 * 1024 * 1024);
    const before = invoked;
    const over = await post(HTTP_API_QUOTAS.requestPayloadBytes + 1);
    assert.equal(over.status, 413);
    assert.deepEqual(await over.json(), { message: 'Request Entity Too Large' });
    assert.equal(over.headers.get('cache-control'), 'no-store', "the gateway's own answers say how they may be cached too (red team)");
    assert.equal(invoked, before, 'no function ran');
    const at = await post(HTTP_API_QUOTAS.requestPayloadBytes);
    assert.equal(at.status, 200);
    assert.equal(await at.text(), String(HTTP_API_QUOTAS.requestPayloadBytes));
  });

  it('takes an upload its client abandons for no failure of its own: nothing logged or counted, no function run (red team)', async () => {
    const { connect } = await import('node:net');
    const [before, ran] = [failures.length, invoked];
    const url = new URL(gateway.url);
    for (let i = 0; i < 3; i += 1) {
      const socket = connect(Number(url.port), url.hostname);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\na');
      await new Promise((r) => setTimeout(r, 50));
      socket.destroy();
    }
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(failures.slice(before), [], 'no integration failure');
    assert.equal(invoked, ran, 'no function ran');
    assert.equal((await post(10)).status, 200, 'the gateway serves on');
  });

  it("answers 500 for a function's response over Lambda's 6 MB, and reports why; one just under passes", async () => {
    assert.equal(HTTP_API_QUOTAS.lambdaResponseBytes, 6_291_556);
    const under = await fetch(`${gateway.url}/big/${HTTP_API_QUOTAS.lambdaResponseBytes - 1_000}`);
    assert.equal(under.status, 200);
    assert.equal((await under.text()).length, HTTP_API_QUOTAS.lambdaResponseBytes - 1_000);
    const over = await fetch(`${gateway.url}/big/${HTTP_API_QUOTAS.lambdaResponseBytes}`);
    assert.equal(over.status, 500);
    assert.deepEqual(await over.json(), { message: 'Internal Server Error' }, 'the client learns nothing of the cause');
    const failure = failures.at(-1)!;
    assert.equal(failure.routeKey, 'GET /big/{bytes}');
    assert.equal(failure.requestId, over.headers.get('apigw-requestid'));
    assert.match(String((failure.error as Error).message), /Response payload size exceeded maximum allowed payload size \(6291556 bytes\)/);
  });

  it("bounds a response's payload from above without serializing it, whatever its characters", () => {
    // Control characters, quotes, backslashes, lone surrogates and astral characters: each escapes or encodes differently.
    const text = fc.string({
      unit: fc.oneof(
        fc.constantFrom('\u0000', '\u001f', '"', '\\', '\ud800', '\udfff', '😀', 'é', 'a'),
        fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)),
      ),
    });
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 599 }),
        fc.dictionary(text, text, { maxKeys: 4 }),
        text,
        fc.array(text, { maxLength: 2 }),
        fc.boolean(),
        (statusCode, headers, body, cookies, isBase64Encoded) => {
          const result = { statusCode, headers, body, cookies, isBase64Encoded };
          assert.ok(payloadBound(result) >= Buffer.byteLength(JSON.stringify(result)));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('waits 30 s for an integration, as an HTTP API does', () => {
    // The 503 itself is shown with a short timeout in local-runtime.test.ts ("the gateway, when an integration fails").
    assert.equal(HTTP_API_QUOTAS.integrationTimeoutMs, 30_000);
  });
});

describe('WebSocket API quotas at the local gateway', async () => {
  const events: string[] = [];
  const server: Server = createServer();
  const api = attachWebSocketApi(server, {
    path: '/ws',
    quotas: { lifetimeMs: 1_500, idleMs: 400 },
    handler: async (event) => {
      const context = event.requestContext as { routeKey: string; connectionId: string };
      events.push(`${context.routeKey} ${context.connectionId}`);
      if (context.routeKey === '$default') {
        const body = String(event.body);
        // "echo <n>": answers n bytes, which API Gateway sends in frames of at most 32 KB.
        return { statusCode: 200, body: body.startsWith('echo ') ? 'y'.repeat(Number(body.slice(5))) : `got ${body.length}` };
      }
      return { statusCode: 200 };
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`;
  after(async () => {
    await api.close();
    server.close();
  });

  /** A connected client, its frames as they arrive (read from its socket's raw bytes), and how it closed. */
  async function client() {
    // The clock starts before the connection does: the gateway's timers start when it accepts, which is
    // before the client sees 'open', so a clock started at 'open' reads a few ms short on a busy machine.
    const opened = steadyNow();
    const ws = new WebSocket(url);
    const frames: number[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const scan = frameScanner(({ length, opcode }) => {
      if (opcode !== 8) frames.push(length);
    });
    (ws as unknown as { _socket: NodeJS.ReadableStream })._socket.on('data', scan);
    const closed = new Promise<{ code: number; ms: number }>((resolve) => {
      ws.once('close', (code) => resolve({ code, ms: steadyNow() - opened }));
    });
    const next = () => new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
    return { ws, frames, closed, next };
  }

  it('takes a 128 KB message in frames of at most 32 KB, and answers in frames of at most 32 KB', async () => {
    const { ws, frames, next } = await client();
    const chunk = Buffer.alloc(WEBSOCKET_QUOTAS.frameBytes, 'a');
    const message = next();
    for (let i = 0; i < 4; i += 1) ws.send(chunk, { binary: false, fin: i === 3 });
    assert.equal(await message, `got ${WEBSOCKET_QUOTAS.messageBytes}`);
    const answer = next();
    ws.send('echo 100000');
    assert.equal((await answer).length, 100_000);
    assert.deepEqual(frames.slice(-4), [32_768, 32_768, 32_768, 100_000 - 3 * 32_768], 'the answer came in 32 KB frames');
    ws.close();
  });

  it('closes with 1009 a connection that sends a frame over 32 KB, even in a message under 128 KB', async () => {
    const { ws, closed } = await client();
    ws.send(Buffer.alloc(WEBSOCKET_QUOTAS.frameBytes + 1, 'a'), { binary: false });
    assert.equal((await closed).code, 1009);
  });

  it('closes with 1009 a connection that sends a message over 128 KB, in frames of 32 KB', async () => {
    const { ws, closed } = await client();
    const chunk = Buffer.alloc(WEBSOCKET_QUOTAS.frameBytes, 'a');
    for (let i = 0; i < 5; i += 1) ws.send(chunk, { binary: false, fin: i === 4 });
    assert.equal((await closed).code, 1009);
  });

  it('closes an idle connection (no message either way; pings are not messages) with 1001, and calls $disconnect', async () => {
    const { ws, closed } = await client();
    const pinging = setInterval(() => ws.ping(), 100);
    const { code, ms } = await closed;
    clearInterval(pinging);
    assert.equal(code, 1001);
    assert.ok(ms >= 400 && ms < 1_200, `closed after ${ms} ms idle`);
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(events.some((e) => e.startsWith('$disconnect ')));
  });

  it('closes a busy connection at its lifetime, 1001, even with the wall clock set an hour forward meanwhile', async () => {
    const { ws, closed } = await client();
    const talking = setInterval(() => ws.readyState === ws.OPEN && ws.send('hello'), 100);
    // An NTP step: a gateway that timed idleness by the wall clock closed this busy connection as idle.
    const wallClock = Date.now;
    const stepped = setTimeout(() => {
      Date.now = () => wallClock() + 3_600_000;
    }, 300);
    const { code, ms } = await closed.finally(() => {
      clearTimeout(stepped);
      Date.now = wallClock;
    });
    clearInterval(talking);
    assert.equal(code, 1001);
    assert.ok(ms >= 1_500 && ms < 2_500, `closed after ${ms} ms`);
  });

  it('has the quotas of AWS: 32 KB frames, 128 KB messages, 2 hours, 10 minutes idle', () => {
    assert.deepEqual(WEBSOCKET_QUOTAS, { frameBytes: 32 * 1024, messageBytes: 128 * 1024, lifetimeMs: 7_200_000, idleMs: 600_000 });
  });
});

/**
 * A server with the WebSocket API at /ws and its management API (under `managementPath`, if given); anything else 404.
 * `connected`: the ids of the connections made, in order.
 */
async function managementServer(managementPath?: string) {
  const connected: string[] = [];
  const server: Server = createServer();
  const api = attachWebSocketApi(server, {
    path: '/ws',
    ...(managementPath === undefined ? {} : { managementPath }),
    handler: async (event) => {
      const context = event.requestContext as { routeKey: string; connectionId: string };
      if (context.routeKey === '$connect') connected.push(context.connectionId);
      return { statusCode: 200 };
    },
  });
  server.on('request', (req, res) => {
    if (!api.handleManagement(req, res)) {
      res.writeHead(404);
      res.end('No route');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = async () => {
    await api.close();
    server.close();
  };
  return { api, base, connected, close };
}

describe('the @connections management API', async () => {
  const { api, base, connected, close } = await managementServer();
  after(close);

  it('refuses to post more than 128 KB with 413 PayloadTooLargeException, and delivers 128 KB', async () => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/ws`);
    await new Promise((resolve) => ws.once('open', resolve));
    const id = encodeURIComponent(connected.at(-1)!);
    const over = await fetch(`${base}/@connections/${id}`, { method: 'POST', body: 'z'.repeat(WEBSOCKET_QUOTAS.messageBytes + 1) });
    assert.equal(over.status, 413);
    assert.equal(over.headers.get('x-amzn-errortype'), 'PayloadTooLargeException');
    assert.equal(over.headers.get('cache-control'), 'no-store');
    const received = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
    const at = await fetch(`${base}/@connections/${id}`, { method: 'POST', body: 'z'.repeat(WEBSOCKET_QUOTAS.messageBytes) });
    assert.equal(at.status, 200);
    assert.equal((await received).length, WEBSOCKET_QUOTAS.messageBytes);
    ws.close();
  });

  it('answers the management API to this machine only: from another address 403, nothing posted (red team)', async () => {
    // With SVC_HOST=0.0.0.0 anyone who could reach the port could post forged events to a connection, close it, or
    // read its address: on AWS the management API takes IAM-signed calls only.
    const ws = new WebSocket(`${base.replace('http', 'ws')}/ws`);
    await new Promise((resolve) => ws.once('open', resolve));
    const received: string[] = [];
    ws.on('message', (data) => received.push(String(data)));
    for (const [method, remoteAddress] of [
      ['POST', '10.0.0.7'],
      ['DELETE', '::ffff:192.168.1.20'],
      ['GET', '2001:db8::1'],
    ] as const) {
      const answered: { status?: number; body?: string } = {};
      const req = { url: `/@connections/${encodeURIComponent(connected.at(-1)!)}`, method, socket: { remoteAddress }, resume() {} };
      const res = {
        writeHead(status: number) {
          answered.status = status;
        },
        end(body: string) {
          answered.body = body;
        },
      };
      assert.equal(api.handleManagement(req as never, res as never), true);
      assert.equal(answered.status, 403, `${method} from ${remoteAddress}`);
      assert.match(answered.body ?? '', /Forbidden/);
    }
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(ws.readyState, ws.OPEN, 'not closed by the DELETE from elsewhere');
    assert.deepEqual(received, []);
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '127.1.2.3'])
      assert.ok(fromLoopback({ socket: { remoteAddress: address } } as never), address);
    for (const address of ['10.0.0.7', '::ffff:10.0.0.7', '0.0.0.0', '', undefined])
      assert.ok(!fromLoopback({ socket: { remoteAddress: address } } as never), String(address));
    ws.close();
  });
});

describe("the local stack's @connections API under its start's secret path", async () => {
  const secret = '/@local-0123456789abcdef0123456789abcdef';
  const { api, base, connected, close } = await managementServer(secret);
  after(close);

  it('serves the functions through the SDK there, and nobody at /@connections, loopback or not (red team)', async () => {
    // Served to loopback only, the API was open to the world behind a reverse proxy on the same machine (every caller
    // loopback): anyone who learnt a connection's id could push forged events to it, close it, or read its address.
    const ws = new WebSocket(`${base.replace('http', 'ws')}/ws`);
    await new Promise((resolve) => ws.once('open', resolve));
    const received: string[] = [];
    ws.on('message', (data) => received.push(String(data)));
    const id = connected.at(-1)!;
    for (const method of ['POST', 'GET', 'DELETE']) {
      const forged = await fetch(`${base}/@connections/${encodeURIComponent(id)}`, { method, ...(method === 'POST' ? { body: '{"type":"event"}' } : {}) });
      assert.equal(forged.status, 404, `${method} /@connections`);
    }
    const { ApiGatewayManagementApiClient, PostToConnectionCommand } = await import('@aws-sdk/client-apigatewaymanagementapi');
    const client = new ApiGatewayManagementApiClient({
      region: 'us-east-1',
      endpoint: `${base}${secret}`,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    await client.send(new PostToConnectionCommand({ ConnectionId: id, Data: Buffer.from('{"type":"pong"}') }));
    const deadline = Date.now() + 2_000;
    while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(received, ['{"type":"pong"}'], 'only what came through the secret path');
    assert.equal(ws.readyState, ws.OPEN);
    client.destroy();
    // Nothing after the id but a query; a malformed escape is a 400, not a stopped gateway (second review).
    const raw = { url: `${secret}/@connections/${encodeURIComponent(id)}/../x`, method: 'POST', socket: { remoteAddress: '127.0.0.1' }, resume() {} };
    assert.equal(api.handleManagement(raw as never, {} as never), false, 'not the management API (fetch would normalize the path)');
    const bad = await fetch(`${base}${secret}/@connections/%E0`, { method: 'POST', body: '{}' });
    assert.equal(bad.status, 400);
    assert.equal((await fetch(`${base}${secret}/@connections/${encodeURIComponent(id)}?x=1`)).status, 200, 'the gateway serves on');
    ws.close();
  });

  it('takes the path of an endpoint as the SDK joins it, a trailing slash too (second review)', async () => {
    assert.equal(managementPathOf('http://127.0.0.1:2661'), '');
    assert.equal(managementPathOf('http://127.0.0.1:2661/'), '');
    assert.equal(managementPathOf('http://127.0.0.1:2661/@local-ab/'), '/@local-ab/');
    const { base: base2, connected: ids, close: close2 } = await managementServer(managementPathOf('http://127.0.0.1:1/stage/'));
    const ws = new WebSocket(`${base2.replace('http', 'ws')}/ws`);
    await new Promise((resolve) => ws.once('open', resolve));
    const got = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
    const { ApiGatewayManagementApiClient, PostToConnectionCommand } = await import('@aws-sdk/client-apigatewaymanagementapi');
    const client = new ApiGatewayManagementApiClient({
      region: 'us-east-1',
      endpoint: `${base2}/stage/`,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    await client.send(new PostToConnectionCommand({ ConnectionId: ids.at(-1)!, Data: Buffer.from('hi') }));
    assert.equal(await got, 'hi');
    client.destroy();
    ws.close();
    await close2();
  });
});

describe('A connection whose client goes away during $connect', async () => {
  const events: string[] = [];
  const server: Server = createServer();
  const api = attachWebSocketApi(server, {
    path: '/ws',
    handler: async (event) => {
      const context = event.requestContext as { routeKey: string; connectionId: string };
      events.push(`${context.routeKey} ${context.connectionId}`);
      if (context.routeKey === '$connect') await new Promise((r) => setTimeout(r, 150));
      return { statusCode: 200 };
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  after(async () => {
    await api.close();
    server.close();
  });

  it('is ended with $disconnect, as any connection that ends is: what $connect recorded is not left behind (red team)', async () => {
    // The upgrade dropped such a socket without a word: $connect had taken one of the key's slots, held for the
    // record's life (five aborted handshakes locked a key out for two hours).
    const { connect } = await import('node:net');
    const socket = connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${Buffer.alloc(16, 1).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    await new Promise((r) => setTimeout(r, 20));
    socket.destroy();
    for (let i = 0; i < 40 && !events.some((e) => e.startsWith('$disconnect')); i += 1) await new Promise((r) => setTimeout(r, 25));
    const connected = events.find((e) => e.startsWith('$connect'));
    assert.ok(connected, 'the handshake reached $connect');
    assert.deepEqual(
      events.filter((e) => e.startsWith('$disconnect')),
      [`$disconnect ${connected.split(' ')[1]}`],
    );
  });
});
