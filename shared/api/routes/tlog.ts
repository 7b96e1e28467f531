/**
 * The tlog group (/tlog): every chain as a C2SP transparency log that Go's sumdb/tlog, Sigsum and
 * Tessera clients read unmodified. docs/transparency-log.md is the manual.
 *
 *   GET /tlog/vkey                              the note verifier key (text/plain)
 *   GET /tlog/{chain}/checkpoint                the signed checkpoint (text/plain; charset=utf-8)
 *   GET /tlog/{chain}/tile/{L}/{N}[.p/{W}]      hash tiles (application/octet-stream)
 *   GET /tlog/{chain}/tile/entries/{N}[.p/{W}]  entry bundles (application/octet-stream)
 *
 * Full tiles never change: cached for a year (`immutable`), with a strong ETag (a conditional GET is 304).
 * Partial tiles and checkpoints change as the chain grows: a few seconds, with their ETag to revalidate. With
 * auth on, responses to keyed requests are `private` (a shared cache must not hand them to callers without a
 * key), unless SVC_TLOG_PUBLIC opens the logs to anyone: then no key is asked and every answer is `public`, so
 * that a CDN keeps it. Everything here is a hash-level fact (an entry is a block's hash, never its contents).
 * docs/rules.md, "Caching".
 */
import type { Principal } from '../../access/policy.ts';
import { bytesTag, cacheScope, immutable } from '../../http/caching.ts';
import type { Tlog } from '../../tlog/tlog.ts';
import { routesOf } from '../define.ts';

export interface TlogDeps {
  /** The logs as this caller may read them (hash-level facts: any reader). */
  tlogFor(principal: Principal): Tlog;
  /** The logs answer anyone, no key asked (SVC_TLOG_PUBLIC). */
  openLogs: boolean;
}

const SHORT_SECONDS = 5;

/** Whether a shared cache may hand the answer to anyone: the logs are open, or auth is off. */
const scope = (principal: Principal, deps: TlogDeps) => cacheScope(principal, deps.openLogs);

const shortLived = (scopeOf: string, body: Buffer | string) => ({ ETag: bytesTag(body), 'Cache-Control': `${scopeOf}, max-age=${SHORT_SECONDS}` });

const route = routesOf<TlogDeps>('tlog');

export const TLOG_ROUTES = [
  route({
    method: 'GET',
    path: '/tlog/vkey',
    summary: 'The C2SP signed-note verifier key of the checkpoints',
    access: 'reader',
    publicWith: 'SVC_TLOG_PUBLIC',
    handler: async ({ principal }, deps) => ({
      contentType: 'text/plain; charset=utf-8',
      body: `${await deps.tlogFor(principal).verifierKey()}\n`,
      headers: { 'Cache-Control': `${scope(principal, deps)}, max-age=${SHORT_SECONDS}` },
    }),
  }),

  route({
    method: 'GET',
    path: '/tlog/{chain_name}/checkpoint',
    summary: "The chain's C2SP tlog checkpoint, a signed note",
    access: 'reader',
    publicWith: 'SVC_TLOG_PUBLIC',
    handler: async ({ principal, params }, deps) => {
      const body = await deps.tlogFor(principal).checkpoint(params.chain_name);
      return { contentType: 'text/plain; charset=utf-8', body, headers: shortLived(scope(principal, deps), body) };
    },
  }),

  route({
    method: 'GET',
    path: '/tlog/{chain_name}/tile/{tile_path+}',
    summary: 'C2SP tlog-tiles: hash tiles <L>/<N>[.p/<W>] and entry bundles entries/<N>[.p/<W>]',
    access: 'reader',
    publicWith: 'SVC_TLOG_PUBLIC',
    handler: async ({ principal, params }, deps) => {
      const { bytes, full } = await deps.tlogFor(principal).tile(params.chain_name, params.tile_path);
      return {
        contentType: 'application/octet-stream',
        body: bytes.toString('base64'),
        base64: true,
        headers: full ? immutable(bytesTag(bytes), principal, deps.openLogs) : shortLived(scope(principal, deps), bytes),
      };
    },
  }),
];
