/**
 * The ledger group (/api/ledger and /api/v1): chains, events, blocks, proofs, trace, off-chain payloads.
 * Handlers parse nothing themselves (the schemas did), call one domain function, and shape the answer.
 */
import * as z from 'zod';
import type { Principal } from '../../access/policy.ts';
import { BadRequestError } from '../../errors.ts';
import type { HealthProbes } from '../../health.ts';
import { healthReport } from '../../health.ts';
import { draftOf, eventBatchSchema, eventRequestSchema } from '../../ledger/events.ts';
import {
  type AppendOptions,
  CHAIN_PAGE_MAX,
  type Ledger,
  parseBlockAddress,
  TRACE_CURSOR_MAX,
  TRACE_LIMIT_DEFAULT,
  TRACE_LIMIT_MAX,
} from '../../ledger/ledger.ts';
import type { CallerOffchain } from '../../access/guarded.ts';
import { CHAIN_NAME_PATTERN } from '../../ledger/names.ts';
import { MAX_EVIDENCE_LEAVES, type Proofs } from '../../ledger/proofs.ts';
import { SUBJECT_ID, SUBJECT_ID_RULE } from '../../ledger/subject-port.ts';
import { queryBool, queryInt, queryInteger } from '../../validation.ts';
import { entityTag, immutable, NO_STORE, revalidated } from '../../http/caching.ts';
import { routesOf } from '../define.ts';
import {
  appendedBatchSchema,
  appendedSchema,
  blockSchema,
  blocksPageSchema,
  chainInfoSchema,
  consistencySchema,
  createdChainSchema,
  evidenceSchema,
  healthSchema,
  identitySchema,
  inclusionSchema,
  jsonCheckpointSchema,
  offchainStoredSchema,
  pingSchema,
  proofSubmittedSchema,
  statsSchema,
  traceSchema,
} from '../responses.ts';

/** What the ledger group's handlers use; functions/ledger/handler.ts wires it. */
export interface LedgerDeps {
  /** The ledger as this caller may use it: every call checked by the access policy. */
  ledgerFor(principal: Principal): Ledger;
  proofsFor(principal: Principal): Proofs;
  /** Off-chain payloads as this caller may use them: put for a scope it may write, opened only where it may read. */
  offchainFor(principal: Principal): CallerOffchain;
  /** The node's own identity and its peers. */
  node(): { describeIdentity(): Promise<unknown>; ping(targetId: string): Promise<unknown> };
  health: HealthProbes;
}

export const blocksQuery = z.object({
  limit: queryInt(10, 1, 100),
  offset: queryInt(0, 0),
  resolve_cid: queryBool(false),
  order: z
    .enum(['asc', 'desc'])
    .optional()
    .transform((v) => v ?? 'asc'),
  /** (extension) The page of the chain's first `tree_size` blocks: `total` is that size, and the answer never changes. */
  tree_size: queryInteger(1).optional(),
});
export const blockQuery = z.object({ resolve_cid: queryBool(false) });
/** A trace is read a page at a time: `limit` events (100 by default, at most 1,000), after a `cursor` a page answered. */
/** What one verify of a chain may read: a chain of up to about a million blocks, within the request's deadline. */
export const VERIFY_READ_ITEMS = 1_000_000;

export const chainsQuery = z.object({
  limit: queryInt(CHAIN_PAGE_MAX, 1, CHAIN_PAGE_MAX),
  after: z.string().regex(CHAIN_NAME_PATTERN, 'Expected a chain name, as the Link header of the page before gives it').optional(),
});
export const traceQuery = z.object({
  chain_name: z.string().min(1).optional(),
  resolve_cid: queryBool(false),
  limit: queryInt(TRACE_LIMIT_DEFAULT, 1, TRACE_LIMIT_MAX),
  cursor: z.string().min(1).max(TRACE_CURSOR_MAX).optional(),
});
export const proofQuery = z.object({ tree_size: queryInteger(1).optional() });
export const consistencyQuery = z.object({ first: queryInteger(1), second: queryInteger(1) });
/** `leaves`: block indices and ranges, `3,5-9` (ascending order not needed; at most 100 leaves). */
export const evidenceQuery = z.object({
  leaves: z
    .string()
    .regex(/^(\d{1,15}(-\d{1,15})?)?(,\d{1,15}(-\d{1,15})?)*$/, 'Expected block indices and ranges: 3,5-9')
    .transform((raw, ctx) => {
      const leaves = new Set<number>();
      for (const part of raw.split(',').filter(Boolean)) {
        const [a, b = a] = part.split('-').map(Number) as [number, number?];
        if (b! < a) {
          ctx.addIssue({ code: 'custom', message: `The range ${part} runs backwards` });
          return z.NEVER;
        }
        for (let i = a; i <= b! && leaves.size <= MAX_EVIDENCE_LEAVES; i += 1) leaves.add(i);
        if (leaves.size > MAX_EVIDENCE_LEAVES) {
          ctx.addIssue({ code: 'custom', message: `At most ${MAX_EVIDENCE_LEAVES} leaves per request` });
          return z.NEVER;
        }
      }
      return [...leaves].sort((x, y) => x - y);
    })
    .optional()
    .transform((v) => v ?? []),
  tree_size: queryInteger(1).optional(),
  known_size: queryInteger(0).optional(),
  blocks: queryBool(false),
  witnessed: queryBool(false),
});
/** Why a data subject is erased: recorded on the Main Chain with who and when (write no personal data here). */
export const eraseRequest = z.object({ reason: z.string().min(1).max(1000) });
/** docs/rules.md, "Off-chain payloads": `{"data": <any JSON>}`, stored encrypted in IPFS. */
/**
 * A payload to put off chain, and where it will be cited (its scope: shared/ledger/offchain-port.ts): `chain` (the
 * events of that chain), or `channel` and `collection` (a private value), or neither (the key's organization, or
 * any key when it has none). Only those who may read that scope can ever have it decrypted.
 */
export const offchainUpload = z
  .object({
    data: z.json().refine((v) => v !== undefined, 'Required'),
    chain: z.string().regex(CHAIN_NAME_PATTERN, 'must be a chain name: 1-64 of A-Z a-z 0-9 _ -').optional(),
    channel: z.string().regex(CHAIN_NAME_PATTERN, 'must be a channel name: 1-64 of A-Z a-z 0-9 _ -').optional(),
    collection: z.string().regex(CHAIN_NAME_PATTERN, 'must be a collection name: 1-64 of A-Z a-z 0-9 _ -').optional(),
  })
  .refine((body) => body.chain === undefined || (body.channel === undefined && body.collection === undefined), {
    message: 'name either a chain, or a channel and a collection',
    path: ['chain'],
  })
  .refine((body) => (body.channel === undefined) === (body.collection === undefined), {
    message: 'a channel and a collection go together',
    path: ['collection'],
  });

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

/**
 * Cache headers of an answer made of blocks (docs/rules.md, "Caching"): none may be kept when an event's details
 * can still change (an erasable event's, which erasure turns to null; resolved off-chain payloads); otherwise a
 * tag from the blocks' hashes, immutable when the answer is sealed (its blocks written, the answer fixed).
 */
function readCacheHeaders(
  principal: Principal,
  blocks: readonly { hash: string; events: readonly { subject_id?: string }[] }[],
  resolved: boolean | undefined,
  sealed: boolean,
  parts: (string | number)[],
): Record<string, string> {
  if (resolved || blocks.some((b) => b.events.some((e) => e.subject_id !== undefined))) return { ...NO_STORE };
  const tag = entityTag(...parts, ...blocks.map((b) => b.hash));
  return sealed ? immutable(tag, principal) : revalidated(tag, principal);
}

const route = routesOf<LedgerDeps>('ledger');

export const LEDGER_ROUTES = [
  route({
    method: 'GET',
    path: '/health',
    response: healthSchema,
    summary: 'Health check',
    access: 'public',
    handler: async (_, { health }) => healthReport(health),
  }),

  route({
    method: 'GET',
    path: '/chains',
    response: z.array(chainInfoSchema),
    // A bare array, the Main Chain first, then Sub-Chains by name: up to `limit` chains (default and most 1,000) after
    // the chain named `after`. When the list goes on, a `Link` header names the next page (rel="next").
    summary: 'The Main Chain and the Sub-Chains, a page at a time',
    access: 'reader',
    query: chainsQuery,
    handler: async ({ principal, query }, { ledgerFor }) => {
      const { chains, next } = await ledgerFor(principal).listChains({ limit: query.limit, after: query.after });
      return {
        body: chains,
        ...(next === null ? {} : { headers: { Link: `<?limit=${query.limit}&after=${encodeURIComponent(next)}>; rel="next"` } }),
      };
    },
  }),

  route({
    method: 'POST',
    path: '/chains/{chain_name}/create',
    response: createdChainSchema,
    summary: 'Create a Sub-Chain',
    access: 'writer',
    status: 201,
    handler: async ({ principal, params }, { ledgerFor }) => {
      const { chain_name, created_main } = await ledgerFor(principal).createSubChain(params.chain_name);
      const message = created_main ? `Sub-Chain '${chain_name}' created (and the Main Chain with it)` : `Sub-Chain '${chain_name}' created`;
      return { body: { success: true, message, chain_name } };
    },
  }),

  route({
    method: 'POST',
    path: '/chains/{chain_name}/events',
    response: appendedSchema,
    summary: 'Add an event',
    access: 'writer',
    body: eventRequestSchema,
    idempotent: true,
    handler: async ({ principal, params, body, headers }, { ledgerFor }) => {
      const options = idempotencyOptions(headers);
      const { event_id, block, replayed } = await ledgerFor(principal).appendEvent(params.chain_name, draftOf(body), options);
      return {
        ...replayedHeader(replayed),
        body: { success: true, message: `Event added to block ${block.index} of '${block.chain_name}'`, event_id },
      };
    },
  }),

  route({
    method: 'POST',
    path: '/chains/{chain_name}/events/batch',
    response: appendedBatchSchema,
    summary: 'Add up to 99 events, one block each, in one atomic commit (extension)',
    access: 'writer',
    body: eventBatchSchema,
    idempotent: true,
    handler: async ({ principal, params, body, headers }, { ledgerFor }) => {
      const options = idempotencyOptions(headers);
      const appended = await ledgerFor(principal).appendEvents(params.chain_name, body.events.map(draftOf), options);
      const first = appended[0]!.block;
      const last = appended[appended.length - 1]!.block;
      return {
        ...replayedHeader(appended.replayed),
        body: {
          success: true,
          message: `${appended.length} event(s) added to blocks ${first.index}–${last.index} of '${first.chain_name}'`,
          event_ids: appended.map((a) => a.event_id),
        },
      };
    },
  }),

  route({
    method: 'POST',
    path: '/chains/{chain_name}/submit-proof',
    response: proofSubmittedSchema,
    summary: 'Anchor a Sub-Chain in the Main Chain',
    access: 'writer',
    handler: async ({ principal, params }, { ledgerFor }) => {
      const proof = await ledgerFor(principal).submitProof(params.chain_name);
      const message = proof.created
        ? `Proof of '${params.chain_name}' at block ${proof.details?.head_index} anchored in the Main Chain`
        : `Nothing added to '${params.chain_name}' since the last proof; it is still valid`;
      return { body: { success: true, message, proof_id: proof.proof_id } };
    },
  }),

  route({
    method: 'GET',
    path: '/chains/{chain_name}/stats',
    response: statsSchema,
    summary: 'Chain statistics',
    access: 'reader',
    handler: async ({ principal, params }, { ledgerFor }) => ({ body: await ledgerFor(principal).getStats(params.chain_name) }),
  }),

  route({
    method: 'GET',
    path: '/chains/{chain_name}/blocks',
    response: blocksPageSchema,
    summary: 'A page of blocks',
    access: 'reader',
    query: blocksQuery,
    handler: async ({ principal, params, query }, { ledgerFor }) => {
      const { limit, offset, order, resolve_cid, tree_size } = query;
      const page = await ledgerFor(principal).listBlocks(params.chain_name, {
        limit,
        offset,
        descending: order === 'desc',
        resolveCid: resolve_cid,
        treeSize: tree_size,
      });
      // Read at a named tree size, every page is fixed: its blocks are written, and so is `total` (docs/rules.md,
      // "Caching"). Without one, `total` grows with the chain, so the tag names it and a cached copy is revalidated.
      const fixed = tree_size !== undefined;
      return {
        body: page,
        headers: readCacheHeaders(principal, page.blocks, resolve_cid, fixed, [params.chain_name, order ?? 'asc', offset, limit, page.total]),
      };
    },
  }),

  route({
    method: 'GET',
    path: '/chains/{chain_name}/blocks/{index_or_hash}',
    response: blockSchema,
    summary: 'One block by index or hash',
    access: 'reader',
    query: blockQuery,
    handler: async ({ principal, params, query }, { ledgerFor }) => {
      const address = parseBlockAddress(params.index_or_hash);
      const block = await ledgerFor(principal).getBlock(params.chain_name, address, { resolveCid: query.resolve_cid });
      return { body: block, headers: readCacheHeaders(principal, [block], query.resolve_cid, true, []) };
    },
  }),

  route({
    method: 'GET',
    path: '/entities/{entity_id}/trace',
    response: traceSchema,
    summary: 'Trace an entity across chains',
    access: 'reader',
    query: traceQuery,
    handler: async ({ principal, params, query }, { ledgerFor }) => ({
      body: await ledgerFor(principal).traceEntity(params.entity_id, query.chain_name, {
        resolveCid: query.resolve_cid,
        limit: query.limit,
        cursor: query.cursor,
      }),
    }),
  }),

  route({
    method: 'GET',
    path: '/chains/{chain_name}/checkpoint',
    response: jsonCheckpointSchema,
    summary: 'A signed checkpoint: tree size and root',
    access: 'reader',
    handler: async ({ principal, params }, { proofsFor }) => ({ body: await proofsFor(principal).checkpoint(params.chain_name) }),
  }),

  route({
    method: 'GET',
    path: '/chains/{chain_name}/blocks/{index_or_hash}/proof',
    response: inclusionSchema,
    summary: 'Inclusion proof of a block',
    access: 'reader',
    query: proofQuery,
    handler: async ({ principal, params, query }, { proofsFor }) => {
      const proof = await proofsFor(principal).inclusion(params.chain_name, params.index_or_hash, query.tree_size);
      // Against a tree size the caller names, the proof is the same forever; against the latest, it grows.
      const tag = entityTag(JSON.stringify(proof));
      return { body: proof, headers: query.tree_size !== undefined ? immutable(tag, principal) : revalidated(tag, principal) };
    },
  }),

  route({
    method: 'GET',
    path: '/chains/{chain_name}/blocks/{index_or_hash}/anchor',
    summary: 'The Main Chain anchor covering a block, with proofs',
    access: 'reader',
    handler: async ({ principal, params }, { proofsFor }) => ({ body: await proofsFor(principal).anchor(params.chain_name, params.index_or_hash) }),
  }),

  route({
    method: 'GET',
    path: '/chains/{chain_name}/evidence',
    response: evidenceSchema,
    summary: 'What a verifying client checks blocks with, in one answer: signed checkpoint, inclusion and consistency proofs, blocks (extension)',
    access: 'reader',
    query: evidenceQuery,
    handler: async ({ principal, params, query }, { proofsFor }) => {
      const evidence = await proofsFor(principal).evidence(params.chain_name, {
        leaves: query.leaves,
        treeSize: query.tree_size,
        knownSize: query.known_size,
        withBlocks: query.blocks,
        witnessed: query.witnessed,
      });
      if (query.tree_size === undefined) return { body: evidence };
      // Against a tree size the caller names, the proofs and the blocks (as stored: an erasable event's details
      // stay sealed here, erased or not) are the same forever.
      const tag = entityTag(
        'evidence',
        evidence.tree_size,
        ...evidence.inclusion.map((p) => `${p.leaf_index}:${p.proof.join(',')}`),
        ...(evidence.blocks ?? []).map((b) => b.hash),
      );
      return { body: evidence, headers: immutable(tag, principal) };
    },
  }),

  route({
    method: 'GET',
    path: '/chains/{chain_name}/consistency',
    response: consistencySchema,
    summary: 'Consistency proof between two tree sizes',
    access: 'reader',
    query: consistencyQuery,
    handler: async ({ principal, params, query }, { proofsFor }) => ({
      body: await proofsFor(principal).consistency(params.chain_name, query.first, query.second),
    }),
  }),

  route({
    method: 'GET',
    path: '/chains/{chain_name}/verify',
    summary: 'Re-check every hash, link and anchor of a chain',
    access: 'reader',
    // It reads every block of the chain, by what it is: past SVC_MAX_READ_ITEMS blocks it could not run at all.
    readItems: VERIFY_READ_ITEMS,
    handler: async ({ principal, params }, { proofsFor }) => ({ body: await proofsFor(principal).verify(params.chain_name) }),
  }),

  route({
    method: 'GET',
    path: '/network/ping/{target_id}',
    response: pingSchema,
    summary: 'Ping a peer and check its identity',
    access: 'reader',
    onlyPrefixes: ['/api/ledger'],
    handler: async ({ params }, { node }) => ({ body: await node().ping(params.target_id) }),
  }),

  route({
    method: 'POST',
    path: '/offchain',
    response: offchainStoredSchema,
    summary: 'Store a payload off chain (encrypted, in IPFS)',
    access: 'writer',
    status: 201,
    body: offchainUpload,
    handler: async ({ principal, body }, { offchainFor }) => ({ body: await offchainFor(principal).put(body.data, body) }),
  }),

  route({
    method: 'POST',
    path: '/subjects/{subject_id}/erase',
    summary: "Erase a data subject: destroy its key, so its events' details read as erased (extension)",
    access: 'admin',
    body: eraseRequest,
    handler: async ({ principal, params, body }, { ledgerFor }) => {
      if (!SUBJECT_ID.test(params.subject_id)) throw new BadRequestError(`'${params.subject_id}' is not a subject id: ${SUBJECT_ID_RULE}`);
      const erasure = await ledgerFor(principal).eraseSubject(params.subject_id, { erased_by: principal.key_id, reason: body.reason });
      return { body: { success: true, ...erasure } };
    },
  }),

  // The node's public key, for anyone who checks its signed checkpoints (a reader key suffices).
  route({
    method: 'GET',
    path: '/identity',
    response: identitySchema,
    summary: 'The node id and public key that sign checkpoints (any reader)',
    access: 'reader',
    handler: async (_, { node }) => ({ body: await node().describeIdentity() }),
  }),
];
