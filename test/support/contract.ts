/** Assertions on what docs/rules.md, "Errors" promises every response, for the suites that talk HTTP. */
import assert from 'node:assert/strict';
import type { call } from './stack.ts';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The spec's security headers and a UUID request id. */
export function assertEdgeHeaders(headers: Headers): void {
  assert.match(headers.get('content-security-policy') ?? '', /default-src 'none'/);
  assert.match(headers.get('strict-transport-security') ?? '', /max-age=\d+/);
  assert.equal(headers.get('x-frame-options'), 'DENY');
  assert.equal(headers.get('x-content-type-options'), 'nosniff');
  assert.match(headers.get('x-request-id') ?? '', UUID);
}

/** The error shape: `detail` (a message, or FastAPI-style entries for 422), the request id, the edge headers, no internals. */
export function assertError(res: Awaited<ReturnType<typeof call>>, status: number, detail?: RegExp): void {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.text.slice(0, 300)}`);
  assertEdgeHeaders(res.headers);
  assert.equal(res.body.request_id, res.headers.get('x-request-id'));
  if (Array.isArray(res.body.detail)) {
    assert.equal(status, 422, 'only validation failures answer a list');
    for (const issue of res.body.detail) {
      assert.ok(Array.isArray(issue.loc) && typeof issue.msg === 'string' && typeof issue.type === 'string');
    }
  } else {
    assert.equal(typeof res.body.detail, 'string');
  }
  if (detail) assert.match(typeof res.body.detail === 'string' ? res.body.detail : JSON.stringify(res.body.detail), detail);
  // No stack trace, stack field or SDK exception name may reach a client.
  assert.doesNotMatch(res.text, /\bat \S+ \(?[^)]*\.(ts|js|mjs):\d+|"stack"\s*:|Exception/);
}
