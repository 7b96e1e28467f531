/**
 * What a verified client trusts, and how it moves on (docs/clients.md): the pinned log key, each chain's trusted
 * state (the latest checkpoint verified), and the check of an evidence answer against it. A checkpoint is accepted
 * when it is signed by the pinned key, names the log, has the witness cosignatures required, and is consistent
 * (RFC 9162) with the trusted state before it; a block when its contents hash to its `hash` and that hash is a
 * leaf of the trusted tree. The client asks the service for the evidence; the prover sends no request of its own
 * but the one that fetches the node's key on first use, when none is pinned.
 */
import { checkBlock, checkLinks } from './blocks.ts';
import { VerificationError } from './errors.ts';
import type { StateStore, TrustedState } from './state.ts';
import {
  type NoteKey,
  equalBytes,
  fromBase64,
  fromHex,
  leafHash,
  openNote,
  parseCheckpoint,
  parseVkey,
  toBase64,
  toHex,
  verifiedCosigners,
  verifyConsistency,
  verifyInclusion,
} from './tlog.ts';
import type { Block, Evidence } from './types.ts';

/** Proofs of one call against a state another client sharing the store keeps moving: past these, it says so. */
const SHARED_STORE_ATTEMPTS = 5;

/** What an evidence request asks for: proofs at a fixed size, or the latest checkpoint with the consistency from a known one. */
export interface EvidenceQuery {
  tree_size?: number;
  known_size?: number;
  blocks?: boolean | undefined;
  witnessed?: boolean;
}

export interface ProverDeps {
  store: StateStore;
  /** The log's verifier key, given; unset, the node's own (`fetchVkey`) is pinned on first use. */
  vkey?: string | undefined;
  fetchVkey: () => Promise<string>;
  witnesses?: { keys: readonly string[]; required?: number } | undefined;
  /** One evidence request to the service. */
  evidence: (chain: string, indices: number[], query: EvidenceQuery) => Promise<Evidence>;
}

export class Prover {
  readonly #deps: ProverDeps;
  readonly #witnesses: { keys: NoteKey[]; required: number } | undefined;
  #key: Promise<NoteKey> | undefined;
  /** One checkpoint update at a time per log: two answers verified at once must not undo each other. */
  readonly #locks = new Map<string, Promise<unknown>>();

  constructor(deps: ProverDeps) {
    this.#deps = deps;
    if (deps.witnesses) {
      // A witness is its key: the same key listed twice (another spelling, another name) counts once.
      const keys = [...new Map(deps.witnesses.keys.map(parseVkey).map((key) => [toHex(key.publicKey), key])).values()];
      const required = deps.witnesses.required ?? keys.length;
      if (!(required >= 0 && required <= keys.length)) throw new TypeError(`cannot require ${required} of ${keys.length} witnesses`);
      this.#witnesses = { keys, required };
    }
  }

  /** The trusted state of a chain, if there is one. */
  async trustedState(chain: string): Promise<TrustedState | undefined> {
    const key = await this.logKey();
    const text = await this.#deps.store.get(`log:${key.name}/${chain}`);
    return text ? (JSON.parse(text) as TrustedState) : undefined;
  }

  /** The pinned log key: given, stored, or (first use) the node's own, then stored. */
  logKey(): Promise<NoteKey> {
    this.#key ??= (async () => {
      const given = this.#deps.vkey;
      const stored = await this.#deps.store.get('vkey');
      if (given) {
        const key = parseVkey(given);
        if (stored !== key.vkey) await this.#deps.store.set('vkey', key.vkey);
        return key;
      }
      if (stored) return parseVkey(stored);
      const key = parseVkey(await this.#deps.fetchVkey());
      await this.#deps.store.set('vkey', key.vkey);
      return key;
    })();
    this.#key.catch(() => {
      this.#key = undefined;
    });
    return this.#key;
  }

  async #locked<T>(log: string, work: () => Promise<T>): Promise<T> {
    const before = this.#locks.get(log) ?? Promise.resolve();
    const run = before.then(work, work);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.#locks.set(log, settled);
    try {
      return await run;
    } finally {
      if (this.#locks.get(log) === settled) this.#locks.delete(log);
    }
  }

  /**
   * Proves `indices` (ascending) of `chain` in one evidence request: against the trusted tree when they
   * are all in it, else against the latest checkpoint, verified and made the trusted state. `have` are
   * blocks the caller already checked; `withBlocks` asks the service for the blocks as stored.
   */
  async prove(
    chain: string,
    indices: number[],
    options: { have?: readonly Block[]; withBlocks?: boolean; advance?: boolean },
  ): Promise<{ blocks: Map<number, Block>; state: TrustedState }> {
    const key = await this.logKey();
    const log = `${key.name}/${chain}`;
    const highest = indices[indices.length - 1] ?? -1;
    const current = await this.trustedState(chain);
    if (current && !options.advance && highest < current.size) {
      const evidence = await this.#deps.evidence(chain, indices, { tree_size: current.size, blocks: options.withBlocks });
      if (evidence.tree_size !== current.size || evidence.checkpoint !== null) {
        throw new VerificationError('missing-proof', `asked for proofs at the trusted size ${current.size}, got size ${evidence.tree_size}`, chain);
      }
      return { blocks: this.#checkLeaves(chain, indices, evidence, current, options), state: current };
    }
    return this.#locked(log, async () => {
      // Against the state the store holds; if another client sharing it moved it meanwhile, again against that one, so
      // that what this client accepts is proven to agree with what the other did (a server cannot show each its own).
      for (let attempt = 1; ; attempt += 1) {
        const text = await this.#deps.store.get(`log:${log}`);
        const trusted = text ? (JSON.parse(text) as TrustedState) : undefined;
        // With a witness policy, the newest checkpoint the witnesses cosigned (the service witnesses it now if needed).
        const evidence = await this.#deps.evidence(chain, indices, {
          known_size: trusted?.size,
          blocks: options.withBlocks,
          witnessed: this.#witnesses !== undefined,
        });
        const state = this.#acceptCheckpoint(chain, log, key, evidence, trusted);
        const blocks = this.#checkLeaves(chain, indices, evidence, state, options);
        if ((trusted && state.size <= trusted.size) || (await this.#replace(`log:${log}`, text, state))) return { blocks, state };
        if (attempt >= SHARED_STORE_ATTEMPTS) throw new Error(`the trusted state of '${chain}' kept changing under this client (${attempt} tries)`);
      }
    });
  }

  /**
   * Stores a newly trusted state in place of `expected` (the text it was proven from), if the store still holds that:
   * false when another client sharing the store moved it meanwhile. A store without `update` is set.
   */
  async #replace(key: string, expected: string | undefined, state: TrustedState): Promise<boolean> {
    const text = JSON.stringify(state);
    const { store } = this.#deps;
    if (!store.update) {
      await store.set(key, text);
      return true;
    }
    let replaced = false;
    await store.update(key, (current) => {
      if (current !== expected) return undefined;
      replaced = true;
      return text;
    });
    return replaced;
  }

  /** The evidence's checkpoint, checked as a new trusted state: signature, origin, witnesses, no rollback or fork, consistency. */
  #acceptCheckpoint(chain: string, log: string, key: NoteKey, evidence: Evidence, trusted: TrustedState | undefined): TrustedState {
    if (typeof evidence.checkpoint !== 'string') throw new VerificationError('missing-proof', 'the answer has no signed checkpoint', chain);
    const { text, signatures } = openNote(evidence.checkpoint, key, chain);
    const checkpoint = parseCheckpoint(text, chain);
    if (checkpoint.origin !== log) throw new VerificationError('origin', `the checkpoint is of '${checkpoint.origin}', not of '${log}'`, chain);
    if (checkpoint.size !== evidence.tree_size) {
      throw new VerificationError('missing-proof', `the proofs are for ${evidence.tree_size} blocks, the checkpoint for ${checkpoint.size}`, chain);
    }
    if (this.#witnesses) {
      const cosigners = verifiedCosigners(text, signatures, this.#witnesses.keys, chain);
      if (cosigners.length < this.#witnesses.required) {
        throw new VerificationError(
          'witnesses',
          `the checkpoint of ${checkpoint.size} blocks has ${cosigners.length} of the ${this.#witnesses.required} witness cosignatures required`,
          chain,
        );
      }
    }
    if (trusted) {
      const trustedRoot = fromBase64(trusted.root)!;
      if (checkpoint.size < trusted.size) {
        throw new VerificationError('rollback', `the log shows ${checkpoint.size} blocks, after showing ${trusted.size}`, chain);
      }
      if (checkpoint.size === trusted.size && !equalBytes(checkpoint.root, trustedRoot)) {
        throw new VerificationError('fork', `two different roots for ${checkpoint.size} blocks`, chain);
      }
      if (checkpoint.size > trusted.size) {
        if (!evidence.consistency || evidence.consistency.from !== trusted.size) {
          throw new VerificationError('missing-proof', `no consistency proof from the trusted size ${trusted.size}`, chain);
        }
        verifyConsistency(trusted.size, checkpoint.size, evidence.consistency.proof.map(hash32(chain)), trustedRoot, checkpoint.root, chain);
      }
    }
    return { origin: log, size: checkpoint.size, root: toBase64(checkpoint.root), checkpoint: evidence.checkpoint };
  }

  /**
   * Checks the leaves against `state`'s root: each run of consecutive indices by its last block's
   * inclusion and the links below it. The blocks come from the caller (`have`, already hash-checked) or
   * from the evidence (`withBlocks`), checked here.
   */
  #checkLeaves(
    chain: string,
    indices: number[],
    evidence: Evidence,
    state: TrustedState,
    options: { have?: readonly Block[]; withBlocks?: boolean },
  ): Map<number, Block> {
    const blocks = new Map<number, Block>();
    for (const block of options.have ?? []) blocks.set(block.index, block);
    if (options.withBlocks) {
      for (const block of evidence.blocks ?? []) {
        checkBlock(block, chain);
        blocks.set(block.index, block);
      }
    }
    const root = fromBase64(state.root)!;
    let runStart = 0;
    for (let i = 0; i < indices.length; i += 1) {
      const index = indices[i]!;
      const block = blocks.get(index);
      if (!block) throw new VerificationError('missing-proof', `block ${index} is missing from the answer`, chain);
      if (i + 1 < indices.length && indices[i + 1] === index + 1) continue;
      // `index` ends a run: prove it, and link the run down to its first block.
      const proof = evidence.inclusion.find((p) => p.leaf_index === index);
      if (!proof) throw new VerificationError('missing-proof', `no inclusion proof for block ${index}`, chain);
      verifyInclusion(index, state.size, leafHash(fromHex(block.hash)), proof.proof.map(hash32(chain)), root, chain);
      checkLinks(
        indices.slice(runStart, i + 1).map((n) => blocks.get(n)!),
        chain,
      );
      runStart = i + 1;
    }
    return blocks;
  }
}

const hash32 = (chain: string) => (b64: string) => {
  const bytes = fromBase64(b64);
  if (bytes?.length !== 32) throw new VerificationError('missing-proof', 'a proof hash is not 32 bytes of base64', chain);
  return bytes;
};
