/**
 * The ledger storage against DynamoDB Local directly: the conditions that keep a chain linear, the cursor
 * that seals a pending append once, the lease, and the block reads over records, segments and the head
 * (and over the block items of a chain from an earlier version).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { BlockMeta, MetaRun } from '#shared/ledger/block-meta';
import { buildBlocks, type BlockDraft } from '#shared/ledger/blocks';
import { ZERO_HASH, sealBlock } from '#shared/ledger/hashing';
import { extendTree } from '#shared/ledger/tree';
import { pendingSk, type LedgerRepository, type RoundCommit } from '#shared/ledger/repository';
import type { Block, ChainHead } from '#shared/ledger/types';
import { itemSize } from '#shared/storage/capacity';
import { createDynamoBaseClient, createDynamoClient } from '#shared/storage/client';
import { withBlockReads } from '#shared/ledger/block-reads';
import { blockItem, headItem } from '#shared/storage/ledger-items';
import { createLedgerRepository } from '#shared/storage/ledger-repository';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';

let storage: TestDynamo;
let repo: LedgerRepository;

function chain(name: string): { head: ChainHead; genesis: Block } {
  const genesis = sealBlock({ index: 0, chain_name: name, timestamp: 1, previous_hash: ZERO_HASH, events: [] });
  return {
    genesis,
    head: {
      chainName: name,
      kind: 'sub',
      headIndex: 0,
      headHash: genesis.hash,
      eventCount: 0,
      proofCount: 0,
      lastProofHeadIndex: null,
      lastProofId: null,
      createdAt: 1,
      frontier: extendTree([], 0, [genesis.hash]).frontier,
      recordsFrom: 0,
      recent: { run: { prev: ZERO_HASH, blocks: [{ index: 0, hash: genesis.hash, timestamp: 1, nodes: [], ref: null, position: 0 }] } },
      cursor: '',
      materialized: 0,
    },
  };
}

const draft = (n: number): BlockDraft => ({
  events: [{ entity_id: `e${n}`, event_type: 't', details: { n }, details_cid: null, details_nonce: null, details_metadata: null, is_offchain: false }],
});

/** Blocks of `drafts` on a head, their metadata (with where their drafts wait, if `refs`), and the round that commits them. */
function round(head: ChainHead, drafts: BlockDraft[], over: Partial<RoundCommit> & { refs?: BlockMeta['ref'][] } = {}) {
  const blocks = buildBlocks(head.chainName, head, drafts, () => 2);
  const tree = extendTree(
    head.frontier!,
    head.headIndex + 1,
    blocks.map((b) => b.hash),
  );
  const metas: BlockMeta[] = blocks.map((b, i) => ({
    index: b.index,
    hash: b.hash,
    timestamp: 2,
    nodes: tree.treeNodes[i]!,
    ref: over.refs?.[i] ?? null,
    position: 0,
  }));
  const run: MetaRun = { prev: head.headHash, blocks: metas };
  const { refs: _refs, ...rest } = over;
  const commit: RoundCommit = {
    chainName: head.chainName,
    writerId: 'w',
    nowMs: Date.now(),
    expectedHeadIndex: head.headIndex,
    expectedCursor: head.cursor ?? '',
    mode: { direct: true },
    blocks,
    frontier: tree.frontier,
    recent: { run },
    cursor: head.cursor ?? '',
    materialized: head.materialized ?? head.headIndex,
    ...rest,
  };
  return { blocks, run, commit };
}

before(async () => {
  storage = await startTestDynamo('repo');
  repo = storage.repository;
});

after(() => storage?.stop());

describe('Class: LedgerStorage (connected)', () => {
  it('creates a chain once, and reports it as existing the second time', async () => {
    const c = chain('alpha');
    assert.deepEqual(await repo.createChains([c]), { status: 'created' });
    assert.deepEqual(await repo.createChains([c]), { status: 'exists', chainNames: ['alpha'] });
    assert.equal((await repo.getBlock('alpha', 0))?.hash, c.genesis.hash, 'the genesis record, found by its metadata on the head');
  });

  it('refuses a round built on a stale head or cursor, and hands back the head as it is', async () => {
    const c = chain('beta');
    await repo.createChains([c]);
    const mine = round(c.head, [draft(1), draft(2)], { materialized: 2 });
    assert.deepEqual(await repo.commitRound({ ...mine.commit, records: mine.blocks }), { status: 'committed' });
    const rival = round(c.head, [draft(3)]);
    const lost = await repo.commitRound(rival.commit);
    assert.equal(lost.status === 'head-moved' && lost.head?.headIndex, 2);
    assert.equal(lost.status === 'head-moved' && lost.head?.headHash, mine.blocks[1]!.hash);
    assert.equal((await repo.getBlock('beta', 1))!.hash, mine.blocks[0]!.hash, 'the rival block was not written');
    // A withdrawal moves the cursor: a round built on the cursor before it fails.
    const head = (await repo.getHead('beta'))!;
    assert.equal(await repo.withdraw('beta', pendingSk(5, 1n)), true);
    assert.equal(await repo.withdraw('beta', pendingSk(4, 1n)), false, 'the cursor only moves up');
    const stale = await repo.commitRound(round(head, [draft(4)]).commit);
    assert.equal(stale.status === 'head-moved' && stale.head?.cursor, pendingSk(5, 1n));
  });

  it("pages through the chain list in the list's order, and keeps the sweep's place", async () => {
    const names = ['page-a', 'page-b', 'page-c'];
    for (const name of names) assert.equal((await repo.createChains([chain(name)])).status, 'created');
    const seen: string[] = [];
    let position: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await repo.listHeadsPage(position, 2);
      pages += 1;
      seen.push(...page.heads.map((h) => h.head.chainName));
      for (const { head } of page.heads) if (names.includes(head.chainName)) assert.equal(head.headIndex, 0, 'each with its head');
      if (page.next === undefined) break;
      position = page.next;
    }
    const listed = (await repo.listHeads()).map((h) => h.chainName);
    assert.deepEqual(seen, listed, 'every chain once, in the order of the whole list');
    assert.ok(pages >= Math.ceil(listed.length / 2));
    for (const name of names) assert.ok(seen.includes(name));
    // From a chain's place on: the chains after it.
    const from = (await repo.listHeadsPage(undefined, 100)).heads.find((h) => h.head.chainName === 'page-a')!.position;
    assert.deepEqual(
      (await repo.listHeadsPage(from, 100)).heads.map((h) => h.head.chainName),
      listed.slice(listed.indexOf('page-a') + 1),
    );
    assert.equal(await repo.getSweepPosition(), undefined);
    await repo.saveSweepPosition(from);
    assert.equal(await repo.getSweepPosition(), from);
    await repo.saveSweepPosition(undefined);
    assert.equal(await repo.getSweepPosition(), undefined);
  });

  it('gives the lease to one holder at a time, lets only it commit, and ends the round with its records written', async () => {
    const c = chain('gamma');
    await repo.createChains([c]);
    const now = Date.now();
    const taken = await repo.acquireLease('gamma', 'slow', now, now + 60_000);
    assert.equal(taken.acquired && taken.head.headIndex, 0, 'the lease hands back the head');
    const refused = await repo.acquireLease('gamma', 'other', now, now + 60_000);
    assert.ok(!refused.acquired && refused.head, 'a live lease is exclusive');
    assert.equal(!refused.acquired && refused.head && refused.holder, 'slow', 'and says who holds it');
    assert.equal((await repo.acquireLease('nowhere', 'x', now, now + 1)).head, undefined, 'no chain, no head');
    assert.equal((await repo.commitRound(round(c.head, [draft(1)]).commit)).status, 'head-moved', 'no direct commit under a live lease');
    const byOther = round(c.head, [draft(1)], { writerId: 'fast', mode: { untilMs: now + 60_000 } });
    assert.equal((await repo.commitRound(byOther.commit)).status, 'head-moved', 'nor by another writer');
    const own = round(c.head, [draft(1), draft(2)], { writerId: 'slow', mode: { untilMs: now + 60_000 } });
    await repo.writeRound('gamma', { records: [], segment: (c.head.recent as { run: MetaRun }).run }); // the genesis metadata, before the round replaces it
    assert.equal((await repo.commitRound(own.commit)).status, 'committed');
    const committed = (await repo.getHead('gamma'))!;
    assert.equal(committed.turnHolder, 'slow', 'a commit keeps the lease');
    assert.equal(committed.materialized, 0, 'its records are not written yet');
    assert.deepEqual(committed.recent, { run: own.run }, 'its metadata is on the head');
    await repo.writeRound('gamma', { records: own.blocks, segment: own.run });
    assert.equal(await repo.finishRound('gamma', 'other', 2, 2), false, 'only the holder ends its round');
    assert.equal(await repo.finishRound('gamma', 'slow', 2, 2), true);
    const finished = (await repo.getHead('gamma'))!;
    assert.equal(finished.turnHolder, null, 'the lease is given back');
    assert.equal(finished.materialized, 2);
    assert.deepEqual(finished.recent, { run: own.run }, 'its metadata stays on the head, where writers read it');
    assert.equal(finished.recentFlushed, true, 'marked as in its segment');
    assert.deepEqual(
      (await repo.getBlockRange('gamma', 0, 2, false)).map((b) => b.hash),
      [c.genesis.hash, ...own.blocks.map((b) => b.hash)],
    );
  });

  it('ignores an expired lease (its holder may have crashed)', async () => {
    const c = chain('delta');
    await repo.createChains([c]);
    const now = Date.now();
    await repo.acquireLease('delta', 'crashed', now - 5_000, now - 4_000);
    const { blocks, commit } = round(c.head, [draft(1)], { materialized: 1 });
    assert.equal((await repo.commitRound({ ...commit, records: blocks })).status, 'committed');
    assert.ok((await repo.acquireLease('delta', 'alive', now, now + 1_000)).acquired);
  });

  it('keeps a pending append key once, and lists them above the cursor up to a bound, oldest first across shards', async () => {
    await repo.createChains([chain('zeta')]);
    const refs = [0, 1, 2, 3].map((i) => ({ shard: i % 2, sk: pendingSk(1_000 + i, BigInt(i + 1)) }));
    for (const ref of refs) assert.equal(await repo.putPending('zeta', { ref, drafts: `[${ref.shard}]` }, Math.floor(Date.now() / 1000) + 60), true);
    assert.equal(await repo.putPending('zeta', { ref: refs[0]!, drafts: '[9]' }, 1), false, 'a key is one append’s');
    const read = await repo.listPending('zeta', 2, refs[0]!.sk, refs[2]!.sk, 10);
    assert.deepEqual(
      read.appends.map((p) => p.ref),
      refs.slice(1, 3),
      'above the cursor, up to the bound',
    );
    assert.equal(read.truncatedAt.size, 0);
    const limited = await repo.listPending('zeta', 2, '', refs[3]!.sk, 1);
    assert.deepEqual([...limited.truncatedAt.keys()].sort(), [0, 1], 'each shard says it had more');
    const drafts = await repo.getPendings('zeta', refs.slice(0, 2));
    assert.equal(drafts.get(`0|${refs[0]!.sk}`), '[0]', 'the first writer’s drafts, kept');
    await repo.putRefusal('zeta', refs[1]!, 'proof-superseded');
    assert.equal(await repo.getRefusal('zeta', refs[1]!), 'proof-superseded');
    assert.equal(await repo.getRefusal('zeta', refs[0]!), undefined);
  });

  it('reads blocks by index, range, hash and tree data over segments and the head; rebuilds a block whose record is missing', async () => {
    const c = chain('eta');
    await repo.createChains([c]);
    let head = c.head;
    const all = [c.genesis];
    // Three rounds to segments, the last left on the head with its records unwritten (its drafts pending).
    for (let r = 0; r < 4; r += 1) {
      const drafts = Array.from({ length: 40 }, (_, i) => draft(r * 100 + i));
      const refs = drafts.map((_, i) => ({ shard: 0, sk: pendingSk(2_000 + r * 100 + i, 1n) }));
      for (const [i, ref] of refs.entries()) await repo.putPending('eta', { ref, drafts: JSON.stringify([drafts[i]]) }, Math.floor(Date.now() / 1000) + 600);
      const { blocks, run, commit } = round(head, drafts, { refs, cursor: refs.at(-1)!.sk });
      await repo.writeRound('eta', { records: [], segment: (head.recent as { run: MetaRun }).run }); // the head's metadata to a segment before a round replaces it
      assert.equal((await repo.commitRound(commit)).status, 'committed');
      if (r < 3) await repo.writeRound('eta', { records: blocks, segment: run });
      all.push(...blocks);
      head = { ...head, headIndex: blocks.at(-1)!.index, headHash: blocks.at(-1)!.hash, frontier: commit.frontier, recent: { run }, cursor: commit.cursor };
    }
    assert.deepEqual(
      (await repo.getBlockRange('eta', 30, 150, false)).map((b) => b.hash),
      all.slice(30, 151).map((b) => b.hash),
      'across segments, the head, and records not written yet',
    );
    assert.deepEqual(
      (await repo.getBlockRange('eta', 120, 140, true)).map((b) => b.index),
      Array.from({ length: 21 }, (_, i) => 140 - i),
    );
    assert.deepEqual(
      await repo.listBlockHashes('eta', 160),
      all.map((b) => b.hash),
    );
    assert.equal((await repo.getBlock('eta', 150))?.hash, all[150]!.hash, 'rebuilt from its pending append');
    assert.equal(await repo.findRecord(all[150]!.hash), undefined, 'a read writes nothing');
    assert.equal((await repo.findBlockByHash('eta', all[155]!.hash))?.index, 155, 'a block without its record is found by hash on the head');
    assert.equal(await repo.findBlockByHash('alpha', all[20]!.hash), undefined, 'a hash is found on its own chain only');
    const tree = extendTree(
      [],
      0,
      all.map((b) => b.hash),
    );
    const data = await repo.readTreeData('eta', [7, 63, 127, 159]);
    for (const i of [7, 63, 127, 159]) assert.deepEqual(data.get(i), { hash: all[i]!.hash, treeNodes: tree.treeNodes[i] }, `tree data of ${i}`);
    // The head stays under 1 KB with a small round's metadata on it.
    const small = round(head, [draft(1), draft(2), draft(3), draft(4)]);
    await repo.writeRound('eta', { records: [], segment: (head.recent as { run: MetaRun }).run });
    assert.equal((await repo.commitRound({ ...small.commit, records: small.blocks, materialized: head.headIndex + 4 })).status, 'committed');
    const raw = await createDynamoBaseClient(storage.options).send(
      new GetItemCommand({ TableName: storage.tables.ledger, Key: { pk: { S: 'CHAIN#eta' }, sk: { S: 'HEAD' } } }),
    );
    assert.ok(raw.Item?.recent_blocks?.B && raw.Item?.frontier?.B, 'binary');
    assert.ok(itemSize(raw.Item!) < 1024, `head item ${itemSize(raw.Item!)} bytes`);
  });

  it('keeps a page of 100 blocks read whole, as stored, and reads it again with one request and none from a cache', async () => {
    const c = chain('iota');
    await repo.createChains([c]);
    let head = c.head;
    const all = [c.genesis];
    // 250 blocks in rounds of 50 (records and segments written); in each, one event of a data subject, its details sealed (block 108 among them).
    for (let r = 0; r < 5; r += 1) {
      const drafts = Array.from({ length: r === 4 ? 49 : 50 }, (_, i) => draft(r * 100 + i));
      drafts[7] = { events: [{ ...drafts[7]!.events[0]!, details: {}, subject_id: 'subj-1', details_sealed: 'c2VhbGVk' }] };
      const { blocks, run, commit } = round(head, drafts);
      await repo.writeRound('iota', { records: [], segment: (head.recent as { run: MetaRun }).run });
      assert.equal((await repo.commitRound(commit)).status, 'committed');
      await repo.writeRound('iota', { records: blocks, segment: run });
      all.push(...blocks);
      head = { ...head, headIndex: blocks.at(-1)!.index, headHash: blocks.at(-1)!.hash, frontier: commit.frontier, recent: { run }, cursor: commit.cursor };
    }
    assert.equal(all.length, 250);
    // A repository of its own whose requests are counted, with no read cache: what a cold instance sends.
    const client = createDynamoClient(storage.options);
    const sent: string[] = [];
    client.middlewareStack.add(
      (next, context) => (args) => {
        sent.push(String(context.commandName));
        return next(args);
      },
      { step: 'initialize' },
    );
    const cold = createLedgerRepository({ client, tableName: storage.tables.ledger });

    const first = await cold.getBlockRange('iota', 100, 199, false);
    assert.deepEqual(first, all.slice(100, 200), 'the page, read from its records');
    assert.ok(sent.includes('PutItemCommand'), `and kept: ${sent.join(', ')}`);
    const kept = await storage.repository.getPage('iota', 100);
    assert.deepEqual(kept, all.slice(100, 200), 'kept exactly as stored');
    assert.equal(kept![8]!.events[0]!.details_sealed, 'c2VhbGVk', 'sealed details stay sealed');
    sent.length = 0;
    assert.deepEqual(await cold.getBlockRange('iota', 100, 199, false), first, 'read again');
    assert.deepEqual(sent, ['GetItemCommand'], 'one request');
    assert.deepEqual(
      (await cold.getBlockRange('iota', 100, 199, true)).map((b) => b.index),
      Array.from({ length: 100 }, (_, i) => 199 - i),
      'descending too',
    );
    // A check of the chain as stored reads the records themselves, never the kept page, and keeps nothing.
    sent.length = 0;
    assert.deepEqual(await cold.readStoredRange('iota', 100, 199), first);
    assert.ok(sent.includes('BatchGetItemCommand') && !sent.includes('PutItemCommand'), sent.join(', '));
    // Not kept: a page cut short by the chain's end, and a range that is not a page at a multiple of 100.
    sent.length = 0;
    assert.equal((await cold.getBlockRange('iota', 200, 299, false)).length, 50);
    assert.equal((await cold.getBlockRange('iota', 150, 249, false)).length, 100);
    assert.ok(!sent.includes('PutItemCommand'), `nothing kept: ${sent.join(', ')}`);
    assert.equal(await storage.repository.getPage('iota', 200), undefined);
    // A page whose read came back short (a record a lagging read missed) is answered as read, and not kept.
    const lagging = {
      ...cold,
      getRecords: async (...args: Parameters<typeof cold.getRecords>) => {
        const found = await cold.getRecords(...args);
        found.delete(20);
        return found;
      },
    };
    assert.equal((await withBlockReads(lagging).getBlockRange('iota', 0, 99, false)).length, 99);
    assert.equal(await storage.repository.getPage('iota', 0), undefined);
  });

  it('reads a chain of an earlier version: its block items, then records from its first new round on', async () => {
    const client = createDynamoClient(storage.options);
    const genesis = sealBlock({ index: 0, chain_name: 'theta', timestamp: 1, previous_hash: ZERO_HASH, events: [] });
    const legacy = buildBlocks('theta', { headIndex: 0, headHash: genesis.hash }, [draft(1), draft(2), draft(3)], () => 1);
    const blocks = [genesis, ...legacy];
    const tree = extendTree(
      [],
      0,
      blocks.map((b) => b.hash),
    );
    for (const [i, b] of blocks.entries())
      await client.send(new PutCommand({ TableName: storage.tables.ledger, Item: { ...blockItem(b, 16, tree.treeNodes[i]), gsi_hash: b.hash } }));
    const old: ChainHead = {
      ...chain('theta').head,
      headIndex: 3,
      headHash: legacy[2]!.hash,
      frontier: tree.frontier,
      recordsFrom: undefined,
      recent: null,
      materialized: undefined,
    };
    await client.send(new PutCommand({ TableName: storage.tables.ledger, Item: { ...headItem(old), block_shards: 16 } }));
    const read = (await repo.getHead('theta'))!;
    assert.equal(read.recordsFrom, undefined);
    const next = round(read, [draft(4), draft(5)], { recordsFrom: 4, materialized: 5 });
    assert.equal((await repo.commitRound({ ...next.commit, records: next.blocks })).status, 'committed');
    assert.equal((await repo.getHead('theta'))?.recordsFrom, 4);
    assert.deepEqual(
      (await repo.getBlockRange('theta', 0, 5, false)).map((b) => b.hash),
      [...blocks, ...next.blocks].map((b) => b.hash),
      'block items, then records',
    );
    assert.equal((await repo.findBlockByHash('theta', legacy[1]!.hash))?.index, 2, 'a block item by its hash');
    assert.equal((await repo.findBlockByHash('theta', next.blocks[0]!.hash))?.index, 4, 'a record by its hash');
    assert.deepEqual(
      await repo.listBlockHashes('theta', 5),
      [...blocks, ...next.blocks].map((b) => b.hash),
    );
    const all = extendTree(
      [],
      0,
      [...blocks, ...next.blocks].map((b) => b.hash),
    );
    const data = await repo.readTreeData('theta', [3, 5]);
    assert.deepEqual(data.get(3)?.treeNodes, all.treeNodes[3]);
    assert.deepEqual(data.get(5)?.treeNodes, all.treeNodes[5]);
  });
});
