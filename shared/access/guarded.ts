/**
 * The ledger and its proofs as one caller may use them: every call is checked by the policy before it
 * reaches the domain. REST handlers, GraphQL resolvers and contract emits get these, never the bare
 * ledger; only the service's own bookkeeping (a channel's activity records, Main Chain anchors) writes
 * through the bare one, after its own check.
 */
import type { AppendOptions, Ledger } from '../ledger/ledger.ts';
import type { Proofs } from '../ledger/proofs.ts';
import type { Tlog } from '../tlog/tlog.ts';
import type { AccessControl } from './access.ts';
import type { Principal } from './policy.ts';

export function guardLedger(ledger: Ledger, access: AccessControl, principal: Principal): Ledger {
  // An Idempotency-Key is its caller's own: two callers' equal keys never meet (nor see each other's answers).
  const ownKeys = (options: AppendOptions | undefined): AppendOptions | undefined =>
    options?.idempotency ? { idempotency: { key: options.idempotency.key, caller: principal.key_id ?? '-' } } : options;
  return {
    async listChains() {
      access.check(principal, 'chain.read_metadata', { kind: 'service' });
      return ledger.listChains();
    },
    async createSubChain(name, options) {
      access.check(principal, 'chain.create', { kind: 'chain', name, channel: null });
      // Channels' chains are made by the business group with its own checks, never through a caller's ledger.
      return ledger.createSubChain(name, { ...options, allowChannel: false });
    },
    async getStats(chainName) {
      await access.chain(principal, 'chain.read_metadata', chainName);
      return ledger.getStats(chainName);
    },
    async listBlocks(chainName, page) {
      await access.chain(principal, 'chain.read', chainName);
      return ledger.listBlocks(chainName, page);
    },
    async getBlock(chainName, address, options) {
      await access.chain(principal, 'chain.read', chainName);
      return ledger.getBlock(chainName, address, options);
    },
    async appendEvent(chainName, draft, options) {
      await access.chain(principal, 'chain.append', chainName);
      return ledger.appendEvent(chainName, draft, ownKeys(options));
    },
    async appendEvents(chainName, drafts, options) {
      // Checked once, before anything is prepared or written: a refused batch appends nothing.
      await access.chain(principal, 'chain.append', chainName);
      return ledger.appendEvents(chainName, drafts, ownKeys(options));
    },
    async submitProof(chainName) {
      await access.chain(principal, 'chain.anchor', chainName);
      return ledger.submitProof(chainName);
    },
    async traceEntity(entityId, chainName, options) {
      if (chainName !== undefined) {
        await access.chain(principal, 'chain.read', chainName);
        return ledger.traceEntity(entityId, chainName, options);
      }
      // Across all chains: the events of chains this caller may not read are left out, as if absent,
      // before any off-chain payload is fetched.
      const mayRead = access.chainReader(principal);
      const trace = await ledger.traceEntity(entityId);
      const readable = new Set<string>();
      for (const name of trace.chains) if (await mayRead(name)) readable.add(name);
      const events = trace.events.filter((e) => readable.has(e.chain_name));
      return {
        entity_id: trace.entity_id,
        chains: trace.chains.filter((name) => readable.has(name)),
        events: options?.resolveCid ? await ledger.resolveEvents(events) : events,
      };
    },
    async eraseSubject(subjectId, by) {
      access.check(principal, 'subject.erase', { kind: 'service' });
      // Who erased is the caller's key, whatever the request said.
      return ledger.eraseSubject(subjectId, { ...by, erased_by: principal.key_id });
    },
    describe: () => ledger.describe(),
    resolveEvents: (events) => ledger.resolveEvents(events),
  };
}

/** The chains as C2SP logs: checkpoints and tiles are hash-level facts (any reader); the key is public. */
export function guardTlog(tlog: Tlog, access: AccessControl, principal: Principal): Tlog {
  const metadata = (chainName: string) => access.chain(principal, 'chain.read_metadata', chainName);
  return {
    verifierKey: () => tlog.verifierKey(),
    async checkpoint(chainName) {
      await metadata(chainName);
      return tlog.checkpoint(chainName);
    },
    async tile(chainName, path) {
      await metadata(chainName);
      return tlog.tile(chainName, path);
    },
    async signedNote(chainName, size, rootHex) {
      await metadata(chainName);
      return tlog.signedNote(chainName, size, rootHex);
    },
  };
}

export function guardProofs(proofs: Proofs, access: AccessControl, principal: Principal): Proofs {
  const metadata = (chainName: string) => access.chain(principal, 'chain.read_metadata', chainName);
  return {
    async checkpoint(chainName) {
      await metadata(chainName);
      return proofs.checkpoint(chainName);
    },
    async inclusion(chainName, rawIndex, treeSize) {
      await metadata(chainName);
      return proofs.inclusion(chainName, rawIndex, treeSize);
    },
    async evidence(chainName, request) {
      // Proofs are hash-level facts; the blocks themselves are the chain's contents.
      await access.chain(principal, request.withBlocks ? 'chain.read' : 'chain.read_metadata', chainName);
      return proofs.evidence(chainName, request);
    },
    async consistency(chainName, first, second) {
      await metadata(chainName);
      return proofs.consistency(chainName, first, second);
    },
    async anchor(chainName, rawIndex) {
      await metadata(chainName);
      return proofs.anchor(chainName, rawIndex);
    },
    async verify(chainName) {
      await metadata(chainName);
      return proofs.verify(chainName);
    },
  };
}
