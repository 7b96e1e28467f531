/**
 * Contracts (docs/rules.md, "Business group"): versions published by an owner (the organization that
 * published an id's first version, or the admins), run in the sandbox with the caller's rights; what a
 * run emits is appended as the caller appending it, all or none.
 */
import semver from 'semver';
import type * as z from 'zod';
import { guardLedger } from '../access/guarded.ts';
import { isAdmin, type Principal } from '../access/policy.ts';
import { ConflictError, ForbiddenError, NotFoundError, UnprocessableError, UnreadablePayloadError, ValidationError } from '../errors.ts';
import { type EventDraft, parseEventRequest } from '../ledger/events.ts';
import { checkShape } from '../json-shape.ts';
import { sha256Hex } from '../ledger/hashing.ts';
import type { PayloadOpener } from '../ledger/offchain-port.ts';
import type { BusinessContext } from './context.ts';
import { type contractInput, type executeInput, MAX_EMITS, MAX_INLINE_SOURCE_BYTES } from './inputs.ts';
import type { ContractOwner, ContractVersionRecord } from './repository.ts';

/** The owner a publisher becomes: its organization, or the admins. */
function ownerFor(principal: Principal): ContractOwner {
  return isAdmin(principal) || principal.org_id === null ? { admins: true } : { org_id: principal.org_id };
}

/** How an owner is shown: the organization id, or null for the admins. */
function ownerName(owner: ContractOwner | undefined): string | null {
  return owner && 'org_id' in owner ? owner.org_id : null;
}

/** A published contract's source, run by the service: its publisher's right to read it was checked when it was published. */
const PUBLISHED_SOURCE: PayloadOpener = async () => true;

/** The most characters of contract sources fetched from IPFS an instance keeps (about 20 MB): 100 sources at the limit. */
const SOURCE_CACHE_CHARS = 10_000_000;

/** Whose run it is, for its share of the sandboxes: its organization, else its key; none with auth off. */
function callerOf(principal: Principal): string | undefined {
  return principal.org_id ? `org:${principal.org_id}` : principal.key_id ? `key:${principal.key_id}` : undefined;
}

export function createContracts({ repository, ledger, access, sandbox, stamp, readOffchain, offchain }: BusinessContext) {
  /**
   * Contract sources fetched from IPFS, by code hash (immutable, so never stale), oldest first: at most
   * SOURCE_CACHE_CHARS in all, so that many large versions run on one instance cannot grow its memory for good.
   */
  const sources = new Map<string, string>();
  let cachedChars = 0;
  const keep = (codeHash: string, source: string) => {
    // Two runs that missed it at once both fetched it: counted once.
    if (source.length > SOURCE_CACHE_CHARS || sources.has(codeHash)) return;
    sources.set(codeHash, source);
    cachedChars += source.length;
    for (const [hash, kept] of sources) {
      if (cachedChars <= SOURCE_CACHE_CHARS) break;
      sources.delete(hash);
      cachedChars -= kept.length;
    }
  };

  async function contractSource(version: ContractVersionRecord): Promise<string> {
    if (version.implementation !== null) return version.implementation;
    const cached = sources.get(version.code_hash);
    if (cached !== undefined) return cached;
    if (version.source_kept) {
      const kept = await repository.getContractSource(version.contract_id, version.version);
      if (kept === undefined || sha256Hex(kept) !== version.code_hash) {
        throw new UnprocessableError(`the stored implementation of version ${version.version} no longer matches its code hash`);
      }
      keep(version.code_hash, kept);
      return kept;
    }
    // Read for the service, not for the caller, who never sees it: its publisher could read it, and its hash is recorded.
    // Not a citation (readOffchain's answer): the service's own record of the version points at the source.
    const source = await offchain.get(version.implementation_cid!, version.implementation_nonce!, PUBLISHED_SOURCE).catch((error: unknown) => {
      if (error instanceof UnreadablePayloadError) {
        throw new UnprocessableError(`the stored implementation of version ${version.version} cannot be read from IPFS`, { cause: error });
      }
      throw error;
    });
    if (typeof source !== 'string' || sha256Hex(source) !== version.code_hash) {
      throw new UnprocessableError('the stored implementation no longer matches its code hash');
    }
    keep(version.code_hash, source);
    return source;
  }

  /** Who owns a contract id: the recorded owner; the admins for ids published before owners were recorded; undefined for a new id. */
  async function contractOwner(contractId: string, versions?: ContractVersionRecord[]): Promise<ContractOwner | undefined> {
    const recorded = await repository.getContractOwner(contractId);
    if (recorded) return recorded;
    const existing = versions ?? (await repository.listContractVersions(contractId));
    return existing.length > 0 ? { admins: true } : undefined;
  }

  return {
    async registerContract(principal: Principal, input: z.output<typeof contractInput>) {
      const resource = (owner: ContractOwner | undefined) => ({
        kind: 'contract' as const,
        contract_id: input.contract_id,
        owner: owner === undefined ? undefined : ownerName(owner),
      });
      // Checked before any of the caller's code is fetched or compiled. An admin may publish into any id,
      // so its check needs no read: the owner it publishes under is looked up only when it writes.
      access.check(principal, 'contract.publish', resource(isAdmin(principal) ? undefined : await contractOwner(input.contract_id)));
      let source: string;
      if (input.implementation) {
        source = input.implementation;
      } else {
        // The publisher cites it: it must be able to read it (a payload of another scope is refused).
        const fetched = await readOffchain(
          input.implementation_cid!,
          input.implementation_nonce!,
          'implementation_cid',
          access.payloadOpener(principal, { citing: true }),
        );
        if (typeof fetched !== 'string') throw new UnprocessableError('implementation_cid must hold the source as a JSON string');
        // The limit an inline source has, held here for both ways of giving it: a source cited by CID had none (red team).
        if (fetched.length > MAX_INLINE_SOURCE_BYTES) {
          throw ValidationError.single(
            ['body', 'implementation_cid'],
            `The source it holds is ${fetched.length} characters long; a contract's source is at most ${MAX_INLINE_SOURCE_BYTES}`,
          );
        }
        source = fetched;
      }
      await sandbox.check(source, callerOf(principal));
      const version: ContractVersionRecord = {
        contract_id: input.contract_id,
        version: input.version,
        code_hash: sha256Hex(source),
        implementation: input.implementation ?? null,
        implementation_cid: input.implementation_cid ?? null,
        implementation_nonce: input.implementation_nonce ?? null,
        metadata: input.metadata,
        created_at: stamp(),
      };
      // An admin publishing into an organization's contract keeps it that organization's.
      const owner = isAdmin(principal) ? ((await contractOwner(input.contract_id)) ?? ownerFor(principal)) : ownerFor(principal);
      const outcome = await repository.publishContractVersion(version, owner);
      if (outcome === 'version_exists') {
        throw new ConflictError(`Contract '${input.contract_id}' version ${input.version} already exists; versions are immutable`);
      }
      if (outcome === 'owned_by_another') {
        // Another organization published the id's first version between our check and our write.
        access.check(principal, 'contract.publish', resource(await contractOwner(input.contract_id)));
        throw new ForbiddenError(`Missing permission 'contract.publish' on contract '${input.contract_id}': it belongs to another owner`);
      }
      return { contract_id: version.contract_id, version: version.version, code_hash: version.code_hash, owner: ownerName(owner) };
    },

    async getContract(principal: Principal, contractId: string) {
      access.check(principal, 'contract.read', { kind: 'contract', contract_id: contractId, owner: undefined });
      const versions = await repository.listContractVersions(contractId);
      if (versions.length === 0) throw new NotFoundError(`Contract '${contractId}' not found`);
      const sorted = [...versions].sort((a, b) => semver.compare(a.version, b.version));
      return {
        contract_id: contractId,
        owner: ownerName(await contractOwner(contractId, versions)),
        latest: sorted.at(-1)!.version,
        versions: sorted.map((v) => ({ version: v.version, code_hash: v.code_hash, metadata: v.metadata, created_at: v.created_at })),
      };
    },

    /**
     * Runs with the caller's rights: its emits are appended as the caller appending them, all or none. `keyStillHeld`
     * is checked again before the emits are appended: a run may wait for a slot and run for seconds, and a key revoked
     * meanwhile appends nothing (401).
     */
    async executeContract(principal: Principal, input: z.output<typeof executeInput>, keyStillHeld: () => Promise<void> = async () => {}) {
      access.check(principal, 'contract.execute', { kind: 'contract', contract_id: input.contract_id, owner: undefined });
      const versions = await repository.listContractVersions(input.contract_id);
      if (versions.length === 0) throw new NotFoundError(`Contract '${input.contract_id}' not found`);
      const chosen = input.version
        ? versions.find((v) => v.version === input.version)
        : versions.reduce((best, v) => (semver.gt(v.version, best.version) ? v : best));
      if (!chosen) throw new NotFoundError(`Contract '${input.contract_id}' has no version ${input.version}`);

      const started = performance.now();
      const result = await sandbox.run(await contractSource(chosen), input.event, input.context, callerOf(principal));
      // What a contract answers keeps the shape a request's body keeps (its depth, no '__proto__' keys, well-formed
      // strings): its emits are appended as the caller's events, which the events routes would have refused nested
      // deeper (red team), and its result is the caller's answer (8,000 levels had gone back as they were, red team).
      checkShape(result, ['result'], "The contract's result");

      let emitted: string[] = [];
      const emit = (result as { emit?: unknown } | null)?.emit;
      if (emit !== undefined) {
        if (!Array.isArray(emit) || emit.length > MAX_EMITS) {
          throw new UnprocessableError(`The contract's emit must be a list of at most ${MAX_EMITS} events`);
        }
        const chain = input.context.chain;
        if (!chain) throw new UnprocessableError('The contract emits events but context.chain names no chain');
        let drafts: EventDraft[];
        try {
          drafts = emit.map((e) => parseEventRequest(e));
        } catch (error) {
          throw new UnprocessableError(`The contract emitted an invalid event: ${(error as Error).message}`);
        }
        if (drafts.length > 0) {
          await keyStillHeld();
          // One block per event, in order, in one transaction; refused or failed, nothing is appended.
          const appended = await guardLedger(ledger, access, principal).appendEvents(chain, drafts);
          emitted = appended.map((a) => a.event_id);
        }
      }
      return {
        contract_id: chosen.contract_id,
        version: chosen.version,
        result,
        emitted_event_ids: emitted,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
      };
    },
  };
}
