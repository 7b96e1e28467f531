/**
 * Compressed answers (docs/rules.md, "Compression"). API Gateway's HTTP API never compresses, and the CDN
 * compresses only what it caches, so a large answer would cross the network as it is: a page of 100 blocks
 * of small details is 48–58 KB of JSON, 6–9 KB compressed (bench/probes/page-size.ts). A caller that accepts `br` or `gzip` gets an answer of at least
 * MIN_COMPRESSED_BYTES compressed (brotli at quality 1 when it may, about 0.26 ms for a page here; else gzip at
 * level 1, about 0.4), with `Content-Encoding` and `Vary: Accept-Encoding`. Smaller answers go as they are: they fit in
 * TCP's first flight either way, and compressing them would cost CPU for nothing. Binary answers (tiles,
 * entry bundles) are hashes, which do not compress.
 *
 * Entity tags: a strong tag names exact bytes, so a compressed answer's tag is the answer's own with the
 * coding added inside the quotes (`"x"` becomes `"x-br"`). `If-None-Match` naming either form matches, and the
 * 304 carries the form the caller named.
 */
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { HttpResult } from './types.ts';

/** Ten TCP segments of 1,460 bytes: TCP's initial window (RFC 6928). An answer this small arrives in one flight. */
export const MIN_COMPRESSED_BYTES = 14_600;

export type Coding = 'br' | 'gzip';

/** Content types worth compressing: JSON and text (a checkpoint, metrics, docs). */
const compressible = (type: string) => /^text\//i.test(type) || /^application\/([\w.-]+\+)?json\b/i.test(type);

/**
 * The coding to answer in, from `Accept-Encoding` (RFC 9110 12.5.3): `br` or `gzip` with the higher quality above
 * zero (`*` stands for either not named; `br` on a tie), or none.
 */
export function negotiateCoding(acceptEncoding: string | undefined): Coding | undefined {
  if (!acceptEncoding) return undefined;
  const quality = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => /^\s*q=(.*)$/.exec(p)?.[1]?.trim()).find((v) => v !== undefined);
    const value = q === undefined ? 1 : Number(q);
    quality.set(name.trim(), Number.isFinite(value) ? value : 0);
  }
  const of = (coding: Coding) => quality.get(coding) ?? quality.get('*') ?? 0;
  const [br, gzip] = [of('br'), of('gzip')];
  if (br > 0 && br >= gzip) return 'br';
  return gzip > 0 ? 'gzip' : undefined;
}

/** The tag of an answer's bytes in `coding`. */
export const codedTag = (tag: string, coding: Coding) => `${tag.slice(0, -1)}-${coding}${tag.slice(-1)}`;

/** The answer compressed in `coding` when it is large enough and of a kind that compresses; else as it is. */
export function compressed(result: HttpResult, coding: Coding | undefined): HttpResult {
  const headers = result.headers ?? {};
  const type = String(headers['Content-Type'] ?? '');
  if (result.isBase64Encoded || typeof result.body !== 'string' || !compressible(type) || result.body.length < MIN_COMPRESSED_BYTES / 3) return result;
  const size = Buffer.byteLength(result.body, 'utf8');
  if (size < MIN_COMPRESSED_BYTES) return result;
  // The same URL answers in another coding to another caller: caches must tell them apart.
  const vary = { Vary: headers.Vary ? `${headers.Vary}, Accept-Encoding` : 'Accept-Encoding' };
  if (!coding) return { ...result, headers: { ...headers, ...vary } };
  const bytes = Buffer.from(result.body, 'utf8');
  const body =
    coding === 'br'
      ? brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 1, [constants.BROTLI_PARAM_SIZE_HINT]: size } })
      : gzipSync(bytes, { level: 1 });
  // A Lambda response carries binary as base64, a third larger, and its 6 MB limit counts that text: an answer
  // that would not shrink below its own size (random bytes in its details) goes as it is.
  const encoded = body.toString('base64');
  if (encoded.length >= size) return { ...result, headers: { ...headers, ...vary } };
  const tag = headers.ETag;
  return {
    ...result,
    headers: { ...headers, ...vary, 'Content-Encoding': coding, ...(typeof tag === 'string' ? { ETag: codedTag(tag, coding) } : {}) },
    body: encoded,
    isBase64Encoded: true,
  };
}
