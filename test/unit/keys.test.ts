import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BLOCK_RUN, BLOCK_SHARDS, blockPk, blockSk, chainPk, chainsSk, entityPk, entitySk, indexFromBlockSk, isBlockPkOf, HEAD_SK } from '#shared/storage/keys';
import { keyCanExist, MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES } from '#shared/storage/requests';

describe('Ledger table key builders', () => {
  it('spreads a new chain’s blocks over its shards by index, and keeps an older chain’s in one partition', () => {
    assert.equal(chainPk('orders'), 'CHAIN#orders');
    assert.equal(HEAD_SK, 'HEAD');
    assert.equal(blockSk(0), 'BLOCK#000000000000');
    assert.equal(blockSk(42), 'BLOCK#000000000042');
    assert.equal(BLOCK_SHARDS, 16);
    assert.equal(BLOCK_RUN, 128);
    const partitions = new Set(Array.from({ length: 16 * 128 }, (_, i) => blockPk('orders', i, BLOCK_SHARDS)));
    assert.equal(partitions.size, 16, 'every 16 runs of 128 blocks use every shard once');
    assert.equal(blockPk('orders', 127, BLOCK_SHARDS), 'CHAIN#orders#0');
    assert.equal(blockPk('orders', 128, BLOCK_SHARDS), 'CHAIN#orders#1');
    assert.equal(blockPk('orders', 16 * 128 + 5, BLOCK_SHARDS), 'CHAIN#orders#0', 'and then wrap around');
    assert.equal(blockPk('orders', 17, 1), 'CHAIN#orders', 'older chains: one partition');
    assert.ok(isBlockPkOf('CHAIN#orders#1', 'orders') && isBlockPkOf('CHAIN#orders', 'orders'));
    assert.ok(!isBlockPkOf('CHAIN#orders2#1', 'orders') && !isBlockPkOf('CHAIN#order', 'orders'));
  });

  it('sorts block keys in index order', () => {
    const indices = [0, 1, 2, 9, 10, 99, 100, 1000, 123456789];
    const keys = indices.map(blockSk);
    assert.deepEqual([...keys].sort(), keys);
    assert.deepEqual(keys.map(indexFromBlockSk), indices);
  });

  it('refuses indices that would not sort', () => {
    assert.throws(() => blockSk(-1), RangeError);
    assert.throws(() => blockSk(1.5), RangeError);
    assert.throws(() => blockSk(10 ** 12), RangeError);
    assert.throws(() => indexFromBlockSk('HEAD'), RangeError);
  });

  it('orders an entity trace by time, then chain, then index', () => {
    assert.equal(entityPk('pkg-17'), 'ENTITY#pkg-17');
    const a = entitySk(1763740800.123, 'orders', 3);
    const b = entitySk(1763740800.123, 'returns', 1);
    const c = entitySk(1763740800.124, 'audit', 0);
    const d = entitySk(999.5, 'zzz', 1);
    assert.equal(a, '001763740800123#orders#000000000003');
    assert.deepEqual([c, b, a, d].sort(), [d, a, b, c]);
  });

  it('lists the Main Chain before every Sub-Chain, Sub-Chains by name', () => {
    const keys = [chainsSk('sub', 'zeta'), chainsSk('sub', 'alpha'), chainsSk('main', 'main'), chainsSk('sub', 'Beta')];
    assert.deepEqual([...keys].sort(), ['0#main', '1#Beta', '1#alpha', '1#zeta']);
  });
});

describe("DynamoDB's key limits", () => {
  it('knows which key values could exist: a partition key up to 2,048 UTF-8 bytes, a sort key up to 1,024, neither empty', () => {
    assert.ok(keyCanExist('p'.repeat(MAX_PARTITION_KEY_BYTES)) && !keyCanExist('p'.repeat(MAX_PARTITION_KEY_BYTES + 1)));
    assert.ok(keyCanExist('p', 's'.repeat(MAX_SORT_KEY_BYTES)) && !keyCanExist('p', 's'.repeat(MAX_SORT_KEY_BYTES + 1)));
    assert.ok(!keyCanExist('p', '\u00e9'.repeat(513)), 'bytes, not characters: 513 two-byte characters are 1,026 bytes');
    assert.ok(!keyCanExist('') && !keyCanExist('p', ''));
    assert.equal(MAX_PARTITION_KEY_BYTES, 2048);
    assert.equal(MAX_SORT_KEY_BYTES, 1024);
  });
});
