/**
 * DynamoDB transactions whose items say what their failure means. A cancelled TransactWriteItems answers
 * one reason per item, in the order the items were sent; rather than decoding that by computed offsets,
 * each item is added with its meaning, and a cancellation answers the meanings of the items whose
 * condition failed. One place says what "condition failed" is.
 */
import type { CancellationReason } from '@aws-sdk/client-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { pause } from '../deadline.ts';
import { DependencyUnavailableError } from '../errors.ts';
import { translateStorageError } from './errors.ts';

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** Whether a cancellation reason (or a single write's error name) is a failed condition. */
export const isConditionFailed = (reason: CancellationReason | undefined): boolean => reason?.Code === 'ConditionalCheckFailed';

/** The items of one transaction, each with what its failed condition would mean (undefined: unconditional). */
/** The most items DynamoDB takes in one TransactWriteItems. */
export const TRANSACTION_ITEMS_MAX = 100;

export class Transaction<Meaning> {
  readonly items: TransactItem[] = [];
  private readonly meanings: (Meaning | undefined)[] = [];

  add(item: TransactItem, meaning?: Meaning): this {
    this.items.push(item);
    this.meanings.push(meaning);
    return this;
  }

  /**
   * What a cancellation says, item by item: the meanings of the items whose condition failed (in the
   * order they were added, each with the item DynamoDB returned, if it was asked to), and whether any
   * item lost to a concurrent transaction. Undefined when the error is not a cancellation.
   */
  cancellation(error: unknown): { failed: { meaning: Meaning; item: CancellationReason['Item'] }[]; conflict: boolean } | undefined {
    if (!(error instanceof TransactionCanceledException)) return undefined;
    const reasons = error.CancellationReasons ?? [];
    const failed: { meaning: Meaning; item: CancellationReason['Item'] }[] = [];
    reasons.forEach((reason, i) => {
      const meaning = this.meanings[i];
      if (isConditionFailed(reason) && meaning !== undefined) failed.push({ meaning, item: reason.Item });
    });
    return { failed, conflict: reasons.some((reason) => reason.Code === 'TransactionConflict') };
  }
}

/** How often a transaction cancelled only by concurrent transactions on its items is sent again. */
const TRANSACTION_CONFLICT_RETRIES = 4;

/**
 * Sends a transaction: undefined when it was written, else the meaning of its first failed condition, in the order the
 * items were added (nothing was written). One cancelled only because another transaction held one of its items (two
 * creates of one channel's collections at once) changed nothing: it is sent again, then answered with a retryable 503
 * rather than a 500.
 */
export async function firstRefusal<Meaning>(client: DynamoDBDocumentClient, transaction: Transaction<Meaning>): Promise<Meaning | undefined> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await client.send(new TransactWriteCommand({ TransactItems: transaction.items }));
      return undefined;
    } catch (error) {
      const cancelled = transaction.cancellation(error);
      if (cancelled?.failed[0]) return cancelled.failed[0].meaning;
      if (!cancelled?.conflict) throw translateStorageError(error);
      if (attempt >= TRANSACTION_CONFLICT_RETRIES) throw new DependencyUnavailableError('DynamoDB', { cause: error, notApplied: true });
      await pause(5 * 2 ** attempt + Math.random() * 10, 'DynamoDB (a transaction that met another)');
    }
  }
}
