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

/**
 * A client's event the service reads: the record that closes a QLDB import on its Sub-Chain (written by
 * `npm run import:qldb`); the anchor of a head holding it copies it to the Main Chain.
 */
export const QLDB_IMPORT_EVENT = 'qldb_import';
