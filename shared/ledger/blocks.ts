/**
 * Blocks before and as they are appended: what a caller hands the appender (drafts), what one DynamoDB
 * transaction can hold, and how drafts become sealed blocks on top of a chain's head.
 */
import { UnprocessableError } from '../errors.ts';
import type { EventDraft } from './events.ts';
import { sealBlock } from './hashing.ts';
import type { IdempotencyClaim, PendingRef } from './repository.ts';
import type { Block, ChainHead } from './types.ts';

/** What a Main Chain anchor block records about the Sub-Chain it proves. */
export interface ProofClaim {
  subChain: string;
  headIndex: number;
}

/** One block to append: its events (one, per docs/rules.md, "Chains and blocks") and, for anchors, the proof claim. */
export interface BlockDraft {
  events: EventDraft[];
  proof?: ProofClaim;
  /**
   * On the first draft of a request sent with an Idempotency-Key: the key's claim, and how many blocks
   * (this one and the next) are that request's. A pending append carrying it is bound to the key's record
   * before it is written; the leader that seals it records the key's answer (a commit that writes the blocks
   * itself, in its transaction).
   */
  completes?: IdempotencyClaim & {
    count: number;
    /** The pending append's key the claim named when it was made (bound with the claim: no bind before its write). */
    bound?: PendingRef;
  };
}

/** DynamoDB's cap on the items of one transaction. */
export const MAX_TRANSACTION_ITEMS = 100;
/** Most blocks one caller may commit atomically: every block is one item, and the head takes one more. */
export const MAX_ATOMIC_BLOCKS = MAX_TRANSACTION_ITEMS - 1;
/** DynamoDB caps a transaction at 4 MB; stay well under it (a block item holds its body and its indexes). */
export const MAX_BATCH_BYTES = 1_500_000;

/** Rejection of an atomic set of blocks that cannot fit one DynamoDB transaction. */
export class AtomicLimitError extends UnprocessableError {}

/** Serialized size of a draft as the appender budgets it (the block around it adds about 512 bytes). */
export function draftBytes(draft: BlockDraft): number {
  return Buffer.byteLength(JSON.stringify(draft.events)) + 512;
}

/** Items a draft takes in the transaction: its block, its proof record, its Idempotency-Key record. */
export const transactionItems = (drafts: readonly BlockDraft[]) => drafts.reduce((n, d) => n + 1 + (d.proof ? 1 : 0) + (d.completes ? 1 : 0), 0);

/**
 * The blocks that `drafts` become on top of `head`: consecutive indices, each linked to the one before,
 * every event given its id and place, sealed with its hash. `now` gives each block its timestamp (seconds).
 */
export function buildBlocks(chainName: string, head: Pick<ChainHead, 'headIndex' | 'headHash'>, drafts: BlockDraft[], now: () => number): Block[] {
  const blocks: Block[] = [];
  let previousHash = head.headHash;
  let index = head.headIndex;
  for (const draft of drafts) {
    index += 1;
    const timestamp = Math.round(now() * 1000) / 1000;
    const block = sealBlock({
      index,
      chain_name: chainName,
      timestamp,
      previous_hash: previousHash,
      events: draft.events.map((event, position) => ({
        event_id: `${chainName}_${index}_${position}`,
        chain_name: chainName,
        block_index: index,
        entity_id: event.entity_id,
        event_type: event.event_type,
        details: event.details,
        details_cid: event.details_cid,
        details_nonce: event.details_nonce,
        details_metadata: event.details_metadata,
        timestamp,
        is_offchain: event.is_offchain,
        ...(event.subject_id !== undefined ? { subject_id: event.subject_id, details_sealed: event.details_sealed ?? null } : {}),
        ...(event.salt !== undefined ? { salt: event.salt } : {}),
        ...(event.signed !== undefined ? { signed: event.signed } : {}),
      })),
    });
    blocks.push(block);
    previousHash = block.hash;
  }
  return blocks;
}
