/**
 * The admin group (/api/admin): node identity, status, secure events, peers, and the explorer's CID
 * decoder. Admin role on every route when auth is on (shared/http/access.ts).
 */
import { decodeRequest } from '#shared/api/schemas';
import { getAdmin } from '#shared/admin-runtime';
import { createHttpHandler } from '#shared/http/chain';
import type { RouteHandlers } from '#shared/http/types';
import { getOffchainStore } from '#shared/runtime';
import { parseInput } from '#shared/validation';

const admin = () => getAdmin();

export const routes: RouteHandlers = {
  'POST /verify-identity': async ({ body }) => ({ statusCode: 200, body: await admin().verifyIdentity(body ?? {}) }),
  'GET /identity': async () => ({ statusCode: 200, body: await admin().describeIdentity() }),
  'GET /status': async () => ({ statusCode: 200, body: await admin().status() }),
  'POST /chains/{chain_name}/secure-events': async ({ params, body }) => ({
    statusCode: 200,
    body: await admin().secureEvent(params.chain_name!, body ?? {}),
  }),
  'POST /peers': async ({ body }) => ({ statusCode: 201, body: { success: true, ...(await admin().registerPeer(body ?? {})) } }),
  'GET /peers': async () => ({ statusCode: 200, body: await admin().listPeers() }),
  'POST /ipfs/decode': async ({ body }) => {
    const { cid, nonce } = parseInput(decodeRequest, body ?? {}, 'body');
    return { statusCode: 200, body: { cid, nonce, data: await getOffchainStore().get(cid, nonce) } };
  },
};

export const handler = createHttpHandler(routes, { group: 'admin' });
