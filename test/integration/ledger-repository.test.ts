/**
 * The ledger repository against DynamoDB Local directly: the conditions that keep a chain linear.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ZERO_HASH, sealBlock } from '#shared/ledger/hashing';
import { extendTree } from '#shared/ledger/tree';
import { pendingSk } from '#shared/ledger/repository';
import type { Block, ChainHead } from '#shared/ledger/types';
import type { LedgerRepository } from '#shared/ledger/repository';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoBaseClient } from '#shared/storage/client';
import { itemSize } from '#shared/storage/capacity';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

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
    },
  };
}

/** A commit of `blocks` after `previous`, with the tree data the appender would give it. */
function commitOf(chainName: string, expectedHeadIndex: number, blocks: Block[], writerId: string, nowMs: number, frontierBefore: string[]) {
  const tree = extendTree(
    frontierBefore,
    expectedHeadIndex + 1,
    blocks.map((b) => b.hash),
  );
  return { chainName, expectedHeadIndex, blocks, writerId, nowMs, treeNodes: tree.treeNodes, frontier: tree.frontier };
}

function next(previous: Block, n = 1): Block[] {
  const blocks: Block[] = [];
  let prev = previous;
  for (let i = 0; i < n; i += 1) {
    prev = sealBlock({ index: prev.index + 1, chain_name: prev.chain_name, timestamp: 2, previous_hash: prev.hash, events: [] });
    blocks.push(prev);
  }
  return blocks;
}

before(async () => {
  storage = await startTestDynamo('repo');
  repo = storage.repository;
});

after(() => storage?.stop());

describe('Class: LedgerRepository (connected)', () => {
  it('creates a chain once, and reports it as existing the second time', async () => {
    const c = chain('alpha');
    assert.deepEqual(await repo.createChains([c]), { status: 'created' });
    assert.deepEqual(await repo.createChains([c]), { status: 'exists', chainNames: ['alpha'] });
  });

  it('refuses blocks built on a stale head and hands back the head as it is', async () => {
    const c = chain('beta');
    await repo.createChains([c]);
    const mine = next(c.genesis, 2);
    assert.deepEqual(await repo.commitBlocks(commitOf('beta', 0, mine, 'a', Date.now(), c.head.frontier!)), { status: 'committed' });
    const rival = next(c.genesis, 1);
    const lost = await repo.commitBlocks(commitOf('beta', 0, rival, 'b', Date.now(), c.head.frontier!));
    assert.equal(lost.status, 'head-moved');
    assert.equal(lost.status === 'head-moved' && lost.head?.headIndex, 2);
    assert.equal(lost.status === 'head-moved' && lost.head?.headHash, mine[1]!.hash);
    assert.equal((await repo.getBlock('beta', 1))!.hash, mine[0]!.hash, 'the rival block was not written');
  });

  it('gives the combining lease to one holder at a time, lets only it commit, and frees it when it says so', async () => {
    const c = chain('gamma');
    await repo.createChains([c]);
    const now = Date.now();
    const taken = await repo.acquireLease('gamma', 'slow', now, now + 60_000);
    assert.equal(taken.acquired && taken.head.headIndex, 0, 'the lease hands back the head');
    const refused = await repo.acquireLease('gamma', 'other', now, now + 60_000);
    assert.ok(!refused.acquired && refused.head, 'a live lease is exclusive');
    assert.equal(!refused.acquired && refused.head && refused.holder, 'slow', 'and says who holds it');
    assert.equal((await repo.acquireLease('nowhere', 'x', now, now + 1)).head, undefined, 'no chain, no head');
    const blocked = await repo.commitBlocks(commitOf('gamma', 0, next(c.genesis), 'fast', now, c.head.frontier!));
    assert.equal(blocked.status, 'head-moved');
    const first = next(c.genesis);
    const own = await repo.commitBlocks({ ...commitOf('gamma', 0, first, 'slow', now, c.head.frontier!), lease: { untilMs: now + 60_000 } });
    assert.equal(own.status, 'committed');
    assert.equal((await repo.getHead('gamma'))?.turnHolder, 'slow', 'a commit may keep the lease');
    const second = next(first[0]!);
    const last = await repo.commitBlocks({ ...commitOf('gamma', 1, second, 'slow', now, c.head.frontier!), lease: { release: true } });
    assert.equal(last.status, 'committed');
    assert.equal((await repo.getHead('gamma'))?.turnHolder, null, 'and give it back');
  });

  it('ignores an expired lease (its holder may have crashed)', async () => {
    const c = chain('delta');
    await repo.createChains([c]);
    const now = Date.now();
    await repo.acquireLease('delta', 'crashed', now - 5_000, now - 4_000);
    const result = await repo.commitBlocks(commitOf('delta', 0, next(c.genesis), 'alive', now, c.head.frontier!));
    assert.equal(result.status, 'committed');
    assert.ok((await repo.acquireLease('delta', 'alive', now, now + 1_000)).acquired);
  });

  it('seals a pending append once: removed, its receipt written, in the commit; a withdrawn one is left out', async () => {
    const c = chain('zeta');
    await repo.createChains([c]);
    const now = Date.now();
    const refs = [0, 1, 2].map((i) => ({ shard: i % 2, sk: pendingSk(now + i, `w${i}`) }));
    for (const ref of refs) await repo.putPending('zeta', { ref, drafts: `[${ref.shard}]` }, Math.floor(now / 1000) + 60);
    assert.deepEqual(
      (await repo.listPending('zeta', 2, 10)).map((p) => p.ref),
      refs,
      'oldest first across shards',
    );
    assert.equal(await repo.withdrawPending('zeta', refs[2]!), true);
    const blocks = next(c.genesis, 2);
    const receipt = (i: number) => ({
      status: 'sealed' as const,
      firstIndex: i + 1,
      previousHash: blocks[i]!.previous_hash,
      timestamp: 1,
      lastHash: blocks[i]!.hash,
    });
    const commit = {
      ...commitOf('zeta', 0, blocks, 'w', now, c.head.frontier!),
      seals: [
        { ref: refs[0]!, receipt: receipt(0) },
        { ref: refs[1]!, receipt: receipt(1) },
      ],
    };
    assert.equal((await repo.commitBlocks(commit)).status, 'committed');
    assert.deepEqual(await repo.getReceipt('zeta', refs[1]!), receipt(1));
    assert.deepEqual(await repo.listPending('zeta', 2, 10), []);
    assert.equal(await repo.withdrawPending('zeta', refs[0]!), false, 'a sealed append cannot be withdrawn');
    // Sealing it again (a second leader with a stale read) fails and commits nothing.
    const frontier = extendTree(
      c.head.frontier!,
      1,
      blocks.map((b) => b.hash),
    ).frontier;
    const again = await repo.commitBlocks({ ...commitOf('zeta', 2, next(blocks[1]!), 'w', now, frontier), seals: [{ ref: refs[0]!, receipt: receipt(0) }] });
    assert.deepEqual(again, { status: 'pending-gone', sealPosition: 0 });
    assert.equal((await repo.getHead('zeta'))?.headIndex, 2);
    assert.equal(await repo.getReceipt('zeta', refs[2]!), undefined, 'a withdrawn append has no receipt');
  });

  it('reads ranges across runs of 128 blocks (different partitions) in order, and every block hash', async () => {
    const c = chain('eta');
    await repo.createChains([c]);
    let frontier = c.head.frontier!;
    let previous = c.genesis;
    const all = [c.genesis];
    for (let head = 0; head < 297; head += 99) {
      const blocks = next(previous, 99);
      const tree = extendTree(
        frontier,
        head + 1,
        blocks.map((b) => b.hash),
      );
      assert.equal((await repo.commitBlocks({ ...commitOf('eta', head, blocks, 'w', Date.now(), frontier) })).status, 'committed');
      frontier = tree.frontier;
      previous = blocks[blocks.length - 1]!;
      all.push(...blocks);
    }
    assert.deepEqual(
      (await repo.getBlockRange('eta', 100, 280, false)).map((b) => b.index),
      Array.from({ length: 181 }, (_, i) => 100 + i),
    );
    assert.deepEqual(
      (await repo.getBlockRange('eta', 120, 140, true)).map((b) => b.index),
      Array.from({ length: 21 }, (_, i) => 140 - i),
    );
    assert.deepEqual(
      await repo.listBlockHashes('eta', 297),
      all.map((b) => b.hash),
    );
    assert.equal((await repo.getBlock('eta', 200))?.hash, all[200]!.hash);
    // The head keeps the frontier packed (binary), so that every commit rewrites under 1 KB of it.
    assert.deepEqual((await repo.getHead('eta'))!.frontier, frontier);
    const raw = await createDynamoBaseClient({ region: 'us-east-1', endpoint: storage.endpoint }).send(
      new GetItemCommand({ TableName: 'ledger', Key: { pk: { S: 'CHAIN#eta' }, sk: { S: 'HEAD' } } }),
    );
    assert.ok(raw.Item?.frontier?.B, 'binary');
    assert.ok(itemSize(raw.Item!) < 1024, `head item ${itemSize(raw.Item!)} bytes`);
  });

  it('reads block ranges in either order and a block by hash only on its own chain', async () => {
    const c = chain('epsilon');
    await repo.createChains([c]);
    const blocks = next(c.genesis, 5);
    await repo.commitBlocks(commitOf('epsilon', 0, blocks, 'a', Date.now(), c.head.frontier!));
    assert.deepEqual(
      (await repo.getBlockRange('epsilon', 2, 4, false)).map((b) => b.index),
      [2, 3, 4],
    );
    assert.deepEqual(
      (await repo.getBlockRange('epsilon', 2, 4, true)).map((b) => b.index),
      [4, 3, 2],
    );
    assert.equal((await repo.findBlockByHash('epsilon', blocks[2]!.hash))?.index, 3);
    assert.equal(await repo.findBlockByHash('alpha', blocks[2]!.hash), undefined);
    assert.equal((await repo.listBlockHashes('epsilon', 5)).length, 6);
  });
});
