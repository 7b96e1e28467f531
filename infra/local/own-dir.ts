/**
 * A data dir its user's alone: the local stack's and the sim's hold a master key, DynamoDB Local's files and the access
 * key its database is kept under, and had been readable by every local user (red team, 2026-12-07). One another local
 * user owns (made first, at a path in a shared folder) is refused: its keys would be theirs to plant or read (red team,
 * 2026-12-07, supply chain and local files).
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';

/** What became of the data dir: nothing to say, a warning, or a refusal to use it. */
export type OwnDir = undefined | { warn: string } | { refuse: string };

/** Makes `dir` (and its parents) and makes it 0700, whoever made it before; says when it cannot, or must not be used. */
export function makeOwnDir(dir: string, uid: number | undefined = process.getuid?.()): OwnDir {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const owner = statSync(dir).uid;
  if (uid !== undefined && owner !== uid) {
    return {
      refuse: `Cannot use the data dir ${dir}: it belongs to another user (uid ${owner}), who could read or plant its keys; give SVC_DATA_DIR a folder of your own`,
    };
  }
  try {
    chmodSync(dir, 0o700);
    return undefined;
  } catch (error) {
    return { warn: `Warning: could not make the data dir ${dir} its user's alone (${(error as NodeJS.ErrnoException).code}): other local users may read it` };
  }
}
