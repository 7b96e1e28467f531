import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { blockHashesRoot, leafHash, merkleRoot } from '#shared/ledger/merkle';

// The RFC 6962 reference leaves of Certificate Transparency's tests, and the tree heads for the first
// 0…8 of them. The heads are also the roots in the peer's vectors (../shared/vectors/rfc6962), checked below.
const LEAVES = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map((h) =>
  Buffer.from(h, 'hex'),
);
const ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

const VECTORS = new URL('../../../shared/vectors/rfc6962/', import.meta.url);

describe('RFC 6962 Merkle tree head', () => {
  for (let size = 0; size <= 8; size += 1) {
    it(`gives the reference root for ${size} leaves`, () => {
      assert.equal(merkleRoot(LEAVES.slice(0, size)).toString('hex'), ROOTS[size]);
    });
  }

  it('agrees with the roots in the peer vectors (transparency-dev/merkle)', () => {
    const cases: [string, number, string][] = [];
    for (const file of ['inclusion/0/happy-path.json', 'inclusion/3/happy-path.json', 'inclusion/4/happy-path.json', 'consistency/3/happy-path.json', 'consistency/4/happy-path.json']) {
      const v = JSON.parse(readFileSync(new URL(file, VECTORS), 'utf8'));
      if ('treeSize' in v) cases.push([file, v.treeSize, Buffer.from(v.root, 'base64').toString('hex')]);
      else cases.push([file, v.size2, Buffer.from(v.root2, 'base64').toString('hex')]);
    }
    for (const [file, size, root] of cases) {
      assert.equal(merkleRoot(LEAVES.slice(0, size)).toString('hex'), root, file);
    }
  });

  it('hashes a leaf with the 0x00 prefix', () => {
    const v = JSON.parse(readFileSync(new URL('inclusion/0/happy-path.json', VECTORS), 'utf8'));
    assert.equal(leafHash(LEAVES[v.leafIdx]!).toString('base64'), v.leafHash);
  });

  it('uses the 32 raw bytes of each block hash as a leaf (contract.md §3)', () => {
    const hashes = ['aa'.repeat(32), 'bb'.repeat(32), 'cc'.repeat(32)];
    assert.equal(blockHashesRoot(hashes), merkleRoot(hashes.map((h) => Buffer.from(h, 'hex'))).toString('hex'));
    assert.notEqual(blockHashesRoot(hashes), merkleRoot(hashes.map((h) => Buffer.from(h, 'utf8'))).toString('hex'));
  });
});
