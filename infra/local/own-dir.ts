/**
 * A data dir its user's alone: the local stack's and the sim's hold a master key, DynamoDB Local's files and the access
 * key its database is kept under, and had been readable by every local user (red team, 2026-12-07).
 */
import { chmodSync, mkdirSync } from 'node:fs';

/** Makes `dir` (and its parents) and makes it 0700, whoever made it before; answers a warning when it cannot. */
export function makeOwnDir(dir: string): string | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    chmodSync(dir, 0o700);
    return undefined;
  } catch (error) {
    return `Warning: could not make the data dir ${dir} its user's alone (${(error as NodeJS.ErrnoException).code}): other local users may read it`;
  }
}
