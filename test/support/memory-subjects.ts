/** The SubjectRepository port in memory, for offline tests: one record per subject, as the stores keep it. */
import type { StoredSubject, SubjectRepository } from '#shared/ledger/subject-port';

export function createMemorySubjects(): SubjectRepository & { items: Map<string, StoredSubject> } {
  const items = new Map<string, StoredSubject>();
  const values = new Map<string, Set<string>>();
  return {
    items,
    get: async (id) => items.get(id) && structuredClone(items.get(id)),
    async create(id, key) {
      if (items.has(id)) return false;
      items.set(id, { state: 'active', ...key, events: 0, payloads: [] });
      return true;
    },
    async countEvents(id, n) {
      const item = items.get(id);
      if (item) item.events += n;
    },
    async recordPayload(id, cid) {
      const item = items.get(id);
      if (item && !item.payloads?.includes(cid)) item.payloads = [...(item.payloads ?? []), cid];
    },
    async recordPrivateValue(id, ref) {
      values.set(id, (values.get(id) ?? new Set()).add(ref));
    },
    privateValues: async (id, limit) => [...(values.get(id) ?? [])].sort().slice(0, limit),
    async forgetPrivateValues(id, refs) {
      for (const ref of refs) values.get(id)?.delete(ref);
    },
    async recordErasureEvent(id, eventId) {
      const item = items.get(id);
      if (item?.state === 'erased' && item.event_id === undefined) item.event_id = eventId;
    },
    async erase(id, record) {
      const item = items.get(id);
      if (item?.state !== 'active') return false;
      items.set(id, { state: 'erased', subject_id: id, ...record, events: item.events, payloads: item.payloads ?? [] });
      return true;
    },
  };
}
