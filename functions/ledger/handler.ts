/**
 * The ledger group (/api/ledger and /api/v1): one Lambda, the shared middleware chain, and a handler
 * per route. Handlers parse, call one domain function, and shape the answer; no ledger logic here.
 */
import { blockQuery, blocksQuery, consistencyQuery, offchainUpload, proofQuery, traceQuery } from '#shared/api/schemas';
import { getAdmin, proofsFor } from '#shared/admin-runtime';
import { createHttpHandler } from '#shared/http/chain';
import type { RouteHandlers } from '#shared/http/types';
import { parseEventBatch, parseEventRequest } from '#shared/ledger/events';
import { parseBlockAddress, type AppendOptions } from '#shared/ledger/ledger';
import { BadRequestError } from '#shared/errors';
import { getOffchainStore, ledgerFor } from '#shared/runtime';
import { parseInput } from '#shared/validation';
import { healthReport } from '#shared/health';

/**
 * The Idempotency-Key header of an append: 1 to 255 printable ASCII characters (a UUID is the usual
 * choice). A retry with the same key and the same body answers what the first request answered and
 * appends nothing; the same key with another body is 422; while the first is in progress, 409.
 */
function idempotencyOptions(headers: Record<string, string>): AppendOptions | undefined {
  const key = headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > 255 || !/^[\x20-\x7e]+$/.test(key)) {
    throw new BadRequestError('Idempotency-Key must be 1 to 255 printable ASCII characters');
  }
  return { idempotency: { key, caller: '' } }; // the caller is set from the principal (guardLedger)
}

/** A replayed answer says so, so that a client can tell its retry appended nothing. */
const replayedHeader = (replayed: boolean | undefined) => (replayed ? { headers: { 'Idempotent-Replayed': 'true' } } : {});

export const routes: RouteHandlers = {
  'GET /health': async () => healthReport(),

  'GET /chains': async ({ principal }) => ({ statusCode: 200, body: await ledgerFor(principal).listChains() }),

  'POST /chains/{chain_name}/create': async ({ principal, params }) => {
    const { chain_name, created_main } = await ledgerFor(principal).createSubChain(params.chain_name!);
    const message = created_main ? `Sub-Chain '${chain_name}' created (and the Main Chain with it)` : `Sub-Chain '${chain_name}' created`;
    return { statusCode: 201, body: { success: true, message, chain_name } };
  },

  'POST /chains/{chain_name}/events': async ({ principal, params, body, headers }) => {
    const draft = parseEventRequest(body ?? {});
    const options = idempotencyOptions(headers);
    const { event_id, block, replayed } = await ledgerFor(principal).appendEvent(params.chain_name!, draft, options);
    return {
      statusCode: 200,
      ...replayedHeader(replayed),
      body: { success: true, message: `Event added to block ${block.index} of '${block.chain_name}'`, event_id },
    };
  },

  'POST /chains/{chain_name}/events/batch': async ({ principal, params, body, headers }) => {
    const drafts = parseEventBatch(body ?? {});
    const options = idempotencyOptions(headers);
    const appended = await ledgerFor(principal).appendEvents(params.chain_name!, drafts, options);
    const first = appended[0]!.block;
    const last = appended[appended.length - 1]!.block;
    return {
      statusCode: 200,
      ...replayedHeader(appended.replayed),
      body: {
        success: true,
        message: `${appended.length} event(s) added to blocks ${first.index}–${last.index} of '${first.chain_name}'`,
        event_ids: appended.map((a) => a.event_id),
      },
    };
  },

  'POST /chains/{chain_name}/submit-proof': async ({ principal, params }) => {
    const proof = await ledgerFor(principal).submitProof(params.chain_name!);
    const message = proof.created
      ? `Proof of '${params.chain_name}' at block ${proof.details?.head_index} anchored in the Main Chain`
      : `Nothing added to '${params.chain_name}' since the last proof; it is still valid`;
    return { statusCode: 200, body: { success: true, message, proof_id: proof.proof_id } };
  },

  'GET /chains/{chain_name}/stats': async ({ principal, params }) => ({
    statusCode: 200,
    body: await ledgerFor(principal).getStats(params.chain_name!),
  }),

  'GET /chains/{chain_name}/blocks': async ({ principal, params, query }) => {
    const { limit, offset, order, resolve_cid } = parseInput(blocksQuery, query, 'query');
    const page = await ledgerFor(principal).listBlocks(params.chain_name!, { limit, offset, descending: order === 'desc', resolveCid: resolve_cid });
    return { statusCode: 200, body: page };
  },

  'GET /chains/{chain_name}/blocks/{index_or_hash}': async ({ principal, params, query }) => {
    const { resolve_cid } = parseInput(blockQuery, query, 'query');
    const address = parseBlockAddress(params.index_or_hash!);
    return { statusCode: 200, body: await ledgerFor(principal).getBlock(params.chain_name!, address, { resolveCid: resolve_cid }) };
  },

  'GET /entities/{entity_id}/trace': async ({ principal, params, query }) => {
    const { chain_name, resolve_cid } = parseInput(traceQuery, query, 'query');
    return { statusCode: 200, body: await ledgerFor(principal).traceEntity(params.entity_id!, chain_name, { resolveCid: resolve_cid }) };
  },

  'GET /chains/{chain_name}/checkpoint': async ({ principal, params }) => ({
    statusCode: 200,
    body: await proofsFor(principal).checkpoint(params.chain_name!),
  }),

  'GET /chains/{chain_name}/blocks/{index_or_hash}/proof': async ({ principal, params, query }) => {
    const { tree_size } = parseInput(proofQuery, query, 'query');
    return { statusCode: 200, body: await proofsFor(principal).inclusion(params.chain_name!, params.index_or_hash!, tree_size) };
  },

  'GET /chains/{chain_name}/blocks/{index_or_hash}/anchor': async ({ principal, params }) => ({
    statusCode: 200,
    body: await proofsFor(principal).anchor(params.chain_name!, params.index_or_hash!),
  }),

  'GET /chains/{chain_name}/consistency': async ({ principal, params, query }) => {
    const { first, second } = parseInput(consistencyQuery, query, 'query');
    return { statusCode: 200, body: await proofsFor(principal).consistency(params.chain_name!, first, second) };
  },

  'GET /chains/{chain_name}/verify': async ({ principal, params }) => ({ statusCode: 200, body: await proofsFor(principal).verify(params.chain_name!) }),

  'GET /network/ping/{target_id}': async ({ params }) => ({ statusCode: 200, body: await getAdmin().ping(params.target_id!) }),

  // The node's public key, for anyone who checks its signed checkpoints (a reader key suffices).
  'GET /identity': async () => ({ statusCode: 200, body: await getAdmin().describeIdentity() }),

  'POST /offchain': async ({ body }) => {
    const { data } = parseInput(offchainUpload, body ?? {}, 'body');
    return { statusCode: 201, body: await getOffchainStore().put(data) };
  },
};

export const handler = createHttpHandler(routes, { group: 'ledger' });
