/**
 * What the ledger needs to keep personal data erasable (shared/subjects implements it): an event marked
 * with a `subject_id` has its details sealed under that subject's own key, and only the sealed form is
 * committed. Erasing the subject destroys the key; the blocks, their hashes and every proof stay.
 */
import { segmentId } from '../validation.ts';

/**
 * A subject id: 1 to 128 of A-Z a-z 0-9 _ . : @ - (a pseudonymous id is best: it stays on chain after erasure), a path
 * segment of the erasure's route.
 */
const SUBJECT = segmentId(128, 'A-Za-z0-9_.:@-', 'A-Z a-z 0-9 _ . : @ -');
export const SUBJECT_ID = SUBJECT.pattern;
export const SUBJECT_ID_RULE = SUBJECT.rule;

/** What erasing a subject recorded: who, when, why, and how many events it had. */
export interface ErasureRecord {
  subject_id: string;
  erased_at: string;
  /** The key id of the admin who erased it; null with auth off. */
  erased_by: string | null;
  reason: string;
  events: number;
}

export interface PersonalData {
  /** The details sealed under the subject's key (made on its first use); 410 once the subject was erased. */
  seal(subjectId: string, details: Record<string, unknown>): Promise<string>;
  /**
   * A keyed digest of the details (base64), to tell a retry of an erasable event from another request
   * (Idempotency-Key) without keeping a hash that a guess could confirm: an HMAC under a key derived from
   * the subject's own, which erasure destroys with it. The subject's key is made on its first use, as for
   * `seal`; 410 once the subject was erased.
   */
  blind(subjectId: string, details: Record<string, unknown>): Promise<string>;
  /**
   * Sealed details opened, in order, each subject's state read once: the details; null for each whose
   * subject was erased; undefined for one with nothing sealed inline (`sealed: null`: its details are in
   * IPFS) whose subject was not.
   */
  openAll(items: readonly { subjectId: string; sealed: string | null }[]): Promise<(Record<string, unknown> | null | undefined)[]>;
  /** Counts events written for a subject (what its erasure reports). */
  recordEvents(subjectId: string, events: number): Promise<void>;
  /** Notes an IPFS payload holding the subject's sealed details (removed from our node when it is erased). */
  recordPayload(subjectId: string, cid: string): Promise<void>;
  /**
   * Notes a private value of the subject's (its channel, collection and key): erasing the subject deletes its record,
   * whose key (an e-mail address, a patient number) may be personal too. Noted before the record is stored.
   */
  recordPrivateValue(subjectId: string, ref: PrivateValueRef): Promise<void>;
  /** Whether the subject was erased (false for one never seen, whose key is missing rather than destroyed). */
  isErased(subjectId: string): Promise<boolean>;
  /** Takes a private value off the subject's list: its record was deleted (its subject was erased). */
  forgetPrivateValue(subjectId: string, ref: PrivateValueRef): Promise<void>;
  /**
   * Deletes the records of an erased subject's private values, at most `max` of them, while `more()` says there is
   * time: `left` when some may remain (the next erasure of the subject goes on). Nothing for a subject not erased.
   */
  removeErasedValues(subjectId: string, options: { max: number; more: () => boolean }): Promise<{ removed: number; left: boolean }>;
  /**
   * Destroys the subject's key: `erased` by this call, or `already` (the first erasure's record); 404 for
   * an unknown subject. `payloads`: the IPFS payloads of its sealed details, to remove.
   */
  erase(
    subjectId: string,
    by: { erased_by: string | null; reason: string },
  ): Promise<{ status: 'erased' | 'already'; record: ErasureRecord; payloads: string[]; eventId: string | null }>;
  /** Notes the Main Chain event that records the erasure (so that it is written once, and never missing). */
  recordErasureEvent(subjectId: string, eventId: string): Promise<void>;
}

/** Where a private value is kept: its channel, collection and key. */
export interface PrivateValueRef {
  channel: string;
  collection: string;
  key: string;
}

/** A subject's key as stored: wrapped, never in the clear; or the record of its erasure. */
export type StoredSubject = (
  | { state: 'active'; wrapped_key: string; kek: { provider: string; key_id: string }; created_at: string; events: number }
  | ({ state: 'erased' } & ErasureRecord)
) & {
  /** IPFS payloads holding the subject's sealed details. */
  payloads?: string[];
  /** Erased: the Main Chain event recording it, once appended. */
  event_id?: string;
};

/** The port: where wrapped subject keys live (the registry table). */
export interface SubjectRepository {
  get(subjectId: string): Promise<StoredSubject | undefined>;
  /** Stores a new subject's wrapped key unless the subject exists; false when it did. */
  create(subjectId: string, key: { wrapped_key: string; kek: { provider: string; key_id: string }; created_at: string }): Promise<boolean>;
  /** Counts events written for the subject. */
  countEvents(subjectId: string, events: number): Promise<void>;
  /** Adds an IPFS payload of the subject's (a set: adding one twice keeps one). */
  recordPayload(subjectId: string, cid: string): Promise<void>;
  /**
   * Adds a private value of the subject's (the JSON of its PrivateValueRef; a set): an item of its own beside the
   * subject's, so that the subject's item, read at every erasable event, stays one small read however many it has.
   */
  recordPrivateValue(subjectId: string, ref: string): Promise<void>;
  /** Up to `limit` private values of the subject whose records are not deleted yet (read only by its erasure). */
  privateValues(subjectId: string, limit: number): Promise<string[]>;
  /** Takes private values off the subject's list once their records are deleted. */
  forgetPrivateValues(subjectId: string, refs: readonly string[]): Promise<void>;
  /** Notes the Main Chain event of an erased subject's erasure. */
  recordErasureEvent(subjectId: string, eventId: string): Promise<void>;
  /** Removes the wrapped key and records the erasure, if the key is still there; false when it was not. */
  erase(subjectId: string, record: Omit<ErasureRecord, 'subject_id' | 'events'>): Promise<boolean>;
}
