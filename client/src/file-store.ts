/**
 * A StateStore in one JSON file (Node only), which several clients and processes may share. Every read reads the
 * file, so that a client sees what another wrote; every change is made under a lock file (`<file>.lock`), on the
 * file as it is then, and written through a temporary file and a rename, so a crash leaves the old state or the
 * new one, never half of one. Kept in memory and written whole, one client's old copy had rolled back another's
 * newer trusted state (and with it the fork it would have caught).
 */
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { StateStore } from './state.ts';

/**
 * How long a change waits for another's lock, and when a lock is taken for its holder's leftover (it died): a change
 * holds it for the few milliseconds of a read and a write, so a lock older than LOCK_STALE_MS is no one's, and a client
 * started again after a crash waits that long, not until its wait ends in an error.
 */
const LOCK_WAIT_MS = 10_000;
const LOCK_STALE_MS = 2_000;

export class FileStore implements StateStore {
  /** One change at a time in this process (the lock file orders them across processes). */
  #writing: Promise<unknown> = Promise.resolve();

  readonly path: string;
  constructor(path: string) {
    this.path = path;
  }

  async #read(): Promise<Map<string, string>> {
    try {
      return new Map(Object.entries(JSON.parse(await readFile(this.path, 'utf8')) as Record<string, string>));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map<string, string>();
      throw error;
    }
  }

  async get(key: string) {
    return (await this.#read()).get(key);
  }

  async set(key: string, value: string) {
    await this.update(key, () => value);
  }

  /** Changes one value on the file as it is now, under the lock: `change` answers the new value, or undefined to keep it. */
  update(key: string, change: (current: string | undefined) => string | undefined): Promise<void> {
    const run = this.#writing.then(() => this.#underLock(key, change));
    this.#writing = run.catch(() => undefined);
    return run;
  }

  async #underLock(key: string, change: (current: string | undefined) => string | undefined): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    const lock = `${this.path}.lock`;
    const token = `${process.pid} ${Date.now()} ${Math.random()}`;
    const holding = async () => (await readFile(lock, 'utf8').catch(() => '')) === token;
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        await writeFile(lock, token, { flag: 'wx', mode: 0o600 });
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const held = await stat(lock).catch(() => undefined);
        if (held && Date.now() - held.mtimeMs > LOCK_STALE_MS) {
          // A dead holder's: taken away by a rename, so that of two clients that found it stale only one removes it.
          const away = `${lock}.${process.pid}.${Math.random().toString(36).slice(2)}`;
          await rename(lock, away).then(
            () => rm(away, { force: true }),
            () => undefined,
          );
        } else if (Date.now() > deadline) throw new Error(`the state file ${this.path} stayed locked for ${LOCK_WAIT_MS / 1000} s (${lock})`);
        else await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
      }
    }
    try {
      const values = await this.#read();
      const next = change(values.get(key));
      if (next === undefined || next === values.get(key)) return;
      values.set(key, next);
      const temporary = `${this.path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
      await writeFile(temporary, `${JSON.stringify(Object.fromEntries(values), null, 2)}\n`, { mode: 0o600 });
      // Still this change's lock (not taken as stale meanwhile): else another change may be writing, and this one fails.
      if (!(await holding())) {
        await rm(temporary, { force: true });
        throw new Error(`the lock of ${this.path} was taken while this change held it`);
      }
      await rename(temporary, this.path);
    } finally {
      if (await holding()) await rm(lock, { force: true });
    }
  }
}
