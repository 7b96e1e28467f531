/**
 * API keys (docs/rules.md, "Keys and limits"): stored only as SHA-256 hashes, each with a role and an optional org_id;
 * created and revoked without a redeploy. The key itself is shown once, at creation.
 */
import { createHash, randomBytes } from 'node:crypto';
import { BadRequestError, NotFoundError } from '../errors.ts';

import { ORG_ID_PATTERN, ORG_ID_RULE, ROLES, type Role } from '../access/policy.ts';

// The roles are the access policy's; a key carries one.
export { ROLES, ROLE_RANK, type Role } from '../access/policy.ts';

/** The id of the key seeded from SVC_ADMIN_API_KEY. */
export const SEED_ADMIN_KEY_ID = 'admin-seed';

/** A key as stored and listed: never the key itself. */
export interface ApiKeyRecord {
  key_id: string;
  role: Role;
  org_id: string | null;
  created_at: string;
}

/** The port the key functions need from storage. */
export interface ApiKeyRepository {
  /** Stores a key by its hash. Replaces a key with the same id (used to re-seed the admin key). */
  put(record: ApiKeyRecord, keyHash: string): Promise<void>;
  /**
   * The key with that hash, if it exists and was not revoked. `consistent`: as the last write left it (a strongly
   * consistent read, twice the read units), for a check that must see a revocation made a moment ago.
   */
  findByHash(keyHash: string, options?: { consistent?: boolean }): Promise<ApiKeyRecord | undefined>;
  /** Every key, oldest first. */
  list(): Promise<ApiKeyRecord[]>;
  /** The hash stored for a key id, if any. */
  hashOf(keyId: string): Promise<string | undefined>;
  /** Deletes a key; false when there was none with that id. */
  revoke(keyId: string): Promise<boolean>;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A fresh key: `lk_` + 32 random bytes, base64url. */
export function generateApiKey(): string {
  return `lk_${randomBytes(32).toString('base64url')}`;
}

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

/** Creates a key; answers the key (to show once) and its record. */
export async function createApiKey(repository: ApiKeyRepository, role: Role, orgId: string | null = null): Promise<{ key: string; record: ApiKeyRecord }> {
  if (orgId !== null && !ORG_ID_PATTERN.test(orgId)) throw new BadRequestError(`A key's organization ${ORG_ID_RULE}, not '${orgId}'`);
  const key = generateApiKey();
  const record: ApiKeyRecord = {
    key_id: randomBytes(6).toString('hex'),
    role,
    org_id: orgId,
    created_at: new Date().toISOString(),
  };
  await repository.put(record, hashApiKey(key));
  return { key, record };
}

export async function revokeApiKey(repository: ApiKeyRepository, keyId: string): Promise<void> {
  if (!(await repository.revoke(keyId))) throw new NotFoundError(`No API key with id '${keyId}'`);
}

/**
 * Makes SVC_ADMIN_API_KEY a stored admin key. Idempotent; when the setting changed, the old seeded
 * key stops working.
 */
export async function seedAdminKey(repository: ApiKeyRepository, key: string): Promise<void> {
  const keyHash = hashApiKey(key);
  if ((await repository.hashOf(SEED_ADMIN_KEY_ID)) === keyHash) return;
  await repository.revoke(SEED_ADMIN_KEY_ID);
  await repository.put({ key_id: SEED_ADMIN_KEY_ID, role: 'admin', org_id: null, created_at: new Date().toISOString() }, keyHash);
}
