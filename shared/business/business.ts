/**
 * The business group's domain (docs/rules.md, "Business group"), shaped like Hyperledger Fabric: organizations with an
 * MSP id, channels with their own Sub-Chain (`channel-<name>`), private collections whose values stay
 * off the common ledger, and contracts (shared/business/contracts.ts) run in a sandbox. Everything written to a
 * chain goes through the ledger's own append path. What it accepts: shared/business/inputs.ts.
 */
import type * as z from 'zod';
import { isAdmin, type Principal } from '../access/policy.ts';
import {
  citationError,
  ConflictError,
  DependencyUnavailableError,
  ForbiddenError,
  GoneError,
  NotFoundError,
  UnprocessableError,
  UnreadablePayloadError,
} from '../errors.ts';
import { parsePublicKey } from '../ed25519.ts';
import { canonicalJson, sha256Hex } from '../ledger/hashing.ts';
import { SERVICE_EVENT } from '../ledger/event-types.ts';
import { logger } from '../log.ts';
import { assertDraftFields, type EventDraft } from '../ledger/events.ts';
import { CHANNEL_CHAIN_PREFIX, assertCreatableSubChainName } from '../ledger/names.ts';
import { type PayloadOpener, payloadScope } from '../ledger/offchain-port.ts';
import type { OrganizationRecord, PrivateDataRecord } from './repository.ts';
import { createContracts } from './contracts.ts';
import type { BusinessContext, BusinessOptions } from './context.ts';
import { type channelInput, type collectionInput, MAX_CHANNEL_NAME, type memberInput, type organizationInput, type privateDataInput } from './inputs.ts';

/** Private data collections a channel may hold. */
export const MAX_COLLECTIONS_PER_CHANNEL = 100;
export * from './inputs.ts';

/** SHA-256 of a private value: of its UTF-8 when a string, else of its RFC 8785 JSON. */
export function valueHash(value: unknown): string {
  return sha256Hex(typeof value === 'string' ? value : canonicalJson(value));
}

export function createBusiness(options: BusinessOptions) {
  const { repository, ledger, access, offchain, personalData, inlineThresholdBytes, now = () => new Date() } = options;
  const stamp = () => now().toISOString();

  async function requireOrganization(orgId: string): Promise<OrganizationRecord> {
    const org = await repository.getOrganization(orgId);
    if (!org) throw new NotFoundError(`Organization '${orgId}' not found`);
    return org;
  }

  /**
   * Records channel activity on the channel's own chain, through the ledger's append path: the service's own record,
   * unless its event type is the caller's choice (`by: 'caller'`), which may then not be one of the service's.
   */
  async function record(
    chainName: string,
    draft: Omit<EventDraft, 'details_cid' | 'details_nonce' | 'details_metadata' | 'is_offchain'>,
    by: 'service' | 'caller' = 'service',
  ) {
    return (await recordAt(chainName, draft, by)).event_id;
  }

  /**
   * As record, with the block its event landed in. `stillAllowed`: the writer's right, checked again before the commit
   * when the event's details went off chain (an upload of megabytes takes seconds).
   */
  function recordAt(
    chainName: string,
    draft: Omit<EventDraft, 'details_cid' | 'details_nonce' | 'details_metadata' | 'is_offchain'>,
    by: 'service' | 'caller',
    stillAllowed?: () => Promise<void>,
  ) {
    return ledger.appendEvent(
      chainName,
      { ...draft, details_cid: null, details_nonce: null, details_metadata: null, is_offchain: false },
      { ...(by === 'service' ? { serviceRecord: true as const } : {}), ...(stillAllowed ? { stillAllowed } : {}) },
    );
  }

  /** An erased subject's private value: its record deleted (if still the subject's), then taken off the subject's list. */
  async function dropErasedValue(channel: string, collection: string, key: string, subject: string): Promise<void> {
    await repository.deletePrivateData(channel, collection, key, subject);
    await personalData!.forgetPrivateValue(subject, { channel, collection, key });
  }

  async function readOffchain(cid: string, nonce: string, what: string, opener: PayloadOpener): Promise<unknown> {
    try {
      return await offchain.get(cid, nonce, opener);
    } catch (error) {
      if (error instanceof UnreadablePayloadError) throw citationError(what, error);
      throw error;
    }
  }

  const context: BusinessContext = { ...options, stamp, readOffchain };

  return {
    ...createContracts(context),

    async registerOrganization(principal: Principal, input: z.output<typeof organizationInput>) {
      access.check(principal, 'organization.register', { kind: 'organization', org_id: input.org_id });
      const org: OrganizationRecord = {
        org_id: input.org_id,
        name: input.name,
        msp_id: `${input.org_id}MSP`,
        public_key: input.public_key ? parsePublicKey(input.public_key) : null,
        created_at: stamp(),
      };
      const outcome = await repository.putOrganization(org);
      if (outcome === 'exists') throw new ConflictError(`Organization '${org.org_id}' already exists`);
      // One key, one organization: a signed event is its signer's alone (the red team registered another's published
      // key and relayed one signature as two organizations').
      if (outcome === 'key_taken')
        throw new ConflictError('Another organization is registered with this public_key: each organization signs with a key of its own');
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
        await repository.deleteChannel(name).catch((rollback: unknown) => {
          logger.error('channel left without its chain: its registry items could not be removed', { channel: name, error: rollback });
        });
        throw error;
      }
      if (founder !== null) await record(chainName, { entity_id: founder, event_type: SERVICE_EVENT.organizationJoined, details: { org_id: founder } });
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
      const added = await repository.addMember(channelId, org_id, stamp(), isAdmin(principal));
      if (added === 'member') throw new ConflictError(`Organization '${org_id}' is already a member of channel '${channelId}'`);
      // An admin's removal holds until an admin adds the organization again: its former fellow members may not undo it.
      if (added === 'removed')
        throw new ForbiddenError(`Organization '${org_id}' was taken out of channel '${channelId}' by an admin; only an admin may add it again`);
      const event_id = await record(channel.chain_name, { entity_id: org_id, event_type: SERVICE_EVENT.organizationJoined, details: { org_id } });
      return { channel_id: channelId, org_id, event_id };
    },

    /**
     * Admins take an organization out of a channel. From then on its keys read nothing of the channel, on any
     * instance (membership is read at every check, not kept), and its WebSocket connections receive no more of the
     * channel's pushes (members are read again for every batch of blocks). What it read before stays read.
     */
    async removeOrganization(principal: Principal, channelId: string, orgId: string) {
      const channel = await access.channel(principal, 'channel.remove_member', channelId);
      if (!(await repository.removeMember(channelId, orgId, stamp()))) {
        throw new NotFoundError(`Organization '${orgId}' is not a member of channel '${channelId}'`);
      }
      const event_id = await record(channel.chain_name, { entity_id: orgId, event_type: SERVICE_EVENT.organizationLeft, details: { org_id: orgId } });
      return { channel_id: channelId, org_id: orgId, event_id };
    },

    async createCollection(principal: Principal, channelId: string, { collection }: z.output<typeof collectionInput>) {
      const channel = await access.channel(principal, 'channel.create_collection', channelId);
      // Every check of the channel reads its collections with its record: a member had filled one with thousands,
      // until each check, an admin's removal of that member included, read past a request's cap.
      // The count is held in the write itself: concurrent creates had each read a count below the most and all landed.
      const full = (count: number) =>
        new UnprocessableError(`Channel '${channelId}' holds ${count} collections, the most a channel may (${MAX_COLLECTIONS_PER_CHANNEL})`);
      if (channel.collections.length >= MAX_COLLECTIONS_PER_CHANNEL && !channel.collections.includes(collection)) throw full(channel.collections.length);
      const outcome = await repository.putCollection(channelId, collection, stamp(), { seen: channel.collections.length, max: MAX_COLLECTIONS_PER_CHANNEL });
      if (outcome === 'exists') throw new ConflictError(`Collection '${collection}' already exists in channel '${channelId}'`);
      if (outcome === 'full') throw full(MAX_COLLECTIONS_PER_CHANNEL);
      await record(channel.chain_name, { entity_id: collection, event_type: SERVICE_EVENT.collectionCreated, details: { collection } });
      return { channel_id: channelId, collection };
    },

    /** `keyStillHeld`: the caller's key checked again with its rights after a slow fetch or upload (a revoked key writes nothing). */
    async writePrivateData(principal: Principal, input: z.output<typeof privateDataInput>, keyStillHeld: () => Promise<void> = async () => {}) {
      // Membership first: a non-member learns nothing, not even which collections exist.
      const channel = await access.channel(principal, 'private_data.write', input.channel);
      if (!channel.collections.includes(input.collection)) {
        throw new NotFoundError(`Collection '${input.collection}' not found in channel '${input.channel}'`);
      }
      // The event's fields are checked before anything is read or stored: a refused event leaves no value behind. A
      // type the writer named is the writer's, never one of the service's (organization_left, …).
      const metadata = input.event_metadata;
      const namedType = typeof metadata.event_type === 'string' && metadata.event_type ? metadata.event_type : undefined;
      const by = namedType === undefined ? 'service' : 'caller';
      const namedEntity = typeof metadata.entity_id === 'string' && metadata.entity_id ? metadata.entity_id : undefined;
      const fields = {
        entity_id: namedEntity ?? `${input.collection}:${sha256Hex(input.key).slice(0, 16)}`,
        event_type: namedType ?? SERVICE_EVENT.privateDataWritten,
      };
      assertDraftFields(fields, undefined, by);

      // A value given by reference is read as its writer may read it (a payload of a scope the writer may not
      // read is refused), then sealed again for this collection like a value given inline: every private value
      // is in its collection's scope, readable by the channel's members and no one else.
      const value =
        input.value !== undefined
          ? input.value
          : await readOffchain(input.value_cid!, input.value_nonce!, 'value_cid', access.payloadOpener(principal, { citing: true }));
      const scope = payloadScope.collection(input.channel, input.collection);
      let sealed: string | null = null;
      let cid: string | null = null;
      let nonce: string | null = null;
      let hash: string;
      const subject = input.subject_id;
      if (subject !== undefined) {
        // Personal data: sealed under the subject's key, and hashed as sealed. A hash of the value itself
        // would let anyone confirm a guess at it on the common ledger, after erasure too.
        if (!personalData) throw new DependencyUnavailableError('personal data keys (not configured)');
        const forSubject = await personalData.seal(subject, { value });
        hash = sha256Hex(forSubject);
        // The key may be personal too (an e-mail address, a patient number). The entity id the event keeps after
        // erasure is keyed by the subject's key, so that no guess at the key can be checked against it once that
        // key is destroyed (a plain hash of the key could be); and the subject's list names this value, whose
        // record its erasure deletes. Listed before the record is stored, so that no record outlives the list.
        if (namedEntity === undefined) {
          const blinded = await personalData.blind(subject, { private_value: [input.channel, input.collection, input.key] });
          fields.entity_id = `${input.collection}:${Buffer.from(blinded, 'base64').toString('hex').slice(0, 16)}`;
        }
        await personalData.recordPrivateValue(subject, { channel: input.channel, collection: input.collection, key: input.key });
        if (Buffer.byteLength(forSubject) > inlineThresholdBytes) {
          ({ cid, nonce } = await offchain.put(forSubject, scope));
          await personalData.recordPayload(subject, cid);
        } else {
          sealed = forSubject;
        }
      } else {
        hash = valueHash(value);
        if (Buffer.byteLength(JSON.stringify(value)) > inlineThresholdBytes) {
          ({ cid, nonce } = await offchain.put(value, scope));
        } else {
          sealed = await offchain.seal(value, scope);
        }
      }

      // A value fetched or stored off chain took time (seconds for megabytes): the writer's right is checked again
      // before its event, so that an organization an admin took out meanwhile does not write after its removal; and
      // again before the commit when the event's own details go off chain (its metadata is the writer's, of any size).
      const stillAllowed = async () => {
        await keyStillHeld();
        await access.channel(principal, 'private_data.write', input.channel);
      };
      if (input.value_cid !== undefined || cid !== null) await stillAllowed();
      // The common ledger learns that a value changed and its hash, never the value (nor the key itself).
      const { event_id: eventId, block } = await recordAt(
        channel.chain_name,
        {
          ...fields,
          details: { collection: input.collection, key_hash: sha256Hex(input.key), value_hash: hash, event_metadata: metadata },
          // Its metadata may be personal too: the event is the subject's, sealed and erased with it.
          ...(subject !== undefined ? { subject_id: subject } : {}),
        },
        by,
        stillAllowed,
      );
      const stored: PrivateDataRecord = {
        channel: input.channel,
        collection: input.collection,
        key: input.key,
        value_hash: hash,
        sealed,
        value_cid: cid,
        value_nonce: nonce,
        event_id: eventId,
        block_index: block.index,
        updated_at: stamp(),
        ...(subject !== undefined ? { subject_id: subject } : {}),
      };
      // Kept only if no later block of the chain wrote this key: concurrent writes' stores land in any order, and the
      // value read had been an older write's than the chain's last (red team).
      await repository.putPrivateData(stored);
      // An erasure of the subject since its key was read deleted the records it listed, maybe before this one was
      // stored: read the subject again, and if it is erased, this record goes too (410, as any write for it).
      if (subject !== undefined && (await personalData!.isErased(subject))) {
        await dropErasedValue(input.channel, input.collection, input.key, subject);
        throw new GoneError(`The data of subject '${subject}' was erased`);
      }
      return { channel: input.channel, collection: input.collection, key: input.key, value_hash: hash, event_id: eventId };
    },

    async readPrivateData(principal: Principal, channelId: string, collection: string, key: string) {
      await access.channel(principal, 'private_data.read', channelId);
      const opener = access.payloadOpener(principal);
      const stored = await repository.getPrivateData(channelId, collection, key);
      const absent = () => new NotFoundError(`No private data '${key}' in collection '${collection}' of channel '${channelId}'`);
      if (!stored) throw absent();
      let value: unknown;
      const subject = stored.subject_id;
      if (subject !== undefined) {
        if (!personalData) throw new DependencyUnavailableError('personal data keys (not configured)');
        // A value of an erased subject is absent, as one never written (its key may be personal: no answer tells it
        // was there), and its record, which the erasure had not deleted yet, goes now. Its state is read before any
        // payload is fetched from IPFS. A subject whose key is missing, not erased (its item lost, a data directory
        // copied without its subjects), is absent too, but nothing of it is deleted: it reads again if the key returns.
        const gone = async () => {
          if (await personalData.isErased(subject)) {
            await dropErasedValue(channelId, collection, key, subject);
          }
          return absent();
        };
        let [opened] = await personalData.openAll([{ subjectId: subject, sealed: stored.sealed }]);
        if (opened === undefined) {
          const forSubject = String(await offchain.get(stored.value_cid!, stored.value_nonce!, opener));
          [opened] = await personalData.openAll([{ subjectId: subject, sealed: forSubject }]);
        }
        if (!opened) throw await gone();
        value = opened.value;
      } else {
        value = stored.sealed !== null ? await offchain.unseal(stored.sealed, opener) : await offchain.get(stored.value_cid!, stored.value_nonce!, opener);
      }
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
  };
}

export type Business = ReturnType<typeof createBusiness>;
