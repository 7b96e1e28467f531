/**
 * The admin group (/api/admin). Admin role on every route when auth is on (shared/http/access.ts).
 * So far: the explorer's CID decoder; node identity, status, secure events and peers come with issue #7.
 */
import { z } from 'zod';
import { createHttpHandler } from '#shared/http/chain';
import type { RouteHandlers } from '#shared/http/types';
import { getOffchainStore } from '#shared/runtime';
import { parseInput } from '#shared/validation';

const decodeRequest = z.object({
  cid: z.string().min(1).max(256),
  nonce: z.string().regex(/^[0-9a-f]{24}$/, 'must be 24 hex characters'),
});

export const routes: RouteHandlers = {
  'POST /ipfs/decode': async ({ body }) => {
    const { cid, nonce } = parseInput(decodeRequest, body ?? {}, 'body');
    return { statusCode: 200, body: { cid, nonce, data: await getOffchainStore().get(cid, nonce) } };
  },
};

export const handler = createHttpHandler(routes, { group: 'admin' });
