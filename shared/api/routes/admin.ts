/**
 * The admin group (/api/admin): node identity, status, secure events, peers, and the explorer's CID
 * decoder. The admin role on every route when auth is on.
 */
import * as z from 'zod';
import { type Admin, challengeInput, peerInput, secureEventInput } from '../../admin/admin.ts';
import type { CallerOffchain } from '../../access/guarded.ts';
import type { Principal } from '../../access/policy.ts';
import { routesOf } from '../define.ts';
import { decodedSchema, identitySchema, nodeStatusSchema, peerRegisteredSchema, peerSchema, secureEventSchema, signedChallengeSchema } from '../responses.ts';

/** What the admin group's handlers use; functions/admin/handler.ts wires it. */
export interface AdminDeps {
  admin(): Admin;
  /** Off-chain payloads as this caller may use them (an admin opens every scope). */
  offchainFor(principal: Principal): CallerOffchain;
}

export const decodeRequest = z.object({
  cid: z.string().min(1).max(256),
  nonce: z.string().regex(/^[0-9a-f]{24}$/, 'must be 24 hex characters'),
});

const route = routesOf<AdminDeps>('admin');

export const ADMIN_ROUTES = [
  route({
    method: 'POST',
    path: '/verify-identity',
    response: signedChallengeSchema,
    summary: 'Sign a challenge with the node key',
    access: 'admin',
    body: challengeInput,
    handler: async ({ body }, { admin }) => ({ body: await admin().verifyIdentity(body) }),
  }),

  route({
    method: 'GET',
    path: '/identity',
    response: identitySchema,
    summary: 'The node id and public key',
    access: 'admin',
    handler: async (_, { admin }) => ({ body: await admin().describeIdentity() }),
  }),

  route({
    method: 'GET',
    path: '/status',
    response: nodeStatusSchema,
    summary: 'Node status',
    access: 'admin',
    handler: async (_, { admin }) => ({ body: await admin().status() }),
  }),

  route({
    method: 'POST',
    path: '/chains/{chain_name}/secure-events',
    response: secureEventSchema,
    summary: 'Append an event signed by an organization',
    access: 'admin',
    body: secureEventInput,
    handler: async ({ params, body }, { admin }) => ({ body: await admin().secureEvent(params.chain_name, body) }),
  }),

  route({
    method: 'POST',
    path: '/peers',
    response: peerRegisteredSchema,
    summary: 'Register a peer',
    access: 'admin',
    status: 201,
    body: peerInput,
    handler: async ({ body }, { admin }) => ({ body: { success: true, ...(await admin().registerPeer(body)) } }),
  }),

  route({
    method: 'GET',
    path: '/peers',
    response: z.array(peerSchema),
    summary: 'List peers',
    access: 'admin',
    handler: async (_, { admin }) => ({ body: await admin().listPeers() }),
  }),

  route({
    method: 'POST',
    path: '/ipfs/decode',
    response: decodedSchema,
    summary: "Decrypt an off-chain payload (the explorer's CID decoder)",
    access: 'admin',
    body: decodeRequest,
    handler: async ({ principal, body: { cid, nonce } }, { offchainFor }) => ({ body: { cid, nonce, data: await offchainFor(principal).get(cid, nonce) } }),
  }),
];
