/**
 * The business group (/api/business and /api/v2): organizations, channels, private data, contracts' versions
 * (docs/rules.md, "Business group"). Who may act in which channel is the policy's, inside the domain. Publishing
 * and running contracts, which take a sandbox, are the contracts group's (shared/api/routes/contracts.ts).
 */
import * as z from 'zod';
import { type Business, channelInput, collectionInput, memberInput, organizationInput, privateDataInput } from '../../business/business.ts';
import { type HealthProbes, healthReport } from '../../health.ts';
import { routesOf } from '../define.ts';
import {
  channelCreatedSchema,
  channelSchema,
  collectionCreatedSchema,
  contractSchema,
  healthSchema,
  memberAddedSchema,
  memberRemovedSchema,
  organizationCreatedSchema,
  organizationSchema,
  privateDataSchema,
  privateDataWrittenSchema,
} from '../responses.ts';

/** What the business group's handlers use; functions/business/handler.ts wires it. */
export interface BusinessDeps {
  business(): Business;
  health: HealthProbes;
}

const route = routesOf<BusinessDeps>('business');

export const BUSINESS_ROUTES = [
  route({
    method: 'GET',
    path: '/health',
    response: healthSchema,
    summary: 'Health check',
    access: 'public',
    handler: async (_, { health }) => healthReport(health, 'business'),
  }),

  route({
    method: 'POST',
    path: '/organizations',
    response: organizationCreatedSchema,
    summary: 'Register an organization',
    access: 'writer',
    status: 201,
    body: organizationInput,
    handler: async ({ principal, body }, { business }) => {
      const org = await business().registerOrganization(principal, body);
      return { body: { success: true, org_id: org.org_id, name: org.name, msp_id: org.msp_id, public_key: org.public_key } };
    },
  }),

  route({
    method: 'GET',
    path: '/organizations',
    response: z.array(organizationSchema),
    summary: 'List organizations',
    access: 'reader',
    handler: async ({ principal }, { business }) => ({ body: await business().listOrganizations(principal) }),
  }),

  route({
    method: 'GET',
    path: '/organizations/{org_id}',
    response: organizationSchema,
    summary: 'One organization',
    access: 'reader',
    handler: async ({ principal, params }, { business }) => ({ body: await business().getOrganization(principal, params.org_id) }),
  }),

  route({
    method: 'POST',
    path: '/channels',
    response: channelCreatedSchema,
    summary: 'Create a channel (and its Sub-Chain)',
    access: 'writer',
    status: 201,
    body: channelInput,
    handler: async ({ principal, body }, { business }) => ({ body: { success: true, ...(await business().createChannel(principal, body)) } }),
  }),

  route({
    method: 'GET',
    path: '/channels/{channel_id}',
    response: channelSchema,
    summary: 'Channel information',
    access: 'reader',
    handler: async ({ principal, params }, { business }) => ({ body: await business().getChannel(principal, params.channel_id) }),
  }),

  route({
    method: 'POST',
    path: '/channels/{channel_id}/organizations',
    response: memberAddedSchema,
    summary: 'Add a member organization',
    access: 'writer',
    status: 201,
    body: memberInput,
    handler: async ({ principal, params, body }, { business }) => ({
      body: { success: true, ...(await business().addOrganization(principal, params.channel_id, body)) },
    }),
  }),

  route({
    method: 'DELETE',
    path: '/channels/{channel_id}/organizations/{org_id}',
    response: memberRemovedSchema,
    summary: 'Remove a member organization (admins)',
    access: 'admin',
    handler: async ({ principal, params }, { business }) => ({
      body: { success: true, ...(await business().removeOrganization(principal, params.channel_id, params.org_id)) },
    }),
  }),

  route({
    method: 'POST',
    path: '/channels/{channel_id}/private-collections',
    response: collectionCreatedSchema,
    summary: 'Create a private data collection',
    access: 'writer',
    status: 201,
    body: collectionInput,
    handler: async ({ principal, params, body }, { business }) => ({
      body: { success: true, ...(await business().createCollection(principal, params.channel_id, body)) },
    }),
  }),

  route({
    method: 'POST',
    path: '/private-data',
    response: privateDataWrittenSchema,
    summary: 'Write private data (encrypted, off the common ledger)',
    access: 'writer',
    status: 201,
    body: privateDataInput,
    handler: async ({ principal, keyStillHeld, body }, { business }) => ({
      body: { success: true, ...(await business().writePrivateData(principal, body, keyStillHeld)) },
    }),
  }),

  route({
    method: 'GET',
    path: '/private-data/{channel}/{collection}/{key}',
    response: privateDataSchema,
    summary: 'Read private data (members and admins)',
    access: 'reader',
    handler: async ({ principal, params }, { business }) => ({
      body: await business().readPrivateData(principal, params.channel, params.collection, params.key),
    }),
  }),

  route({
    method: 'GET',
    path: '/contracts/{contract_id}',
    response: contractSchema,
    summary: "A contract's versions",
    access: 'reader',
    handler: async ({ principal, params }, { business }) => ({ body: await business().getContract(principal, params.contract_id) }),
  }),
];
