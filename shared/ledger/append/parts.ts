/**
 * The appender's errors and pure helpers over drafts, units and metadata runs: no request, no clock.
 */
import { type BlockMeta, type MetaRun, nextPendingSk, type PendingRef, type SealEntry } from '../block-meta.ts';
import type { BlockDraft } from '../blocks.ts';
import type { ChainHead } from '../types.ts';
import { CLAIM_LOST, PROOF_SUPERSEDED, refKey, type Unit } from './settings.ts';

/** Refusal of blocks whose Idempotency-Key hold was taken over (their request outlived its hold). */
export class IdempotencyClaimLostError extends Error {
  constructor() {
    super('the hold on this Idempotency-Key lapsed before the append could land');
  }
}

/** The append sealed at a key is not the drafts this writer has: another writer's, at a key it took first. */
export class ForeignAppendError extends Error {
  constructor(chainName: string) {
    super(`the metadata of an append to '${chainName}' does not match its drafts`);
  }
}

/** Rejection of an anchor whose Sub-Chain was already anchored at that head or later. */
export class ProofSupersededError extends Error {
  readonly subChain: string;
  constructor(subChain: string) {
    super(`Sub-Chain '${subChain}' was already anchored at this head`);
    this.subChain = subChain;
    this.name = 'ProofSupersededError';
  }
}

/**
 * Whether a round on the head has blocks without records (their bodies only in pending appends, which
 * expire): a round its leader did not finish. Its segment alone unwritten puts nothing at risk (the head
 * holds its metadata until the next commit, which writes the segment first).
 */
export function recordsUnwritten(head: ChainHead): boolean {
  return !head.recentFlushed && (head.materialized ?? head.headIndex) < head.headIndex;
}

/** The blocks of a run that a pending append became, and the hash before the first; undefined when it is not in the run. */
export function pickRef(run: MetaRun, ref: PendingRef): { metas: BlockMeta[]; prev: string } | undefined {
  const key = refKey(ref);
  const metas = run.blocks.filter((b) => b.ref && refKey(b.ref) === key);
  if (metas.length === 0) return undefined;
  const first = metas[0]!.index - run.blocks[0]!.index;
  return { metas, prev: first === 0 ? run.prev : run.blocks[first - 1]!.hash };
}

/** The blocks a pending append became, from the first of `seals` that names it (a round's seal holds all of them); undefined when none does. */
export function pickSealed(seals: readonly { entries: readonly SealEntry[] }[], ref: PendingRef): { metas: SealEntry[]; prev: string } | undefined {
  const key = refKey(ref);
  for (const { entries } of seals) {
    const metas = entries.filter((e) => e.ref && refKey(e.ref) === key);
    if (metas.length > 0) return { metas, prev: metas[0]!.prev };
  }
  return undefined;
}

/** Each pending shard's sealed blocks of a run, with the hash before each. */
export function sealsOf(run: MetaRun): Map<number, SealEntry[]> {
  const seals = new Map<number, SealEntry[]>();
  let prev = run.prev;
  for (const { nodes: _nodes, ...meta } of run.blocks) {
    if (meta.ref) {
      const entries = seals.get(meta.ref.shard) ?? seals.set(meta.ref.shard, []).get(meta.ref.shard)!;
      entries.push({ ...meta, prev });
    }
    prev = meta.hash;
  }
  return seals;
}

/** The n-th sort key above the cursor (1: the next one). */
export function nthAfter(cursor: string, n: number): string {
  let sk = cursor;
  for (let i = 0; i < n; i += 1) sk = nextPendingSk(sk);
  return sk;
}

/** The error a refused pending append's writer answers with. */
export function refusalError(chainName: string, drafts: BlockDraft[], reason: string): Error {
  if (reason === PROOF_SUPERSEDED) return new ProofSupersededError(drafts.find((d) => d.proof)?.proof?.subChain ?? '');
  if (reason === CLAIM_LOST) return new IdempotencyClaimLostError();
  return new Error(`append to '${chainName}' refused: ${reason}`);
}

/** The Sub-Chains the drafts anchor. */
export function anchoredChains(drafts: readonly BlockDraft[]): string[] {
  return drafts.flatMap((d) => (d.proof ? [d.proof.subChain] : []));
}

/**
 * Whether the drafts anchor a Sub-Chain already anchored in the round being built. Two anchors of one
 * Sub-Chain cannot share a transaction: both would update its head item, which DynamoDB refuses (and
 * DynamoDB Local let both conditions pass against the old head: two anchors for one head).
 */
export function anchorsAgain(anchored: ReadonlySet<string>, drafts: readonly BlockDraft[]): boolean {
  return anchoredChains(drafts).some((chain) => anchored.has(chain));
}

/** The unit a block position belongs to. */
export function unitAt(units: Unit[], position: number): Unit {
  let offset = 0;
  for (const unit of units) {
    if (position < offset + unit.drafts.length) return unit;
    offset += unit.drafts.length;
  }
  return units[units.length - 1]!;
}
