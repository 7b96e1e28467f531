/**
 * The witness's state on disk: one small file per origin (`<dir>/origins/<SHA-256 of the origin>.json`,
 * holding the origin, size and root), so that an add rewrites only its own origin's file, whatever the
 * number of logs. Each write goes to a temporary file, is flushed to disk, then renamed over the old one:
 * a crash leaves the old checkpoint or the new one, never a torn file. "The witness MUST persist the new
 * checkpoint before responding": `set` returns only once it is on disk.
 *
 * A state kept by an earlier version as one `<dir>/state.json` is moved into the per-origin files at open.
 * What it read or wrote is also kept in memory (a few hundred bytes an origin, at most --max-origins), so that a
 * checkpoint it holds, sent again, is answered without touching the disk. Nothing is ever forgotten: a log forgotten
 * would be new again, and cosigned from size 0 whatever its history.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { CosignedState, WitnessStore } from './witness.ts';

const fileName = (origin: string) => `${createHash('sha256').update(origin).digest('hex')}.json`;

function writeDurably(file: string, text: string): void {
  const temporary = `${file}.tmp`;
  const fd = openSync(temporary, 'w', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, file);
}

export function fileWitnessStore(dir: string): WitnessStore {
  const origins = join(dir, 'origins');
  mkdirSync(origins, { recursive: true });
  const path = (origin: string) => join(origins, fileName(origin));
  const write = (origin: string, state: CosignedState) => writeDurably(path(origin), `${JSON.stringify({ origin, size: state.size, root: state.root })}\n`);

  const legacy = join(dir, 'state.json');
  if (existsSync(legacy)) {
    const old = JSON.parse(readFileSync(legacy, 'utf8')) as Record<string, CosignedState>;
    for (const [origin, state] of Object.entries(old)) if (!existsSync(path(origin))) write(origin, state);
    unlinkSync(legacy);
  }
  let count = readdirSync(origins).filter((name) => name.endsWith('.json')).length;
  const held = new Map<string, CosignedState>();

  return {
    async get(origin) {
      const known = held.get(origin);
      if (known) return known;
      const file = path(origin);
      if (!existsSync(file)) return undefined;
      const saved = JSON.parse(readFileSync(file, 'utf8')) as CosignedState & { origin: string };
      // Two origins with one SHA-256 cannot happen; a file that is not this origin's is a bug, not a state.
      if (saved.origin !== origin) throw new Error(`${file} holds the state of '${saved.origin}', not of '${origin}'`);
      const state = { size: saved.size, root: saved.root };
      held.set(origin, state);
      return state;
    },
    async set(origin, state) {
      const isNew = !existsSync(path(origin));
      write(origin, state);
      held.set(origin, { ...state });
      if (isNew) count += 1;
    },
    async count() {
      return count;
    },
  };
}
