/**
 * How `ledger-verify` (the CLI, and its page workers) sends its GETs: node:http and node:https with connections kept
 * alive, each answer read whole. Node's `fetch` cost the verifier 0.4–0.6 ms more CPU an answer of 128 KB (an entry
 * bundle) than this, 1.1–1.4 ms against 0.76–0.85, and wrapping this in a `Response` cost as much again, so a link
 * to a node carries bytes, not Responses (pages.ts, NodeGet). Node only; the verifier's library takes any `fetch`.
 */
import http from 'node:http';
import https from 'node:https';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { NodeAnswer, NodeGet } from './pages.ts';

/**
 * The largest answer read, on the wire and decoded: a node's answer is at most a Lambda response (6 MB), so this is
 * far above any honest one, and an endless or compressed-to-nothing answer from a lying node ends here instead of
 * taking the verifier's memory (a gzip of 1 MB had decoded to 2 GB).
 */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/** Redirects followed, as `fetch` follows them (a node moved behind a CDN answers 301 or 308). */
const MAX_REDIRECTS = 5;
const REDIRECT = new Set([301, 302, 303, 307, 308]);

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
};

/**
 * A node's answer to a GET, decoded as `fetch` decodes it (br, gzip, deflate); a failure to reach it is thrown.
 * Redirects are followed as a browser follows them with credentials: to another origin without the caller's key (or
 * any other credential header), and never from https to plain http, where the request and its answer would cross the
 * network in clear: that is an error. A node that moved elsewhere is named with `--url`.
 */
export const nodeGet: NodeGet = (url, init) => get(new URL(url), init, 0);

/** Headers that carry a credential: sent only to the origin the caller named. */
const CREDENTIAL_HEADERS = new Set(['x-api-key', 'authorization', 'cookie', 'proxy-authorization']);

/** The request to follow a redirect from `from` to `to` with: the caller's headers, without credentials off its origin. */
export function redirected(from: URL, to: URL, init: Parameters<NodeGet>[1]): Parameters<NodeGet>[1] {
  if (from.protocol === 'https:' && to.protocol !== 'https:')
    throw new Error(`${from.host} redirected to ${to.protocol}//${to.host}, off https: not followed (name the node's https address with --url)`);
  if (to.origin === from.origin) return init;
  const headers = Object.fromEntries(Object.entries(init.headers).filter(([name]) => !CREDENTIAL_HEADERS.has(name.toLowerCase())));
  return { ...init, headers };
}

function get(url: URL, init: Parameters<NodeGet>[1], redirects: number): Promise<NodeAnswer> {
  return new Promise((resolve, reject) => {
    const secure = url.protocol === 'https:';
    if (!secure && url.protocol !== 'http:') return reject(new Error(`${url.protocol} is not HTTP`));
    const request = (secure ? https : http).request(
      url,
      { method: 'GET', headers: init.headers, agent: secure ? agents.https : agents.http, signal: init.signal },
      (res) => {
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (REDIRECT.has(status) && location && redirects < MAX_REDIRECTS) {
          res.resume();
          try {
            const to = new URL(location, url);
            resolve(get(to, redirected(url, to, init), redirects + 1));
          } catch (error) {
            reject(error);
          }
          return;
        }
        const chunks: Buffer[] = [];
        let received = 0;
        res.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > MAX_ANSWER_BYTES) {
            reject(new Error(`the answer of ${url.host} is larger than ${MAX_ANSWER_BYTES / 1024 / 1024} MB, more than any node answers`));
            request.destroy();
            return;
          }
          chunks.push(chunk);
        });
        res.on('error', reject);
        // A connection lost (or aborted at the deadline) mid-answer: an error, never a wait without end.
        res.on('close', () => {
          if (!res.complete) reject(new Error(`the answer of ${url.host} was cut short`));
        });
        res.on('end', () => {
          try {
            resolve({
              status,
              headers: { get: (name) => header(res.headers[name.toLowerCase()]) },
              body: decoded(Buffer.concat(chunks), res.headers['content-encoding']),
            });
          } catch (error) {
            reject(new Error(`an answer of ${url.host} could not be decoded: ${(error as Error).message}`, { cause: error }));
          }
        });
      },
    );
    request.on('error', reject);
    request.end();
  });
}

const header = (value: string | string[] | undefined): string | null => (value === undefined ? null : Array.isArray(value) ? value.join(', ') : value);

function decoded(body: Buffer, encoding: string | undefined): Buffer {
  switch (encoding?.trim().toLowerCase()) {
    case undefined:
    case '':
    case 'identity':
      return body;
    case 'br':
      return brotliDecompressSync(body, { maxOutputLength: MAX_ANSWER_BYTES });
    case 'gzip':
    case 'x-gzip':
      return gunzipSync(body, { maxOutputLength: MAX_ANSWER_BYTES });
    case 'deflate':
      return inflateSync(body, { maxOutputLength: MAX_ANSWER_BYTES });
    default:
      throw new Error(`content-encoding ${encoding} is not one a verifier asks for`);
  }
}
