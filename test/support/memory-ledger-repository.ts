/**
 * The LedgerStorage port in memory, for offline tests of the appender and the domain, with the block reads
 * every storage shares on top (shared/ledger/block-reads.ts). It keeps the contract each method states in
 * shared/ledger/repository.ts, with the same conditions the DynamoDB storage writes: a commit lands only on
 * the head and cursor it was built on and only by the lease holder (or, direct, with no live lease); a
 * pending append's key is taken once; an Idempotency-Key record is completed only by the claim that holds it.
 *
 * Every method yields to the event loop before it acts, as a network call would, so concurrent appends
 * interleave. `faults` lets a test make the next calls of a method fail (a throttle, a timeout).
 */
import { withBlockReads } from '#shared/ledger/block-reads';
import { splitRun } from '#shared/ledger/block-meta';
import { type BlockDraft, buildBlocks } from '#shared/ledger/blocks';
import type {
  BlockTreeData,
  CommitResult,
  CreateChainsResult,
  BoundAppend,
  IdempotencyState,
  LedgerRepository,
  LedgerStorage,
  MetaRun,
  PendingAppend,
  PendingRef,
  SealEntry,
} from '#shared/ledger/repository';
import type { Block, ChainHead } from '#shared/ledger/types';
import { entityScopeOf } from '#shared/ledger/names';
import { chainsSk, entitySk } from '#shared/storage/keys';

interface IdempotencyRecord {
  status: 'in-progress' | 'done';
  fingerprint: string;
  token?: string;
  untilMs?: number;
  firstIndex?: number;
  count?: number;
  bound?: BoundAppend;
}

const clone = <T>(value: T): T => structuredClone(value);

/** The values of an index-keyed map (segments, seals: by their last index) at `fromIndex` or above, ascending. */
const byIndexFrom = <T>(items: ReadonlyMap<number, T>, fromIndex: number): T[] =>
  [...items.entries()]
    .filter(([last]) => last >= fromIndex)
    .sort(([a], [b]) => a - b)
    .map(([, value]) => value);
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface MemoryLedgerRepository extends LedgerRepository {
  /** How many times each method was called. */
  calls: Map<string, number>;
  /** Errors the next calls of a method throw, in order (before anything is changed). */
  faults: Map<string, Error[]>;
  /** Errors the next commits throw after they landed: an answer lost on the way back (a timeout). */
  lostAnswers: Error[];
  /** Waits a method's calls make before they act (a slow network, an instance frozen mid-request): resolve to go on. */
  holds: Map<string, (...args: unknown[]) => Promise<void> | undefined>;
  /** The committed blocks of a chain, in index order (test inspection, no yield): records, or rebuilt from pending appends. */
  blocksOf(chainName: string): Block[];
  /** The blocks of a chain that have their records (test inspection). */
  recordsOf(chainName: string): Block[];
  /** Deletes what DynamoDB's TTL deletes once it has passed: pending appends, round items, seals, refusals (test setup). */
  expireAll(): void;
  /** The anchor items by Sub-Chain (test setup: a chain anchored before they existed has none). */
  anchorItems(): Map<string, Map<number, number>>;
  /** Legacy block items, as a chain of an earlier version has them (test setup). */
  legacy: Map<string, Map<number, { block: Block; treeNodes: string[] }>>;
  /**
   * Eventually consistent looks, at their worst: when set, every other `lookHead` answers the head as it was
   * before its last write (DynamoDB may answer a moment-old item to a read that is not strongly consistent).
   */
  staleLooks: boolean;
}

export function createMemoryLedgerRepository(): MemoryLedgerRepository {
  /** Each chain's head, and the one before its last write (what a stale look may answer). */
  const earlier = new Map<string, ChainHead>();
  const heads = new (class extends Map<string, ChainHead> {
    override set(chainName: string, head: ChainHead) {
      const before = this.get(chainName);
      if (before) earlier.set(chainName, before);
      return super.set(chainName, head);
    }
  })();
  let looks = 0;
  let sweepPosition: string | undefined;
  const records = new Map<string, Block>();
  /** Kept pages, by `chain|first`. */
  const pages = new Map<string, Block[]>();
  const segments = new Map<string, Map<number, MetaRun>>();
  const rounds = new Map<string, MetaRun>();
  const seals = new Map<string, Map<number, SealEntry[]>>();
  const pending = new Map<string, Map<string, PendingAppend>>();
  const refusals = new Map<string, string>();
  const claims = new Map<string, IdempotencyRecord>();
  const legacy = new Map<string, Map<number, { block: Block; treeNodes: string[] }>>();
  const anchors = new Map<string, Map<number, number>>();
  const calls = new Map<string, number>();
  const faults = new Map<string, Error[]>();
  const lostAnswers: Error[] = [];

  const pendingKey = (ref: PendingRef) => `${ref.shard}|${ref.sk}`;
  const pendingOf = (chainName: string) => pending.get(chainName) ?? pending.set(chainName, new Map()).get(chainName)!;
  const segmentsOf = (chainName: string) => segments.get(chainName) ?? segments.set(chainName, new Map()).get(chainName)!;
  /** A run of metadata stored as DynamoDB stores it: in segments under 4 KB each, keyed by their last index. */
  const putSegment = (chainName: string, run: MetaRun) => {
    for (const piece of splitRun(run)) segmentsOf(chainName).set(piece.blocks.at(-1)!.index, clone(piece));
  };
  const legacyOf = (chainName: string) => legacy.get(chainName) ?? legacy.set(chainName, new Map()).get(chainName)!;
  const liveLease = (head: ChainHead, nowMs: number) => !!head.turnHolder && (head.turnExpiresMs ?? 0) >= nowMs;
  const leaseIsFree = (head: ChainHead, writer: string, nowMs: number) => !head.turnHolder || head.turnHolder === writer || (head.turnExpiresMs ?? 0) < nowMs;

  /** The chain list in its order (the Main Chain first, then Sub-Chains by name), each head at its list key. */
  const listed = () =>
    [...heads.values()].map((head) => ({ position: chainsSk(head.kind, head.chainName), head })).sort((a, b) => (a.position < b.position ? -1 : 1));

  const holds = new Map<string, (...args: unknown[]) => Promise<void> | undefined>();

  /** Counts the call, yields, waits if a test holds the method, and throws the method's next fault if one is queued. */
  async function enter(method: string, ...args: unknown[]): Promise<void> {
    calls.set(method, (calls.get(method) ?? 0) + 1);
    await tick();
    await holds.get(method)?.(...args);
    const fault = faults.get(method)?.shift();
    if (fault) throw fault;
  }

  /** Every metadata run of a chain: its segments, then what its head keeps. */
  function runsOf(chainName: string): MetaRun[] {
    const runs = [...segmentsOf(chainName).values()];
    const recent = heads.get(chainName)?.recent;
    if (recent && 'run' in recent) runs.push(recent.run);
    if (recent && 'round' in recent) {
      const run = rounds.get(`${chainName}|${recent.round.id}`);
      if (run) runs.push(run);
    }
    return runs;
  }

  function blocksOf(chainName: string): Block[] {
    const head = heads.get(chainName);
    if (!head) return [];
    const out: Block[] = [];
    for (let i = 0; i <= head.headIndex; i += 1) {
      if (head.recordsFrom === undefined || i < head.recordsFrom) {
        const stored = legacyOf(chainName).get(i);
        if (stored) out.push(clone(stored.block));
        continue;
      }
      let meta: MetaRun['blocks'][number] | undefined;
      let prev: string | undefined;
      for (const run of runsOf(chainName)) {
        const at = run.blocks.findIndex((b) => b.index === i);
        if (at >= 0) {
          meta = run.blocks[at];
          prev = at === 0 ? run.prev : run.blocks[at - 1]!.hash;
        }
      }
      if (!meta) continue;
      const record = records.get(meta.hash);
      if (record) {
        out.push(clone(record));
        continue;
      }
      const json = meta.ref ? pendingOf(chainName).get(pendingKey(meta.ref))?.drafts : undefined;
      const draft = json ? (JSON.parse(json) as BlockDraft[])[meta.position] : undefined;
      if (draft && prev) out.push(buildBlocks(chainName, { headIndex: i - 1, headHash: prev }, [draft], () => meta!.timestamp)[0]!);
    }
    return out;
  }

  const storage: LedgerStorage = {
    async getHead(chainName) {
      await enter('getHead');
      const head = heads.get(chainName);
      return head && clone(head);
    },

    async lookHead(chainName) {
      await enter('lookHead');
      looks += 1;
      const head = repository.staleLooks && looks % 2 === 0 ? (earlier.get(chainName) ?? heads.get(chainName)) : heads.get(chainName);
      return head && clone(head);
    },

    async listHeads() {
      await enter('listHeads');
      return listed().map(({ head }) => clone(head));
    },

    async listHeadsPage(after, limit) {
      await enter('listHeadsPage', after, limit);
      const rest = listed().filter(({ position }) => after === undefined || position > after);
      const page = rest.slice(0, limit).map(({ position, head }) => ({ position, head: clone(head) }));
      return { heads: page, ...(rest.length > limit ? { next: page.at(-1)!.position } : {}) };
    },

    async getSweepPosition() {
      await enter('getSweepPosition');
      return sweepPosition;
    },

    async saveSweepPosition(after) {
      await enter('saveSweepPosition', after);
      sweepPosition = after;
    },

    async countSubChains() {
      await enter('countSubChains');
      return [...heads.values()].filter((h) => h.kind === 'sub').length;
    },

    async createChains(chains): Promise<CreateChainsResult> {
      await enter('createChains');
      const existing = chains.filter((c) => heads.has(c.head.chainName)).map((c) => c.head.chainName);
      if (existing.length > 0) return { status: 'exists', chainNames: existing };
      for (const { head, genesis } of chains) {
        heads.set(head.chainName, clone(head));
        records.set(genesis.hash, clone(genesis));
      }
      return { status: 'created' };
    },

    async commitRound(commit): Promise<CommitResult> {
      await enter('commitRound');
      const { chainName, blocks: newBlocks } = commit;
      const last = newBlocks[newBlocks.length - 1];
      if (!last) return { status: 'committed' };
      // DynamoDB refuses a transaction with two operations on one item (here: two anchors of one Sub-Chain).
      const anchored = (commit.proofRecords ?? []).map((p) => p.subChain);
      if (new Set(anchored).size !== anchored.length) {
        throw Object.assign(new Error('Transaction request cannot include multiple operations on one item'), { name: 'ValidationException' });
      }
      // Every condition first, in the order the DynamoDB transaction's items are written; then every write.
      const head = heads.get(chainName);
      const direct = 'direct' in commit.mode;
      if (
        !head ||
        head.headIndex !== commit.expectedHeadIndex ||
        (head.cursor ?? '') !== commit.expectedCursor ||
        (direct ? liveLease(head, commit.nowMs) : head.turnHolder !== commit.writerId)
      ) {
        return { status: 'head-moved', head: head && clone(head) };
      }
      const proofs = commit.proofRecords ?? [];
      const stale = proofs.find((p) => {
        const sub = heads.get(p.subChain);
        return !sub || (sub.lastProofHeadIndex !== null && sub.lastProofHeadIndex >= p.headIndex);
      });
      if (stale) return { status: 'proof-stale', blockPosition: stale.blockPosition };
      const completions = commit.completions ?? [];
      const claimLost = completions.find(({ claim }) => claims.get(claim.id)?.token !== claim.token);
      if (claimLost) return { status: 'claim-lost', blockPosition: claimLost.blockPosition };

      if (commit.recent && 'round' in commit.recent && !rounds.has(`${chainName}|${commit.recent.round.id}`)) {
        throw new Error('a commit names a round item that was not written');
      }
      for (const block of commit.records ?? []) records.set(block.hash, clone(block));
      if (commit.segment) putSegment(chainName, commit.segment);
      heads.set(chainName, {
        ...head,
        headIndex: last.index,
        headHash: last.hash,
        frontier: [...commit.frontier],
        eventCount: head.eventCount + newBlocks.reduce((n, b) => n + b.events.length, 0),
        proofCount: head.proofCount + proofs.length,
        recent: clone(commit.recent),
        recentFlushed: false,
        cursor: commit.cursor,
        materialized: commit.materialized,
        ...(commit.recordsFrom !== undefined ? { recordsFrom: commit.recordsFrom } : {}),
        ...(commit.pendingShards !== undefined ? { pendingShards: commit.pendingShards } : {}),
        ...(direct ? {} : { turnExpiresMs: (commit.mode as { untilMs: number }).untilMs }),
      });
      for (const proof of proofs) {
        const sub = heads.get(proof.subChain)!;
        heads.set(proof.subChain, { ...sub, lastProofHeadIndex: proof.headIndex, lastProofId: proof.proofId, proofCount: sub.proofCount + 1 });
      }
      for (const { claim, blockPosition, count } of completions) {
        const record = claims.get(claim.id)!;
        claims.set(claim.id, { status: 'done', fingerprint: record.fingerprint, firstIndex: newBlocks[blockPosition]!.index, count });
      }
      const lost = lostAnswers.shift();
      if (lost) throw lost;
      return { status: 'committed' };
    },

    async finishRound(chainName, holder, headIndex, materialized) {
      await enter('finishRound');
      const head = heads.get(chainName);
      if (!head || head.turnHolder !== holder || head.headIndex !== headIndex) return false;
      heads.set(chainName, { ...head, materialized, recentFlushed: true, turnHolder: null, turnExpiresMs: null });
      return true;
    },

    async withdraw(chainName, sk) {
      await enter('withdraw');
      const head = heads.get(chainName);
      if (!head || (head.cursor ?? '') >= sk) return false;
      heads.set(chainName, { ...head, cursor: sk });
      return true;
    },

    async acquireLease(chainName, holder, nowMs, untilMs) {
      await enter('acquireLease');
      const head = heads.get(chainName);
      if (!head) return { acquired: false, head: undefined };
      if (!leaseIsFree(head, holder, nowMs)) return { acquired: false, head: clone(head), holder: head.turnHolder ?? '', untilMs: head.turnExpiresMs ?? 0 };
      const taken = { ...head, turnHolder: holder, turnExpiresMs: untilMs };
      heads.set(chainName, taken);
      return { acquired: true, head: clone(taken) };
    },

    async releaseLease(chainName, holder) {
      await enter('releaseLease');
      const head = heads.get(chainName);
      if (head?.turnHolder === holder) heads.set(chainName, { ...head, turnHolder: null, turnExpiresMs: null });
    },

    async putPending(chainName, append) {
      await enter('putPending', chainName, append);
      if (pendingOf(chainName).has(pendingKey(append.ref))) return false;
      pendingOf(chainName).set(pendingKey(append.ref), clone(append));
      return true;
    },

    async listPending(chainName, shards, after, upTo, limit) {
      await enter('listPending');
      const truncatedAt = new Map<number, string>();
      const appends: PendingAppend[] = [];
      for (let shard = 0; shard < shards; shard += 1) {
        const inShard = [...pendingOf(chainName).values()]
          .filter((p) => p.ref.shard === shard && p.ref.sk > after && p.ref.sk <= upTo)
          .sort((a, b) => (a.ref.sk < b.ref.sk ? -1 : 1));
        const read = inShard.slice(0, limit);
        if (inShard.length > limit) truncatedAt.set(shard, read[read.length - 1]!.ref.sk);
        appends.push(...read.map(clone));
      }
      appends.sort((a, b) => (a.ref.sk < b.ref.sk ? -1 : a.ref.sk > b.ref.sk ? 1 : a.ref.shard - b.ref.shard));
      return { appends, truncatedAt };
    },

    async getPendings(chainName, refs) {
      await enter('getPendings');
      const found = new Map<string, string>();
      for (const ref of refs) {
        const append = pendingOf(chainName).get(pendingKey(ref));
        if (append) found.set(pendingKey(ref), append.drafts);
      }
      return found;
    },

    async putRefusal(chainName, ref, reason) {
      await enter('putRefusal');
      refusals.set(`${chainName}|${pendingKey(ref)}`, reason);
    },

    async getRefusal(chainName, ref) {
      await enter('getRefusal');
      return refusals.get(`${chainName}|${pendingKey(ref)}`);
    },

    async putRound(chainName, id, run) {
      await enter('putRound');
      rounds.set(`${chainName}|${id}`, clone(run));
    },

    async getRound(chainName, id) {
      await enter('getRound');
      const run = rounds.get(`${chainName}|${id}`);
      return run && clone(run);
    },

    async writeRound(chainName, round) {
      await enter('writeRound', chainName, round);
      for (const block of round.records) records.set(block.hash, clone(block));
      const last = round.segment.blocks.at(-1)!.index;
      putSegment(chainName, round.segment);
      for (const [shard, entries] of round.seals ?? []) {
        const key = `${chainName}|${shard}`;
        const shardSeals = seals.get(key) ?? seals.set(key, new Map()).get(key)!;
        shardSeals.set(last, clone([...entries]));
      }
    },

    async readSeals(chainName, shard, fromIndex, limit, options = {}) {
      await enter('readSeals');
      const all = [...(seals.get(`${chainName}|${shard}`) ?? new Map<number, SealEntry[]>())]
        .filter(([last]) => last >= fromIndex)
        .sort(([x], [y]) => x - y)
        .map(([last, entries]) => ({ last, entries: clone(entries) }));
      return options.oldest ? all.slice(0, limit) : all.slice(-limit);
    },

    async readNewestSegments(chainName, fromIndex, limit) {
      await enter('readNewestSegments', chainName, fromIndex, limit);
      return byIndexFrom(segmentsOf(chainName), fromIndex).slice(-limit).map(clone);
    },

    async readSegments(chainName, fromIndex, limit, _consistent, through = Number.POSITIVE_INFINITY) {
      await enter('readSegments', chainName, fromIndex, limit);
      const runs = byIndexFrom(segmentsOf(chainName), fromIndex).slice(0, limit);
      const reaching = runs.findIndex((run) => run.blocks.at(-1)!.index >= through);
      return (reaching < 0 ? runs : runs.slice(0, reaching + 1)).map(clone);
    },

    async getRecords(chainName, metas) {
      await enter('getRecords');
      const found = new Map<number, Block>();
      for (const meta of metas) {
        const record = records.get(meta.hash);
        if (record && record.chain_name === chainName && record.index === meta.index) found.set(meta.index, clone(record));
      }
      return found;
    },

    async findRecord(hash) {
      await enter('findRecord');
      const record = records.get(hash);
      return record && clone(record);
    },

    async getPage(chainName, first) {
      await enter('getPage');
      const page = pages.get(`${chainName}|${first}`);
      return page && clone(page);
    },

    async putPage(chainName, first, blocks) {
      await enter('putPage');
      pages.set(`${chainName}|${first}`, clone([...blocks]));
      return true;
    },

    async getLegacyBlocks(chainName, from, to, descending) {
      await enter('getLegacyBlocks');
      const range = [...legacyOf(chainName).values()]
        .map((s) => clone(s.block))
        .filter((b) => b.index >= from && b.index <= to)
        .sort((a, b) => a.index - b.index);
      return descending ? range.reverse() : range;
    },

    async findLegacyBlock(chainName, hash) {
      await enter('findLegacyBlock');
      const found = [...legacyOf(chainName).values()].find((s) => s.block.hash === hash);
      return found && clone(found.block);
    },

    async readLegacyTreeData(chainName, indices) {
      await enter('readLegacyTreeData');
      const found = new Map<number, BlockTreeData>();
      for (const index of indices) {
        const stored = legacyOf(chainName).get(index);
        if (stored) found.set(index, { hash: stored.block.hash, treeNodes: [...stored.treeNodes] });
      }
      return found;
    },

    async listLegacyHashes(chainName, toIndex) {
      await enter('listLegacyHashes');
      return [...legacyOf(chainName).values()]
        .map((s) => s.block)
        .filter((b) => b.index <= toIndex)
        .sort((a, b) => a.index - b.index)
        .map((b) => b.hash);
    },

    async storeTreeNodes(chainName, entries) {
      await enter('storeTreeNodes');
      for (const { index, treeNodes } of entries) {
        const stored = legacyOf(chainName).get(index);
        if (stored && treeNodes.length > 0) stored.treeNodes = [...treeNodes];
      }
    },

    async setFrontier(chainName, headIndex, frontier) {
      await enter('setFrontier');
      const head = heads.get(chainName);
      if (!head || head.headIndex !== headIndex || head.frontier !== null) return false;
      heads.set(chainName, { ...head, frontier: [...frontier] });
      return true;
    },

    async queryEntityBlocks(entityId) {
      await enter('queryEntityBlocks');
      // In trace order: time, then chain, then index (the entity index's sort key). Records and legacy blocks alike.
      const all = [...records.values(), ...[...legacy.values()].flatMap((chain) => [...chain.values()].map((s) => s.block))];
      return all
        .filter((b) => b.events[0]?.entity_id === entityId && entityScopeOf(b.chain_name) === null)
        .sort((a, b) => a.timestamp - b.timestamp || (a.chain_name < b.chain_name ? -1 : a.chain_name > b.chain_name ? 1 : 0) || a.index - b.index)
        .map(clone);
    },

    async putAnchor(subChain, headIndex, mainIndex) {
      await enter('putAnchor');
      if (!anchors.has(subChain)) anchors.set(subChain, new Map());
      anchors.get(subChain)!.set(headIndex, mainIndex);
    },

    async listAnchors(subChain, { fromHeadIndex, limit } = {}) {
      await enter('listAnchors');
      return [...(anchors.get(subChain) ?? new Map<number, number>()).entries()]
        .filter(([headIndex]) => fromHeadIndex === undefined || headIndex >= fromHeadIndex)
        .sort(([a], [b]) => a - b)
        .slice(0, limit)
        .map(([headIndex, mainIndex]) => ({ headIndex, mainIndex }));
    },

    async queryEntityPage(entityId, { scope, limit, after, chainName }) {
      await enter('queryEntityPage');
      const all = [...records.values(), ...[...legacy.values()].flatMap((chain) => [...chain.values()].map((s) => s.block))]
        .filter((b) => b.events[0]?.entity_id === entityId && entityScopeOf(b.chain_name) === scope)
        .map((b) => ({ b, sk: entitySk(b.timestamp, b.chain_name, b.index) }))
        .filter(({ sk }) => after === undefined || sk > after)
        .sort((x, y) => (x.sk < y.sk ? -1 : x.sk > y.sk ? 1 : 0));
      // As DynamoDB reads it: `limit` entries, then the filter; a position to go on from when it stopped at the limit.
      const read = all.slice(0, limit);
      const kept = read.filter(({ b }) => chainName === undefined || b.chain_name === chainName);
      return {
        blocks: kept.map(({ b }) => clone(b)),
        positions: kept.map(({ sk }) => sk),
        next: all.length > limit ? read.at(-1)!.sk : null,
        read: read.length,
      };
    },

    async claimIdempotency(claim, fingerprint, nowMs, untilMs, _expiresAt, first): Promise<IdempotencyState> {
      await enter('claimIdempotency');
      const record = claims.get(claim.id);
      if (!record && first) {
        claims.set(claim.id, {
          status: 'in-progress',
          fingerprint,
          token: claim.token,
          untilMs,
          bound: { ref: { ...first.ref }, after: first.after, token: claim.token, fingerprint },
        });
        return { status: 'claimed', first: true };
      }
      // Free, or held by a request whose hold lapsed (it died, or let go): never over a finished one. A record
      // taken over keeps the pending append it is bound to.
      if (!record || (record.status === 'in-progress' && (record.untilMs ?? 0) < nowMs)) {
        claims.set(claim.id, { status: 'in-progress', fingerprint, token: claim.token, untilMs, ...(record?.bound ? { bound: record.bound } : {}) });
        return record?.bound ? { status: 'claimed', bound: { ...record.bound } } : { status: 'claimed' };
      }
      return record.status === 'done'
        ? { status: 'done', fingerprint: record.fingerprint, firstIndex: record.firstIndex!, count: record.count! }
        : { status: 'in-progress', fingerprint: record.fingerprint, untilMs: record.untilMs!, ...(record.bound ? { bound: { ...record.bound } } : {}) };
    },

    async bindIdempotency(claim, ref, after) {
      await enter('bindIdempotency');
      const record = claims.get(claim.id);
      if (record?.status !== 'in-progress' || record.token !== claim.token) return false;
      record.bound = { ref: { ...ref }, after, token: claim.token, fingerprint: record.fingerprint };
      return true;
    },

    async completeIdempotency(claim, firstIndex, count) {
      await enter('completeIdempotency');
      const record = claims.get(claim.id);
      if (record?.token !== claim.token) return false;
      claims.set(claim.id, { status: 'done', fingerprint: record.fingerprint, firstIndex, count });
      return true;
    },

    async releaseIdempotency(claim) {
      await enter('releaseIdempotency');
      const record = claims.get(claim.id);
      if (record?.status === 'in-progress' && record.token === claim.token) record.untilMs = 0;
    },

    async ping() {
      await enter('ping');
    },
  };

  const repository: MemoryLedgerRepository = Object.assign(withBlockReads(storage), {
    calls,
    anchorItems: () => anchors,
    faults,
    lostAnswers,
    holds,
    legacy,
    staleLooks: false,
    expireAll: () => {
      pending.clear();
      rounds.clear();
      seals.clear();
      refusals.clear();
    },
    blocksOf,
    recordsOf: (chainName: string) =>
      [...records.values()]
        .filter((b) => b.chain_name === chainName)
        .sort((a, b) => a.index - b.index)
        .map(clone),
  });
  return repository;
}
