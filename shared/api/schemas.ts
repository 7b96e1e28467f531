/**
 * The zod schemas of every route's query string and body, by `<group> <relative route key>`. Handlers
 * parse with them and GET /openapi.json is generated from them, so the document cannot drift from what
 * the service accepts.
 */
import * as z from 'zod';
import { challengeInput, peerInput, secureEventInput } from '../admin/admin.ts';
import { channelInput, collectionInput, contractInput, executeInput, memberInput, organizationInput, privateDataInput } from '../business/business.ts';
import { eventBatchSchema, eventRequestSchema } from '../ledger/events.ts';
import { queryBool, queryInt, queryInteger } from '../validation.ts';

export const blocksQuery = z.object({
  limit: queryInt(10, 1, 100),
  offset: queryInt(0, 0),
  resolve_cid: queryBool(false),
  order: z
    .enum(['asc', 'desc'])
    .optional()
    .transform((v) => v ?? 'asc'),
});
export const blockQuery = z.object({ resolve_cid: queryBool(false) });
export const traceQuery = z.object({ chain_name: z.string().min(1).optional(), resolve_cid: queryBool(false) });
export const proofQuery = z.object({ tree_size: queryInteger(1).optional() });
export const consistencyQuery = z.object({ first: queryInteger(1), second: queryInteger(1) });
/** docs/rules.md, "Off-chain payloads": `{"data": <any JSON>}`, stored encrypted in IPFS. */
export const offchainUpload = z.object({ data: z.json().refine((v) => v !== undefined, 'Required') });
export const decodeRequest = z.object({
  cid: z.string().min(1).max(256),
  nonce: z.string().regex(/^[0-9a-f]{24}$/, 'must be 24 hex characters'),
});
export const graphqlRequest = z.object({
  query: z.string().min(1),
  variables: z.record(z.string(), z.unknown()).nullish(),
  operationName: z.string().nullish(),
});
export const graphqlQuery = z.object({ query: z.string().min(1), variables: z.string().optional(), operationName: z.string().optional() });

export interface RouteSchemas {
  query?: z.ZodType;
  body?: z.ZodType;
  /** Takes an Idempotency-Key header (retries answer the first result). */
  idempotent?: true;
  /** The success status, when not 200. */
  status?: number;
}

export const ROUTE_SCHEMAS: Record<string, RouteSchemas> = {
  'ledger POST /chains/{chain_name}/create': { status: 201 },
  'ledger POST /chains/{chain_name}/events': { body: eventRequestSchema, idempotent: true },
  'ledger POST /chains/{chain_name}/events/batch': { body: eventBatchSchema, idempotent: true },
  'ledger GET /chains/{chain_name}/blocks': { query: blocksQuery },
  'ledger GET /chains/{chain_name}/blocks/{index_or_hash}': { query: blockQuery },
  'ledger GET /chains/{chain_name}/blocks/{index_or_hash}/proof': { query: proofQuery },
  'ledger GET /chains/{chain_name}/consistency': { query: consistencyQuery },
  'ledger GET /entities/{entity_id}/trace': { query: traceQuery },
  'ledger POST /offchain': { body: offchainUpload, status: 201 },
  'business POST /organizations': { body: organizationInput, status: 201 },
  'business POST /channels': { body: channelInput, status: 201 },
  'business POST /channels/{channel_id}/organizations': { body: memberInput, status: 201 },
  'business POST /channels/{channel_id}/private-collections': { body: collectionInput, status: 201 },
  'business POST /private-data': { body: privateDataInput, status: 201 },
  'business POST /contracts': { body: contractInput, status: 201 },
  'business POST /contracts/execute': { body: executeInput },
  'graphql POST /graphql': { body: graphqlRequest },
  'graphql GET /graphql': { query: graphqlQuery },
  'admin POST /verify-identity': { body: challengeInput },
  'admin POST /chains/{chain_name}/secure-events': { body: secureEventInput },
  'admin POST /peers': { body: peerInput, status: 201 },
  'admin POST /ipfs/decode': { body: decodeRequest },
};
