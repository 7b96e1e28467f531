/**
 * The read cache of a warm instance (shared/storage/read-cache.ts), offline with aws-sdk-client-mock: a
 * written block read again costs no DynamoDB request, the cache stays within its bytes (least recently
 * used out), a segment walk takes what is kept and asks DynamoDB only for the rest, and /metrics counts
 * the hits and misses.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { beforeEach, describe, it } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { type BlockMeta, completedNodeCount, packRun } from '#shared/ledger/block-meta';
import { canonicalJson } from '#shared/ledger/hashing';
import type { Block } from '#shared/ledger/types';
import { createMetrics } from '#shared/metrics/metrics';
import { indexSk, segmentPk } from '#shared/storage/keys';
import { createPageStorage, MAX_KEPT_PAGE_BYTES, packPage } from '#shared/storage/ledger-pages';
import { createLedgerRepository } from '#shared/storage/ledger-repository';
import { createReadCache } from '#shared/storage/read-cache';
import { createTileRepository } from '#shared/storage/tile-repository';

const documentClient = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
const dynamo = mockClient(documentClient);

const block = (index: number): Block => ({
  index,
  chain_name: 'orders',
  timestamp: 1_750_000_000 + index,
  previous_hash: index === 0 ? '00'.repeat(32) : String(index - 1).padStart(64, '0'),
  hash: String(index).padStart(64, '0'),
  events: [{ event_id: `e${index}`, entity_id: `x${index}`, event_type: 'recorded', details: { index }, timestamp: 1_750_000_000 + index } as never],
});
const meta = (index: number): BlockMeta => ({
  index,
  hash: block(index).hash,
  timestamp: block(index).timestamp,
  nodes: Array.from({ length: completedNodeCount(index) }, () => 'ee'.repeat(32)),
  ref: null,
  position: 0,
});
/** Segments of ten blocks: 0–9, 10–19, … 90–99. */
const segment = (n: number) => ({
  pk: segmentPk('orders'),
  sk: indexSk(n * 10 + 9),
  run: packRun({ prev: n === 0 ? '00'.repeat(32) : block(n * 10 - 1).hash, blocks: Array.from({ length: 10 }, (_, i) => meta(n * 10 + i)) }),
});
const HEAD = { pk: 'CHAIN#orders', sk: 'HEAD', chain_name: 'orders', kind: 'sub', head_index: 99, head_hash: block(99).hash, created_at: 1, records_from: 0 };

/** DynamoDB as the mock answers it: the head, segments by last index, records by hash. */
function answer(): void {
  // A head by its key; a lone record (one key is a GetItem, more a BatchGetItem) by its hash.
  const record = (k: { pk: string }) => ({ block_json: canonicalJson(block(Number(k.pk.slice('HASH#'.length)))) });
  dynamo.on(GetCommand).callsFake((input) => ({ Item: String(input.Key.pk).startsWith('HASH#') ? record(input.Key) : HEAD }));
  dynamo.on(QueryCommand).callsFake((input) => {
    const from = Number(input.ExpressionAttributeValues[':from']);
    const first = Math.floor(from / 10);
    return { Items: Array.from({ length: Math.min(input.Limit ?? 10, 10 - first) }, (_, i) => segment(first + i)) };
  });
  dynamo.on(BatchGetCommand).callsFake((input) => {
    const keys = input.RequestItems.ledger.Keys as { pk: string; sk: string }[];
    return { Responses: { ledger: keys.map(record) } };
  });
}

const calls = () => dynamo.calls().length;

describe('the read cache', () => {
  beforeEach(() => {
    dynamo.reset();
    answer();
  });

  it('keeps a bounded number of bytes, pushing out the least recently used, and never a value larger than itself', () => {
    const cache = createReadCache(1_000);
    cache.set('record', 'a', 'x', 300);
    cache.set('record', 'b', 'y', 300);
    assert.equal(cache.get('record', 'a'), 'x', 'a is now the most recently used');
    cache.set('record', 'c', 'z', 300);
    assert.equal(cache.get('record', 'b'), undefined, 'b, least recently used, made room');
    assert.equal(cache.get('record', 'a'), 'x');
    assert.ok(cache.bytes <= 1_000, `${cache.bytes} bytes held`);
    cache.set('tile', 'huge', 'w', 2_000);
    assert.equal(cache.get('tile', 'huge'), undefined);
    assert.equal(cache.get('record', 'c'), 'z', 'a value too large for the cache pushes nothing out');
    const none = createReadCache(0);
    none.set('record', 'a', 'x', 1);
    assert.equal(none.get('record', 'a'), undefined, 'a cache of 0 bytes keeps nothing');
  });

  it('serves a block read again with no DynamoDB request, and each read gets its own copy', async () => {
    const cache = createReadCache(1 << 20);
    const repository = createLedgerRepository({ client: documentClient, tableName: 'ledger', cache });
    const first = await repository.getBlock('orders', 42);
    assert.equal(first?.hash, block(42).hash);
    assert.ok(calls() >= 2, 'the first read asks DynamoDB (its segment, its record)');
    first!.events[0]!.details = { changed: true };
    const before = calls();
    const again = await repository.getBlock('orders', 42);
    assert.equal(calls(), before, 'no request the second time');
    assert.equal(again?.hash, block(42).hash);
    assert.deepEqual(again?.events[0]?.details, { index: 42 }, "a caller's change to its copy does not reach the next reader");
    assert.deepEqual(cache.counts.hits, { record: 1, segment: 1, tile: 0, evidence: 0, page: 0 });
    assert.deepEqual(cache.counts.misses, { record: 1, segment: 1, tile: 0, evidence: 0, page: 0 });

    const byHash = await repository.findBlockByHash('orders', block(42).hash);
    assert.equal(byHash?.index, 42);
    assert.equal(calls(), before, 'by hash too: the record is kept under its hash');
  });

  it('keeps a page of 100 blocks read whole, compressed, and answers it again with no request and a copy of its own', async () => {
    const cache = createReadCache(1 << 20);
    const repository = createLedgerRepository({ client: documentClient, tableName: 'ledger', cache });
    const first = await repository.getBlockRange('orders', 0, 99, false);
    assert.deepEqual(
      first.map((b) => b.hash),
      Array.from({ length: 100 }, (_, i) => block(i).hash),
    );
    const puts = dynamo.commandCalls(PutCommand);
    assert.equal(puts.length, 1, 'kept once');
    const item = puts[0]!.args[0].input.Item!;
    assert.deepEqual([item.pk, item.sk, item.count], ['PAGE#orders#0', indexSk(0), 100]);
    const json = JSON.stringify(first).length;
    assert.ok((item.blocks as Buffer).byteLength < json / 2, `packed: ${(item.blocks as Buffer).byteLength} bytes of ${json}`);
    const answered = JSON.stringify(first);
    first[0]!.events[0]!.details = { changed: true };
    const before = calls();
    const again = await repository.getBlockRange('orders', 0, 99, true);
    assert.equal(calls(), before, 'no request the second time');
    assert.equal(JSON.stringify(again.reverse()), answered, "the same blocks, descending as asked; a caller's change did not reach it");
    assert.equal(cache.counts.hits.page, 1);
    assert.equal(cache.counts.misses.page, 1, 'looked up once before it was kept');
  });

  it("holds a kept page in place of its blocks' records, and reads a record again when a block is read alone", async () => {
    const cache = createReadCache(1 << 20);
    const repository = createLedgerRepository({ client: documentClient, tableName: 'ledger', cache });
    await repository.getBlock('orders', 142 - 100); // a record kept before the page is read
    assert.ok(cache.get('record', block(42).hash));
    await repository.getBlockRange('orders', 0, 99, false);
    for (const i of [0, 42, 99]) assert.equal(cache.get('record', block(i).hash), undefined, `record ${i} let go`);
    const before = dynamo.commandCalls(GetCommand).length;
    assert.equal((await repository.getBlock('orders', 42))?.hash, block(42).hash);
    assert.equal(dynamo.commandCalls(GetCommand).length, before + 1, 'its record read again');
    const again = calls();
    await repository.getBlockRange('orders', 0, 99, false);
    assert.equal(calls(), again, 'the page still answered from memory');
  });

  it('does not keep a page too large for one item', async () => {
    const big = Array.from({ length: 100 }, (_, i) => ({
      ...block(i),
      events: [{ ...block(i).events[0]!, details: { blob: randomBytes(4_000).toString('base64') } }],
    }));
    const pages = createPageStorage({ client: documentClient, tableName: 'ledger', cache: createReadCache(1 << 20) });
    assert.equal(await pages.putPage('orders', 0, big), false);
    assert.equal(dynamo.commandCalls(PutCommand).length, 0);
    assert.ok(packPage(big).byteLength > MAX_KEPT_PAGE_BYTES);
    assert.equal(await pages.getPage('orders', 0), undefined);
    assert.equal(calls(), 0, 'nor looked up again by this instance');
  });

  it('takes the kept segments that follow on from an index, and asks DynamoDB only for the rest', async () => {
    const cache = createReadCache(1 << 20);
    const repository = createLedgerRepository({ client: documentClient, tableName: 'ledger', cache });
    await repository.readSegments('orders', 0, 2, false); // segments 0–9 and 10–19 are kept
    dynamo.resetHistory();
    const runs = await repository.readSegments('orders', 5, 4, false);
    assert.deepEqual(
      runs.map((r) => [r.blocks[0]!.index, r.blocks.at(-1)!.index]),
      [
        [0, 9],
        [10, 19],
        [20, 29],
        [30, 39],
      ],
    );
    const queries = dynamo.commandCalls(QueryCommand);
    assert.equal(queries.length, 1);
    assert.equal(queries[0]!.args[0].input.ExpressionAttributeValues![':from'], indexSk(20), 'from the first block not kept');
    assert.equal(queries[0]!.args[0].input.Limit, 2, 'only as many as are missing');
  });

  it('answers from kept segments alone when they reach the last block the caller wants', async () => {
    const cache = createReadCache(1 << 20);
    const repository = createLedgerRepository({ client: documentClient, tableName: 'ledger', cache });
    await repository.readSegments('orders', 0, 2, false); // segments 0–9 and 10–19 are kept
    dynamo.resetHistory();
    // Blocks 5…12 span two segments: both kept, so no Query for more, though 16 were allowed.
    const runs = await repository.readSegments('orders', 5, 16, true, 12);
    assert.deepEqual(
      runs.map((r) => [r.blocks[0]!.index, r.blocks.at(-1)!.index]),
      [
        [0, 9],
        [10, 19],
      ],
    );
    assert.equal(dynamo.commandCalls(QueryCommand).length, 0);
    // Wanting block 25 too, the rest is asked for.
    assert.equal((await repository.readSegments('orders', 5, 16, true, 25)).length, 10, 'all ten the table holds');
    assert.equal(dynamo.commandCalls(QueryCommand).length, 1);
  });

  it('forgets a segment pushed out to make room, and reads it again', async () => {
    const cache = createReadCache(segment(0).run.byteLength + 200);
    const repository = createLedgerRepository({ client: documentClient, tableName: 'ledger', cache });
    await repository.readSegments('orders', 0, 1, false);
    await repository.readSegments('orders', 10, 1, false); // pushes segment 0 out
    dynamo.resetHistory();
    const [run] = await repository.readSegments('orders', 3, 1, false);
    assert.equal(run!.blocks[0]!.index, 0);
    assert.equal(dynamo.commandCalls(QueryCommand).length, 1, 'read from DynamoDB again');
  });

  it('keeps full tiles read or written, and counts hits and misses in /metrics', async () => {
    const cache = createReadCache(1 << 20);
    const tiles = createTileRepository({ client: documentClient, tableName: 'ledger', cache });
    dynamo.on(GetCommand).resolves({ Item: { bytes: new Uint8Array(8192).fill(7) } });
    dynamo.on(PutCommand).resolves({});
    assert.equal((await tiles.get('orders', 'tile/0/000'))?.length, 8192);
    assert.equal((await tiles.get('orders', 'tile/0/000'))?.[0], 7);
    await tiles.put('orders', 'tile/0/001', Buffer.alloc(8192, 9));
    assert.equal((await tiles.get('orders', 'tile/0/001'))?.[0], 9);
    assert.equal(dynamo.commandCalls(GetCommand).length, 1, 'one read: the first');

    const metrics = createMetrics({ flushMs: 0, readCache: () => cache });
    const text = (await metrics.render()).body;
    assert.match(text, /^ledger_read_cache_hits_total\{cache="tile"\} 2$/m);
    assert.match(text, /^ledger_read_cache_misses_total\{cache="tile"\} 1$/m);
    assert.match(text, /^ledger_read_cache_bytes [1-9]\d+$/m);
  });
});
