/**
 * The policy with its facts: reads what `decide` needs (a channel's members) and refuses with the
 * policy's 403. Plain chains and admins cost no read; a channel's chain costs one membership read per
 * check (not cached: a member added a moment ago must be able to act at once, on any instance).
 */
import { ChainNotFoundError, NotFoundError } from '../errors.ts';
import { CHANNEL_CHAIN_PREFIX } from '../ledger/names.ts';
import { type PayloadOpener, type PayloadScope, parsePayloadScope } from '../ledger/offchain-port.ts';
import { authorize, channelIdOfChain, decide, isAdmin, needsChannelMembers, type Action, type ChannelScope, type Principal, type Resource } from './policy.ts';

/** What access control needs of a channel's details: its member organizations. */
export interface Membership {
  organizations: readonly string[];
}

/**
 * What access control reads: channel records and their details (the business group's registry, whose
 * record types it hands back unchanged).
 */
export interface ChannelDirectory<Channel extends object = object, Details extends Membership = Membership> {
  getChannel(channelId: string): Promise<Channel | undefined>;
  getChannelDetails(channelId: string): Promise<Details>;
  /**
   * Its member organizations alone, where the directory can read them apart (the registry: one query of the member
   * items, not the channel's collections too). A check of a channel's chain, a trace's filter and a push read these.
   */
  getChannelMembers?(channelId: string): Promise<readonly string[]>;
  /** The channels an organization is a member of, or every channel (null): at most `atMost + 1` (the registry's list). */
  listChannelIds?(orgId: string | null, atMost: number): Promise<readonly string[]>;
}

export interface AccessControl<Channel extends object = object, Details extends Membership = Membership> {
  /** Refuses (403) unless `principal` may do `action` on the chain; 404 for a channel chain whose channel does not exist. */
  chain(principal: Principal, action: Action, chainName: string): Promise<void>;
  /** A memoizing check for filters (trace, pushes): whether the principal may read each chain. */
  chainReader(principal: Principal): (chainName: string) => Promise<boolean>;
  /**
   * The channels' chains `principal` may read (`channel-<id>`): every channel's for an admin, its organization's
   * channels' for a key with one, none for a key without. At most `atMost + 1`: more says the caller reads more than
   * a request may use. A directory that cannot list them answers none.
   */
  readableChannelChains(principal: Principal, atMost: number): Promise<string[]>;
  /** The channel with its members and collections (404 when unknown), once `principal` may do `action` on it. */
  channel(principal: Principal, action: Action, channelId: string): Promise<Channel & Details>;
  /** Refuses (403) unless allowed; for resources that need no read (the service, an organization, a contract). */
  check(principal: Principal, action: Action, resource: Resource): void;
  /**
   * Whether `principal` may read off-chain payloads of each scope (memoized for one request): a chain's payloads
   * by who may read the chain, a collection's by its channel's members, an organization's by its keys, public ones
   * by any key, the service's by nobody; admins read all. `citing`: for a new reference (an event's `details_cid`,
   * a private value's `value_cid`), which an envelope written before scopes may not be given unless by an admin.
   */
  payloadOpener(principal: Principal, options?: { citing?: boolean }): PayloadOpener;
}

export function createAccessControl<Channel extends object, Details extends Membership>({
  channels,
}: {
  channels: ChannelDirectory<Channel, Details>;
}): AccessControl<Channel, Details> {
  async function scopeOf(channelId: string): Promise<ChannelScope | undefined> {
    const members = channels.getChannelMembers
      ? channels.getChannelMembers(channelId)
      : channels.getChannelDetails(channelId).then((details) => details.organizations);
    const [record, organizations] = await Promise.all([channels.getChannel(channelId), members]);
    return record ? { id: channelId, members: organizations } : undefined;
  }

  async function chainResource(principal: Principal, action: Action, chainName: string): Promise<Resource> {
    const channelId = channelIdOfChain(chainName);
    if (channelId === null || !needsChannelMembers(principal, action, chainName)) {
      return { kind: 'chain', name: chainName, channel: null };
    }
    const scope = await scopeOf(channelId);
    // Channel chains are made only with their channel: without one, there is no such chain.
    if (!scope) throw new ChainNotFoundError(chainName);
    return { kind: 'chain', name: chainName, channel: scope };
  }

  function chainReader(principal: Principal): (chainName: string) => Promise<boolean> {
    const known = new Map<string, Promise<boolean>>();
    return (chainName) => {
      let answer = known.get(chainName);
      if (!answer) {
        answer = chainResource(principal, 'chain.read', chainName).then(
          (resource) => decide(principal, 'chain.read', resource).allow,
          (error: unknown) => {
            if (error instanceof ChainNotFoundError) return false;
            throw error;
          },
        );
        known.set(chainName, answer);
      }
      return answer;
    };
  }

  return {
    async chain(principal, action, chainName) {
      authorize(principal, action, await chainResource(principal, action, chainName));
    },

    chainReader,

    async readableChannelChains(principal, atMost) {
      if (!channels.listChannelIds || principal.role === null) return [];
      if (!isAdmin(principal) && !principal.org_id) return [];
      const ids = await channels.listChannelIds(isAdmin(principal) ? null : principal.org_id, atMost);
      return ids.map((id) => `${CHANNEL_CHAIN_PREFIX}${id}`);
    },

    async channel(principal, action, channelId) {
      const [record, details] = await Promise.all([channels.getChannel(channelId), channels.getChannelDetails(channelId)]);
      if (!record) throw new NotFoundError(`Channel '${channelId}' not found`);
      authorize(principal, action, { kind: 'channel', channel: { id: channelId, members: details.organizations } });
      return { ...record, ...details };
    },

    check: authorize,

    payloadOpener(principal, options) {
      const mayReadChain = chainReader(principal);
      const known = new Map<PayloadScope | null, Promise<boolean>>();
      const decideScope = async (scope: PayloadScope | null): Promise<boolean> => {
        if (isAdmin(principal)) return true;
        // Before scopes: read where it was cited, as it was; never cited anew (that was how another's was read).
        if (scope === null) return !options?.citing;
        const parsed = parsePayloadScope(scope);
        switch (parsed?.kind) {
          case 'chain':
            return mayReadChain(parsed.chain);
          case 'collection': {
            const channel = await scopeOf(parsed.channel);
            return channel !== undefined && decide(principal, 'private_data.read', { kind: 'channel', channel }).allow;
          }
          case 'org':
            return principal.org_id === parsed.org_id && principal.role !== null;
          case 'public':
            return principal.role !== null;
          default:
            return false; // the service's own, or a scope this version does not know
        }
      };
      return (scope) => {
        let answer = known.get(scope);
        if (!answer) known.set(scope, (answer = decideScope(scope)));
        return answer;
      };
    },
  };
}
