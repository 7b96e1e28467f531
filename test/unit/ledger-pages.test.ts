/**
 * Pages of blocks read at a named tree size, offline (createLedger over the in-memory repository): the page of
 * the chain's first N blocks, with `total` N, read with no read of the head once this instance has seen the chain
 * reach N; a size not reached yet is a 422 naming `tree_size`; and a read that missed a written block (one that
 * may be a moment old) is made again strongly.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '#shared/errors';
import { ChainAppender } from '#shared/ledger/appender';
import { createLedger } from '#shared/ledger/ledger';
import { eventDraft } from '../support/drafts.ts';
import { createMemoryLedgerRepository } from '../support/memory-ledger-repository.ts';

async function world(events: number) {
  const repository = createMemoryLedgerRepository();
  const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 99 }) });
  await ledger.createSubChain('c');
  const drafts = (n: number) => Array.from({ length: n }, (_, i) => eventDraft(`e-${i}`, { i }));
  for (let left = events; left > 0; left -= 99) await ledger.appendEvents('c', drafts(Math.min(99, left)));
  const heads = () => repository.calls.get('getHead') ?? 0;
  return { ledger, repository, heads, append: (n: number) => ledger.appendEvents('c', drafts(n)) };
}

const indices = (page: { blocks: { index: number }[] }) => page.blocks.map((b) => b.index);
const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe('pages of blocks at a named tree size', () => {
  it('answers the first N blocks with total N, and reads the head only until this instance has seen the chain reach N', async () => {
    const { ledger, heads, append } = await world(150); // blocks 0 (genesis) to 150
    const first = await ledger.listBlocks('c', { limit: 100, offset: 100, descending: false, treeSize: 120 });
    assert.equal(first.total, 120);
    assert.deepEqual(indices(first), range(100, 20), 'cut at the tree size, not at the head');
    const before = heads();
    const again = await ledger.listBlocks('c', { limit: 100, offset: 0, descending: false, treeSize: 120 });
    assert.deepEqual(indices(again), range(0, 100));
    const desc = await ledger.listBlocks('c', { limit: 10, offset: 0, descending: true, treeSize: 120 });
    assert.deepEqual(indices(desc), range(110, 10).reverse(), 'descending from the tree size, not from the head');
    assert.equal(heads(), before, 'no read of the head for a size already seen');

    await append(20); // 171 blocks now, but this instance has seen 151
    const grown = await ledger.listBlocks('c', { limit: 100, offset: 100, descending: false, treeSize: 171 });
    assert.equal(heads(), before + 1, 'a size beyond what was seen reads the head once');
    assert.deepEqual(indices(grown), range(100, 71));
    await ledger.listBlocks('c', { limit: 100, offset: 0, descending: false, treeSize: 171 });
    assert.equal(heads(), before + 1);

    const plain = await ledger.listBlocks('c', { limit: 100, offset: 100, descending: false });
    assert.equal(plain.total, 171, 'without a tree size, total is the chain as it is');
    assert.equal(heads(), before + 2, 'read from the head every time');
  });

  it('refuses a tree size the chain has not reached with a 422 naming tree_size', async () => {
    const { ledger } = await world(5);
    await assert.rejects(ledger.listBlocks('c', { limit: 10, offset: 0, descending: false, treeSize: 7 }), (error: unknown) => {
      assert.ok(error instanceof ValidationError);
      assert.equal(error.statusCode, 422);
      assert.deepEqual(error.issues[0]?.loc, ['query', 'tree_size']);
      assert.match(error.issues[0]?.msg ?? '', /6 blocks/);
      return true;
    });
    assert.equal((await ledger.listBlocks('c', { limit: 10, offset: 0, descending: false, treeSize: 6 })).blocks.length, 6);
  });

  it('reads a range again strongly when a read that may be a moment old misses a written block, and answers a block gone from the store missing', async () => {
    const { ledger, repository } = await world(30);
    await ledger.listBlocks('c', { limit: 10, offset: 0, descending: false, treeSize: 31 }); // seen: 31
    const read = repository.getBlockRange.bind(repository);
    const strong: boolean[] = [];
    // The newest block not yet seen by an eventually consistent read.
    repository.getBlockRange = async (chain, from, to, descending, consistent) => {
      strong.push(consistent === true);
      const blocks = await read(chain, from, to, descending, consistent);
      return consistent ? blocks : blocks.filter((b) => b.index !== 30);
    };
    const page = await ledger.listBlocks('c', { limit: 10, offset: 25, descending: false, treeSize: 31 });
    assert.deepEqual(indices(page), range(25, 6));
    assert.deepEqual(strong, [false, true], 'read again, strongly');

    // A block gone from the store (tampering): the page is answered as stored, for an auditor to name the gap.
    strong.length = 0;
    repository.getBlockRange = async (chain, from, to, descending, consistent) => {
      strong.push(consistent === true);
      return (await read(chain, from, to, descending, consistent)).filter((b) => b.index !== 27);
    };
    const gap = await ledger.listBlocks('c', { limit: 10, offset: 25, descending: false, treeSize: 31 });
    assert.deepEqual(indices(gap), [25, 26, 28, 29, 30]);
    assert.deepEqual(strong, [false, true]);
  });
});

describe('the chain list, a page at a time', () => {
  it('answers up to limit chains after the one named, the Main Chain first; next names the last of a page while the list goes on', async () => {
    const repository = createMemoryLedgerRepository();
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 99 }) });
    for (const name of ['delta', 'alpha', 'echo', 'charlie', 'bravo']) await ledger.createSubChain(name);
    const names = (page: { chains: { name: string }[] }) => page.chains.map((c) => c.name);
    const first = await ledger.listChains({ limit: 2 });
    assert.deepEqual(names(first), ['main', 'alpha']);
    assert.equal(first.next, 'alpha');
    const second = await ledger.listChains({ limit: 2, after: first.next! });
    assert.deepEqual(names(second), ['bravo', 'charlie']);
    const last = await ledger.listChains({ limit: 2, after: second.next! });
    assert.deepEqual(names(last), ['delta', 'echo']);
    assert.equal(last.next, null, 'a page that ends the list exactly says so: no empty page after it');
    assert.deepEqual(names(await ledger.listChains({ limit: 1000, after: 'main' })), ['alpha', 'bravo', 'charlie', 'delta', 'echo']);
    assert.deepEqual(names(await ledger.listChains({ limit: 1000, after: 'beta' })), ['bravo', 'charlie', 'delta', 'echo'], 'after a name that is not a chain');
    const all = await ledger.listChains({ limit: 1000 });
    assert.equal(all.chains.length, 6);
    assert.equal(all.next, null);
    for (const limit of [0, 1001, 2.5]) await assert.rejects(ledger.listChains({ limit }), ValidationError, `limit ${limit}`);
  });
});
