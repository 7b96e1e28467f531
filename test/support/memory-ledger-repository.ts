/**
 * The LedgerRepository port in memory, for offline tests of the appender and the domain. It keeps the
 * contract each method states in shared/ledger/repository.ts, with the same conditions the DynamoDB
 * repository writes: a commit lands whole or not at all, only on the head it was built on and only by the
 * lease holder (or with no live lease); a block key is taken once; a pending append is sealed once; an
 * Idempotency-Key record is completed only by the claim that holds it.
 *
 * Every method yields to the event loop before it acts, as a network call would, so concurrent appends
 * interleave. `faults` lets a test make the next calls of a method fail (a throttle, a timeout).
 */
import type {
  BlockTreeData,
  CommitResult,
  CreateChainsResult,
  IdempotencyState,
  LedgerRepository,
  PendingAppend,
  PendingRef,
  Receipt,
} from '#shared/ledger/repository';
import type { Block, ChainHead } from '#shared/ledger/types';

interface StoredBlock {
  block: Block;
  treeNodes: string[];
}

interface IdempotencyRecord {
  status: 'in-progress' | 'done';
  fingerprint: string;
  token?: string;
  untilMs?: number;
  firstIndex?: number;
  count?: number;
}

const clone = <T>(value: T): T => structuredClone(value);
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface MemoryLedgerRepository extends LedgerRepository {
  /** How many times each method was called. */
  calls: Map<string, number>;
  /** Errors the next calls of a method throw, in order (before anything is changed). */
  faults: Map<string, Error[]>;
  /** Errors the next commits throw after they landed: an answer lost on the way back (a timeout). */
  lostAnswers: Error[];
  /** The committed blocks of a chain, in index order (test inspection, no yield). */
  blocksOf(chainName: string): Block[];
}

export function createMemoryLedgerRepository(): MemoryLedgerRepository {
  const heads = new Map<string, ChainHead>();
  const blocks = new Map<string, Map<number, StoredBlock>>();
  const pending = new Map<string, Map<string, PendingAppend>>();
  const receipts = new Map<string, Receipt>();
  const claims = new Map<string, IdempotencyRecord>();
  const calls = new Map<string, number>();
  const faults = new Map<string, Error[]>();

  const pendingKey = (ref: PendingRef) => `${ref.shard}|${ref.sk}`;
  const pendingOf = (chainName: string) => pending.get(chainName) ?? pending.set(chainName, new Map()).get(chainName)!;
  const blocksIn = (chainName: string) => blocks.get(chainName) ?? blocks.set(chainName, new Map()).get(chainName)!;
  // A receipt is its writer's: the part of the pending append's sort key after the time.
  const receiptKey = (chainName: string, ref: PendingRef) => `${chainName}|${ref.sk.slice(ref.sk.indexOf('#') + 1)}`;
  const turnIsFree = (head: ChainHead, writer: string, nowMs: number) => !head.turnHolder || head.turnHolder === writer || (head.turnExpiresMs ?? 0) < nowMs;

  /** Counts the call, yields, and throws the method's next fault if one is queued. */
  async function enter(method: string): Promise<void> {
    calls.set(method, (calls.get(method) ?? 0) + 1);
    await tick();
    const fault = faults.get(method)?.shift();
    if (fault) throw fault;
  }

  const lostAnswers: Error[] = [];

  const repository: MemoryLedgerRepository = {
    calls,
    faults,
    lostAnswers,
    blocksOf: (chainName) => [...blocksIn(chainName).values()].map((s) => clone(s.block)).sort((a, b) => a.index - b.index),

    async getHead(chainName) {
      await enter('getHead');
      const head = heads.get(chainName);
      return head && clone(head);
    },

    async listHeads() {
      await enter('listHeads');
      // The Main Chain first, then Sub-Chains by name.
      return [...heads.values()].sort((a, b) => (a.kind === b.kind ? (a.chainName < b.chainName ? -1 : 1) : a.kind === 'main' ? -1 : 1)).map(clone);
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
        blocksIn(head.chainName).set(genesis.index, { block: clone(genesis), treeNodes: [] });
      }
      return { status: 'created' };
    },

    async commitBlocks(commit): Promise<CommitResult> {
      await enter('commitBlocks');
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
      if (!head || head.headIndex !== commit.expectedHeadIndex || !turnIsFree(head, commit.writerId, commit.nowMs)) {
        return { status: 'head-moved', head: head && clone(head) };
      }
      const stored = blocksIn(chainName);
      if (newBlocks.some((b) => stored.has(b.index))) return { status: 'head-moved', head: clone(head) };
      const proofs = commit.proofRecords ?? [];
      const stale = proofs.find((p) => {
        const sub = heads.get(p.subChain);
        return !sub || (sub.lastProofHeadIndex !== null && sub.lastProofHeadIndex >= p.headIndex);
      });
      if (stale) return { status: 'proof-stale', blockPosition: stale.blockPosition };
      const seals = commit.seals ?? [];
      const gone = seals.findIndex(({ ref }) => !pendingOf(chainName).has(pendingKey(ref)));
      if (gone >= 0) return { status: 'pending-gone', sealPosition: gone };
      const completions = commit.completions ?? [];
      const claimLost = completions.find(({ claim }) => claims.get(claim.id)?.token !== claim.token);
      if (claimLost) return { status: 'claim-lost', blockPosition: claimLost.blockPosition };

      newBlocks.forEach((block, i) => {
        stored.set(block.index, { block: clone(block), treeNodes: [...(commit.treeNodes[i] ?? [])] });
      });
      const keepLease = commit.lease !== undefined && 'untilMs' in commit.lease;
      heads.set(chainName, {
        ...head,
        headIndex: last.index,
        headHash: last.hash,
        frontier: [...commit.frontier],
        eventCount: head.eventCount + newBlocks.reduce((n, b) => n + b.events.length, 0),
        proofCount: head.proofCount + proofs.length,
        ...(commit.pendingShards !== undefined ? { pendingShards: commit.pendingShards } : {}),
        turnHolder: keepLease ? commit.writerId : null,
        turnExpiresMs: keepLease ? (commit.lease as { untilMs: number }).untilMs : null,
      });
      for (const proof of proofs) {
        const sub = heads.get(proof.subChain)!;
        heads.set(proof.subChain, { ...sub, lastProofHeadIndex: proof.headIndex, lastProofId: proof.proofId, proofCount: sub.proofCount + 1 });
      }
      for (const { ref, receipt } of seals) {
        pendingOf(chainName).delete(pendingKey(ref));
        receipts.set(receiptKey(chainName, ref), clone(receipt));
      }
      for (const { claim, blockPosition, count } of completions) {
        const record = claims.get(claim.id)!;
        claims.set(claim.id, { status: 'done', fingerprint: record.fingerprint, firstIndex: newBlocks[blockPosition]!.index, count });
      }
      const lost = lostAnswers.shift();
      if (lost) throw lost;
      return { status: 'committed' };
    },

    async acquireLease(chainName, holder, nowMs, untilMs) {
      await enter('acquireLease');
      const head = heads.get(chainName);
      if (!head) return { acquired: false, head: undefined };
      if (!turnIsFree(head, holder, nowMs)) return { acquired: false, head: clone(head), holder: head.turnHolder ?? '', untilMs: head.turnExpiresMs ?? 0 };
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
      await enter('putPending');
      pendingOf(chainName).set(pendingKey(append.ref), clone(append));
    },

    async listPending(chainName, _shards, limit) {
      await enter('listPending');
      return [...pendingOf(chainName).values()]
        .sort((a, b) => (a.ref.sk < b.ref.sk ? -1 : a.ref.sk > b.ref.sk ? 1 : a.ref.shard - b.ref.shard))
        .slice(0, limit)
        .map(clone);
    },

    async withdrawPending(chainName, ref) {
      await enter('withdrawPending');
      return pendingOf(chainName).delete(pendingKey(ref));
    },

    async rejectPending(chainName, ref, reason) {
      await enter('rejectPending');
      if (!pendingOf(chainName).delete(pendingKey(ref))) return false;
      receipts.set(receiptKey(chainName, ref), { status: 'rejected', reason });
      return true;
    },

    async getReceipt(chainName, ref) {
      await enter('getReceipt');
      const receipt = receipts.get(receiptKey(chainName, ref));
      return receipt && clone(receipt);
    },

    async getBlock(chainName, index) {
      await enter('getBlock');
      const stored = blocksIn(chainName).get(index);
      return stored && clone(stored.block);
    },

    async findBlockByHash(chainName, hash) {
      await enter('findBlockByHash');
      const found = [...blocksIn(chainName).values()].find((s) => s.block.hash === hash);
      return found && clone(found.block);
    },

    async getBlockRange(chainName, from, to, descending) {
      await enter('getBlockRange');
      const range = repository.blocksOf(chainName).filter((b) => b.index >= from && b.index <= to);
      return descending ? range.reverse() : range;
    },

    async listBlockHashes(chainName, toIndex) {
      await enter('listBlockHashes');
      return repository
        .blocksOf(chainName)
        .filter((b) => b.index <= toIndex)
        .map((b) => b.hash);
    },

    async readTreeData(chainName, indices) {
      await enter('readTreeData');
      const found = new Map<number, BlockTreeData>();
      for (const index of indices) {
        const stored = blocksIn(chainName).get(index);
        if (stored) found.set(index, { hash: stored.block.hash, treeNodes: [...stored.treeNodes] });
      }
      return found;
    },

    async storeTreeNodes(chainName, entries) {
      await enter('storeTreeNodes');
      for (const { index, treeNodes } of entries) {
        const stored = blocksIn(chainName).get(index);
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
      // In trace order: time, then chain, then index (the entity index's sort key).
      return [...blocks.values()]
        .flatMap((chain) => [...chain.values()].map((s) => s.block))
        .filter((b) => b.events[0]?.entity_id === entityId)
        .sort((a, b) => a.timestamp - b.timestamp || (a.chain_name < b.chain_name ? -1 : a.chain_name > b.chain_name ? 1 : 0) || a.index - b.index)
        .map(clone);
    },

    async claimIdempotency(claim, fingerprint, nowMs, untilMs): Promise<IdempotencyState> {
      await enter('claimIdempotency');
      const record = claims.get(claim.id);
      // Free, or held by a request whose hold lapsed (it died): never over a finished one.
      if (!record || (record.status === 'in-progress' && (record.untilMs ?? 0) < nowMs)) {
        claims.set(claim.id, { status: 'in-progress', fingerprint, token: claim.token, untilMs });
        return { status: 'claimed' };
      }
      return record.status === 'done'
        ? { status: 'done', fingerprint: record.fingerprint, firstIndex: record.firstIndex!, count: record.count! }
        : { status: 'in-progress', fingerprint: record.fingerprint, untilMs: record.untilMs! };
    },

    async releaseIdempotency(claim) {
      await enter('releaseIdempotency');
      if (claims.get(claim.id)?.token === claim.token) claims.delete(claim.id);
    },

    async ping() {
      await enter('ping');
    },
  };
  return repository;
}
