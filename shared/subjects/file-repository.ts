/**
 * Data subjects' keys in files (the local stack's default, SVC_SUBJECT_KEY_STORE=file): one file per
 * subject under `<SVC_DATA_DIR>/subjects/`, named by the SHA-256 of its id. A database file is no place
 * for a key meant to be destroyed: DynamoDB Local keeps deleted rows' bytes in its SQLite file, where the
 * master key beside it could unwrap them; a removed file is removed. The cloud keeps them in the registry
 * table (DynamoDB deletes), with backups addressed in docs/personal-data.md.
 *
 * Layout: `<hash>.key.json` holds the wrapped key, written once (whole and exclusively) and removed once;
 * `<hash>.events.json` the count of its events (kept apart: counting never rewrites the key, which a rewrite racing an
 * erasure had put back after the erasure removed it, or left torn, found by the red team); `<hash>.erased.json` the
 * erasure record. The record is written first, exclusively (of two erasures at once, one writes it), then the key file
 * is removed; a subject with a record is erased, whatever else is there. Every file is written beside its place and
 * renamed (or linked) into it: a reader never sees half of one.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoredSubject, SubjectRepository } from '../ledger/subject-port.ts';

type ActiveSubject = Extract<StoredSubject, { state: 'active' }>;

export function createFileSubjectRepository(dir: string): SubjectRepository {
  const paths = (subjectId: string) => {
    const name = createHash('sha256').update(subjectId, 'utf8').digest('hex');
    return {
      key: join(dir, `${name}.key.json`),
      count: join(dir, `${name}.events.json`),
      erased: join(dir, `${name}.erased.json`),
      payloads: join(dir, `${name}.payloads`),
      privateValues: join(dir, `${name}.private`),
    };
  };
  /** A private value's file in the subject's folder: named by the SHA-256 of its ref, holding it. */
  const valueFile = (subjectId: string, ref: string) => join(paths(subjectId).privateValues, createHash('sha256').update(ref, 'utf8').digest('hex'));
  const read = <T>(path: string): T | undefined => {
    try {
      return JSON.parse(readFileSync(path, 'utf8')) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  };
  const remove = (path: string) => {
    try {
      unlinkSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  };
  /** The value written beside `path`, whole, for a rename or link into place. */
  const aside = (path: string, value: unknown): string => {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = `${path}.${process.pid}-${randomUUID()}.tmp`;
    writeFileSync(file, `${JSON.stringify(value)}\n`, { mode: 0o600 });
    return file;
  };
  /** Writes a file whole, over what was there. */
  const writeWhole = (path: string, value: unknown): void => renameSync(aside(path, value), path);
  /** Writes a file that must not exist yet, whole; false when it did. */
  const writeNew = (path: string, value: unknown): boolean => {
    const file = aside(path, value);
    try {
      linkSync(file, path);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    } finally {
      remove(file);
    }
  };
  /** A subject's count of events: its own file (`count`), else what its key file was made with. */
  const eventsOf = (count: string, active: ActiveSubject): number => read<{ events: number }>(count)?.events ?? active.events;

  return {
    async get(subjectId) {
      const { key, count, erased, payloads } = paths(subjectId);
      // One empty file per payload, named by its CID: adding one is atomic, whoever adds another at once.
      const listed = existsSync(payloads) ? readdirSync(payloads).sort() : [];
      const record = read<StoredSubject>(erased);
      if (record) {
        remove(key); // a key made while the subject was being erased is never used: gone too
        remove(count);
        return { ...record, payloads: listed };
      }
      const active = read<ActiveSubject>(key);
      return active && { ...active, events: eventsOf(count, active), payloads: listed };
    },
    async recordPayload(subjectId, cid) {
      const { payloads } = paths(subjectId);
      mkdirSync(payloads, { recursive: true, mode: 0o700 });
      writeFileSync(join(payloads, cid.replace(/[^A-Za-z0-9]/g, '')), '', { mode: 0o600 });
    },
    async recordPrivateValue(subjectId, ref) {
      mkdirSync(paths(subjectId).privateValues, { recursive: true, mode: 0o700 });
      writeFileSync(valueFile(subjectId, ref), ref, { mode: 0o600 });
    },
    async privateValues(subjectId, limit) {
      const { privateValues } = paths(subjectId);
      if (!existsSync(privateValues)) return [];
      return readdirSync(privateValues)
        .sort()
        .slice(0, limit)
        .flatMap((name) => {
          try {
            return [readFileSync(join(privateValues, name), 'utf8')];
          } catch {
            return []; // forgotten as it was listed
          }
        });
    },
    async forgetPrivateValues(subjectId, refs) {
      for (const ref of refs) remove(valueFile(subjectId, ref));
    },
    async create(subjectId, wrapped) {
      const { key, erased } = paths(subjectId);
      if (existsSync(erased)) return false;
      return writeNew(key, { state: 'active', ...wrapped, events: 0 } satisfies ActiveSubject);
    },
    async countEvents(subjectId, events) {
      const { key, count, erased } = paths(subjectId);
      const current = read<ActiveSubject>(key);
      // A count, not a key: kept best-effort (two instances counting at once may lose one), in its own file.
      if (!current || existsSync(erased)) return;
      writeWhole(count, { events: eventsOf(count, current) + events });
      if (existsSync(erased)) remove(count); // erased meanwhile: its record holds the count
    },
    async recordErasureEvent(subjectId, eventId) {
      const { erased } = paths(subjectId);
      const record = read<StoredSubject>(erased);
      // The record, not a key: rewritten whole (once; a second note keeps the first).
      if (record && record.event_id === undefined) writeWhole(erased, { ...record, event_id: eventId });
    },
    async erase(subjectId, record) {
      const { key, count, erased } = paths(subjectId);
      const current = read<ActiveSubject>(key);
      if (!current || existsSync(erased)) return false;
      if (!writeNew(erased, { state: 'erased', subject_id: subjectId, ...record, events: eventsOf(count, current) } satisfies StoredSubject)) return false;
      remove(key);
      remove(count);
      return true;
    },
  };
}
