/**
 * What the business domain needs from storage: the port. shared/storage implements it on the registry
 * table. Writes that must not overwrite answer `false` when the item already exists.
 */

export interface OrganizationRecord {
  org_id: string;
  name: string;
  msp_id: string;
  /** Ed25519 public key, 64 hex characters, or null. */
  public_key: string | null;
  created_at: string;
}

export interface ChannelRecord {
  channel_id: string;
  name: string;
  chain_name: string;
  created_at: string;
}

export interface ChannelDetails {
  organizations: string[];
  collections: string[];
}

export interface PrivateDataRecord {
  channel: string;
  collection: string;
  key: string;
  value_hash: string;
  /** The value's envelope, inline (small values). */
  sealed: string | null;
  /** Or the value's off-chain reference (large values, or client-supplied). */
  value_cid: string | null;
  value_nonce: string | null;
  event_id: string;
  /** The block of the channel's chain that recorded this write (absent on records of versions before 2026-12-06). */
  block_index?: number;
  updated_at: string;
  /** Personal data of this data subject: `sealed` (or the IPFS payload) is sealed under the subject's key. */
  subject_id?: string;
}

export interface ContractVersionRecord {
  contract_id: string;
  version: string;
  code_hash: string;
  /**
   * The source, inline; or its off-chain reference; or null with `source_kept`: an inline source kept in an item of its
   * own (getContractSource), so that listing a contract's versions reads none of their sources.
   */
  implementation: string | null;
  source_kept?: boolean;
  implementation_cid: string | null;
  implementation_nonce: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
}

/** Who owns a contract id: an organization, or the admins (contracts published by admin keys or with auth off). */
export type ContractOwner = { org_id: string } | { admins: true };

export type PublishOutcome = 'created' | 'version_exists' | 'owned_by_another';

export interface BusinessRepository {
  /** Registers it, with its public key claimed for it alone, in one write: 'exists' when the id is taken, 'key_taken' when the key is another's. */
  putOrganization(org: OrganizationRecord): Promise<'created' | 'exists' | 'key_taken'>;
  getOrganization(orgId: string): Promise<OrganizationRecord | undefined>;
  listOrganizations(): Promise<OrganizationRecord[]>;

  /** Creates the channel, with its first member when given, in one write; false when the channel exists. */
  putChannel(channel: ChannelRecord, firstMember?: { org_id: string; joined_at: string }): Promise<boolean>;
  /** Undoes a channel (and its members) whose chain could not be created. */
  deleteChannel(channelId: string): Promise<void>;
  getChannel(channelId: string): Promise<ChannelRecord | undefined>;
  /** Member organizations and collections, each sorted. */
  getChannelDetails(channelId: string): Promise<ChannelDetails>;
  /** Its member organizations alone, sorted. */
  getChannelMembers(channelId: string): Promise<string[]>;
  /**
   * The channels an organization is a member of, or every channel (`null`), sorted: at most `atMost + 1`, so that a
   * caller learns there are more than it may use without reading them all.
   */
  listChannelIds(orgId: string | null, atMost: number): Promise<string[]>;
  /**
   * Adds an organization to a channel: 'added'; 'member' when it is one already; 'removed' when an admin took it out
   * and `lift` is not set (nothing written). `lift` (an admin's add) clears that mark.
   */
  addMember(channelId: string, orgId: string, at: string, lift: boolean): Promise<'added' | 'member' | 'removed'>;
  /** Takes an organization out of a channel (an admin's act), marking it so; false when it was not a member. */
  removeMember(channelId: string, orgId: string, at: string): Promise<boolean>;
  /**
   * Creates a collection, held to `room.max` a channel in the same write (concurrent creates cannot overshoot it):
   * 'exists' when the channel has it, 'full' when the channel holds `room.max`. `room.seen` is the count the caller
   * read, taken as the channel's count where none was kept yet (a channel whose collections predate the count).
   */
  putCollection(channelId: string, collection: string, at: string, room: { seen: number; max: number }): Promise<'created' | 'exists' | 'full'>;

  /**
   * Stores a key's value unless the stored one was recorded in a later block of the channel's chain (the chain's order
   * wins, whatever order concurrent writes reach the store in): 'superseded' then, and nothing is written.
   */
  putPrivateData(record: PrivateDataRecord): Promise<'stored' | 'superseded'>;
  getPrivateData(channel: string, collection: string, key: string): Promise<PrivateDataRecord | undefined>;
  /** Deletes a private value's record if it is still this data subject's (its subject was erased). */
  deletePrivateData(channel: string, collection: string, key: string, subjectId: string): Promise<void>;

  /**
   * Stores a version and, in the same transaction, claims the id for `owner` (or confirms it is
   * theirs): `owned_by_another` when someone else claimed it first, `version_exists` when the version
   * does. Versions are immutable.
   */
  publishContractVersion(record: ContractVersionRecord, owner: ContractOwner): Promise<PublishOutcome>;
  /** The recorded owner; undefined when none was recorded (a new id, or one published before owners were). */
  getContractOwner(contractId: string): Promise<ContractOwner | undefined>;
  listContractVersions(contractId: string): Promise<ContractVersionRecord[]>;
  /** A version's inline source kept on its own (`source_kept`); undefined when there is none. */
  getContractSource(contractId: string, version: string): Promise<string | undefined>;
}
