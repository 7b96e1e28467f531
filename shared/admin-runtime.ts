/**
 * Wiring that needs the node identity: the admin group, and the ledger's signed checkpoints and proofs.
 * Beside shared/runtime.ts, so that only functions that need it bundle it.
 */
import { createAdmin, type Admin } from './admin/admin.ts';
import { createProofs, type Proofs } from './ledger/proofs.ts';
import { getConfig, identityPath } from './config.ts';
import { documentClient, getAccessControl, getLedgerRuntime, lazyOffchain, once } from './runtime.ts';
import { guardProofs, guardTlog } from './access/guarded.ts';
import { createTlog, type Tlog } from './tlog/tlog.ts';
import { createTileRepository } from './storage/tile-repository.ts';
import type { Principal } from './access/policy.ts';
import { createAdminRepository } from './storage/admin-repository.ts';
import { createBusinessRepository } from './storage/business-repository.ts';

export const getAdmin = once((): Admin => {
  const config = getConfig();
  const table = { client: documentClient(), tableName: config.SVC_REGISTRY_TABLE };
  return createAdmin({
    repository: createAdminRepository(table),
    organizations: createBusinessRepository(table),
    ledger: getLedgerRuntime().ledger,
    access: getAccessControl(),
    sealer: lazyOffchain,
    identity: config.SVC_IDENTITY_STORE === 'registry' ? { kind: 'registry' } : { kind: 'file', path: identityPath(config) },
    licenseKey: config.SVC_LICENSE_KEY,
    nonceTtlSeconds: config.SVC_NONCE_TTL_SECONDS,
    peerTimeoutMs: config.SVC_PEER_TIMEOUT_MS,
    apiKeyHeader: config.API_KEY_NAME,
  });
});

export const getProofs = once((): Proofs => createProofs({ repository: getLedgerRuntime().repository, signer: () => getAdmin().identity() }));

/** Checkpoints and proofs as this caller may read them (hash-level facts: any reader). */
export function proofsFor(principal: Principal): Proofs {
  return guardProofs(getProofs(), getAccessControl(), principal);
}

/** The chains as C2SP transparency logs, signed with the node identity. */
export const getTlog = once((): Tlog => {
  const config = getConfig();
  return createTlog({
    repository: getLedgerRuntime().repository,
    tiles: createTileRepository({ client: documentClient(), tableName: config.SVC_LEDGER_TABLE }),
    signer: () => getAdmin().identity(),
    // Unset, the name is the node's own: unique per node, and stable as long as its identity is.
    origin: (nodeId) => config.SVC_TLOG_ORIGIN ?? `verifiable-ledger.invalid/${nodeId}`,
  });
});

export function tlogFor(principal: Principal): Tlog {
  return guardTlog(getTlog(), getAccessControl(), principal);
}
