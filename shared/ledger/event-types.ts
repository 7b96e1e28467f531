/**
 * The event types the service itself writes on chains. Callers choose their own event types freely;
 * these are the ones a reader (or `ledger-verify`) can rely on to mean what the service recorded.
 */
export const SERVICE_EVENT = {
  /** Main Chain: a Sub-Chain's head anchored (details: sub_chain, head_index, head_hash, tree_size, merkle_root). */
  subChainProof: 'sub_chain_proof',
  /** A channel's chain: an organization became a member (details: org_id). */
  organizationJoined: 'organization_joined',
  /** A channel's chain: an organization was taken out of the channel by an admin (details: org_id). */
  organizationLeft: 'organization_left',
  /** A channel's chain: a private data collection was created (details: collection). */
  collectionCreated: 'collection_created',
  /** A channel's chain: a private value was written (details: collection, key_hash, value_hash), unless the writer named another type. */
  privateDataWritten: 'private_data_written',
  /** Main Chain: a data subject's key was destroyed (details: subject_id, erased_at, erased_by, reason, events). */
  erasure: 'erasure',
} as const;

export type ServiceEventType = (typeof SERVICE_EVENT)[keyof typeof SERVICE_EVENT];

import * as z from 'zod';

/**
 * A client's event the service reads: the record that closes a QLDB import on its Sub-Chain (written by
 * `npm run import:qldb`); the anchor of a head holding it copies it to the Main Chain.
 */
export const QLDB_IMPORT_EVENT = 'qldb_import';

const qldbAddress = z.strictObject({ strand_id: z.string().max(64), sequence_no: z.number().int().nonnegative() });
const qldbHash = z.string().max(64);
/**
 * The shape of the record `npm run import:qldb` closes an import with (shared/qldb/importer.ts). The Main Chain's anchor
 * of a chain whose head is such an event carries it, and only in this shape: a writer's `qldb_import` of any other
 * content (a claim of its own, 64 KB of padding) is not copied into the service's record (2026-12-05 red team).
 */
const qldbImportRecord = z.strictObject({
  export_id: z.string().max(128),
  ledger_name: z.string().max(128),
  output_format: z.string().max(16),
  strand_id: z.string().max(64),
  first_block: z.strictObject({ block_address: qldbAddress, previous_block_hash: qldbHash }),
  tip: z.strictObject({ block_address: qldbAddress, block_hash: qldbHash }),
  blocks: z.number().int().nonnegative(),
  revisions: z.number().int().nonnegative(),
  unchecked: z
    .strictObject({ revisions: z.number().int().nonnegative(), transactions: z.number().int().nonnegative(), data: z.number().int().nonnegative() })
    .optional(),
  digest: z.strictObject({ digest: qldbHash, tip_address: qldbAddress }).nullable(),
  /** A later export of the same journal: the import it continues (its export and tip), whose next block it starts at. */
  continues: z.strictObject({ export_id: z.string().max(128), tip: z.strictObject({ block_address: qldbAddress, block_hash: qldbHash }) }).optional(),
});

/** The import record in `details`, as an anchor may carry it; undefined when `details` is not one. */
export function qldbImportRecordOf(details: unknown): Record<string, unknown> | undefined {
  const parsed = qldbImportRecord.safeParse(details);
  return parsed.success ? parsed.data : undefined;
}
