/**
 * The ledger group (/api/ledger and /api/v1): one Lambda, the shared middleware chain, and a handler
 * per route. Handlers parse, call one domain function, and shape the answer; no ledger logic here.
 */
import { blockQuery, blocksQuery, consistencyQuery, offchainUpload, proofQuery, traceQuery } from '#shared/api/schemas';
import { getAdmin, getProofs } from '#shared/admin-runtime';
import { createHttpHandler } from '#shared/http/chain';
import type { RouteHandlers } from '#shared/http/types';
import { parseEventBatch, parseEventRequest } from '#shared/ledger/events';
import { parseBlockAddress } from '#shared/ledger/ledger';
import { getLedgerRuntime, getOffchainStore } from '#shared/runtime';
import { parseInput } from '#shared/validation';
import { healthReport } from '#shared/health';

const ledger = () => getLedgerRuntime().ledger;

export const routes: RouteHandlers = {
  'GET /health': async () => healthReport(),

  'GET /chains': async () => ({ statusCode: 200, body: await ledger().listChains() }),

  'POST /chains/{chain_name}/create': async ({ params }) => {
    const { chain_name, created_main } = await ledger().createSubChain(params.chain_name!);
    const message = created_main
      ? `Sub-Chain '${chain_name}' created (and the Main Chain with it)`
      : `Sub-Chain '${chain_name}' created`;
    return { statusCode: 201, body: { success: true, message, chain_name } };
  },

  'POST /chains/{chain_name}/events': async ({ params, body }) => {
    const draft = parseEventRequest(body ?? {});
    const { event_id, block } = await ledger().appendEvent(params.chain_name!, draft);
    return {
      statusCode: 200,
      body: { success: true, message: `Event added to block ${block.index} of '${block.chain_name}'`, event_id },
    };
  },

  'POST /chains/{chain_name}/events/batch': async ({ params, body }) => {
    const drafts = parseEventBatch(body ?? {});
    const appended = await ledger().appendEvents(params.chain_name!, drafts);
    const first = appended[0]!.block;
    const last = appended[appended.length - 1]!.block;
    return {
      statusCode: 200,
      body: {
        success: true,
        message: `${appended.length} event(s) added to blocks ${first.index}–${last.index} of '${first.chain_name}'`,
        event_ids: appended.map((a) => a.event_id),
      },
    };
  },

  'POST /chains/{chain_name}/submit-proof': async ({ params }) => {
    const proof = await ledger().submitProof(params.chain_name!);
    const message = proof.created
      ? `Proof of '${params.chain_name}' at block ${proof.details?.head_index} anchored in the Main Chain`
      : `Nothing added to '${params.chain_name}' since the last proof; it is still valid`;
    return { statusCode: 200, body: { success: true, message, proof_id: proof.proof_id } };
  },

  'GET /chains/{chain_name}/stats': async ({ params }) => ({
    statusCode: 200,
    body: await ledger().getStats(params.chain_name!),
  }),

  'GET /chains/{chain_name}/blocks': async ({ params, query }) => {
    const { limit, offset, order, resolve_cid } = parseInput(blocksQuery, query, 'query');
    const page = await ledger().listBlocks(params.chain_name!, { limit, offset, descending: order === 'desc', resolveCid: resolve_cid });
    return { statusCode: 200, body: page };
  },

  'GET /chains/{chain_name}/blocks/{index_or_hash}': async ({ params, query }) => {
    const { resolve_cid } = parseInput(blockQuery, query, 'query');
    const address = parseBlockAddress(params.index_or_hash!);
    return { statusCode: 200, body: await ledger().getBlock(params.chain_name!, address, { resolveCid: resolve_cid }) };
  },

  'GET /entities/{entity_id}/trace': async ({ params, query }) => {
    const { chain_name, resolve_cid } = parseInput(traceQuery, query, 'query');
    return { statusCode: 200, body: await ledger().traceEntity(params.entity_id!, chain_name, { resolveCid: resolve_cid }) };
  },

  'GET /chains/{chain_name}/checkpoint': async ({ params }) => ({ statusCode: 200, body: await getProofs().checkpoint(params.chain_name!) }),

  'GET /chains/{chain_name}/blocks/{index_or_hash}/proof': async ({ params, query }) => {
    const { tree_size } = parseInput(proofQuery, query, 'query');
    return { statusCode: 200, body: await getProofs().inclusion(params.chain_name!, params.index_or_hash!, tree_size) };
  },

  'GET /chains/{chain_name}/blocks/{index_or_hash}/anchor': async ({ params }) => ({
    statusCode: 200,
    body: await getProofs().anchor(params.chain_name!, params.index_or_hash!),
  }),

  'GET /chains/{chain_name}/consistency': async ({ params, query }) => {
    const { first, second } = parseInput(consistencyQuery, query, 'query');
    return { statusCode: 200, body: await getProofs().consistency(params.chain_name!, first, second) };
  },

  'GET /chains/{chain_name}/verify': async ({ params }) => ({ statusCode: 200, body: await getProofs().verify(params.chain_name!) }),

  'GET /network/ping/{target_id}': async ({ params }) => ({ statusCode: 200, body: await getAdmin().ping(params.target_id!) }),

  'POST /offchain': async ({ body }) => {
    const { data } = parseInput(offchainUpload, body ?? {}, 'body');
    return { statusCode: 201, body: await getOffchainStore().put(data) };
  },
};

export const handler = createHttpHandler(routes, { group: 'ledger' });
