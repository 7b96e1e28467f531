/**
 * The tlog group (/tlog): every chain as a C2SP transparency log that Go's sumdb/tlog, Sigsum and
 * Tessera clients read unmodified. docs/transparency-log.md is the manual.
 *
 *   GET /tlog/vkey                              the note verifier key (text/plain)
 *   GET /tlog/{chain}/checkpoint                the signed checkpoint (text/plain; charset=utf-8)
 *   GET /tlog/{chain}/tile/{L}/{N}[.p/{W}]      hash tiles (application/octet-stream)
 *   GET /tlog/{chain}/tile/entries/{N}[.p/{W}]  entry bundles (application/octet-stream)
 *
 * Full tiles never change: cached for a year (`immutable`). Partial tiles and checkpoints change as the
 * chain grows: a few seconds. With auth on, responses to keyed requests are `private` (a shared cache must
 * not hand them to callers without a key).
 */
import { tlogFor } from '#shared/admin-runtime';
import { OPEN_ACCESS, type Principal } from '#shared/access/policy';
import { createHttpHandler } from '#shared/http/chain';
import type { RouteHandlers } from '#shared/http/types';

const SHORT_SECONDS = 5;
const YEAR_SECONDS = 31_536_000;

/** Whether anyone may read what this caller read: auth is off (every caller is OPEN_ACCESS). */
const scope = (principal: Principal) => (principal === OPEN_ACCESS ? 'public' : 'private');

export const routes: RouteHandlers = {
  'GET /tlog/vkey': async ({ principal }) => ({
    statusCode: 200,
    contentType: 'text/plain; charset=utf-8',
    body: `${await tlogFor(principal).verifierKey()}\n`,
    headers: { 'Cache-Control': `${scope(principal)}, max-age=${SHORT_SECONDS}` },
  }),

  'GET /tlog/{chain_name}/checkpoint': async ({ principal, params }) => ({
    statusCode: 200,
    contentType: 'text/plain; charset=utf-8',
    body: await tlogFor(principal).checkpoint(params.chain_name!),
    headers: { 'Cache-Control': `${scope(principal)}, max-age=${SHORT_SECONDS}` },
  }),

  'GET /tlog/{chain_name}/tile/{tile_path+}': async ({ principal, params }) => {
    const { bytes, full } = await tlogFor(principal).tile(params.chain_name!, params.tile_path!);
    return {
      statusCode: 200,
      contentType: 'application/octet-stream',
      body: bytes.toString('base64'),
      headers: {
        'Cache-Control': full ? `${scope(principal)}, max-age=${YEAR_SECONDS}, immutable` : `${scope(principal)}, max-age=${SHORT_SECONDS}`,
        'X-Body-Encoding': 'base64',
      },
    };
  },
};

export const handler = createHttpHandler(routes, { group: 'tlog' });
