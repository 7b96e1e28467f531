/**
 * Key files the local stack reads (the master key, the node identity, DynamoDB Local's access key): refused when another
 * local user owns one, as one planted in a data dir that was open to them before would be (red team, 2026-12-07,
 * supply chain and local files). A file of this user's is read whatever its mode; where the system has no uids, as is.
 */
import { statSync } from 'node:fs';

/** Why `path` must not be read as this user's key, if it must not: its owner is another user. */
export function notOwnFile(path: string, uid: number | undefined = process.getuid?.()): string | undefined {
  if (uid === undefined) return undefined;
  const owner = statSync(path).uid;
  return owner === uid ? undefined : `${path} belongs to another user (uid ${owner}), who could have planted it: it is not read as this user's key`;
}
