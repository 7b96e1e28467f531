/**
 * The rest of the edge over HTTP: rate limits (memory and shared DynamoDB), the body limit, content
 * types, CORS, and the production CORS rule.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { call, dynamoConfigOf, expectStartFailure, keysCli, removeDir, startStack, type Stack } from '#test/support/stack';

const started: Stack[] = [];
async function stack(env: Record<string, string>): Promise<Stack> {
  const s = await startStack({ env });
  started.push(s);
  return s;
}

after(async () => {
  for (const s of started.reverse()) {
    await s.stop();
    removeDir(s.dataDir);
  }
});

function newKey(output: string): string {
  return /Key \(shown once, store it now\): (\S+)/.exec(output)![1]!;
}

describe('Rate limit, memory backend', () => {
  let s: Stack;
  let first: string;
  let second: string;
  before(async () => {
    s = await stack({ SVC_AUTH_ENABLED: 'true', SVC_RATE_LIMIT_RPM: '5', SVC_RATE_LIMIT_BACKEND: 'memory' });
    first = newKey(await keysCli(s.dataDir, ['create', '--role', 'reader']));
    second = newKey(await keysCli(s.dataDir, ['create', '--role', 'reader']));
  });

  it('answers the 6th request in the window with 429, Retry-After and the X-RateLimit headers', async () => {
    for (let i = 1; i <= 5; i += 1) {
      const res = await call(s.url, 'GET', '/api/v1/chains', undefined, { 'X-API-Key': first });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-ratelimit-limit'), '5');
      assert.equal(res.headers.get('x-ratelimit-remaining'), String(5 - i));
      assert.match(res.headers.get('x-ratelimit-reset') ?? '', /^\d+$/);
    }
    const sixth = await call(s.url, 'GET', '/api/ledger/chains', undefined, { 'X-API-Key': first });
    assert.equal(sixth.status, 429);
    assert.match(sixth.body.detail, /Rate limit/);
    assert.equal(sixth.body.request_id, sixth.headers.get('x-request-id'));
    const retryAfter = Number(sixth.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(sixth.headers.get('x-ratelimit-remaining'), '0');
    assert.equal(sixth.headers.get('x-frame-options'), 'DENY');
  });

  it('counts each key on its own', async () => {
    const other = await call(s.url, 'GET', '/api/v1/chains', undefined, { 'X-API-Key': second });
    assert.equal(other.status, 200);
    assert.equal(other.headers.get('x-ratelimit-remaining'), '4');
  });

  it("charges each GraphQL mutation after the first as one request of the caller's: 8 aliased createSubChain make 5 chains under a limit of 5 (red team)", async () => {
    // One request had made 100 Sub-Chains (800 write units, kept for good) where REST makes one a request.
    const writer = { 'X-API-Key': newKey(await keysCli(s.dataDir, ['create', '--role', 'writer'])) };
    const fields = Array.from({ length: 8 }, (_, i) => `c${i}: createSubChain(name: "charged-${i}") { success }`).join('\n');
    const res = await call(s.url, 'POST', '/graphql', { query: `mutation {\n${fields}\n}` }, writer);
    assert.equal(res.status, 200, res.text);
    const made = Object.values(res.body.data ?? {}).filter((v) => (v as { success?: boolean } | null)?.success === true).length;
    const refused = (res.body.errors ?? []).filter((e: { extensions?: { status?: number } }) => e.extensions?.status === 429);
    assert.equal(made, 5, `the request and one request for each further mutation, within 5: ${res.text.slice(0, 400)}`);
    assert.equal(refused.length, 3, 'each mutation past the budget refused, in the errors');
    // Refused before it ran: no chain of theirs (a charge after the work would have made them all).
    const reader = { 'X-API-Key': newKey(await keysCli(s.dataDir, ['create', '--role', 'reader'])) };
    assert.equal((await call(s.url, 'GET', '/api/v1/chains/charged-4/stats', undefined, reader)).status, 200);
    for (const name of ['charged-5', 'charged-7'])
      assert.equal((await call(s.url, 'GET', `/api/v1/chains/${name}/stats`, undefined, reader)).status, 404, name);
  });

  it('does not count health checks', async () => {
    for (let i = 0; i < 8; i += 1) {
      const res = await call(s.url, 'GET', '/api/v1/health');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-ratelimit-limit'), null);
    }
  });
});

describe('Rate limit, DynamoDB backend shared by two gateways', () => {
  it('counts one key across both processes', async () => {
    // Auth on: a key is counted as a client only where it is checked (a made-up one is only a name a caller picks).
    const a = await stack({ SVC_AUTH_ENABLED: 'true', SVC_RATE_LIMIT_RPM: '5', SVC_RATE_LIMIT_BACKEND: 'dynamodb' });
    const b = await stack({ SVC_AUTH_ENABLED: 'true', SVC_RATE_LIMIT_RPM: '5', SVC_RATE_LIMIT_BACKEND: 'dynamodb', ...a.dataEnv });
    const [shared, another] = [
      newKey(await keysCli(a.dataDir, ['create', '--role', 'reader'])),
      newKey(await keysCli(a.dataDir, ['create', '--role', 'reader'])),
    ];
    const headers = { 'X-API-Key': shared };
    const statuses: number[] = [];
    for (const url of [a.url, b.url, a.url, b.url, a.url]) statuses.push((await call(url, 'GET', '/api/v1/chains', undefined, headers)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200]);
    const sixth = await call(b.url, 'GET', '/api/v1/chains', undefined, headers);
    assert.equal(sixth.status, 429, 'the sixth request, on the other process, is over the shared limit');
    assert.ok(Number(sixth.headers.get('retry-after')) >= 1);
    const otherClient = await call(b.url, 'GET', '/api/v1/chains', undefined, { 'X-API-Key': another });
    assert.equal(otherClient.status, 200);

    // A spent key is refused from memory: ten more refusals on each process leave the shared count where the first
    // refusal put it (each had been one more write of the limiter's table, red team).
    for (const url of [a.url, b.url]) {
      for (let i = 0; i < 10; i += 1) assert.equal((await call(url, 'GET', '/api/v1/chains', undefined, headers)).status, 429);
    }
    const ddb = new DynamoDBClient(dynamoConfigOf(a));
    const items = (await ddb.send(new ScanCommand({ TableName: a.tables.ratelimits }))).Items ?? [];
    const counts = items.map((item) => Number(item.points?.N)).sort((x, y) => x - y);
    ddb.destroy();
    assert.deepEqual(counts, [1, 6], 'the other key once; the spent key five times and its first refusal');
  });
});

describe('Body limit and content types', () => {
  let s: Stack;
  before(async () => {
    s = await stack({});
  });
  const LIMIT = 5 * 1024 * 1024;

  /** A JSON object of exactly `size` bytes. */
  function jsonOfSize(size: number): string {
    const head = '{"pad":"';
    const tail = '"}';
    return head + 'x'.repeat(size - head.length - tail.length) + tail;
  }

  it('answers 413 to 5 MiB + 1 byte before any handler runs', async () => {
    const body = jsonOfSize(LIMIT + 1);
    assert.equal(Buffer.byteLength(body), LIMIT + 1);
    const res = await call(s.url, 'POST', '/api/v1/chains/toolarge/create', body);
    assert.equal(res.status, 413);
    assert.match(res.body.detail, /limit is 5242880 bytes/);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    const chain = await call(s.url, 'GET', '/api/v1/chains/toolarge/stats');
    assert.equal(chain.status, 404, 'the create handler never ran');
  });

  it("answers what Node's parser refuses (headers past its limit, a malformed request) no-store and nosniff, as every answer (red team)", async () => {
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(s.url).port), '127.0.0.1');
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
        socket.on('end', () => resolve(answer));
        socket.on('error', reject);
        socket.write(request);
      });
    const big = await raw(`GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(20_000)}\r\n\r\n`);
    const smuggled = await raw('POST /api/v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
    for (const [answer, status] of [
      [big, 431],
      [smuggled, 400],
    ] as const) {
      assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `), answer.slice(0, 200));
      assert.match(answer, /\r\nCache-Control: no-store\r\n/i, answer.slice(0, 200));
      assert.match(answer, /\r\nX-Content-Type-Options: nosniff\r\n/i);
    }
  });

  it('accepts a valid body just under the limit', async () => {
    const res = await call(s.url, 'POST', '/api/v1/chains/justfits/create', jsonOfSize(LIMIT));
    assert.equal(res.status, 201, res.text.slice(0, 200));
  });

  it('answers 415 to a body that is not JSON', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await call(s.url, 'POST', '/api/v1/chains/justfits/events', 'entity_id=x', { 'content-type': type });
      assert.equal(res.status, 415, type);
      assert.match(res.body.detail, /application\/json/);
    }
    const ok = await call(
      s.url,
      'POST',
      '/api/v1/chains/justfits/events',
      { entity_id: 'x', event_type: 'y' },
      { 'content-type': 'application/json; charset=utf-8' },
    );
    assert.equal(ok.status, 200);
  });
  it('refuses a body nested deeper than 64 levels with 422 on every route, and accepts 64', async () => {
    // The body itself is one level; `details` and what it holds are the other depth - 1.
    const nested = (depth: number) => `{"entity_id":"d","event_type":"deep","details":${'{"a":'.repeat(depth - 1)}1${'}'.repeat(depth - 1)}}`;
    for (const depth of [65, 6_000, 9_500]) {
      for (const path of ['/api/v1/chains/justfits/events', '/api/business/contracts/execute', '/api/admin/chains/justfits/secure-events']) {
        const res = await call(s.url, 'POST', path, nested(depth));
        assert.equal(res.status, 422, `${path} at ${depth}: ${res.text.slice(0, 200)}`);
        assert.match(JSON.stringify(res.body.detail), /nested deeper than 64 levels/);
      }
    }
    const deepest = await call(s.url, 'POST', '/api/v1/chains/justfits/events', nested(64));
    assert.equal(deepest.status, 200, deepest.text.slice(0, 200));
  });

  it('refuses a __proto__ key (422, naming where) rather than dropping it; constructor and prototype stay data', async () => {
    const refused = await call(
      s.url,
      'POST',
      '/api/v1/chains/justfits/events',
      '{"entity_id":"p","event_type":"t","details":{"x":{"__proto__":{"admin":true}}}}',
    );
    assert.equal(refused.status, 422);
    assert.deepEqual(refused.body.detail[0].loc, ['body', 'details', 'x', '__proto__']);
    const kept = await call(s.url, 'POST', '/api/v1/chains/justfits/events', {
      entity_id: 'p',
      event_type: 't',
      details: { constructor: 1, prototype: { a: 2 } },
    });
    assert.equal(kept.status, 200, kept.text);
    const index = kept.body.event_id.split('_')[1];
    const block = await call(s.url, 'GET', `/api/v1/chains/justfits/blocks/${index}`);
    assert.deepEqual(block.body.events[0].details, { constructor: 1, prototype: { a: 2 } });
  });

  it('refuses a number a double cannot keep as written (422, naming it) rather than storing another one; the rest are kept', async () => {
    // 9007199254740993 (a 64-bit id, say) had been stored as 9007199254740992: the chain held a number nobody sent.
    for (const number of ['9007199254740993', '-12345678901234567890', '9007199254740993.0', '1e400', '1e-400']) {
      const res = await call(s.url, 'POST', '/api/v1/chains/justfits/events', `{"entity_id":"n","event_type":"t","details":{"account":${number}}}`);
      assert.equal(res.status, 422, `${number}: ${res.text}`);
      assert.match(
        res.body.detail[0].msg,
        new RegExp(`^The number ${number.replace('-', '\\-').replace('.', '\\.')} at key 'account' in the body cannot be kept exactly.*send it as a string`),
      );
    }
    const kept = await call(
      s.url,
      'POST',
      '/api/v1/chains/justfits/events',
      '{"entity_id":"n","event_type":"t","details":{"safe":9007199254740991,"ratio":0.1000000000000000055511151231257827,"big":1e300,"id":"9007199254740993","even":9007199254740994,"printed":12345678901234567000}}',
    );
    assert.equal(kept.status, 200, kept.text);
    const block = await call(s.url, 'GET', `/api/v1/chains/justfits/blocks/${kept.body.event_id.split('_')[1]}`);
    // As a double holds them: 9007199254740994 exactly, and the digits a double prints itself with (any JSON.stringify's).
    assert.deepEqual(block.body.events[0].details, {
      safe: 9007199254740991,
      ratio: 0.1,
      big: 1e300,
      id: '9007199254740993',
      even: 9007199254740994,
      printed: 12345678901234567000,
    });
  });

  it('refuses a query parameter given twice with one 422 on every route, whatever the parameter would have taken', async () => {
    // The red-team finding: a repeated `leaves` was taken (the gateway joins repeats with commas, a list to
    // it), a repeated `blocks` refused. Now both, and every other route, answer alike.
    const paths = [
      '/api/v1/chains/justfits/evidence?leaves=1&leaves=2',
      '/api/v1/chains/justfits/evidence?leaves=1&blocks=true&blocks=true',
      '/api/ledger/chains/justfits/blocks?limit=1&limit=2',
      '/api/v1/chains/justfits/consistency?first=1&second=2&first=1',
      '/tlog/justfits/checkpoint?x=1&x=2',
      '/api/business/organizations?a=1&a=1',
      '/graphql?query=%7Bchains%7Bname%7D%7D&query=%7Bchains%7Bname%7D%7D',
    ];
    for (const path of paths) {
      const res = await call(s.url, 'GET', path);
      assert.equal(res.status, 422, `${path}: ${res.text.slice(0, 200)}`);
      const name = /[?&]([a-z_]+)=[^&]*&(?:.*&)?\1=/.exec(path)![1];
      assert.deepEqual(res.body.detail, [{ loc: ['query', name], msg: 'Given more than once; give each query parameter once', type: 'repeated' }], path);
    }
    const once = await call(s.url, 'GET', '/api/v1/chains/justfits/evidence?leaves=1,2&blocks=true');
    assert.equal(once.status, 200, once.text.slice(0, 200));
    assert.deepEqual(
      once.body.blocks.map((b: { index: number }) => b.index),
      [1, 2],
    );
  });
});

describe('CORS', () => {
  let s: Stack;
  before(async () => {
    s = await stack({ SVC_CORS_ORIGINS: 'https://app.example.com, https://ops.example.com', SVC_AUTH_ENABLED: 'true' });
  });

  it('answers a preflight from an allowed origin, without a key', async () => {
    const res = await fetch(`${s.url}/api/v1/chains/orders/events`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type,x-api-key' },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example.com');
    assert.match(res.headers.get('access-control-allow-methods') ?? '', /POST/);
    assert.match(res.headers.get('access-control-allow-headers') ?? '', /X-API-Key/i);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
  });

  it('names an allowed origin on answers, errors included, and never a foreign one', async () => {
    const allowed = await fetch(`${s.url}/api/v1/health`, { headers: { Origin: 'https://ops.example.com' } });
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://ops.example.com');
    const denied = await fetch(`${s.url}/api/v1/chains`, { headers: { Origin: 'https://app.example.com' } });
    assert.equal(denied.status, 401);
    assert.equal(denied.headers.get('access-control-allow-origin'), 'https://app.example.com');
    const foreign = await fetch(`${s.url}/api/v1/health`, { headers: { Origin: 'https://evil.example.net' } });
    assert.equal(foreign.headers.get('access-control-allow-origin'), null);
  });

  it('refuses to start in production without an allow list', async () => {
    const { code, output } = await expectStartFailure({ SVC_ENV: 'production', SVC_CORS_ORIGINS: '' });
    assert.equal(code, 1);
    assert.match(output, /SVC_CORS_ORIGINS/);
  });
});
