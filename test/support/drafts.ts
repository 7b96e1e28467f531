/**
 * An event as a caller sends it, with everything a plain on-chain event leaves empty: the tests that append through the
 * ledger (createLedger over the in-memory repository) name only what they vary.
 */
import type { EventDraft } from '#shared/ledger/events';

export function eventDraft(entityId: string, details: Record<string, unknown> = {}, eventType = 'recorded'): EventDraft {
  return {
    entity_id: entityId,
    event_type: eventType,
    details,
    details_cid: null,
    details_nonce: null,
    details_metadata: null,
    is_offchain: false,
  };
}
