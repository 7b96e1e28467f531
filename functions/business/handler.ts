/**
 * The business group (/api/business and /api/v2): organizations, channels, private data, contracts.
 * Handlers parse, call one domain function, and shape the answer (docs/rules.md, "Business group").
 */
import { createHttpHandler } from '#shared/http/chain';
import type { RouteHandlers } from '#shared/http/types';
import { getBusiness } from '#shared/business-runtime';
import { healthReport } from '#shared/health';

const business = () => getBusiness();

export const routes: RouteHandlers = {
  'GET /health': async () => healthReport('business'),

  'POST /organizations': async ({ principal, body }) => {
    const org = await business().registerOrganization(principal, body ?? {});
    return { statusCode: 201, body: { success: true, org_id: org.org_id, name: org.name, msp_id: org.msp_id, public_key: org.public_key } };
  },
  'GET /organizations': async ({ principal }) => ({ statusCode: 200, body: await business().listOrganizations(principal) }),
  'GET /organizations/{org_id}': async ({ principal, params }) => ({ statusCode: 200, body: await business().getOrganization(principal, params.org_id!) }),

  'POST /channels': async ({ principal, body }) => {
    const channel = await business().createChannel(principal, body ?? {});
    return { statusCode: 201, body: { success: true, ...channel } };
  },
  'GET /channels/{channel_id}': async ({ principal, params }) => ({ statusCode: 200, body: await business().getChannel(principal, params.channel_id!) }),
  'POST /channels/{channel_id}/organizations': async ({ principal, params, body }) => ({
    statusCode: 201,
    body: { success: true, ...(await business().addOrganization(principal, params.channel_id!, body ?? {})) },
  }),
  'POST /channels/{channel_id}/private-collections': async ({ principal, params, body }) => ({
    statusCode: 201,
    body: { success: true, ...(await business().createCollection(principal, params.channel_id!, body ?? {})) },
  }),

  'POST /private-data': async ({ principal, body }) => ({
    statusCode: 201,
    body: { success: true, ...(await business().writePrivateData(principal, body ?? {})) },
  }),
  'GET /private-data/{channel}/{collection}/{key}': async ({ principal, params }) => ({
    statusCode: 200,
    body: await business().readPrivateData(principal, params.channel!, params.collection!, params.key!),
  }),

  'POST /contracts': async ({ principal, body }) => ({
    statusCode: 201,
    body: { success: true, ...(await business().registerContract(principal, body ?? {})) },
  }),
  'GET /contracts/{contract_id}': async ({ principal, params }) => ({
    statusCode: 200,
    body: await business().getContract(principal, params.contract_id!),
  }),
  'POST /contracts/execute': async ({ principal, body }) => ({
    statusCode: 200,
    body: { success: true, ...(await business().executeContract(principal, body ?? {})) },
  }),
};

export const handler = createHttpHandler(routes, { group: 'business' });
