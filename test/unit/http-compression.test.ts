/**
 * Compressed answers (shared/http/compression.ts, docs/rules.md "Compression"), offline: which coding a caller
 * gets, and what a compressed answer is. The stack's answers are tested over HTTP in test/integration/caching.test.ts.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { compressed, MIN_COMPRESSED_BYTES, negotiateCoding } from '#shared/http/compression';
import type { HttpResult } from '#shared/http/types';

const json = (body: string, headers: Record<string, string> = {}): HttpResult => ({
  statusCode: 200,
  headers: { 'Content-Type': 'application/json', ...headers },
  body,
});
const large = JSON.stringify({ blocks: Array.from({ length: 1_000 }, (_, i) => ({ index: i, note: `block ${i}` })) });

describe('compressed answers', () => {
  it('answers in br or gzip by the caller’s Accept-Encoding and its qualities', () => {
    const cases: [string | undefined, string | undefined][] = [
      [undefined, undefined],
      ['', undefined],
      ['identity', undefined],
      ['gzip, deflate', 'gzip'],
      ['gzip, deflate, br', 'br'],
      ['br;q=0.5, gzip', 'gzip'],
      ['br;q=0, gzip;q=0', undefined],
      ['*', 'br'],
      ['*;q=0.1, gzip', 'gzip'],
      ['*, br;q=0', 'gzip'],
      ['GZIP', 'gzip'],
      ['deflate', undefined],
      ['gzip;q=bad', undefined],
    ];
    for (const [accept, coding] of cases) assert.equal(negotiateCoding(accept), coding, String(accept));
  });

  it('compresses a large JSON answer to the same bytes, tagged for its coding and varying by Accept-Encoding', () => {
    for (const [coding, decode] of [
      ['br', brotliDecompressSync],
      ['gzip', gunzipSync],
    ] as const) {
      const result = compressed(json(large, { ETag: '"abc"', Vary: 'Origin' }), coding);
      assert.equal(result.isBase64Encoded, true);
      assert.equal(result.headers['Content-Encoding'], coding);
      assert.equal(result.headers.ETag, `"abc-${coding}"`);
      assert.equal(result.headers.Vary, 'Origin, Accept-Encoding');
      const bytes = Buffer.from(result.body!, 'base64');
      assert.ok(bytes.byteLength < large.length / 4, `${coding}: ${bytes.byteLength} bytes`);
      assert.equal(decode(bytes).toString('utf8'), large);
    }
  });

  it('leaves alone what is small, binary or not asked for compressed, saying only that the large one varies', () => {
    const small = json(large.slice(0, MIN_COMPRESSED_BYTES - 100));
    assert.deepEqual(compressed(small, 'br'), small);
    const tile: HttpResult = {
      statusCode: 200,
      headers: { 'Content-Type': 'application/octet-stream' },
      body: Buffer.alloc(40_000).toString('base64'),
      isBase64Encoded: true,
    };
    assert.deepEqual(compressed(tile, 'br'), tile);
    const plain = compressed(json(large, { ETag: '"abc"' }), undefined);
    assert.equal(plain.body, large);
    assert.equal(plain.headers.ETag, '"abc"');
    assert.equal(plain.headers['Content-Encoding'], undefined);
    assert.equal(plain.headers.Vary, 'Accept-Encoding', 'a cache must not hand this to a caller that accepts br, nor the br one to this caller');
    // What would not shrink (base64 of the compressed bytes is what Lambda carries, and counts against its 6 MB).
    const noise = json(JSON.stringify({ blob: randomBytes(30_000).toString('base64') }), { ETag: '"n"' });
    const sent = compressed(noise, 'br');
    assert.equal(sent.body, noise.body);
    assert.equal(sent.headers['Content-Encoding'], undefined);
    assert.equal(sent.headers.ETag, '"n"');
    // Multi-byte text: the size that counts is in bytes.
    const accented = json(JSON.stringify({ note: 'é'.repeat(MIN_COMPRESSED_BYTES / 2 + 10) }));
    assert.equal(compressed(accented, 'gzip').headers['Content-Encoding'], 'gzip');
  });
});
