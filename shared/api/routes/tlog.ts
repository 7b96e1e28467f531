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
 * key). docs/rules.md, "Caching".
 */
import type { Principal } from '../../access/policy.ts';
import { bytesTag, cacheScope as scope, immutable } from '../../http/caching.ts';
import type { Tlog } from '../../tlog/tlog.ts';
import { routesOf } from '../define.ts';

export interface TlogDeps {
  /** The logs as this caller may read them (hash-level facts: any reader). */
  tlogFor(principal: Principal): Tlog;
}

const SHORT_SECONDS = 5;

const shortLived = (principal: Principal, body: Buffer | string) => ({
  ETag: bytesTag(body),
  'Cache-Control': `${scope(principal)}, max-age=${SHORT_SECONDS}`,
});

const route = routesOf<TlogDeps>('tlog');

export const TLOG_ROUTES = [
  route({
    method: 'GET',
    path: '/tlog/vkey',
    summary: 'The C2SP signed-note verifier key of the checkpoints',
    access: 'reader',
    handler: async ({ principal }, { tlogFor }) => ({
      contentType: 'text/plain; charset=utf-8',
      body: `${await tlogFor(principal).verifierKey()}\n`,
      headers: { 'Cache-Control': `${scope(principal)}, max-age=${SHORT_SECONDS}` },
    }),
  }),

  route({
    method: 'GET',
    path: '/tlog/{chain_name}/checkpoint',
    summary: "The chain's C2SP tlog checkpoint, a signed note",
    access: 'reader',
    handler: async ({ principal, params }, { tlogFor }) => {
      const body = await tlogFor(principal).checkpoint(params.chain_name);
      return { contentType: 'text/plain; charset=utf-8', body, headers: shortLived(principal, body) };
    },
  }),

  route({
    method: 'GET',
    path: '/tlog/{chain_name}/tile/{tile_path+}',
    summary: 'C2SP tlog-tiles: hash tiles <L>/<N>[.p/<W>] and entry bundles entries/<N>[.p/<W>]',
    access: 'reader',
    handler: async ({ principal, params }, { tlogFor }) => {
      const { bytes, full } = await tlogFor(principal).tile(params.chain_name, params.tile_path);
      return {
        contentType: 'application/octet-stream',
        body: bytes.toString('base64'),
        base64: true,
        headers: full ? immutable(bytesTag(bytes), principal) : shortLived(principal, bytes),
      };
    },
  }),
];
