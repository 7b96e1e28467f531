/**
 * The limits: what DynamoDB Local does with no service in front of it. Appends are the exact
 * conditional transaction a lone writer commits (the head updated on the expected index and cursor, the
 * blocks' records put, through the repository; the head's metadata written to a segment when it fills),
 * one block at a time; reads are a bare GetItem of a record and the entity-index Query of a trace.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { buildBlocks } from '#shared/ledger/appender';
import { type BlockMeta, type MetaRun, packedSize } from '#shared/ledger/block-meta';
import type { LedgerRepository } from '#shared/ledger/repository';
import { extendTree } from '#shared/ledger/tree';
import { blockSk, recordPk } from '#shared/storage/keys';
import type { ChainHead } from '#shared/ledger/types';

/** As the appender keeps a small round's metadata on the head (shared/ledger/appender.ts). */
const INLINE_BYTES = 520;

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
  private readonly repository: LedgerRepository;
  private head: ChainHead;
  private readonly writerId: string;
  constructor(repository: LedgerRepository, head: ChainHead, writerId = 'bench-raw') {
    this.repository = repository;
    this.head = head;
    this.writerId = writerId;
  }

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
    const timestamp = Math.round(Date.now()) / 1000;
    const blocks = buildBlocks(this.head.chainName, this.head, drafts, () => timestamp);
    const tree = extendTree(
      this.head.frontier!,
      this.head.headIndex + 1,
      blocks.map((b) => b.hash),
    );
    const metas: BlockMeta[] = blocks.map((b, i) => ({ index: b.index, hash: b.hash, timestamp, nodes: tree.treeNodes[i]!, ref: null, position: 0 }));
    // The head's metadata goes to a segment before it is replaced (as the appender does), unless these blocks join it.
    const recentNow = this.head.recent;
    let tail = recentNow && 'run' in recentNow ? recentNow.run : undefined;
    if (recentNow && (!tail || packedSize([...tail.blocks, ...metas]) > INLINE_BYTES)) {
      const flushed = tail ?? (await this.repository.getRound(this.head.chainName, (recentNow as { round: { id: string } }).round.id));
      if (flushed) await this.repository.writeRound(this.head.chainName, { records: [], segment: flushed });
      tail = undefined;
    }
    const run: MetaRun = tail ? { prev: tail.prev, blocks: [...tail.blocks, ...metas] } : { prev: this.head.headHash, blocks: metas };
    const last = blocks[blocks.length - 1]!;
    if (packedSize(run.blocks) > INLINE_BYTES) {
      const id = `raw-${this.n}`;
      await this.repository.putRound(this.head.chainName, id, run, Math.floor(Date.now() / 1000) + 3600);
    }
    const recent = packedSize(run.blocks) > INLINE_BYTES ? { round: { id: `raw-${this.n}`, first: run.blocks[0]!.index, last: last.index } } : { run };
    const result = await this.repository.commitRound({
      chainName: this.head.chainName,
      writerId: this.writerId,
      nowMs: Date.now(),
      expectedHeadIndex: this.head.headIndex,
      expectedCursor: this.head.cursor ?? '',
      mode: { direct: true },
      blocks,
      frontier: tree.frontier,
      recent,
      cursor: this.head.cursor ?? '',
      materialized: last.index,
      records: blocks,
    });
    if (result.status !== 'committed') {
      const fresh = await this.repository.getHead(this.head.chainName);
      if (fresh) this.head = fresh;
      return false;
    }
    this.head = {
      ...this.head,
      headIndex: last.index,
      headHash: last.hash,
      frontier: tree.frontier,
      eventCount: this.head.eventCount + count,
      recent,
      materialized: last.index,
    };
    return true;
  }
}

/** One bare GetItem of a block's record (its hash and index known), as the service's read by index ends. */
export async function getItem(client: DynamoDBDocumentClient, table: string, block: { hash: string; index: number }): Promise<boolean> {
  const out = await client.send(
    new GetCommand({ TableName: table, Key: { pk: recordPk(block.hash), sk: blockSk(block.index) }, ProjectionExpression: 'block_json' }),
  );
  return out.Item !== undefined;
}
