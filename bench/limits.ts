/**
 * The limits: what DynamoDB Local does with no service in front of it. Appends are the exact
 * conditional transaction the service commits (head update on the expected index + block put, through
 * the repository), one block at a time; reads are a bare GetItem and the entity-index Query of a trace.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { buildBlocks } from '#shared/ledger/appender';
import type { LedgerRepository } from '#shared/ledger/repository';
import { extendTree } from '#shared/ledger/tree';
import { BLOCK_SHARDS, blockPk, blockSk } from '#shared/storage/keys';
import type { ChainHead } from '#shared/ledger/types';

export interface LoopResult {
  ops: number;
  seconds: number;
  /** Milliseconds, one per operation. */
  latencies: number[];
  conflicts: number;
}

/** Runs `workers` loops of `op` for `durationMs`; each loop starts its next operation when the last ends. */
// biome-ignore lint/suspicious/noConfusingVoidType: an op may return nothing (it counted) or false (it did not)
export async function runFor(durationMs: number, workers: number, op: (worker: number) => Promise<boolean | void>): Promise<LoopResult> {
  const latencies: number[] = [];
  let conflicts = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        const ok = await op(worker);
        latencies.push(performance.now() - t0);
        if (ok === false) conflicts += 1;
      }
    }),
  );
  return { ops: latencies.length - conflicts, seconds: (performance.now() - started) / 1000, latencies, conflicts };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** A writer that appends blocks straight to one chain, keeping the head in memory as the appender does. */
export class RawWriter {
  private n = 0;
  constructor(
    private readonly repository: LedgerRepository,
    private head: ChainHead,
    private readonly writerId = 'bench-raw',
  ) {}

  /** Entities of this writer's events: 64 per chain, named after the chain (`<chain>-0` … `<chain>-63`). */
  static entity(chain: string, n: number): string {
    return `${chain}-${n % 64}`;
  }

  static async open(repository: LedgerRepository, chain: string): Promise<RawWriter> {
    const head = await repository.getHead(chain);
    if (!head?.frontier) throw new Error(`chain ${chain} is missing`);
    return new RawWriter(repository, head);
  }

  /** Appends `count` blocks of one event each in one transaction; false when the head had moved. */
  async append(count = 1): Promise<boolean> {
    // Built exactly as the service builds them, so that the raw limit writes the same items.
    const drafts = Array.from({ length: count }, () => {
      this.n += 1;
      return {
        events: [
          {
            entity_id: RawWriter.entity(this.head.chainName, this.n),
            event_type: 'bench',
            details: { n: this.n, note: 'raw conditional append' },
            details_cid: null,
            details_nonce: null,
            details_metadata: null,
            is_offchain: false,
          },
        ],
      };
    });
    const blocks = buildBlocks(this.head.chainName, this.head, drafts, () => Date.now() / 1000);
    const tree = extendTree(
      this.head.frontier!,
      this.head.headIndex + 1,
      blocks.map((b) => b.hash),
    );
    const result = await this.repository.commitBlocks({
      chainName: this.head.chainName,
      writerId: this.writerId,
      nowMs: Date.now(),
      expectedHeadIndex: this.head.headIndex,
      blocks,
      treeNodes: tree.treeNodes,
      frontier: tree.frontier,
    });
    if (result.status !== 'committed') {
      const fresh = await this.repository.getHead(this.head.chainName);
      if (fresh) this.head = fresh;
      return false;
    }
    const last = blocks[blocks.length - 1]!;
    this.head = { ...this.head, headIndex: last.index, headHash: last.hash, frontier: tree.frontier, eventCount: this.head.eventCount + count };
    return true;
  }
}

/** One bare GetItem of a block's body, as the service's read by index does. */
export async function getItem(client: DynamoDBDocumentClient, table: string, chain: string, index: number): Promise<boolean> {
  const out = await client.send(
    new GetCommand({ TableName: table, Key: { pk: blockPk(chain, index, BLOCK_SHARDS), sk: blockSk(index) }, ProjectionExpression: 'block_json' }),
  );
  return out.Item !== undefined;
}
