/**
 * The ledger group's domain: chains, blocks, events, proofs and traces (docs/rules.md, "Chains and
 * blocks" and "Anchors"). Handlers call these functions; they validate their own input and throw typed errors.
 */
import { steadyNow } from '../clock.ts';
import { ANSWER_MARGIN_MS, pause, remainingMs } from '../deadline.ts';
import { logger } from '../log.ts';
import type { ErasureRecord, PersonalData } from './subject-port.ts';
import { type AppendOptions, createIdempotency, type Replayed } from './idempotency.ts';
import { createEventDetails, type ResolvedEvent } from './event-details.ts';
import { QLDB_IMPORT_EVENT, qldbImportRecordOf, SERVICE_EVENT } from './event-types.ts';
import {
  BadRequestError,
  BlockNotFoundError,
  ChainExistsError,
  ChainNotFoundError,
  UnprocessableError,
  UnreadablePayloadError,
  ValidationError,
} from '../errors.ts';
import { chainListPosition, type LedgerRepository } from './repository.ts';
import { type ChainAppender, MAX_ATOMIC_BLOCKS, ProofSupersededError } from './appender.ts';
import { assertDraftFields, type EventDraft } from './events.ts';
import { canonicalJson, HASH_PATTERN, ZERO_HASH, sealBlock } from './hashing.ts';
import { readTraceScopes } from './trace-scopes.ts';
import { ensureTree, extendTree, headRoot } from './tree.ts';
import { MAIN_CHAIN, assertCreatableSubChainName, entityScopeOf, isChannelChainName, isWellFormedChainName } from './names.ts';
import { sizesSeen } from './sizes-seen.ts';
import type { OffchainStore, PayloadOpener, Sealer } from './offchain-port.ts';
import type { Block, BlocksPage, ChainHead, ChainInfo, ChainKind, ChainStats, EntityTrace, LedgerEvent, ProofDetails } from './types.ts';

/** The event type of a Main Chain anchor (docs/rules.md, "Anchors"). */
export const PROOF_EVENT_TYPE = SERVICE_EVENT.subChainProof;

export { MAX_ONCHAIN_EVENT_BYTES, type ResolvedEvent } from './event-details.ts';

export type BlockAddress = { kind: 'index'; index: number } | { kind: 'hash'; hash: string };

/** The largest index a block may have: its storage keys give an index 12 digits (shared/storage/keys.ts, INDEX_DIGITS). */
export const MAX_BLOCK_INDEX = 999_999_999_999;

/** "42" → index 42; 64 hex characters → that hash; anything else is the contract's 422. */
export function parseBlockAddress(raw: string): BlockAddress {
  if (/^\d{1,15}$/.test(raw)) return { kind: 'index', index: Number(raw) };
  if (HASH_PATTERN.test(raw.toLowerCase())) return { kind: 'hash', hash: raw.toLowerCase() };
  throw ValidationError.single(['path', 'index_or_hash'], 'Expected a block index (digits) or a block hash (64 hex characters)');
}

export interface AppendResult {
  event_id: string;
  block: Block;
}

export interface ProofResult {
  proof_id: string;
  /** false when nothing was added since the last proof and the existing proof is answered. */
  created: boolean;
  details: ProofDetails | null;
}

/** Where a trace's page starts and how long it is (Ledger.traceEntity). */
export interface TracePage {
  limit?: number | undefined;
  cursor?: string | undefined;
  /**
   * A trace across chains reads the entity index of the chains any reader reads and of these channels' chains
   * (`channel-<id>`), those the caller reads, at most TRACE_CHANNELS_MAX (422 past it): the index of a channel the
   * caller may not read is never read for it (shared/ledger/names.ts, entityScopeOf). None when not given.
   */
  channels?: readonly string[] | undefined;
  /**
   * Whether the caller may see a chain's events, checked again on each entry read (a scope given by mistake, or a
   * channel left since): the others are skipped as if absent, and a page none of whose entries the caller sees is not
   * answered empty while more are left: the index is read on, up to traceScanMax(limit) entries a request.
   */
  visible?: ((chainName: string) => Promise<boolean>) | undefined;
}

/**
 * The most channels' indexes one trace across chains reads (each one query at least, counted against the request's
 * reads): a caller that reads more names a chain (422 says so). Any member's writer may add an organization to its
 * channels, and an admin reads them all: at 100, a writer had taken cross-chain traces from another organization and
 * every admin by adding it to 101 channels (red team).
 */
export const TRACE_CHANNELS_MAX = 1_000;

/** A trace's page: 100 events unless asked for up to 1,000 (an entity may have millions; one answer must stay bounded). */
export const TRACE_LIMIT_DEFAULT = 100;
export const TRACE_LIMIT_MAX = 1_000;
/**
 * The fewest index entries a trace reads on through hidden or filtered-out ones before it answers what it has and a
 * cursor. Each entry is a whole block (the index projects it), so a trace's reads follow this, not the events it
 * answers: before 2026-12-06 a trace with `limit=1` read up to 1,000 blocks past hidden ones, and one GraphQL request
 * of many such traces, priced by their limits, read hundreds of MB (red team, auth on).
 */
export const TRACE_SCAN_FLOOR = 100;

/** The most index entries one trace request reads: its page and one more, at least TRACE_SCAN_FLOOR, at most TRACE_LIMIT_MAX. */
export function traceScanMax(limit: number): number {
  return Math.min(TRACE_LIMIT_MAX, Math.max(limit + 1, TRACE_SCAN_FLOOR));
}

/** The entity index position a trace goes on after: time ms, chain, index (shared/storage/keys.ts, entitySk). */
const TRACE_POSITION = /^\d{15}#[A-Za-z0-9_-]{1,64}#\d{12}$/;
/** The longest such position: a sealed cursor's position is padded to it. */
const TRACE_POSITION_MAX = 15 + 1 + 64 + 1 + 12;
/** The longest cursor a trace answers (a sealed token, base64url: about 250 characters, 415 under KMS). */
export const TRACE_CURSOR_MAX = 2_000;

/**
 * A trace's cursor, opaque: the position it goes on after names the chain, index and time of the last entry read,
 * which may be an event the caller may not see (a channel's), so it is sealed for the service itself (a token:
 * AES-256-GCM under a data key of the node's KEK, naming no key), bound to the entity and the chain filter it was
 * answered for and, across chains, to the caller's view (the channels it reads): replayed by a caller of another
 * organization, a cursor that stood on a hidden event had placed that event in time against the caller's own
 * (red team). The position is padded to its longest, so that a cursor's length says nothing of the chain's name.
 * Without a sealer (a ledger built without keys: the simulation, offline tools) it is the position in base64url.
 */
function traceCursors(sealer: Sealer | undefined) {
  const refused = (cursor: string) =>
    new UnprocessableError(`cursor '${cursor.slice(0, 40)}…' is not one a trace of this entity answered: pass a trace's next_cursor as it is`);
  /** What a cursor is bound to: the entity, the chain filter, and across chains the channels the caller reads. */
  const context = (entityId: string, chainName: string | undefined, view: readonly string[]) =>
    canonicalJson({ use: 'trace-cursor', e: entityId, c: chainName ?? null, ...(chainName === undefined ? { v: [...new Set(view)].sort() } : {}) });
  return {
    async encode(position: string, entityId: string, chainName: string | undefined, view: readonly string[]): Promise<string> {
      return sealer
        ? sealer.sealToken(position.padEnd(TRACE_POSITION_MAX), context(entityId, chainName, view))
        : Buffer.from(position, 'utf8').toString('base64url');
    },
    async decode(cursor: string, entityId: string, chainName: string | undefined, view: readonly string[]): Promise<string> {
      if (!/^[A-Za-z0-9_-]+$/.test(cursor) || cursor.length > TRACE_CURSOR_MAX) throw refused(cursor);
      let position: unknown;
      if (sealer) {
        try {
          const opened = await sealer.unsealToken(cursor, context(entityId, chainName, view));
          position = typeof opened === 'string' ? opened.trimEnd() : undefined;
        } catch (error) {
          if (!(error instanceof UnreadablePayloadError)) throw error;
          position = undefined;
        }
      } else position = Buffer.from(cursor, 'base64url').toString('utf8');
      if (typeof position !== 'string' || !TRACE_POSITION.test(position)) throw refused(cursor);
      return position;
    },
  };
}

/**
 * Read options: with `resolveCid`, off-chain events carry their decrypted `details` (or a `resolve_error`), for
 * the caller `opener` stands for (shared/access: the guarded ledger sets it; without one, nothing is decrypted).
 */
export interface ReadOptions {
  resolveCid?: boolean;
  opener?: PayloadOpener;
}

/** The most chains one page of the list holds, and its default size. */
export const CHAIN_PAGE_MAX = 1_000;

/** A page of the chain list; `next`: the `after` of the following page (the last chain of this one), null at the end. */
export interface ChainsPage {
  chains: ChainInfo[];
  next: string | null;
}

export interface Ledger {
  /** Up to `limit` chains (at most CHAIN_PAGE_MAX) after the chain named `after`: the Main Chain first, then Sub-Chains by name. */
  listChains(page: { limit: number; after?: string | undefined }): Promise<ChainsPage>;
  /** One chain's summary, read from its head alone; null when there is no such chain. */
  getChain(name: string): Promise<ChainInfo | null>;
  /** `allowChannel`: the business group creates its channels' `channel-…` chains. */
  createSubChain(name: string, options?: { allowChannel?: boolean }): Promise<{ chain_name: string; created_main: boolean }>;
  getStats(chainName: string): Promise<ChainStats>;
  /**
   * A page of blocks. With `treeSize`, of the chain's first `treeSize` blocks (`total` is then that size, and the
   * answer never changes); a size the chain has not reached is a 422.
   */
  listBlocks(chainName: string, page: { limit: number; offset: number; descending: boolean; treeSize?: number | undefined } & ReadOptions): Promise<BlocksPage>;
  getBlock(chainName: string, address: BlockAddress, options?: ReadOptions): Promise<Block>;
  appendEvent(chainName: string, draft: EventDraft, options?: AppendOptions): Promise<AppendResult & Replayed>;
  /** Appends the events, one block each, in one transaction: all are committed, in order, or none. */
  appendEvents(chainName: string, drafts: EventDraft[], options?: AppendOptions): Promise<AppendResult[] & Replayed>;
  submitProof(chainName: string): Promise<ProofResult>;
  /**
   * A page of an entity's events, in trace order: at most `limit` (TRACE_LIMIT_DEFAULT, at most TRACE_LIMIT_MAX)
   * entries of the entity index read after `cursor` (a trace's `next_cursor`), and the cursor of the next page (null
   * at the end). A page read for one chain may hold fewer events than its limit and still have a next one.
   */
  traceEntity(entityId: string, chainName?: string, options?: ReadOptions & TracePage): Promise<EntityTrace>;
  /** The events with their off-chain `details` decrypted (or a `resolve_error`), as `resolve_cid=true` answers them. */
  resolveEvents(events: LedgerEvent[], opener: PayloadOpener): Promise<ResolvedEvent[]>;
  /**
   * Erases a data subject: destroys its key (every erasable event of it reads `details: null`, `erased:
   * true` from then on) and records the erasure on the Main Chain, once; a second erasure answers the first.
   */
  eraseSubject(
    subjectId: string,
    by: { erased_by: string | null; reason: string },
  ): Promise<
    ErasureRecord & {
      status: 'erased' | 'already_erased';
      event_id: string | null;
      payloads: number;
      payloads_removed: number;
      payloads_unreachable?: number;
      /** Private values of the subject whose records this call deleted; `private_values_left`: erase again for the rest. */
      private_values_removed: number;
      private_values_left?: true;
    }
  >;
  /** For node status: how many Sub-Chains, and when the Main Chain began (seconds; null before it exists). */
  describe(): Promise<{ sub_chains: number; main_created_at: number | null }>;
}

export type { AppendOptions, Replayed } from './idempotency.ts';

export interface LedgerOptions {
  repository: LedgerRepository;
  appender: ChainAppender;
  /** Where payloads above the threshold go, and client-referenced ones are read from. */
  offchain?: OffchainStore;
  /** Data subjects' keys: erasable events are sealed under them (shared/ledger/subject-port.ts). */
  personalData?: PersonalData;
  /** Events whose serialized `details` is larger go off chain (docs/rules.md, "Off-chain payloads"). */
  offchainThresholdBytes?: number;
  /** Seconds since the epoch. */
  now?: () => number;
  /** How long a request holds its Idempotency-Key (ms; the service's 60 s unless a test needs another). */
  idempotencyHoldMs?: number;
}

/** How long a subject's erasure may go without its Main Chain event before a later erasure writes it. */
const ERASURE_EVENT_GRACE_MS = 60_000;

/**
 * How long an erasure that found the key destroyed a moment ago waits for the other erasure's Main Chain event,
 * so that both answers name it: longer than an append may wait for a leader (10 s), within the invocation.
 */
const ERASURE_EVENT_WAIT_MS = 12_000;

/**
 * An erasure deletes at most this many of its subject's private values a call (two single-item writes each, a few ms
 * in the cloud), and only while more than ERASURE_VALUES_RESERVE_MS are left before the answer's margin: the rest on
 * the next erasure of the subject, which the answer asks for (`private_values_left`).
 */
const ERASURE_VALUES_PER_CALL = 200;
const ERASURE_VALUES_RESERVE_MS = 2_000;

/** A chain as it is made: its head and genesis block (`now` in epoch seconds). */
export function newChain(name: string, kind: ChainKind, now: number): { head: ChainHead; genesis: Block } {
  const timestamp = Math.round(now * 1000) / 1000;
  const genesis = sealBlock({ index: 0, chain_name: name, timestamp, previous_hash: ZERO_HASH, events: [] });
  const { frontier } = extendTree([], 0, [genesis.hash]);
  return {
    genesis,
    head: {
      chainName: name,
      kind,
      headIndex: 0,
      headHash: genesis.hash,
      eventCount: 0,
      proofCount: 0,
      lastProofHeadIndex: null,
      lastProofId: null,
      createdAt: timestamp,
      frontier,
      // Stored as records from its genesis on (docs/appending.md, "Storage"): the genesis record is written
      // with the head, its metadata on the head until the first round moves it to a segment.
      recordsFrom: 0,
      recent: { run: { prev: ZERO_HASH, blocks: [{ index: 0, hash: genesis.hash, timestamp, nodes: [], ref: null, position: 0 }] } },
      cursor: '',
      materialized: 0,
    },
  };
}

function chainInfo(head: ChainHead): ChainInfo {
  return { name: head.chainName, type: head.kind, block_count: head.headIndex + 1, latest_block_hash: head.headHash };
}

/** A chain's head, or the contract's 404 (also for names that could not be a chain). */
/** The 422 of a `tree_size` the chain has not reached (it holds `size` blocks). */
export function treeSizeNotReached(size: number): ValidationError {
  return ValidationError.single(['query', 'tree_size'], `The chain has ${size} blocks`, 'less_than_equal');
}

export async function requireChainHead(repository: LedgerRepository, chainName: string): Promise<ChainHead> {
  if (!isWellFormedChainName(chainName)) throw new ChainNotFoundError(chainName);
  const head = await repository.getHead(chainName);
  if (!head) throw new ChainNotFoundError(chainName);
  return head;
}

export function createLedger({
  repository,
  appender,
  offchain,
  personalData,
  offchainThresholdBytes = 65_536,
  now = () => Date.now() / 1000,
  idempotencyHoldMs,
}: LedgerOptions): Ledger {
  const {
    payloads,
    personal,
    countPersonal,
    reveal,
    resolveBlocks,
    prepare: prepareDraft,
  } = createEventDetails({ offchain, personalData, offchainThresholdBytes });
  const cursors = traceCursors(offchain);

  const idempotent = createIdempotency({
    repository,
    now,
    holdMs: idempotencyHoldMs,
    firstRef: (chain) => appender.firstRef(chain),
    settleBound: (chain, claimId, bound, takeover) => appender.settleBound(chain, claimId, bound, takeover),
    blind: (subjectId, details) => personal().blind(subjectId, details),
  });

  const requireHead = (chainName: string) => requireChainHead(repository, chainName);
  /** A page of a tree no larger than a size this instance saw needs no read of the head. */
  const seen = sizesSeen();
  /** The size a page is read at: `treeSize` when this instance saw the chain reach it, else read from the head. */
  async function pageTreeSize(chainName: string, treeSize: number | undefined): Promise<number> {
    if (treeSize !== undefined && seen.covers(chainName, treeSize)) return treeSize;
    const size = (await requireHead(chainName)).headIndex + 1;
    seen.note(chainName, size);
    if (treeSize !== undefined && treeSize > size) throw treeSizeNotReached(size);
    return treeSize ?? size;
  }

  /** Replaces off-chain details with the decrypted original; an unreadable payload marks only its event. */
  const resolve = (events: LedgerEvent[], opener: PayloadOpener) => reveal(events, true, opener);

  /** Readies a draft to commit (event-details.ts); the chain is read first unless the caller knows it exists. */
  const prepare = (
    chainName: string,
    draft: EventDraft,
    chainExists: (() => Promise<unknown>) | undefined,
    opener: PayloadOpener | undefined,
    checked?: Set<string>,
  ) => prepareDraft(chainName, draft, chainExists ?? (() => requireHead(chainName)), opener, checked);

  function assertAppendable(chainName: string): void {
    if (chainName === MAIN_CHAIN) {
      throw new BadRequestError('The Main Chain holds only proofs; add events to a Sub-Chain');
    }
    if (!isWellFormedChainName(chainName)) throw new ChainNotFoundError(chainName);
  }

  return {
    async getChain(name) {
      try {
        return chainInfo(await requireHead(name));
      } catch (error) {
        if (error instanceof ChainNotFoundError) return null;
        throw error;
      }
    },

    async listChains({ limit, after }) {
      if (!Number.isInteger(limit) || limit < 1 || limit > CHAIN_PAGE_MAX)
        throw ValidationError.single(['query', 'limit'], `limit must be 1 to ${CHAIN_PAGE_MAX}`);
      // One chain more than the page, to know whether the list goes on; a chain whose head is not written yet is left
      // out of a page of heads, so a short page is followed while the list says there is more.
      const chains: ChainInfo[] = [];
      let position = after === undefined ? undefined : chainListPosition(after === MAIN_CHAIN ? 'main' : 'sub', after);
      for (;;) {
        const page = await repository.listHeadsPage(position, limit + 1 - chains.length);
        chains.push(...page.heads.map(({ head }) => chainInfo(head)));
        if (chains.length > limit || page.next === undefined) break;
        position = page.next;
      }
      const more = chains.length > limit;
      if (more) chains.length = limit;
      return { chains, next: more ? chains.at(-1)!.name : null };
    },

    async createSubChain(name, options) {
      assertCreatableSubChainName(name, options);
      // The Main Chain comes into being with the first Sub-Chain, in the same transaction.
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const mainExists = (await repository.getHead(MAIN_CHAIN)) !== undefined;
        const chains = mainExists ? [newChain(name, 'sub', now())] : [newChain(MAIN_CHAIN, 'main', now()), newChain(name, 'sub', now())];
        const result = await repository.createChains(chains);
        if (result.status === 'created') return { chain_name: name, created_main: !mainExists };
        if (result.chainNames.includes(name)) throw new ChainExistsError(name);
        // Another request created the Main Chain meanwhile: try again without it.
      }
      throw new ChainExistsError(name);
    },

    async getStats(chainName) {
      const head = await requireHead(chainName);
      const isMain = head.kind === 'main';
      return {
        chain_name: head.chainName,
        total_blocks: head.headIndex + 1,
        total_events: head.eventCount,
        proof_count: head.proofCount,
        registered_sub_chains: isMain ? await repository.countSubChains() : null,
      };
    },

    async listBlocks(chainName, { limit, offset, descending, resolveCid, opener, treeSize }) {
      const total = await pageTreeSize(chainName, treeSize);
      let blocks: Block[] = [];
      if (offset < total) {
        // Indices are consecutive, so a page is an index range: no scan past the offset.
        const [from, to] = descending ? [Math.max(0, total - offset - limit), total - 1 - offset] : [offset, Math.min(total - 1, offset + limit - 1)];
        let stored = await repository.getBlockRange(chainName, from, to, descending);
        // Every block of the range is written, but a read that may be a moment old can miss the newest: read again
        // strongly. A block still missing then is answered missing: an auditor names the gap (ledger-verify).
        if (stored.length !== to - from + 1) stored = await repository.getBlockRange(chainName, from, to, descending, true);
        blocks = await resolveBlocks(stored, { resolveCid, ...(opener ? { opener } : {}) });
      }
      return { chain_name: chainName, total, limit, offset, blocks };
    },

    async getBlock(chainName, address, options) {
      if (!isWellFormedChainName(chainName)) throw new ChainNotFoundError(chainName);
      // An index past any a chain can hold (its storage keys have 12 digits) names no block: which 404, from the head.
      if (address.kind === 'index' && address.index > MAX_BLOCK_INDEX) {
        await requireHead(chainName);
        throw new BlockNotFoundError(chainName, address.index);
      }
      // One read when the block is there (its chain then exists); the head only tells which 404 it is.
      const block = address.kind === 'index' ? await repository.getBlock(chainName, address.index) : await repository.findBlockByHash(chainName, address.hash);
      if (!block) {
        const head = await requireHead(chainName);
        if (address.kind === 'index' && address.index <= head.headIndex) {
          // Committed but not yet visible to an eventually consistent read: read it consistently.
          const committed = await repository.getBlock(chainName, address.index, true);
          if (committed) return (await resolveBlocks([committed], options))[0]!;
        }
        throw new BlockNotFoundError(chainName, address.kind === 'index' ? address.index : address.hash);
      }
      return (await resolveBlocks([block], options))[0]!;
    },

    async appendEvent(chainName, draft, options) {
      assertAppendable(chainName);
      assertDraftFields(draft, undefined, options?.serviceRecord ? 'service' : 'caller');
      // The key's fingerprint of an erasable event needs its subject's key: none is made for a chain that does not exist.
      const chainChecked = draft.subject_id !== undefined && options?.idempotency !== undefined;
      if (chainChecked) await requireHead(chainName);
      const { blocks, replayed } = await idempotent(chainName, 'event', [draft], options, async (completes) => {
        const unsigned = await prepare(chainName, draft, chainChecked ? async () => undefined : undefined, options?.opener);
        const prepared = options?.signature ? { ...unsigned, signed: options.signature } : unsigned;
        if (prepared.is_offchain) await options?.stillAllowed?.();
        return [await appender.append(chainName, { events: [prepared], ...(completes ? { completes } : {}) })];
      });
      const block = blocks[0]!;
      if (!replayed) await countPersonal(blocks);
      return { event_id: block.events[0]!.event_id, block, ...(replayed ? { replayed } : {}) };
    },

    async appendEvents(chainName, drafts, options) {
      assertAppendable(chainName);
      drafts.forEach((draft, i) => assertDraftFields(draft, i, options?.serviceRecord ? 'service' : 'caller'));
      if (drafts.length > MAX_ATOMIC_BLOCKS) {
        throw new UnprocessableError(
          `A batch holds at most ${MAX_ATOMIC_BLOCKS} events: they commit in one DynamoDB transaction of at most 100 items, one per block and one for the chain head`,
        );
      }
      if (options?.idempotency && drafts.length > MAX_ATOMIC_BLOCKS - 1) {
        // The key's record commits in the same transaction as the blocks, and takes one of its 100 items.
        throw new UnprocessableError(
          `A batch sent with an Idempotency-Key holds at most ${MAX_ATOMIC_BLOCKS - 1} events: the key's record commits in the same DynamoDB transaction of at most 100 items, with one per block and one for the chain head`,
        );
      }
      // The head is read once, and only when something is made for the chain before its commit (a key's record,
      // a subject's key, a payload in IPFS); otherwise the commit itself finds a chain that does not exist (404).
      let known: Promise<unknown> | undefined;
      const chainExists = () => (known ??= requireHead(chainName));
      if (options?.idempotency) await chainExists();
      const { blocks, replayed } = await idempotent(chainName, 'batch', drafts, options, async (completes) => {
        const prepared: EventDraft[] = [];
        // A payload the batch cites more than once is fetched and checked once.
        const checked = new Set<string>();
        for (const draft of drafts) prepared.push(await prepare(chainName, draft, chainExists, options?.opener, checked));
        if (prepared.some((event) => event.is_offchain)) await options?.stillAllowed?.();
        return appender.appendAll(
          chainName,
          prepared.map((event, i) => ({ events: [event], ...(i === 0 && completes ? { completes } : {}) })),
        );
      });
      if (!replayed) await countPersonal(blocks);
      const results: AppendResult[] & Replayed = blocks.map((block) => ({ event_id: block.events[0]!.event_id, block }));
      if (replayed) results.replayed = true;
      return results;
    },

    async submitProof(chainName) {
      if (chainName === MAIN_CHAIN) {
        throw new BadRequestError('The Main Chain cannot anchor itself; submit proofs of Sub-Chains');
      }
      const head = await ensureTree(repository, await requireHead(chainName));
      if (head.lastProofId !== null && head.lastProofHeadIndex === head.headIndex) {
        return { proof_id: head.lastProofId, created: false, details: null };
      }
      // The head's frontier is the tree of blocks 0…head_index, read with the head: O(1), not O(n).
      const details: ProofDetails = {
        sub_chain: chainName,
        head_index: head.headIndex,
        head_hash: head.headHash,
        tree_size: head.headIndex + 1,
        merkle_root: headRoot(head),
      };
      // A QLDB import ends with its record (`qldb_import`, shared/qldb/mapping.ts): the anchor of that head
      // carries it, so the Main Chain records the import (export, tip, digest) with the proof of the chain. Not a
      // channel's: every reader reads the Main Chain, and a channel's events are its members' only (its anchor
      // carries the proof, hashes and sizes, as every channel's does).
      if (!isChannelChainName(chainName)) {
        const headEvent = (await repository.getBlock(chainName, head.headIndex))?.events[0];
        // Only the importer's record, in its shape: a writer's other content is not the service's to carry.
        const record = headEvent?.event_type === QLDB_IMPORT_EVENT ? qldbImportRecordOf(headEvent.details) : undefined;
        if (record) details.qldb_import = record;
      }
      try {
        const block = await appender.append(MAIN_CHAIN, {
          events: [
            {
              entity_id: chainName,
              event_type: PROOF_EVENT_TYPE,
              details: { ...details },
              details_cid: null,
              details_nonce: null,
              details_metadata: null,
              is_offchain: false,
            },
          ],
          proof: { subChain: chainName, headIndex: head.headIndex },
        });
        // Where the anchor is found from (shared/ledger/proofs.ts, anchorsOf): not written, it is rebuilt at the next
        // read that misses it (the head counts the proof), so the committed proof is answered all the same.
        await repository.putAnchor(chainName, head.headIndex, block.index).catch((error: unknown) => {
          logger.warn('anchor item not written; rebuilt at its next read', { chain: chainName, main_index: block.index, error });
        });
        return { proof_id: `${chainName}_${block.index}`, created: true, details };
      } catch (error) {
        if (!(error instanceof ProofSupersededError)) throw error;
        // A concurrent request anchored this head (or a later one) first: answer that proof.
        const now = await requireHead(chainName);
        return { proof_id: now.lastProofId ?? '', created: false, details: null };
      }
    },

    resolveEvents: resolve,

    async eraseSubject(subjectId, by) {
      const { status, record, payloads: held, eventId } = await personal().erase(subjectId, by);
      // The audit trail, on the Main Chain: who erased whom, when, why, and how many events it had. Written
      // by the erasure that destroyed the key; a later erasure writes it only if it is still missing well
      // after (the first died between destroying the key and appending), so it is never lost nor doubled.
      let event_id = eventId;
      const overdue = now() * 1000 - Date.parse(record.erased_at) > ERASURE_EVENT_GRACE_MS;
      if (event_id === null && (status === 'erased' || overdue)) {
        const block = await appender.append(MAIN_CHAIN, {
          events: [
            {
              entity_id: subjectId,
              event_type: SERVICE_EVENT.erasure,
              details: { ...record },
              details_cid: null,
              details_nonce: null,
              details_metadata: null,
              is_offchain: false,
            },
          ],
        });
        event_id = block.events[0]!.event_id;
        await personal().recordErasureEvent(subjectId, event_id);
      }
      // Another erasure destroyed the key a moment ago and is appending its event: this answer names that event
      // too, once it is recorded (a few reads, further apart as the wait grows: erasing again, with the key gone,
      // only reads the record). Not within the wait (its append failed, or is slow): null, and a later erasure
      // answers it, or writes it once overdue.
      if (event_id === null && !overdue) {
        const until = steadyNow() + Math.min(ERASURE_EVENT_WAIT_MS, remainingMs() - ANSWER_MARGIN_MS);
        for (let delay = 20; event_id === null && steadyNow() + delay < until; delay = Math.min(2 * delay, 500)) {
          await pause(delay, `the Main Chain event of the erasure of '${subjectId}'`);
          event_id = (await personal().erase(subjectId, by)).eventId;
        }
      }
      // Where we control the ciphertext, it goes too: our IPFS node's copies (again on a later erasure,
      // should IPFS have been down). Inline ciphertext is part of its block: it stays, unreadable.
      let removed = 0;
      let unreachable = 0;
      for (const cid of held) {
        try {
          if (await payloads().remove(cid)) removed += 1;
        } catch {
          unreachable += 1;
        }
      }
      // Last, its private values' records (their keys may be personal), a bounded number a call and within the request's
      // time: a subject given thousands had made every erasure fail before its event was written. Some left: erasing
      // again goes on (until then every read of one takes it for absent and deletes it).
      let values = { removed: 0, left: false };
      const until = steadyNow() + remainingMs() - ANSWER_MARGIN_MS - ERASURE_VALUES_RESERVE_MS;
      try {
        values = await personal().removeErasedValues(subjectId, { max: ERASURE_VALUES_PER_CALL, more: () => steadyNow() < until });
      } catch (error) {
        values.left = true;
        logger.warn("an erased subject's private values were not deleted; erasing it again deletes them", { subject_id: subjectId, error });
      }
      return {
        status: status === 'erased' ? 'erased' : 'already_erased',
        ...record,
        event_id,
        payloads: held.length,
        payloads_removed: removed,
        ...(unreachable > 0 ? { payloads_unreachable: unreachable } : {}),
        private_values_removed: values.removed,
        ...(values.left ? { private_values_left: true } : {}),
      };
    },

    async describe() {
      const [main, subChains] = await Promise.all([repository.getHead(MAIN_CHAIN), repository.countSubChains()]);
      return { sub_chains: subChains, main_created_at: main?.createdAt ?? null };
    },

    async traceEntity(entityId, chainName, options) {
      const limit = options?.limit ?? TRACE_LIMIT_DEFAULT;
      if (!Number.isInteger(limit) || limit < 1 || limit > TRACE_LIMIT_MAX) throw new UnprocessableError(`limit must be 1 to ${TRACE_LIMIT_MAX}`);
      // An unknown chain is 404 whatever the cursor says.
      if (chainName !== undefined) await requireHead(chainName);
      const after = options?.cursor === undefined ? undefined : await cursors.decode(options.cursor, entityId, chainName, options?.channels ?? []);
      // The index scopes read: a named chain's own; else the chains any reader reads and the channels' the caller reads.
      const channels = [...new Set(options?.channels ?? [])].filter((name) => entityScopeOf(name) !== null);
      if (chainName === undefined && channels.length > TRACE_CHANNELS_MAX)
        throw new UnprocessableError(
          `A trace across chains reads the index of each channel this key reads: ${channels.length}, more than ${TRACE_CHANNELS_MAX}; name a chain (chain_name)`,
        );
      const scopes = chainName !== undefined ? [entityScopeOf(chainName)] : [null, ...channels];
      const { events, chains, next } = await readTraceScopes(repository, entityId, {
        scopes,
        after,
        chainName,
        limit,
        scanMax: traceScanMax(limit),
        visible: options?.visible,
      });
      return {
        entity_id: entityId,
        chains,
        events: await reveal(events, options?.resolveCid ?? false, options?.opener),
        next_cursor: next === null ? null : await cursors.encode(next, entityId, chainName, options?.channels ?? []),
      };
    },
  };
}
