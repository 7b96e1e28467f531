/**
 * Personal data and erasure by crypto-shredding (docs/personal-data.md): the subjects' keys, and the
 * sealing of details under them, behind the ledger's PersonalData port (shared/ledger/subject-port.ts).
 *
 * Each data subject has its own 256-bit data key, made on first use and kept only wrapped (by KMS in the
 * cloud, by the local master key on a laptop) in the registry table. An erasable event's `details` are
 * sealed under its subject's key with the off-chain envelope (AES-256-GCM, a fresh nonce, the header as
 * additional data) and only that ciphertext is committed. Erasing a subject removes its wrapped key:
 * every copy of the ciphertext (on chain, in IPFS, in backups of either) stays, and none can be opened.
 */
import { createHmac, hkdfSync } from 'node:crypto';
import { ConflictError, GoneError, NotFoundError } from '../errors.ts';
import { canonicalJson } from '../ledger/hashing.ts';
import type { ErasureRecord, PersonalData, PrivateValueRef, StoredSubject, SubjectRepository } from '../ledger/subject-port.ts';
import { logger } from '../log.ts';

export type { ErasureRecord, StoredSubject, SubjectRepository } from '../ledger/subject-port.ts';
import { type Envelope, type KekRef, open, parseEnvelope, seal } from '../offchain/envelope.ts';
import type { KeyProvider } from '../offchain/key-providers.ts';

export { SUBJECT_ID } from '../ledger/subject-port.ts';

/** 410: the subject's data was erased; nothing can be written or read for it any more. */
export class SubjectErasedError extends GoneError {
  constructor(subjectId: string) {
    super(`The data of subject '${subjectId}' was erased`);
  }
}

/** The envelope's key reference for a subject key: no KMS key, the subject named, bound into the AAD. */
const subjectKek = (subjectId: string): KekRef => ({ provider: 'subject', key_id: `subject:${subjectId}` });

export interface SubjectKeys {
  /** The subject's data key, made on its first use; 410 once the subject was erased. */
  keyFor(subjectId: string): Promise<Buffer>;
  /** The keys of several subjects for reading: a key, or null for an erased (or unknown) subject. */
  keysFor(subjectIds: readonly string[]): Promise<Map<string, Buffer | null>>;
  /** What the PersonalData port says they do (shared/ledger/subject-port.ts). */
  recordEvents: PersonalData['recordEvents'];
  recordPayload: PersonalData['recordPayload'];
  recordPrivateValue: PersonalData['recordPrivateValue'];
  isErased: PersonalData['isErased'];
  forgetPrivateValue: PersonalData['forgetPrivateValue'];
  removeErasedValues: PersonalData['removeErasedValues'];
  erase: PersonalData['erase'];
  recordErasureEvent: PersonalData['recordErasureEvent'];
}

/** A private value's ref as the subject's list keeps it. */
const refText = (ref: PrivateValueRef) => JSON.stringify([ref.channel, ref.collection, ref.key]);

/** Deletes a private value's record if it is still the subject's (a later write of its key by another is kept). */
export type PrivateValueRemover = (ref: PrivateValueRef, subjectId: string) => Promise<void>;

export function createSubjectKeys({
  repository,
  keys,
  removePrivateValue,
  now = () => new Date(),
}: {
  repository: SubjectRepository;
  keys: KeyProvider;
  /** Where private values' records are deleted when their subject is erased (none: the subject has none). */
  removePrivateValue?: PrivateValueRemover;
  now?: () => Date;
}): SubjectKeys {
  const unwrap = (stored: Extract<StoredSubject, { state: 'active' }>) => keys.unwrap(Buffer.from(stored.wrapped_key, 'base64'), stored.kek);
  const erasure = (subjectId: string, stored: StoredSubject & { state: 'erased' }): ErasureRecord => ({
    subject_id: subjectId,
    erased_at: stored.erased_at,
    erased_by: stored.erased_by,
    reason: stored.reason,
    events: stored.events,
  });

  async function keyFor(subjectId: string): Promise<Buffer> {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const stored = await repository.get(subjectId);
      if (stored?.state === 'erased') throw new SubjectErasedError(subjectId);
      if (stored) return unwrap(stored);
      // A new subject: a data key of its own (never one shared with another payload or subject: a KMS
      // provider reuses its payload keys for a while), stored wrapped before it encrypts anything.
      const dataKey = await keys.freshDataKey();
      const created = await repository.create(subjectId, {
        wrapped_key: Buffer.from(dataKey.wrapped).toString('base64'),
        kek: dataKey.kek,
        created_at: now().toISOString(),
      });
      if (created) return Buffer.from(dataKey.plaintext);
      // Another request made this subject's key a moment ago: use that one.
    }
    throw new ConflictError(`The key of subject '${subjectId}' is being made by another request; try again`);
  }

  return {
    keyFor,
    async keysFor(subjectIds) {
      const found = new Map<string, Buffer | null>();
      await Promise.all(
        [...new Set(subjectIds)].map(async (id) => {
          const stored = await repository.get(id);
          found.set(id, stored?.state === 'active' ? await unwrap(stored) : null);
        }),
      );
      return found;
    },
    recordEvents: (subjectId, events) => repository.countEvents(subjectId, events),
    recordPayload: (subjectId, cid) => repository.recordPayload(subjectId, cid),
    recordPrivateValue: (subjectId, ref) => repository.recordPrivateValue(subjectId, refText(ref)),
    forgetPrivateValue: (subjectId, ref) => repository.forgetPrivateValues(subjectId, [refText(ref)]),
    isErased: async (subjectId) => (await repository.get(subjectId))?.state === 'erased',
    recordErasureEvent: (subjectId, eventId) => repository.recordErasureEvent(subjectId, eventId),
    async removeErasedValues(subjectId, { max, more }) {
      // Only an erased subject's: a page of its list, each record deleted, then taken off the list. One that fails stays
      // listed, for the next erasure of the subject; until then every read takes it for absent and deletes it.
      if ((await repository.get(subjectId))?.state !== 'erased') return { removed: 0, left: false };
      const page = await repository.privateValues(subjectId, max);
      const removed: string[] = [];
      for (const ref of page) {
        if (!more()) break;
        try {
          const [channel, collection, key] = JSON.parse(ref) as [string, string, string];
          if (!removePrivateValue) throw new Error('no store of private values to delete it from');
          await removePrivateValue({ channel, collection, key }, subjectId);
          removed.push(ref);
        } catch (error) {
          logger.warn("an erased subject's private value was not deleted; the next erasure of the subject deletes it", { subject_id: subjectId, error });
        }
      }
      await repository.forgetPrivateValues(subjectId, removed);
      // Left: one not deleted (failed, or out of time), or a full page (more may follow it).
      return { removed: removed.length, left: removed.length < page.length || page.length === max };
    },
    async erase(subjectId, by) {
      const before = await repository.get(subjectId);
      if (!before) throw new NotFoundError(`No personal data is held for subject '${subjectId}'`);
      // Of two erasures at once, the conditional write lets exactly one remove the key: that one is `erased`.
      const erasedNow = before.state === 'active' && (await repository.erase(subjectId, { erased_at: now().toISOString(), ...by }));
      const after = await repository.get(subjectId);
      if (after?.state !== 'erased') throw new Error(`subject '${subjectId}' is not erased after its erasure`);
      return { status: erasedNow ? 'erased' : 'already', record: erasure(subjectId, after), payloads: after.payloads ?? [], eventId: after.event_id ?? null };
    },
  };
}

/**
 * The length sealed details are padded to: 256 bytes, then the next power of two up to 64 KiB, then the next multiple
 * of 64 KiB. An erased event's sealed details stay on chain; their ciphertext's length had given the plaintext's to
 * the byte (a name's, an address's). Padded, it gives only its bucket.
 */
export function paddedLength(bytes: number): number {
  if (bytes <= 256) return 256;
  if (bytes <= 65_536) return 2 ** Math.ceil(Math.log2(bytes));
  return Math.ceil(bytes / 65_536) * 65_536;
}

/**
 * An erasable event's details, sealed under its subject's key: what the block commits to (a JSON string). The
 * plaintext is the details' canonical JSON padded with spaces to its bucket (paddedLength): JSON ignores them, so
 * openDetails reads padded and earlier unpadded seals alike.
 */
export function sealDetails(key: Buffer, subjectId: string, details: Record<string, unknown>): string {
  const json = Buffer.from(canonicalJson(details), 'utf8');
  const padded = Buffer.alloc(paddedLength(json.length), 0x20);
  json.copy(padded);
  const envelope: Envelope = seal(padded, key, Buffer.alloc(0), subjectKek(subjectId));
  return canonicalJson(envelope);
}

/** What the subject's data key is stretched into for blindDetails: a key of its own, never the sealing key itself. */
const BLIND_INFO = 'verifiable-ledger subject details fingerprint v1';

/**
 * HMAC-SHA-256 of the details' canonical JSON under a key derived (HKDF-SHA-256) from the subject's data key:
 * equal details give equal digests while the key exists, and once it is destroyed no guess can be checked.
 */
export function blindDetails(key: Buffer, subjectId: string, details: Record<string, unknown>): string {
  const blindKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `${BLIND_INFO}\n${subjectId}`, 32));
  return createHmac('sha256', blindKey).update(canonicalJson(details), 'utf8').digest('base64');
}

/** The details sealed by sealDetails, with the subject's key; UnreadablePayloadError when they are not that subject's. */
export function openDetails(key: Buffer, subjectId: string, sealed: string): Record<string, unknown> {
  const envelope = parseEnvelope(Buffer.from(sealed, 'utf8'));
  if (envelope.kek.provider !== 'subject' || envelope.kek.key_id !== subjectKek(subjectId).key_id) {
    throw new NotFoundError(`These details are not sealed for subject '${subjectId}'`);
  }
  return JSON.parse(open(envelope, key).toString('utf8')) as Record<string, unknown>;
}

/** The ledger's PersonalData port over the subjects' keys. */
export function createPersonalData(subjects: SubjectKeys): PersonalData {
  return {
    seal: async (subjectId, details) => sealDetails(await subjects.keyFor(subjectId), subjectId, details),
    blind: async (subjectId, details) => blindDetails(await subjects.keyFor(subjectId), subjectId, details),
    async openAll(items) {
      const keys = await subjects.keysFor(items.map((item) => item.subjectId));
      return items.map(({ subjectId, sealed }) => {
        const key = keys.get(subjectId);
        if (!key) return null;
        return sealed === null ? undefined : openDetails(key, subjectId, sealed);
      });
    },
    recordEvents: (subjectId, events) => subjects.recordEvents(subjectId, events),
    recordPayload: (subjectId, cid) => subjects.recordPayload(subjectId, cid),
    recordPrivateValue: (subjectId, ref) => subjects.recordPrivateValue(subjectId, ref),
    forgetPrivateValue: (subjectId, ref) => subjects.forgetPrivateValue(subjectId, ref),
    isErased: (subjectId) => subjects.isErased(subjectId),
    removeErasedValues: (subjectId, options) => subjects.removeErasedValues(subjectId, options),
    erase: (subjectId, by) => subjects.erase(subjectId, by),
    recordErasureEvent: (subjectId, eventId) => subjects.recordErasureEvent(subjectId, eventId),
  };
}
