/**
 * Every DynamoDB key and index attribute of the ledger table, built by pure functions in one place
 * (the way transparency-dev/tessera keeps its layout in one file). Unit-tested in test/unit/keys.test.ts.
 *
 * ledger table
 *   chain head   pk = CHAIN#<name>                      sk = HEAD      (block_shards: how its blocks are spread)
 *   block        pk = CHAIN#<name>#<index mod 16>       sk = BLOCK#<index, 12 digits>
 *                (chains made by earlier versions: pk = CHAIN#<name>, and no block_shards on their head)
 *   by-hash GSI  gsi_hash = <block hash>                          (blocks)
 *   by-entity GSI gsi_entity_pk = ENTITY#<entity id> (blocks of chains any reader reads),
 *                               ENTITY@<channel chain>#<entity id> (blocks of a channel's chain, since 2026-12-06),
 *                 gsi_entity_sk = <ms, 15 digits>#<chain>#<index, 12 digits>   (event blocks)
 *   chain list   pk = CHAINS            sk = 0#main | 1#<sub name>   (written once, when the chain is made)
 *   chains GSI   gsi_chains_pk = CHAINS, gsi_chains_sk = …  (tables of earlier versions only: their heads carried
 *                these keys, so every append wrote one GSI partition; `npm run migrate` moves them to the list)
 *   record       pk = HASH#<block hash>   sk = BLOCK#<index, 12 digits>      (a block's body, once; chains since records)
 *   by-entity GSI on records too (the same keys as on block items)
 *   segment      pk = SEG#<name>   sk = <last index, 12 digits>   (packed metadata of consecutive blocks: hash, time, tree nodes, pending ref)
 *   round        pk = ROUND#<name>   sk = <round id>   (a large round's metadata until its segment is written; TTL)
 *   seal         pk = SEAL#<name>#<shard>   sk = <round's last index, 12 digits>   (the blocks a round sealed from one shard's pending appends; TTL)
 *   pending      pk = PENDING#<name>#<shard>   sk = <ms, 13 digits>#<12 hex>   (an append's drafts, for a leader to seal; TTL)
 *   sweep        pk = SWEEP   sk = POSITION   (where the sweep of unwritten rounds goes on in the chain list: its last sk)
 *   refusal      pk = REFUSED#<name>   sk = <shard>#<pending sk>   (why a pending append was refused; TTL)
 *   idempotency  pk = IDEMPOTENCY#<chain>#<caller>#<key>   sk = IDEMPOTENCY   (an Idempotency-Key's hold, then its result; TTL)
 *   tile         pk = TILE#<chain>#<tile index mod 16>   sk = <tile path>, e.g. tile/0/x001/234   (a full C2SP tile, written once)
 *   kept page    pk = PAGE#<chain>#<page number mod 16>   sk = <first index, 12 digits>   (a full page of 100 blocks, written once on its first read)
 *   anchor       pk = ANCHOR#<sub-chain>   sk = <anchored head index, 12 digits>   (main_index: the Main Chain block of that proof)
 */
import type { ChainKind } from '../ledger/types.ts';
import { chainListPosition, KEPT_PAGE } from '../ledger/repository.ts';

export const INDEX_DIGITS = 12;
const TIMESTAMP_MS_DIGITS = 15;

export const HEAD_SK = 'HEAD';
export const BLOCK_SK_PREFIX = 'BLOCK#';
export const CHAINS_PARTITION = 'CHAINS';
/** The sweep's place in the chain list (shared/ledger/sweep.ts): one item, outside the list. */
export const SWEEP_POSITION_KEY = { pk: 'SWEEP', sk: 'POSITION' } as const;

export const CONNECTIONS_INDEXES = { byFilter: 'by-filter' } as const;

export const LEDGER_INDEXES = {
  byHash: 'by-hash',
  byEntity: 'by-entity',
  /** Only in tables made by earlier versions (see the chain list above); read once, by the migration. */
  chains: 'chains',
} as const;

export const IDEMPOTENCY_SK = 'IDEMPOTENCY';

/** An Idempotency-Key's record, by the id the ledger gives it (`<chain>#<caller>#<key>`: keys are each caller's own). */
export function idempotencyPk(id: string): string {
  return `IDEMPOTENCY#${id}`;
}

/** A full tile's partition: tiles of a chain spread over 16 partitions by index, so monitors reading a chain's tiles spread their reads. */
export function tilePk(chainName: string, tileIndex: number): string {
  return `TILE#${chainName}#${tileIndex % BLOCK_SHARDS}`;
}

/** A kept page's partition: a chain's pages spread over 16 partitions, as its tiles are, so an auditor's reads spread too. */
export function pagePk(chainName: string, first: number): string {
  return `PAGE#${chainName}#${Math.floor(first / KEPT_PAGE) % BLOCK_SHARDS}`;
}

/** A pending append's partition: one of the chain's pending shards. */
export function pendingPk(chainName: string, shard: number): string {
  return `PENDING#${chainName}#${shard}`;
}

/** A block's record: its hash names it (a hash covers the chain's name, so it is unique across chains). */
export function recordPk(hash: string): string {
  return `HASH#${hash}`;
}

/** A chain's segments of block metadata, by last index. */
export function segmentPk(chainName: string): string {
  return `SEG#${chainName}`;
}

export function indexSk(index: number): string {
  return blockSk(index).slice(BLOCK_SK_PREFIX.length);
}

/** A round's seal for the writers of one pending shard. */
export function sealPk(chainName: string, shard: number): string {
  return `SEAL#${chainName}#${shard}`;
}

/** A large round's metadata, by the id its commit names. */
export function roundPk(chainName: string): string {
  return `ROUND#${chainName}`;
}

export function refusalKey(chainName: string, shard: number, sk: string): { pk: string; sk: string } {
  return { pk: `REFUSED#${chainName}`, sk: `${shard}#${sk}` };
}

/**
 * A new chain's blocks are spread over this many partitions, in runs of BLOCK_RUN consecutive blocks
 * (run r in partition r mod 16): a busy chain's writes move to the next partition every 128 blocks, so
 * within any second they are spread over all 16 and no partition takes more than its 1,000 write units;
 * a page of up to 100 consecutive blocks still lies in one or two partitions, one Query each.
 */
export const BLOCK_SHARDS = 16;
export const BLOCK_RUN = 128;

/** The partition of a block: its chain's, or one of its chain's shards (`shards` is the chain's layout; 1 for older chains). */
export function blockPk(chainName: string, index: number, shards: number): string {
  return shards > 1 ? `${chainPk(chainName)}#${Math.floor(index / BLOCK_RUN) % shards}` : chainPk(chainName);
}

/** Whether a block item's partition key belongs to this chain (in either layout). */
export function isBlockPkOf(pk: string, chainName: string): boolean {
  return pk === chainPk(chainName) || pk.startsWith(`${chainPk(chainName)}#`);
}

export function chainPk(chainName: string): string {
  return `CHAIN#${chainName}`;
}

/** Block sort key; zero-padded so that key order is index order. */
export function blockSk(index: number): string {
  if (!Number.isSafeInteger(index) || index < 0 || index >= 10 ** INDEX_DIGITS) {
    throw new RangeError(`block index out of range: ${index}`);
  }
  return `${BLOCK_SK_PREFIX}${String(index).padStart(INDEX_DIGITS, '0')}`;
}

export function indexFromBlockSk(sk: string): number {
  if (!sk.startsWith(BLOCK_SK_PREFIX)) throw new RangeError(`not a block key: ${sk}`);
  return Number(sk.slice(BLOCK_SK_PREFIX.length));
}

/** A Sub-Chain's anchors on the Main Chain, one item a proof: found by the head they anchor, never by the entity index. */
export function anchorPk(subChain: string): string {
  return `ANCHOR#${subChain}`;
}

export function anchorSk(headIndex: number): string {
  return String(headIndex).padStart(INDEX_DIGITS, '0');
}

export function entityPk(entityId: string): string {
  return `ENTITY#${entityId}`;
}

/** Where the entity index of a channel's chain begins (ENTITY@<channel chain>#<entity id>); a chain name holds no `#`. */
const SCOPED_ENTITY_PREFIX = 'ENTITY@';

/**
 * The entity index partition of an entity's events in one scope: `null`, the chains any reader reads; else a channel's
 * chain, whose members alone read it. A trace reads only the partitions of the scopes its caller reads, so that an
 * entity whose events are all in a channel it may not read is not found at all, as an unknown one is not: one
 * partition for every chain had answered a cursor after 100 hidden entries, and taken longer than an unknown id (red
 * team, auth on).
 */
export function entityIndexPk(entityId: string, channelChain: string | null): string {
  return channelChain === null ? entityPk(entityId) : `${SCOPED_ENTITY_PREFIX}${channelChain}#${entityId}`;
}

/** Sorts an entity's events by time, then chain, then index: the trace order of docs/rules.md, "Chains and blocks". */
export function entitySk(timestampSeconds: number, chainName: string, index: number): string {
  const ms = Math.round(timestampSeconds * 1000);
  return `${String(ms).padStart(TIMESTAMP_MS_DIGITS, '0')}#${chainName}#${String(index).padStart(INDEX_DIGITS, '0')}`;
}

/** Main Chain first, then Sub-Chains by name: the listing order of docs/rules.md, "Chains and blocks". */
export function chainsSk(kind: ChainKind, chainName: string): string {
  return chainListPosition(kind, chainName);
}

export const SUB_CHAINS_SK_PREFIX = '1#';

/**
 * The kept count of Sub-Chains (the Main Chain's `registered_sub_chains`): one partition of a few small items, read
 * in one request. Each creation adds to one of SUB_CHAIN_COUNT_SHARDS shards, in the transaction that creates the
 * chain (so that a burst of creations does not write one item), and its list item is marked `counted`; BASE holds
 * the Sub-Chains created before the count was kept (list items without the mark), taken once (migrations.ts).
 */
export const SUB_CHAIN_COUNT_PK = 'SUBCHAINCOUNT';
export const SUB_CHAIN_COUNT_SHARDS = 8;
export const SUB_CHAIN_COUNT_BASE_SK = 'BASE';

/*
 * registry table
 *   API key lookup   pk = APIKEY#<sha256 of the key>   sk = APIKEY
 *   API key listing  pk = APIKEYS                       sk = <key id>
 */
export const API_KEY_SK = 'APIKEY';
export const API_KEYS_PARTITION = 'APIKEYS';

export function apiKeyPk(keyHash: string): string {
  return `APIKEY#${keyHash}`;
}

export function apiKeyListSk(keyId: string): string {
  return keyId;
}

/*
 * registry table, business group
 *   organization        pk = ORGS                               sk = <org id>
 *   channel             pk = CHANNELS                           sk = <channel name>
 *   channel member      pk = CHANNEL#<name>                     sk = MEMBER#<org id>
 *   org's channels      pk = ORG_CHANNELS#<org id>               sk = <channel name>   (written with each member item: the channels a trace reads)
 *   channel removal     pk = CHANNEL#<name>                     sk = REMOVED#<org id>   (an admin took it out: only an admin adds it again)
 *   channel collection  pk = CHANNEL#<name>                     sk = COLLECTION#<collection>
 *   collections count   pk = CHANNEL#<name>                     sk = COUNT#collections   n (written with each collection)
 *   private data        pk = PRIVATE#<channel>#<collection>     sk = <key>
 *   contract version    pk = CONTRACT#<contract id>             sk = VERSION#<version>
 *   contract source     pk = CONTRACT#<contract id>             sk = SOURCE#<version>    (an inline source, since 2026-12-07)
 *   contract owner      pk = CONTRACT#<contract id>             sk = OWNER        owner = org#<org id> | admins
 *   contract run slots  pk = CONTRACTS                          sk = RUN_SLOTS    runs, waits: id -> expiry (ms); v
 */
export const ORGS_PARTITION = 'ORGS';
/** Which organization signs with a public key (one each, since 2026-12-06): pk = ORG_KEYS, sk = <public key, hex>. */
export const ORG_KEYS_PARTITION = 'ORG_KEYS';
export const CHANNELS_PARTITION = 'CHANNELS';
export const MEMBER_SK_PREFIX = 'MEMBER#';
/** An organization an admin took out of a channel: only an admin adds it again (its members may not). */
export const REMOVED_SK_PREFIX = 'REMOVED#';
export const COLLECTION_SK_PREFIX = 'COLLECTION#';
/**
 * A channel's count of collections, raised in the transaction that creates each, on the condition that it is below
 * the most a channel may hold: concurrent creates had each read a count below it and all landed (red team).
 */
export const COLLECTIONS_COUNT_SK = 'COUNT#collections';

/** The channels an organization is a member of, one item each, written and deleted with its member item. */
export function orgChannelsPk(orgId: string): string {
  return `ORG_CHANNELS#${orgId}`;
}

/** An organization's entry in the list of its channels (written and deleted with its member item). */
export function orgChannelItem(orgId: string, channelId: string): { pk: string; sk: string; channel_id: string } {
  return { pk: orgChannelsPk(orgId), sk: channelId, channel_id: channelId };
}

/** A migration done once, in the table it migrated (shared/storage/migrations.ts). */
export function migrationKey(name: string): { pk: string; sk: string } {
  return { pk: 'MIGRATION', sk: name };
}

export function channelPk(channelId: string): string {
  return `CHANNEL#${channelId}`;
}

export function privateDataPk(channel: string, collection: string): string {
  return `PRIVATE#${channel}#${collection}`;
}

export function contractPk(contractId: string): string {
  return `CONTRACT#${contractId}`;
}

export const CONTRACT_OWNER_SK = 'OWNER';
/** The one record that admits contract runs across the service (shared/business/contract-admission.ts). */
export const CONTRACT_RUN_SLOTS_KEY = { pk: 'CONTRACTS', sk: 'RUN_SLOTS' } as const;
export const CONTRACT_VERSION_SK_PREFIX = 'VERSION#';

export function contractVersionSk(version: string): string {
  return `${CONTRACT_VERSION_SK_PREFIX}${version}`;
}

/** A version's inline source, in an item of its own (since 2026-12-07): listing the versions reads none of them. */
export const CONTRACT_SOURCE_SK_PREFIX = 'SOURCE#';

export function contractSourceSk(version: string): string {
  return `${CONTRACT_SOURCE_SK_PREFIX}${version}`;
}

/*
 * registry table, admin group
 *   used nonce      pk = NONCE#key:<signing key, hex>   sk = <nonce>   (kept for good since 2026-12-07, TTL on ttl before; NONCE#<org id> before 2026-12-06)
 *   peer            pk = PEERS            sk = <peer id>
 *   node identity   pk = IDENTITY         sk = NODE        (cloud: one identity for every instance)
 *   data subject    pk = SUBJECT#<id>     sk = KEY         (its wrapped data key, or the record of its erasure)
 */
export const PEERS_PARTITION = 'PEERS';
export const IDENTITY_KEY = { pk: 'IDENTITY', sk: 'NODE' } as const;

export function noncePk(signer: string): string {
  return `NONCE#${signer}`;
}

/** A data subject's key (wrapped) or the record of its erasure: one item per subject, in the registry table. */
export function subjectKey(subjectId: string): { pk: string; sk: string } {
  return { pk: `SUBJECT#${subjectId}`, sk: 'KEY' };
}

/*
 * connections table
 *   connection     pk = CONN#<id>        sk = META               (TTL on ttl)
 *   subscription   pk = CONN#<id>        sk = SUB#<filter>       gsi_filter_pk = <filter>, gsi_filter_sk = <id>   (TTL on ttl)
 *   a key's slot   pk = KEYCONN#<key id> sk = SLOT#<0000-…>      connection_id (TTL on ttl): one of the connections its key
 *                  may hold open, taken by a conditional put (sk = <connection id> for connections recorded before slots)
 */
export const CONNECTION_META_SK = 'META';

export function keyConnectionsPk(keyId: string): string {
  return `KEYCONN#${keyId}`;
}

export function connectionPk(connectionId: string): string {
  return `CONN#${connectionId}`;
}

export function subscriptionSk(filter: string): string {
  return `SUB#${filter}`;
}
