/**
 * THE authorization policy: one pure function, `decide(principal, action, resource)`, that every path
 * asks before it reads or writes (REST on every prefix, GraphQL, WebSocket subscriptions and pushes,
 * contract emits, secure events, private data, membership). No I/O here: callers resolve the resource
 * (a channel's members, a contract's owner) and this file says yes or no, and why.
 *
 * The model, in words (docs/authorization.md renders the full route matrix):
 * - Roles rank reader < writer < admin. With auth off every caller is OPEN_ACCESS (an admin).
 * - Admins may do everything.
 * - A channel belongs to its member organizations. Its chain (`channel-<name>`), its record
 *   (members, collections), its private data and its membership are for keys bound to a member
 *   organization: readers of a member read, writers of a member write. Everyone else is refused.
 *   Hash-level facts stay public to any reader: that the chain exists, its size, head hash and
 *   statistics, checkpoints, proofs and audit verdicts (the Main Chain anchors them publicly anyway).
 * - A key without an organization works on plain chains, reads public facts, and runs contracts;
 *   it cannot act in any channel, create channels, own contracts or register organizations.
 * - A writer bound to an organization may create channels (its organization becomes the first
 *   member), add organizations to channels it is a member of, register its own organization, and
 *   publish contracts: a contract id belongs to the organization that published its first version,
 *   and only that organization (or an admin) publishes further versions.
 * - A contract runs with the caller's rights: what it emits is appended as the caller appending.
 */
import { ForbiddenError } from '../errors.ts';
import { CHANNEL_CHAIN_PREFIX, isChannelChainName } from '../ledger/names.ts';
import { segmentId } from '../validation.ts';

export const ROLES = ['reader', 'writer', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** An organization's id, wherever one is given (a registration, a member, a key's organization): a path segment of its routes. */
const ORG_ID = segmentId(64, 'A-Za-z0-9_.-', 'A-Z a-z 0-9 _ . -');
export const ORG_ID_PATTERN = ORG_ID.pattern;
export const ORG_ID_RULE = `must be ${ORG_ID.rule}`;

/** What a caller may do: reader < writer < admin. */
export const ROLE_RANK: Record<Role, number> = { reader: 1, writer: 2, admin: 3 };

/** Who is asking. `role: null` is a caller with no key on a public route (may do nothing). */
export interface Principal {
  key_id: string | null;
  role: Role | null;
  org_id: string | null;
}

/** Auth is off: every caller may do everything, as an admin without an organization. */
export const OPEN_ACCESS: Principal = Object.freeze({ key_id: null, role: 'admin', org_id: null });

/** Auth is on and no key was needed (public routes): nothing beyond what the route itself is. */
export const ANONYMOUS: Principal = Object.freeze({ key_id: null, role: null, org_id: null });

export type Action =
  /** Blocks and events of a chain. */
  | 'chain.read'
  /** Hash-level facts of a chain: size, head, statistics, checkpoint, proofs, audit verdict. */
  | 'chain.read_metadata'
  | 'chain.create'
  /** Add events: single, batch, GraphQL, contract emits, secure events (as the signing organization). */
  | 'chain.append'
  /** Anchor the chain's head in the Main Chain. */
  | 'chain.anchor'
  | 'channel.create'
  /** The channel's record: members and collections. */
  | 'channel.read'
  | 'channel.add_member'
  | 'channel.remove_member'
  | 'channel.create_collection'
  | 'private_data.read'
  | 'private_data.write'
  | 'organization.read'
  | 'organization.register'
  | 'contract.read'
  | 'contract.publish'
  | 'contract.execute'
  | 'offchain.write'
  /** Destroy a data subject's key (crypto-shredding). */
  | 'subject.erase';

export interface ChannelScope {
  id: string;
  /** Member organization ids. */
  members: readonly string[];
}

export type Resource =
  | { kind: 'service' }
  /** `channel` is null for the Main Chain and plain Sub-Chains. */
  | { kind: 'chain'; name: string; channel: ChannelScope | null }
  | { kind: 'channel'; channel: ChannelScope }
  | { kind: 'organization'; org_id: string }
  /** `owner`: the owning organization; null when admins own it; undefined when no version exists yet. */
  | { kind: 'contract'; contract_id: string; owner: string | null | undefined };

export type Decision = { allow: true } | { allow: false; reason: string };

/**
 * The least role a route asks of a caller at the edge, before any resource is read (declared with each
 * route in shared/api/routes/): `public` needs no key. What a role may then do to which resource is
 * `decide`'s.
 */
export type Access = 'public' | Role;

/** Whether a key with `role` passes a route whose edge access is `access`. */
export function passesEdge(role: Role, access: Access): boolean {
  return access === 'public' || ROLE_RANK[role] >= ROLE_RANK[access];
}

/**
 * How far beyond its role an action reaches, for a key that is not an admin's:
 * - `any`: the role is enough (plain chains, public facts, contract runs, reads of the directory);
 * - `members`: on a channel (or its chain), only keys of a member organization;
 * - `organization`: only keys bound to an organization (it becomes the channel's first member);
 * - `own-organization`: only for the key's own organization;
 * - `owner`: only the organization owning the resource (a contract id), or any organization while none does.
 */
export type Reach = 'any' | 'members' | 'organization' | 'own-organization' | 'owner';

/** THE rule table: the least role each action needs, and how far it reaches. */
export const RULES: Record<Action, { role: Role; reach: Reach }> = {
  'chain.read': { role: 'reader', reach: 'members' },
  'chain.read_metadata': { role: 'reader', reach: 'any' },
  'chain.create': { role: 'writer', reach: 'any' },
  'chain.append': { role: 'writer', reach: 'members' },
  'chain.anchor': { role: 'writer', reach: 'members' },
  'channel.create': { role: 'writer', reach: 'organization' },
  'channel.read': { role: 'reader', reach: 'members' },
  'channel.add_member': { role: 'writer', reach: 'members' },
  // Taking a member out is an admin's: one member could otherwise shut the others out of their own channel.
  'channel.remove_member': { role: 'admin', reach: 'any' },
  'channel.create_collection': { role: 'writer', reach: 'members' },
  'private_data.read': { role: 'reader', reach: 'members' },
  'private_data.write': { role: 'writer', reach: 'members' },
  'organization.read': { role: 'reader', reach: 'any' },
  'organization.register': { role: 'writer', reach: 'own-organization' },
  'contract.read': { role: 'reader', reach: 'any' },
  'contract.publish': { role: 'writer', reach: 'owner' },
  'contract.execute': { role: 'writer', reach: 'any' },
  'offchain.write': { role: 'writer', reach: 'any' },
  'subject.erase': { role: 'admin', reach: 'any' },
};

/** The channel a resource is in: a channel, or a channel's chain; null for everything else. */
function channelOf(resource: Resource): ChannelScope | null {
  return resource.kind === 'channel' || resource.kind === 'chain' ? resource.channel : null;
}

/**
 * A key without an organization, decided here once: it may do what reaches `any`, and members-only
 * actions where there is no channel (plain chains); nothing that needs an organization.
 */
function withoutOrganization(reach: Reach, resource: Resource): Decision {
  const channel = channelOf(resource);
  switch (reach) {
    case 'any':
      return { allow: true };
    case 'members':
      return channel ? { allow: false, reason: `only member organizations act in channel '${channel.id}', and this key has no organization` } : { allow: true };
    case 'organization':
      return { allow: false, reason: 'channels are created by organizations, and this key has no organization' };
    case 'own-organization':
      return { allow: false, reason: 'a writer registers only its own organization, and this key has no organization' };
    case 'owner':
      return { allow: false, reason: 'contracts belong to organizations, and this key has no organization' };
  }
}

export function hasRole(principal: Principal, role: Role): boolean {
  return principal.role !== null && ROLE_RANK[principal.role] >= ROLE_RANK[role];
}

export const isAdmin = (principal: Principal): boolean => principal.role === 'admin';

/** The channel a chain belongs to, by its name (`channel-<id>`), or null for other chains. */
export function channelIdOfChain(chainName: string): string | null {
  return isChannelChainName(chainName) ? chainName.slice(CHANNEL_CHAIN_PREFIX.length) : null;
}

/** Whether deciding `action` on this chain needs its channel's members (so the caller reads them first). */
export function needsChannelMembers(principal: Principal, action: Action, chainName: string): boolean {
  return !isAdmin(principal) && RULES[action].reach === 'members' && channelIdOfChain(chainName) !== null;
}

export function decide(principal: Principal, action: Action, resource: Resource): Decision {
  const { role: least, reach } = RULES[action];
  if (!hasRole(principal, least)) {
    return { allow: false, reason: principal.role === null ? 'no API key was presented' : `it needs the '${least}' role and this key has '${principal.role}'` };
  }
  if (isAdmin(principal)) return { allow: true };
  const org = principal.org_id;
  if (org === null) return withoutOrganization(reach, resource);
  switch (reach) {
    case 'any':
    case 'organization':
      return { allow: true };
    case 'members': {
      const channel = channelOf(resource);
      if (!channel || channel.members.includes(org)) return { allow: true };
      return { allow: false, reason: `organization '${org}' is not a member of channel '${channel.id}'` };
    }
    case 'own-organization':
      if (resource.kind !== 'organization' || resource.org_id === org) return { allow: true };
      return { allow: false, reason: `a writer registers only its own organization, and organization '${org}'` };
    case 'owner':
      if (resource.kind !== 'contract' || resource.owner === undefined || resource.owner === org) return { allow: true };
      return {
        allow: false,
        reason:
          resource.owner === null
            ? `contract '${resource.contract_id}' belongs to the admins`
            : `contract '${resource.contract_id}' belongs to organization '${resource.owner}'`,
      };
  }
}

function describe(resource: Resource): string {
  switch (resource.kind) {
    case 'chain':
      return ` on chain '${resource.name}'`;
    case 'channel':
      return ` on channel '${resource.channel.id}'`;
    case 'organization':
      return ` on organization '${resource.org_id}'`;
    case 'contract':
      return ` on contract '${resource.contract_id}'`;
    case 'service':
      return '';
  }
}

/** `decide`, or the 403 that names the missing permission and why. */
export function authorize(principal: Principal, action: Action, resource: Resource): void {
  const decision = decide(principal, action, resource);
  if (!decision.allow) throw new ForbiddenError(`Missing permission '${action}'${describe(resource)}: ${decision.reason}`);
}
