/**
 * The ledger and its proofs as one caller may use them: every call is checked by the policy before it
 * reaches the domain. REST handlers, GraphQL resolvers and contract emits get these, never the bare
 * ledger; only the service's own bookkeeping (a channel's activity records, Main Chain anchors) writes
 * through the bare one, after its own check.
 */
import { type AppendOptions, type Ledger, TRACE_CHANNELS_MAX } from '../ledger/ledger.ts';
import type { Proofs } from '../ledger/proofs.ts';
import type { Tlog } from '../tlog/tlog.ts';
import { NotFoundError } from '../errors.ts';
import { type OffchainStore, type PayloadScope, payloadScope, type StoredPayload } from '../ledger/offchain-port.ts';
import type { AccessControl, Membership } from './access.ts';
import type { Principal } from './policy.ts';

export function guardLedger(ledger: Ledger, access: AccessControl, principal: Principal): Ledger {
  // Off-chain payloads open for this caller only, whatever a request says: what it may read, and what it may cite.
  const opener = access.payloadOpener(principal);
  const citing = access.payloadOpener(principal, { citing: true });
  // An Idempotency-Key is its caller's own: two callers' equal keys never meet (nor see each other's answers).
  const ownKeys = (options: AppendOptions | undefined, chainName: string): AppendOptions => ({
    ...(options?.idempotency ? { idempotency: { key: options.idempotency.key, caller: principal.key_id ?? '-' } } : {}),
    opener: citing,
    stillAllowed: () => access.chain(principal, 'chain.append', chainName),
  });
  /** The channels' chains this caller reads, listed once a request (GraphQL's aliased traces share them). */
  let readableChannels: Promise<string[]> | undefined;
  return {
    async listChains(page) {
      access.check(principal, 'chain.read_metadata', { kind: 'service' });
      return ledger.listChains(page);
    },
    async getChain(name) {
      access.check(principal, 'chain.read_metadata', { kind: 'service' });
      return ledger.getChain(name);
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
      return ledger.listBlocks(chainName, { ...page, opener });
    },
    async getBlock(chainName, address, options) {
      await access.chain(principal, 'chain.read', chainName);
      return ledger.getBlock(chainName, address, { ...options, opener });
    },
    async appendEvent(chainName, draft, options) {
      await access.chain(principal, 'chain.append', chainName);
      return ledger.appendEvent(chainName, draft, ownKeys(options, chainName));
    },
    async appendEvents(chainName, drafts, options) {
      // Checked once, before anything is prepared or written: a refused batch appends nothing.
      await access.chain(principal, 'chain.append', chainName);
      return ledger.appendEvents(chainName, drafts, ownKeys(options, chainName));
    },
    async submitProof(chainName) {
      await access.chain(principal, 'chain.anchor', chainName);
      return ledger.submitProof(chainName);
    },
    async traceEntity(entityId, chainName, options) {
      if (chainName !== undefined) {
        await access.chain(principal, 'chain.read', chainName);
        return ledger.traceEntity(entityId, chainName, { ...options, opener });
      }
      // Across all chains: the events of chains this caller may not read are left out, as if absent,
      // before any off-chain payload is fetched.
      const mayRead = access.chainReader(principal);
      // The index is read only in the scopes this caller reads: the chains any reader reads and the channels' chains of
      // its organization (an admin's: all). The ledger also skips what it may not see as it reads (a channel left since),
      // and what it answers is checked again here, where the rule is held: the guard never trusts the ledger to have applied it.
      readableChannels ??= access.readableChannelChains(principal, TRACE_CHANNELS_MAX);
      const channels = await readableChannels;
      const trace = await ledger.traceEntity(entityId, undefined, { limit: options?.limit, cursor: options?.cursor, channels, visible: mayRead });
      const readable = new Set<string>();
      for (const name of trace.chains) if (await mayRead(name)) readable.add(name);
      const events = trace.events.filter((e) => readable.has(e.chain_name));
      return {
        entity_id: trace.entity_id,
        chains: trace.chains.filter((name) => readable.has(name)),
        events: options?.resolveCid ? await ledger.resolveEvents(events, opener) : events,
        next_cursor: trace.next_cursor,
      };
    },
    async eraseSubject(subjectId, by) {
      access.check(principal, 'subject.erase', { kind: 'service' });
      // Who erased is the caller's key, whatever the request said.
      return ledger.eraseSubject(subjectId, { ...by, erased_by: principal.key_id });
    },
    describe: () => ledger.describe(),
    resolveEvents: (events) => ledger.resolveEvents(events, opener),
  };
}

/** Where a caller puts a payload off chain: a chain's events, a channel's collection, or (neither) its organization. */
export interface OffchainTarget {
  chain?: string | undefined;
  channel?: string | undefined;
  collection?: string | undefined;
}

/** Off-chain payloads as one caller may use them: put for a scope it may write, read only in scopes it may read. */
export interface CallerOffchain {
  put(value: unknown, target: OffchainTarget): Promise<StoredPayload>;
  get(cid: string, nonce: string): Promise<unknown>;
}

export function guardOffchain(
  offchain: OffchainStore,
  access: AccessControl<object, Membership & { collections: readonly string[] }>,
  principal: Principal,
): CallerOffchain {
  return {
    async put(value, target) {
      access.check(principal, 'offchain.write', { kind: 'service' });
      let scope: PayloadScope;
      if (target.chain !== undefined) {
        // For a chain's events: what the caller could append there, readable by who reads there.
        await access.chain(principal, 'chain.append', target.chain);
        scope = payloadScope.chain(target.chain);
      } else if (target.channel !== undefined && target.collection !== undefined) {
        const channel = await access.channel(principal, 'private_data.write', target.channel);
        if (!channel.collections.includes(target.collection)) {
          throw new NotFoundError(`Collection '${target.collection}' not found in channel '${target.channel}'`);
        }
        scope = payloadScope.collection(target.channel, target.collection);
      } else {
        // Named nowhere: its organization's (a key without one: public), so that no one else can cite it open.
        scope = principal.org_id !== null ? payloadScope.organization(principal.org_id) : payloadScope.public;
      }
      return offchain.put(value, scope);
    },
    get: (cid, nonce) => offchain.get(cid, nonce, access.payloadOpener(principal)),
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
