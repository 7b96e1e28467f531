/**
 * The business group's domain (docs/rules.md, "Business group"), shaped like Hyperledger Fabric: organizations with an
 * MSP id, channels with their own Sub-Chain (`channel-<name>`), private collections whose values stay
 * off the common ledger, and contracts run in a sandbox. Everything written to a chain goes through the
 * ledger's own append path.
 */
import semver from 'semver';
import * as z from 'zod';
import type { AccessControl } from '../access/access.ts';
import { guardLedger } from '../access/guarded.ts';
import { isAdmin, type Principal } from '../access/policy.ts';
import { ConflictError, ForbiddenError, NotFoundError, UnprocessableError, UnreadablePayloadError } from '../errors.ts';
import { parsePublicKey } from '../ed25519.ts';
import { canonicalJson, sha256Hex } from '../ledger/hashing.ts';
import type { EventDraft } from '../ledger/events.ts';
import { parseEventRequest } from '../ledger/events.ts';
import { MAX_ATOMIC_BLOCKS } from '../ledger/appender.ts';
import type { Ledger } from '../ledger/ledger.ts';
import { CHANNEL_CHAIN_PREFIX, assertCreatableSubChainName } from '../ledger/names.ts';
import type { OffchainStore } from '../ledger/offchain-port.ts';
import type { BusinessRepository, ContractOwner, ContractVersionRecord, OrganizationRecord, PrivateDataRecord } from './repository.ts';
import type { ContractSandbox } from './contract-pool.ts';

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const ORG_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const CONTRACT_ID = /^[A-Za-z0-9_.-]{1,128}$/;
/** The longest channel name whose chain name, `channel-<name>`, is still a chain name. */
const MAX_CHANNEL_NAME = 64 - CHANNEL_CHAIN_PREFIX.length;
const MAX_INLINE_SOURCE_BYTES = 200_000;
/** A contract's emits commit in one transaction, all or none, as a batch does. */
const MAX_EMITS = MAX_ATOMIC_BLOCKS;

export const organizationInput = z.object({
  org_id: z.string().regex(ORG_ID, 'must be 1-64 of A-Z a-z 0-9 _ . -'),
  name: z.string().min(1).max(256),
  public_key: z.string().min(1).max(4096).nullish(),
});

export const channelInput = z.object({ name: z.string().min(1).max(256) });
export const memberInput = z.object({ org_id: z.string().regex(ORG_ID, 'must be 1-64 of A-Z a-z 0-9 _ . -') });
export const collectionInput = z.object({ collection: z.string().regex(NAME, 'must be 1-64 of A-Z a-z 0-9 _ -') });

export const privateDataInput = z
  .object({
    channel: z.string().min(1).max(64),
    collection: z.string().min(1).max(64),
    key: z.string().min(1).max(512),
    value: z
      .string()
      .max(5 * 1024 * 1024)
      .optional(),
    value_cid: z.string().min(1).max(256).optional(),
    value_nonce: z
      .string()
      .regex(/^[0-9a-f]{24}$/, 'must be 24 hex characters')
      .nullish(),
    event_metadata: z.record(z.string(), z.unknown()).default({}),
  })
  .superRefine((v, ctx) => {
    if ((v.value === undefined) === (v.value_cid === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'Send exactly one of value and value_cid' });
    }
    if (v.value_cid !== undefined && !v.value_nonce) {
      ctx.addIssue({ code: 'invalid_type', expected: 'string', input: undefined, path: ['value_nonce'], message: 'Required with value_cid' });
    }
  });

export const contractInput = z
  .object({
    contract_id: z.string().regex(CONTRACT_ID, 'must be 1-128 of A-Z a-z 0-9 _ . -'),
    version: z.string().refine((v) => semver.valid(v) === v, 'must be a semantic version such as 1.2.0'),
    implementation: z.string().min(1).max(MAX_INLINE_SOURCE_BYTES).nullish(),
    implementation_cid: z.string().min(1).max(256).nullish(),
    implementation_nonce: z
      .string()
      .regex(/^[0-9a-f]{24}$/, 'must be 24 hex characters')
      .nullish(),
    metadata: z.record(z.string(), z.unknown()).default({}),
  })
  .superRefine((v, ctx) => {
    if (!v.implementation === !v.implementation_cid) {
      ctx.addIssue({ code: 'custom', path: ['implementation'], message: 'Send exactly one of implementation and implementation_cid' });
    }
    if (v.implementation_cid && !v.implementation_nonce) {
      ctx.addIssue({ code: 'invalid_type', expected: 'string', input: undefined, path: ['implementation_nonce'], message: 'Required with implementation_cid' });
    }
  });

export const executeInput = z.object({
  contract_id: z.string().regex(CONTRACT_ID),
  version: z
    .string()
    .refine((v) => semver.valid(v) === v, 'must be a semantic version')
    .optional(),
  event: z.object({
    entity_id: z.string().min(1).max(256),
    event: z.string().min(1).max(128),
    details: z.record(z.string(), z.unknown()).default({}),
  }),
  context: z
    .object({ chain: z.string().min(1).max(64).optional() })
    .loose()
    .default({}),
});

/** SHA-256 of a private value: of its UTF-8 when a string, else of its RFC 8785 JSON. */
export function valueHash(value: unknown): string {
  return sha256Hex(typeof value === 'string' ? value : canonicalJson(value));
}

export interface BusinessOptions {
  repository: BusinessRepository;
  /** The bare ledger: the group's own records go through it after the group's checks; callers' writes through a guarded one. */
  ledger: Ledger;
  access: AccessControl;
  offchain: OffchainStore;
  /** Where contracts are checked and run: worker threads with hard deadlines (shared/business/contract-pool.ts). */
  sandbox: ContractSandbox;
  /** Private values whose JSON is larger go to IPFS; smaller ones stay inline, encrypted. */
  inlineThresholdBytes: number;
  now?: () => Date;
}

/** The owner a publisher becomes: its organization, or the admins. */
function ownerFor(principal: Principal): ContractOwner {
  return isAdmin(principal) || principal.org_id === null ? { admins: true } : { org_id: principal.org_id };
}

/** How an owner is shown: the organization id, or null for the admins. */
function ownerName(owner: ContractOwner | undefined): string | null {
  return owner && 'org_id' in owner ? owner.org_id : null;
}

export function createBusiness({ repository, ledger, access, offchain, sandbox, inlineThresholdBytes, now = () => new Date() }: BusinessOptions) {
  const stamp = () => now().toISOString();
  /** Contract sources fetched from IPFS, by code hash (immutable, so never stale). */
  const sources = new Map<string, string>();

  async function requireOrganization(orgId: string): Promise<OrganizationRecord> {
    const org = await repository.getOrganization(orgId);
    if (!org) throw new NotFoundError(`Organization '${orgId}' not found`);
    return org;
  }

  /** Records channel activity on the channel's own chain, through the ledger's append path. */
  async function record(chainName: string, draft: Omit<EventDraft, 'details_cid' | 'details_nonce' | 'details_metadata' | 'is_offchain'>) {
    const { event_id } = await ledger.appendEvent(chainName, {
      ...draft,
      details_cid: null,
      details_nonce: null,
      details_metadata: null,
      is_offchain: false,
    });
    return event_id;
  }

  async function readOffchain(cid: string, nonce: string, what: string): Promise<unknown> {
    try {
      return await offchain.get(cid, nonce);
    } catch (error) {
      if (error instanceof UnreadablePayloadError) throw new UnprocessableError(`${what} cannot be fetched and decrypted: ${error.message}`);
      throw error;
    }
  }

  async function contractSource(version: ContractVersionRecord): Promise<string> {
    if (version.implementation !== null) return version.implementation;
    const cached = sources.get(version.code_hash);
    if (cached !== undefined) return cached;
    const source = await readOffchain(version.implementation_cid!, version.implementation_nonce!, 'implementation_cid');
    if (typeof source !== 'string' || sha256Hex(source) !== version.code_hash) {
      throw new UnprocessableError('the stored implementation no longer matches its code hash');
    }
    sources.set(version.code_hash, source);
    return source;
  }

  /** Who owns a contract id: the recorded owner; the admins for ids published before owners were recorded; undefined for a new id. */
  async function contractOwner(contractId: string, versions?: ContractVersionRecord[]): Promise<ContractOwner | undefined> {
    const recorded = await repository.getContractOwner(contractId);
    if (recorded) return recorded;
    const existing = versions ?? (await repository.listContractVersions(contractId));
    return existing.length > 0 ? { admins: true } : undefined;
  }

  return {
    async registerOrganization(principal: Principal, input: z.output<typeof organizationInput>) {
      access.check(principal, 'organization.register', { kind: 'organization', org_id: input.org_id });
      const org: OrganizationRecord = {
        org_id: input.org_id,
        name: input.name,
        msp_id: `${input.org_id}MSP`,
        public_key: input.public_key ? parsePublicKey(input.public_key) : null,
        created_at: stamp(),
      };
      if (!(await repository.putOrganization(org))) throw new ConflictError(`Organization '${org.org_id}' already exists`);
      return org;
    },

    async getOrganization(principal: Principal, orgId: string) {
      access.check(principal, 'organization.read', { kind: 'organization', org_id: orgId });
      return requireOrganization(orgId);
    },

    async listOrganizations(principal: Principal) {
      access.check(principal, 'organization.read', { kind: 'service' });
      return (await repository.listOrganizations()).sort((a, b) => a.org_id.localeCompare(b.org_id));
    },

    /** A writer bound to an organization creates channels with its organization as the first member; admins create empty ones. */
    async createChannel(principal: Principal, { name }: z.output<typeof channelInput>) {
      access.check(principal, 'channel.create', { kind: 'service' });
      if (name.length > MAX_CHANNEL_NAME) {
        throw new UnprocessableError(`A channel name has at most ${MAX_CHANNEL_NAME} characters (its chain is '${CHANNEL_CHAIN_PREFIX}<name>')`);
      }
      const chainName = `${CHANNEL_CHAIN_PREFIX}${name}`;
      assertCreatableSubChainName(name); // 400 for characters outside the chain-name rule, as for chains
      const founder = isAdmin(principal) ? null : principal.org_id;
      if (founder !== null) await requireOrganization(founder);
      const channel = { channel_id: name, name, chain_name: chainName, created_at: stamp() };
      if (!(await repository.putChannel(channel, founder === null ? undefined : { org_id: founder, joined_at: channel.created_at }))) {
        throw new ConflictError(`Channel '${name}' already exists`);
      }
      try {
        await ledger.createSubChain(chainName, { allowChannel: true });
      } catch (error) {
        await repository.deleteChannel(name).catch(() => undefined);
        throw error;
      }
      if (founder !== null) await record(chainName, { entity_id: founder, event_type: 'organization_joined', details: { org_id: founder } });
      return channel;
    },

    async getChannel(principal: Principal, channelId: string) {
      const channel = await access.channel(principal, 'channel.read', channelId);
      const stats = await ledger.getStats(channel.chain_name);
      return {
        channel_id: channel.channel_id,
        name: channel.name,
        chain_name: channel.chain_name,
        created_at: channel.created_at,
        organizations: channel.organizations,
        collections: channel.collections,
        block_count: stats.total_blocks,
      };
    },

    /** Admins, or writers of a member organization, add organizations to a channel. */
    async addOrganization(principal: Principal, channelId: string, { org_id }: z.output<typeof memberInput>) {
      const channel = await access.channel(principal, 'channel.add_member', channelId);
      await requireOrganization(org_id);
      if (!(await repository.addMember(channelId, org_id, stamp()))) {
        throw new ConflictError(`Organization '${org_id}' is already a member of channel '${channelId}'`);
      }
      const event_id = await record(channel.chain_name, { entity_id: org_id, event_type: 'organization_joined', details: { org_id } });
      return { channel_id: channelId, org_id, event_id };
    },

    async createCollection(principal: Principal, channelId: string, { collection }: z.output<typeof collectionInput>) {
      const channel = await access.channel(principal, 'channel.create_collection', channelId);
      if (!(await repository.putCollection(channelId, collection, stamp()))) {
        throw new ConflictError(`Collection '${collection}' already exists in channel '${channelId}'`);
      }
      await record(channel.chain_name, { entity_id: collection, event_type: 'collection_created', details: { collection } });
      return { channel_id: channelId, collection };
    },

    async writePrivateData(principal: Principal, input: z.output<typeof privateDataInput>) {
      // Membership first: a non-member learns nothing, not even which collections exist.
      const channel = await access.channel(principal, 'private_data.write', input.channel);
      if (!channel.collections.includes(input.collection)) {
        throw new NotFoundError(`Collection '${input.collection}' not found in channel '${input.channel}'`);
      }

      let sealed: string | null = null;
      let cid: string | null = input.value_cid ?? null;
      let nonce: string | null = input.value_nonce ?? null;
      let hash: string;
      if (input.value !== undefined) {
        hash = valueHash(input.value);
        if (Buffer.byteLength(JSON.stringify(input.value)) > inlineThresholdBytes) {
          ({ cid, nonce } = await offchain.put(input.value));
        } else {
          sealed = await offchain.seal(input.value);
        }
      } else {
        hash = valueHash(await readOffchain(cid!, nonce!, 'value_cid'));
      }

      // The common ledger learns that a value changed and its hash, never the value (nor the key itself).
      const metadata = input.event_metadata;
      const eventId = await record(channel.chain_name, {
        entity_id:
          typeof metadata.entity_id === 'string' && metadata.entity_id ? metadata.entity_id : `${input.collection}:${sha256Hex(input.key).slice(0, 16)}`,
        event_type: typeof metadata.event_type === 'string' && metadata.event_type ? metadata.event_type : 'private_data_written',
        details: { collection: input.collection, key_hash: sha256Hex(input.key), value_hash: hash, event_metadata: metadata },
      });
      const stored: PrivateDataRecord = {
        channel: input.channel,
        collection: input.collection,
        key: input.key,
        value_hash: hash,
        sealed,
        value_cid: cid,
        value_nonce: nonce,
        event_id: eventId,
        updated_at: stamp(),
      };
      await repository.putPrivateData(stored);
      return { channel: input.channel, collection: input.collection, key: input.key, value_hash: hash, event_id: eventId };
    },

    async readPrivateData(principal: Principal, channelId: string, collection: string, key: string) {
      await access.channel(principal, 'private_data.read', channelId);
      const stored = await repository.getPrivateData(channelId, collection, key);
      if (!stored) throw new NotFoundError(`No private data '${key}' in collection '${collection}' of channel '${channelId}'`);
      const value = stored.sealed !== null ? await offchain.unseal(stored.sealed) : await offchain.get(stored.value_cid!, stored.value_nonce!);
      return {
        channel: channelId,
        collection,
        key,
        value,
        value_hash: stored.value_hash,
        event_id: stored.event_id,
        updated_at: stored.updated_at,
      };
    },

    /** The first version of an id makes its publisher the owner; later versions come from the owner or an admin. */
    async registerContract(principal: Principal, input: z.output<typeof contractInput>) {
      const resource = (owner: ContractOwner | undefined) => ({
        kind: 'contract' as const,
        contract_id: input.contract_id,
        owner: owner === undefined ? undefined : ownerName(owner),
      });
      // Checked before any of the caller's code is fetched or compiled. An admin may publish into any id,
      // so its check needs no read: the owner it publishes under is looked up only when it writes.
      access.check(principal, 'contract.publish', resource(isAdmin(principal) ? undefined : await contractOwner(input.contract_id)));
      let source: string;
      if (input.implementation) {
        source = input.implementation;
      } else {
        const fetched = await readOffchain(input.implementation_cid!, input.implementation_nonce!, 'implementation_cid');
        if (typeof fetched !== 'string') throw new UnprocessableError('implementation_cid must hold the source as a JSON string');
        source = fetched;
      }
      await sandbox.check(source);
      const version: ContractVersionRecord = {
        contract_id: input.contract_id,
        version: input.version,
        code_hash: sha256Hex(source),
        implementation: input.implementation ?? null,
        implementation_cid: input.implementation_cid ?? null,
        implementation_nonce: input.implementation_nonce ?? null,
        metadata: input.metadata,
        created_at: stamp(),
      };
      // An admin publishing into an organization's contract keeps it that organization's.
      const owner = isAdmin(principal) ? ((await contractOwner(input.contract_id)) ?? ownerFor(principal)) : ownerFor(principal);
      const outcome = await repository.publishContractVersion(version, owner);
      if (outcome === 'version_exists') {
        throw new ConflictError(`Contract '${input.contract_id}' version ${input.version} already exists; versions are immutable`);
      }
      if (outcome === 'owned_by_another') {
        // Another organization published the id's first version between our check and our write.
        access.check(principal, 'contract.publish', resource(await contractOwner(input.contract_id)));
        throw new ForbiddenError(`Missing permission 'contract.publish' on contract '${input.contract_id}': it belongs to another owner`);
      }
      return { contract_id: version.contract_id, version: version.version, code_hash: version.code_hash, owner: ownerName(owner) };
    },

    async getContract(principal: Principal, contractId: string) {
      access.check(principal, 'contract.read', { kind: 'contract', contract_id: contractId, owner: undefined });
      const versions = await repository.listContractVersions(contractId);
      if (versions.length === 0) throw new NotFoundError(`Contract '${contractId}' not found`);
      const sorted = [...versions].sort((a, b) => semver.compare(a.version, b.version));
      return {
        contract_id: contractId,
        owner: ownerName(await contractOwner(contractId, versions)),
        latest: sorted.at(-1)!.version,
        versions: sorted.map((v) => ({ version: v.version, code_hash: v.code_hash, metadata: v.metadata, created_at: v.created_at })),
      };
    },

    /** Runs with the caller's rights: its emits are appended as the caller appending them, all or none. */
    async executeContract(principal: Principal, input: z.output<typeof executeInput>) {
      access.check(principal, 'contract.execute', { kind: 'contract', contract_id: input.contract_id, owner: undefined });
      const versions = await repository.listContractVersions(input.contract_id);
      if (versions.length === 0) throw new NotFoundError(`Contract '${input.contract_id}' not found`);
      const chosen = input.version
        ? versions.find((v) => v.version === input.version)
        : versions.reduce((best, v) => (semver.gt(v.version, best.version) ? v : best));
      if (!chosen) throw new NotFoundError(`Contract '${input.contract_id}' has no version ${input.version}`);

      const started = performance.now();
      const result = await sandbox.run(await contractSource(chosen), input.event, input.context);

      let emitted: string[] = [];
      const emit = (result as { emit?: unknown } | null)?.emit;
      if (emit !== undefined) {
        if (!Array.isArray(emit) || emit.length > MAX_EMITS) {
          throw new UnprocessableError(`The contract's emit must be a list of at most ${MAX_EMITS} events`);
        }
        const chain = input.context.chain;
        if (!chain) throw new UnprocessableError('The contract emits events but context.chain names no chain');
        let drafts: EventDraft[];
        try {
          drafts = emit.map((e) => parseEventRequest(e));
        } catch (error) {
          throw new UnprocessableError(`The contract emitted an invalid event: ${(error as Error).message}`);
        }
        if (drafts.length > 0) {
          // One block per event, in order, in one transaction; refused or failed, nothing is appended.
          const appended = await guardLedger(ledger, access, principal).appendEvents(chain, drafts);
          emitted = appended.map((a) => a.event_id);
        }
      }
      return {
        contract_id: chosen.contract_id,
        version: chosen.version,
        result,
        emitted_event_ids: emitted,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
      };
    },
  };
}

export type Business = ReturnType<typeof createBusiness>;
