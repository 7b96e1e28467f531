/**
 * Wiring that needs the node identity: the admin group, the ledger's signed checkpoints and proofs, and
 * the C2SP logs. Its own module, so that only functions that need it bundle it.
 */
import { guardProofs, guardTlog } from '../access/guarded.ts';
import type { Principal } from '../access/policy.ts';
import { type Admin, createAdmin } from '../admin/admin.ts';
import { identityPath } from '../config.ts';
import { createProofs, type Proofs, type WitnessedCheckpoints } from '../ledger/proofs.ts';
import { checkpointText } from '../tlog/note.ts';
import { type CheckpointToWitness, createWitnessing, parseWitnesses, type Witnessing } from '../tlog/witnessing.ts';
import { createWitnessRepository } from '../storage/witness-repository.ts';
import { createAdminRepository } from '../storage/admin-repository.ts';
import { createBusinessRepository } from '../storage/business-repository.ts';
import { createTileRepository } from '../storage/tile-repository.ts';
import { createTlog, type Tlog } from '../tlog/tlog.ts';
import { type Core, once } from './core.ts';
import { logger } from '../log.ts';

export interface NodeWiring {
  admin(): Admin;
  /** Checkpoints and proofs as this caller may read them (hash-level facts: any reader). */
  proofsFor(principal: Principal): Proofs;
  /** The chains as C2SP transparency logs, signed with the node identity, as this caller may read them. */
  tlogFor(principal: Principal): Tlog;
  /** SVC_TLOG_PUBLIC: the logs are for anyone (no key), so their answers may be kept by shared caches. */
  openLogs: boolean;
  /** The witnesses of the checkpoints (none unless SVC_WITNESSES names some). */
  witnessing(): Witnessing;
  /** Sends these chains' checkpoints to the witnesses, each if its turn is free; failures are logged and counted. */
  witnessChains(chainNames: readonly string[]): Promise<void>;
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
      peerTimeoutMs: settings.SVC_PEER_TIMEOUT_MS,
      apiKeyHeader: settings.API_KEY_NAME,
    });
  });
  const witnessing = once(
    (): Witnessing =>
      createWitnessing({
        witnesses: parseWitnesses(settings.SVC_WITNESSES),
        store: createWitnessRepository({ client: core.documentClient(), tableName: settings.SVC_LEDGER_TABLE }),
        intervalMs: settings.SVC_WITNESS_INTERVAL_MS,
        timeoutMs: settings.SVC_WITNESS_TIMEOUT_MS,
      }),
  );
  /** The chain's head checkpoint, as the witnesses are sent it. */
  const toWitness = async (chainName: string): Promise<CheckpointToWitness> => {
    const head = await proofs().checkpoint(chainName);
    const root = Buffer.from(head.root, 'hex');
    const name = (await tlog().verifierKey()).split('+')[0]!;
    return {
      note: await tlog().signedNote(head.chain_name, head.tree_size, head.root),
      text: checkpointText({ origin: `${name}/${head.chain_name}`, size: head.tree_size, root }),
      size: head.tree_size,
      root: root.toString('base64'),
      consistency: async (from) => (await proofs().consistency(chainName, from, head.tree_size)).proof.map((h) => Buffer.from(h, 'hex').toString('base64')),
    };
  };
  const witnessChain = async (chainName: string) => {
    await witnessing().witness(chainName, () => toWitness(chainName));
  };
  const witnessed = (): WitnessedCheckpoints | undefined =>
    witnessing().enabled ? { latest: (chainName) => witnessing().latestCosigned(chainName), witnessNow: witnessChain } : undefined;
  const proofs = once(
    (): Proofs =>
      createProofs({
        repository: core.ledgerRuntime().repository,
        signer: () => admin().identity(),
        signedNote: (chainName, size, rootHex) => tlog().signedNote(chainName, size, rootHex),
        witnessed: witnessed(),
        kept: {
          get: (key) => core.readCache().lookup('evidence', key),
          // Held as objects, counted at 6 bytes a character of its JSON: generous (a segment's objects take 5.4 bytes a
          // byte of its packed binary, which is smaller than JSON; shared/storage/ledger-blocks.ts).
          set: (key, evidence) => core.readCache().set('evidence', key, evidence, JSON.stringify(evidence).length * 6),
        },
      }),
  );
  const tlog = once(
    (): Tlog =>
      createTlog({
        repository: core.ledgerRuntime().repository,
        tiles: createTileRepository({ client: core.documentClient(), tableName: settings.SVC_LEDGER_TABLE, cache: core.readCache() }),
        signer: () => admin().identity(),
        // Unset, the name is the node's own: unique per node, and stable as long as its identity is.
        origin: (nodeId) => settings.SVC_TLOG_ORIGIN ?? `verifiable-ledger.invalid/${nodeId}`,
        witnessed: witnessed(),
      }),
  );
  return {
    admin,
    proofsFor: (principal) => guardProofs(proofs(), core.access(), principal),
    // Open, the logs answer anyone: hash-level facts, which the policy gives any reader of any chain.
    tlogFor: (principal) => (settings.SVC_TLOG_PUBLIC ? tlog() : guardTlog(tlog(), core.access(), principal)),
    openLogs: settings.SVC_TLOG_PUBLIC,
    witnessing,
    async witnessChains(chainNames) {
      if (!witnessing().enabled) return;
      await Promise.all(
        [...new Set(chainNames)].map((chainName) =>
          witnessChain(chainName).catch((error) => logger.warn('witnessing failed', { chain: chainName, error: String(error) })),
        ),
      );
    },
  };
}
