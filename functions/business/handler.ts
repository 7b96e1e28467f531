/**
 * The business group (/api/business and /api/v2): organizations, channels, private data, contracts.
 * Handlers parse, call one domain function, and shape the answer (contract.md §5).
 */
import { createHttpHandler } from '#shared/http/chain';
import type { RouteHandlers } from '#shared/http/types';
import { getBusiness } from '#shared/business-runtime';
import { healthReport } from '#shared/health';

const business = () => getBusiness();

export const routes: RouteHandlers = {
  'GET /health': async () => healthReport('business'),

  'POST /organizations': async ({ body }) => {
    const org = await business().registerOrganization(body ?? {});
    return { statusCode: 201, body: { success: true, org_id: org.org_id, name: org.name, msp_id: org.msp_id, public_key: org.public_key } };
  },
  'GET /organizations': async () => ({ statusCode: 200, body: await business().listOrganizations() }),
  'GET /organizations/{org_id}': async ({ params }) => ({ statusCode: 200, body: await business().getOrganization(params.org_id!) }),

  'POST /channels': async ({ body }) => {
    const channel = await business().createChannel(body ?? {});
    return { statusCode: 201, body: { success: true, ...channel } };
  },
  'GET /channels/{channel_id}': async ({ params }) => ({ statusCode: 200, body: await business().getChannel(params.channel_id!) }),
  'POST /channels/{channel_id}/organizations': async ({ params, body }) => ({
    statusCode: 201,
    body: { success: true, ...(await business().addOrganization(params.channel_id!, body ?? {})) },
  }),
  'POST /channels/{channel_id}/private-collections': async ({ params, body, caller }) => ({
    statusCode: 201,
    body: { success: true, ...(await business().createCollection(params.channel_id!, body ?? {}, caller)) },
  }),

  'POST /private-data': async ({ body, caller }) => ({
    statusCode: 201,
    body: { success: true, ...(await business().writePrivateData(body ?? {}, caller)) },
  }),
  'GET /private-data/{channel}/{collection}/{key}': async ({ params, caller }) => ({
    statusCode: 200,
    body: await business().readPrivateData(params.channel!, params.collection!, params.key!, caller),
  }),

  'POST /contracts': async ({ body }) => ({ statusCode: 201, body: { success: true, ...(await business().registerContract(body ?? {})) } }),
  'GET /contracts/{contract_id}': async ({ params }) => ({ statusCode: 200, body: await business().getContract(params.contract_id!) }),
  'POST /contracts/execute': async ({ body }) => ({ statusCode: 200, body: { success: true, ...(await business().executeContract(body ?? {})) } }),
};

export const handler = createHttpHandler(routes, { group: 'business' });
