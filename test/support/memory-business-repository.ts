/**
 * The BusinessRepository port in memory, for offline tests of the business domain: writes that must not
 * overwrite answer false, a contract id is claimed by its first publisher in the same step as its
 * version, as the DynamoDB repository does in one transaction.
 */
import type {
  BusinessRepository,
  ChannelRecord,
  ContractOwner,
  ContractVersionRecord,
  OrganizationRecord,
  PrivateDataRecord,
} from '#shared/business/repository';

const sameOwner = (a: ContractOwner, b: ContractOwner) => ('org_id' in a ? 'org_id' in b && a.org_id === b.org_id : 'admins' in b);

export function createMemoryBusinessRepository(): BusinessRepository & { privateData: Map<string, PrivateDataRecord> } {
  const organizations = new Map<string, OrganizationRecord>();
  const channels = new Map<string, ChannelRecord>();
  const members = new Map<string, Set<string>>();
  const removed = new Map<string, Set<string>>();
  const collections = new Map<string, Set<string>>();
  const privateData = new Map<string, PrivateDataRecord>();
  const owners = new Map<string, ContractOwner>();
  const versions = new Map<string, ContractVersionRecord[]>();
  const setOf = (map: Map<string, Set<string>>, key: string) => map.get(key) ?? map.set(key, new Set()).get(key)!;

  return {
    privateData,
    async putOrganization(org) {
      if (organizations.has(org.org_id)) return 'exists';
      if (org.public_key !== null && [...organizations.values()].some((o) => o.public_key === org.public_key)) return 'key_taken';
      organizations.set(org.org_id, { ...org });
      return 'created';
    },
    getOrganization: async (orgId) => organizations.get(orgId),
    listOrganizations: async () => [...organizations.values()],
    async putChannel(channel, firstMember) {
      if (channels.has(channel.channel_id)) return false;
      channels.set(channel.channel_id, { ...channel });
      if (firstMember) setOf(members, channel.channel_id).add(firstMember.org_id);
      return true;
    },
    async deleteChannel(channelId) {
      channels.delete(channelId);
      members.delete(channelId);
      collections.delete(channelId);
    },
    getChannel: async (channelId) => channels.get(channelId),
    getChannelDetails: async (channelId) => ({
      organizations: [...(members.get(channelId) ?? [])].sort(),
      collections: [...(collections.get(channelId) ?? [])].sort(),
    }),
    getChannelMembers: async (channelId) => [...(members.get(channelId) ?? [])].sort(),
    listChannelIds: async (orgId, atMost) =>
      [...channels.keys()]
        .filter((id) => orgId === null || members.get(id)?.has(orgId))
        .sort()
        .slice(0, atMost + 1),
    async addMember(channelId, orgId, _at, lift) {
      if (setOf(members, channelId).has(orgId)) return 'member';
      if (setOf(removed, channelId).has(orgId) && !lift) return 'removed';
      setOf(removed, channelId).delete(orgId);
      setOf(members, channelId).add(orgId);
      return 'added';
    },
    async removeMember(channelId, orgId) {
      if (!members.get(channelId)?.delete(orgId)) return false;
      setOf(removed, channelId).add(orgId);
      return true;
    },
    async putCollection(channelId, collection, _at, room) {
      const set = setOf(collections, channelId);
      if (set.has(collection)) return 'exists';
      if (set.size >= room.max) return 'full';
      set.add(collection);
      return 'created';
    },
    async putPrivateData(record) {
      const key = `${record.channel}|${record.collection}|${record.key}`;
      const stored = privateData.get(key)?.block_index;
      if (stored !== undefined && record.block_index !== undefined && stored >= record.block_index) return 'superseded';
      privateData.set(key, { ...record });
      return 'stored';
    },
    getPrivateData: async (channel, collection, key) => privateData.get(`${channel}|${collection}|${key}`),
    async deletePrivateData(channel, collection, key, subjectId) {
      const id = `${channel}|${collection}|${key}`;
      if (privateData.get(id)?.subject_id === subjectId) privateData.delete(id);
    },
    async publishContractVersion(record, owner) {
      const claimed = owners.get(record.contract_id);
      if (claimed && !sameOwner(claimed, owner)) return 'owned_by_another';
      const list = versions.get(record.contract_id) ?? [];
      if (list.some((v) => v.version === record.version)) return 'version_exists';
      owners.set(record.contract_id, owner);
      versions.set(record.contract_id, [...list, { ...record }]);
      return 'created';
    },
    getContractOwner: async (contractId) => owners.get(contractId),
    listContractVersions: async (contractId) => [...(versions.get(contractId) ?? [])],
    getContractSource: async (contractId, version) => versions.get(contractId)?.find((v) => v.version === version)?.implementation ?? undefined,
  };
}
