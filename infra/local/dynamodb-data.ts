/**
 * What a DynamoDB Local keeps in its data dir besides its server: the access key id its database is kept under, and
 * the database file(s) named by that key and a region. DynamoDB Local checks no credentials but keeps one database per
 * access key id and region (without `-sharedDb`), so a key only this user can read keeps the stack's data its own.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LaunchError } from './launch-error.ts';
import { notOwnFile } from '../../shared/own-file.ts';

/** The file, in a DynamoDB Local's data dir, holding the access key id its database is kept under. */
const ACCESS_KEY_FILE = 'access-key';
/** What DynamoDB Local with `-sharedDb` (every caller one database, as this launcher ran it before 2026-12-07) keeps its data in. */
const SHARED_DB_FILE = 'shared-local-instance.db';
/** An access key id as DynamoDB Local takes it (letters and digits). */
const ACCESS_KEY_ID = /^[A-Za-z0-9]{16,128}$/;

/**
 * The access key id of the DynamoDB Local on `dataDir`: read from its file, or (`create`) made at the first start, 160
 * random bits, written whole and only for this user (0600, in a data dir made 0700 by its launcher). Undefined when there
 * is none and `create` is false.
 */
export function dynamoAccessKey(dataDir: string, create = false): string | undefined {
  const file = join(dataDir, ACCESS_KEY_FILE);
  const read = () => {
    const planted = notOwnFile(file);
    if (planted) throw new LaunchError(planted);
    const key = readFileSync(file, 'utf8').trim();
    if (!ACCESS_KEY_ID.test(key)) {
      throw new LaunchError(
        `${file} does not hold an access key id (16 to 128 letters and digits): put back the key it held (its databases are the <key>_<region>.db files beside it)`,
      );
    }
    // Kept its user's alone whoever loosened it.
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
    return key;
  };
  if (existsSync(file)) return read();
  if (!create) return undefined;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // Written whole under another name, then linked into place: a command starting beside (npm run keys) reads the whole
  // key or none, never a file made but not yet written. The first link wins; the other start reads it.
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, `${randomBytes(20).toString('hex').toUpperCase()}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(draft, { force: true });
  }
  return read();
}

/** A database's file and SQLite's companions of it (a journal a killed JVM left): moved together, or what it held is lost. */
const SQLITE_SUFFIXES = ['', '-journal', '-wal', '-shm'];

/**
 * DynamoDB Local ran with `-sharedDb` until 2026-12-07, every caller in one database file: that file becomes the
 * database of this data dir's access key, once. What it cannot move (the key has a database already) and databases
 * this start will not use (another region's, another key's) are said, never moved or removed.
 */
export function adoptSharedDatabase(dataDir: string, accessKeyId: string, region: string, notice?: (message: string) => void): void {
  const own = `${accessKeyId}_${region}.db`;
  const databases = readdirSync(dataDir).filter((name) => name.endsWith('.db'));
  const ofThisKey = databases.filter((name) => name.startsWith(`${accessKeyId}_`));
  const shared = join(dataDir, SHARED_DB_FILE);
  if (existsSync(shared) && ofThisKey.length === 0) {
    for (const suffix of SQLITE_SUFFIXES) {
      try {
        renameSync(`${shared}${suffix}`, join(dataDir, `${own}${suffix}`));
      } catch (error) {
        // Absent, or another start on this data dir moved it a moment ago.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    notice?.(`DynamoDB Local's data in ${dataDir} is kept under this data dir's own access key from now on (it was open to any caller)`);
    return;
  }
  if (existsSync(shared)) {
    notice?.(`Warning: ${shared} (the database every caller shared before) is left as it is: this data dir's access key has a database already`);
  }
  if (!ofThisKey.includes(own) && ofThisKey.length > 0) {
    notice?.(
      `Warning: DynamoDB Local's data in ${dataDir} was made with another region (${ofThisKey.map((name) => name.slice(accessKeyId.length + 1, -3)).join(', ')}); SVC_AWS_REGION is ${region}, whose tables start empty`,
    );
  }
}
