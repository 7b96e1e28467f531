/**
 * What the ledger group answers, as zod schemas: the routes declare them (`response`), the OpenAPI
 * document carries them, and the typed client (client/, generated from that document) is typed by them.
 * They describe the wire format of docs/rules.md, "Chains and blocks"; the tests parse real answers with
 * them, so a shape that drifts from what is served fails there.
 */
import * as z from 'zod';

const hash = z.string().regex(/^[0-9a-f]{64}$/);
const json = z.record(z.string(), z.unknown());

export const eventSchema = z
  .object({
    event_id: z.string(),
    chain_name: z.string(),
    block_index: z.number().int(),
    entity_id: z.string(),
    event_type: z.string(),
    details: json.nullable().describe('null only for an erased data subject (then `erased: true`)'),
    details_cid: z.string().nullable(),
    details_nonce: z.string().nullable(),
    details_metadata: json.nullable(),
    timestamp: z.number(),
    is_offchain: z.boolean(),
    subject_id: z.string().optional().describe('Erasable events only: the data subject'),
    details_sealed: z.string().nullable().optional().describe('Erasable events only: the details sealed under the subject key'),
    salt: z
      .string()
      .regex(/^[0-9a-f]{32}$/)
      .optional()
      .describe("Events of a channel's chain only: 128 random bits hashed with the event, so its public block hash confirms no guess at its content"),
    signed: z
      .object({
        org_id: z.string(),
        public_key: z.string().describe('The Ed25519 key it was signed with, hex, as registered then'),
        nonce: z.string(),
        node_id: z.string().optional().describe('The node it was signed for, when the signer named one'),
        signature: z
          .string()
          .describe(
            'Ed25519, hex, over the RFC 8785 JSON of chain_name, entity_id, event_type, details, details_metadata (unless null), node_id (if named) and nonce',
          ),
      })
      .optional()
      .describe('Secure events only: who signed the event, and the signature anyone can check again'),
    erased: z.boolean().optional(),
    resolve_error: z.string().optional().describe('With resolve_cid: why the off-chain details could not be read'),
  })
  .meta({ id: 'Event', description: 'An event as answered' });

export const blockSchema = z
  .object({
    index: z.number().int(),
    chain_name: z.string(),
    timestamp: z.number(),
    previous_hash: hash,
    hash,
    events: z.array(eventSchema),
  })
  .meta({ id: 'Block', description: 'A block: hash = SHA-256 of the RFC 8785 JSON of every other field, events as stored' });

export const healthSchema = z.object({
  status: z.enum(['healthy', 'degraded']),
  service: z.string(),
  version: z.string(),
  checks: z.record(z.string(), z.string()),
});

export const chainInfoSchema = z.object({
  name: z.string(),
  type: z.enum(['main', 'sub']),
  block_count: z.number().int(),
  latest_block_hash: hash.nullable(),
});

export const createdChainSchema = z.object({ success: z.literal(true), message: z.string(), chain_name: z.string() });
export const appendedSchema = z.object({ success: z.literal(true), message: z.string(), event_id: z.string() });
export const appendedBatchSchema = z.object({ success: z.literal(true), message: z.string(), event_ids: z.array(z.string()) });
export const proofSubmittedSchema = z.object({ success: z.literal(true), message: z.string(), proof_id: z.string() });

export const statsSchema = z.object({
  chain_name: z.string(),
  total_blocks: z.number().int(),
  total_events: z.number().int(),
  proof_count: z.number().int().nullable(),
  registered_sub_chains: z.number().int().nullable(),
});

export const blocksPageSchema = z.object({
  chain_name: z.string(),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
  blocks: z.array(blockSchema),
});

export const traceSchema = z.object({
  entity_id: z.string(),
  chains: z.array(z.string()),
  events: z.array(eventSchema),
  /** Where the next page starts (the `cursor` of the next request); null on the last page. */
  next_cursor: z.string().nullable(),
});

export const jsonCheckpointSchema = z.object({
  chain_name: z.string(),
  tree_size: z.number().int(),
  root: hash,
  timestamp: z.number(),
  node_id: z.string(),
  signature: z.string(),
  public_key: z.string(),
  algorithm: z.literal('ed25519'),
});

export const inclusionSchema = z.object({
  chain_name: z.string(),
  leaf_index: z.number().int(),
  tree_size: z.number().int(),
  block_hash: hash,
  leaf_hash: hash,
  proof: z.array(hash),
  root: hash,
});

export const consistencySchema = z.object({
  chain_name: z.string(),
  first: z.number().int(),
  second: z.number().int(),
  first_root: hash,
  second_root: hash,
  proof: z.array(hash),
});

const b64hash = z.string().regex(/^[A-Za-z0-9+/]{43}=$/);

export const evidenceSchema = z
  .object({
    chain_name: z.string(),
    tree_size: z.number().int(),
    checkpoint: z.string().nullable().describe('The latest C2SP checkpoint (signed note), unless tree_size was given'),
    consistency: z
      .object({ from: z.number().int(), proof: z.array(b64hash) })
      .nullable()
      .describe('RFC 9162 consistency proof from known_size to tree_size'),
    inclusion: z
      .array(z.object({ leaf_index: z.number().int(), proof: z.array(b64hash) }))
      .describe("One per run of consecutive leaves: its last leaf's inclusion proof"),
    blocks: z.array(blockSchema).optional().describe('With blocks=true: the blocks as stored (as hashed)'),
  })
  .meta({ id: 'Evidence', description: 'Everything a verifying client needs for some blocks, in one answer' });

export const identitySchema = z.object({ node_id: z.string(), public_key: z.string(), algorithm: z.string() });

// ---------------------------------------------------------------------------------------------------
// The business group (/api/business, /api/v2) and the admin group (/api/admin)

const created = <T extends z.ZodRawShape>(shape: T) => z.object({ success: z.literal(true), ...shape });

export const organizationSchema = z
  .object({ org_id: z.string(), name: z.string(), msp_id: z.string(), public_key: z.string().nullable(), created_at: z.string() })
  .meta({ id: 'Organization' });
export const organizationCreatedSchema = created({ org_id: z.string(), name: z.string(), msp_id: z.string(), public_key: z.string().nullable() });
export const channelCreatedSchema = created({ channel_id: z.string(), name: z.string(), chain_name: z.string(), created_at: z.string() });
export const channelSchema = z.object({
  channel_id: z.string(),
  name: z.string(),
  chain_name: z.string(),
  created_at: z.string(),
  organizations: z.array(z.string()),
  collections: z.array(z.string()),
  block_count: z.number().int(),
});
export const memberAddedSchema = created({ channel_id: z.string(), org_id: z.string(), event_id: z.string() });
export const memberRemovedSchema = created({ channel_id: z.string(), org_id: z.string(), event_id: z.string() });
export const collectionCreatedSchema = created({ channel_id: z.string(), collection: z.string() });
export const privateDataWrittenSchema = created({ channel: z.string(), collection: z.string(), key: z.string(), value_hash: z.string(), event_id: z.string() });
export const privateDataSchema = z.object({
  channel: z.string(),
  collection: z.string(),
  key: z.string(),
  value: z.unknown(),
  value_hash: z.string(),
  event_id: z.string(),
  updated_at: z.string(),
});
export const contractRegisteredSchema = created({ contract_id: z.string(), version: z.string(), code_hash: z.string(), owner: z.string().nullable() });
export const contractSchema = z.object({
  contract_id: z.string(),
  owner: z.string().nullable(),
  latest: z.string(),
  versions: z.array(z.object({ version: z.string(), code_hash: z.string(), metadata: z.record(z.string(), z.unknown()), created_at: z.string() })),
});
export const contractExecutedSchema = created({
  contract_id: z.string(),
  version: z.string(),
  result: z.unknown(),
  emitted_event_ids: z.array(z.string()),
  duration_ms: z.number(),
});

export const signedChallengeSchema = z.object({
  status: z.literal('success'),
  node_id: z.string(),
  signature: z.string(),
  challenge: z.string(),
  public_key: z.string(),
  algorithm: z.string(),
});
export const nodeStatusSchema = z.object({
  status: z.literal('active'),
  version: z.string(),
  chains_active: z.number().int(),
  license_active: z.boolean(),
  uptime: z.string(),
  uptime_seconds: z.number().int(),
});
export const secureEventSchema = z.object({
  success: z.literal(true),
  message: z.string(),
  event_id: z.string(),
  verified: z.literal(true),
  signer: z.string(),
});
export const peerSchema = z.object({ peer_id: z.string(), url: z.string(), public_key: z.string(), created_at: z.string() }).meta({ id: 'Peer' });
export const peerRegisteredSchema = created({ peer_id: z.string(), url: z.string(), public_key: z.string(), created_at: z.string() });
export const decodedSchema = z.object({ cid: z.string(), nonce: z.string(), data: z.unknown() });
export const pingSchema = z.object({ target_id: z.string(), reachable: z.boolean(), latency_ms: z.number().nullable(), verified: z.boolean() });
export const offchainStoredSchema = z.object({ cid: z.string(), nonce: z.string(), size: z.number().int() });
