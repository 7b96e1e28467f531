/**
 * A StateStore in one JSON file (Node only): read once, written whole on every change, through a
 * temporary file and a rename, so a crash leaves the old state or the new one, never half of one.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { StateStore } from './state.ts';

export class FileStore implements StateStore {
  #values: Promise<Map<string, string>> | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(readonly path: string) {}

  #load(): Promise<Map<string, string>> {
    this.#values ??= readFile(this.path, 'utf8').then(
      (text) => new Map(Object.entries(JSON.parse(text) as Record<string, string>)),
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return new Map<string, string>();
        throw error;
      },
    );
    return this.#values;
  }

  async get(key: string) {
    return (await this.#load()).get(key);
  }

  async set(key: string, value: string) {
    const values = await this.#load();
    values.set(key, value);
    const text = `${JSON.stringify(Object.fromEntries(values), null, 2)}\n`;
    this.#writing = this.#writing.then(async () => {
      await mkdir(dirname(this.path), { recursive: true });
      const temporary = `${this.path}.${process.pid}.tmp`;
      await writeFile(temporary, text, { mode: 0o600 });
      await rename(temporary, this.path);
    });
    await this.#writing;
  }
}
