/**
 * Wiring that needs the node identity: the admin group, the ledger's signed checkpoints and proofs, and
 * the C2SP logs. Its own module, so that only functions that need it bundle it.
 */
import { guardProofs, guardTlog } from '../access/guarded.ts';
import type { Principal } from '../access/policy.ts';
import { type Admin, createAdmin } from '../admin/admin.ts';
import { identityPath } from '../config.ts';
import { createProofs, type Proofs } from '../ledger/proofs.ts';
import { createAdminRepository } from '../storage/admin-repository.ts';
import { createBusinessRepository } from '../storage/business-repository.ts';
import { createTileRepository } from '../storage/tile-repository.ts';
import { createTlog, type Tlog } from '../tlog/tlog.ts';
import { type Core, once } from './core.ts';

export interface NodeWiring {
  admin(): Admin;
  /** Checkpoints and proofs as this caller may read them (hash-level facts: any reader). */
  proofsFor(principal: Principal): Proofs;
  /** The chains as C2SP transparency logs, signed with the node identity, as this caller may read them. */
  tlogFor(principal: Principal): Tlog;
}

export function createNodeWiring(core: Core): NodeWiring {
  const { settings } = core;
  const admin = once((): Admin => {
    const table = { client: core.documentClient(), tableName: settings.SVC_REGISTRY_TABLE };
    return createAdmin({
      repository: createAdminRepository(table),
      organizations: createBusinessRepository(table),
      ledger: core.ledgerRuntime().ledger,
      access: core.access(),
      sealer: core.lazyOffchain,
      identity: settings.SVC_IDENTITY_STORE === 'registry' ? { kind: 'registry' } : { kind: 'file', path: identityPath(settings) },
      licenseKey: settings.SVC_LICENSE_KEY,
      nonceTtlSeconds: settings.SVC_NONCE_TTL_SECONDS,
      peerTimeoutMs: settings.SVC_PEER_TIMEOUT_MS,
      apiKeyHeader: settings.API_KEY_NAME,
    });
  });
  const proofs = once(
    (): Proofs =>
      createProofs({
        repository: core.ledgerRuntime().repository,
        signer: () => admin().identity(),
        signedNote: (chainName, size, rootHex) => tlog().signedNote(chainName, size, rootHex),
      }),
  );
  const tlog = once(
    (): Tlog =>
      createTlog({
        repository: core.ledgerRuntime().repository,
        tiles: createTileRepository({ client: core.documentClient(), tableName: settings.SVC_LEDGER_TABLE }),
        signer: () => admin().identity(),
        // Unset, the name is the node's own: unique per node, and stable as long as its identity is.
        origin: (nodeId) => settings.SVC_TLOG_ORIGIN ?? `verifiable-ledger.invalid/${nodeId}`,
      }),
  );
  return {
    admin,
    proofsFor: (principal) => guardProofs(proofs(), core.access(), principal),
    tlogFor: (principal) => guardTlog(tlog(), core.access(), principal),
  };
}
