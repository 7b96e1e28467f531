import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  ProofError,
  alignedSubtrees,
  appendLeaf,
  appendSubtree,
  blockHashesRoot,
  consistencyProof,
  frontierRoot,
  inclusionProof,
  leafHash,
  merkleRoot,
  nodeHome,
  nodesForRanges,
  nodesFromLeafHashes,
  rootFromLeafHashes,
  inclusionRanges,
  consistencyRanges,
  verifyConsistency,
  verifyInclusion,
} from '#shared/ledger/merkle';

// The RFC 6962 reference leaves of Certificate Transparency's tests, and the tree heads for the first
// 0…8 of them (also the roots in the peer's vectors, checked below when they are there).
const LEAVES = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map((h) => Buffer.from(h, 'hex'));
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

/** Deterministic leaves for large trees. */
function leaves(n: number): Buffer[] {
  return Array.from({ length: n }, (_, i) => leafHash(createHash('sha256').update(`leaf ${i}`).digest()));
}

const rejects = (fn: () => void, label: string) => assert.throws(fn, ProofError, label);

describe('RFC 6962 Merkle tree head', () => {
  for (let size = 0; size <= 8; size += 1) {
    it(`gives the reference root for ${size} leaves`, () => {
      assert.equal(merkleRoot(LEAVES.slice(0, size)).toString('hex'), ROOTS[size]);
    });
  }

  it('uses the 32 raw bytes of each block hash as a leaf (docs/rules.md, "Anchors")', () => {
    const hashes = ['aa'.repeat(32), 'bb'.repeat(32), 'cc'.repeat(32)];
    assert.equal(blockHashesRoot(hashes), merkleRoot(hashes.map((h) => Buffer.from(h, 'hex'))).toString('hex'));
    assert.notEqual(blockHashesRoot(hashes), merkleRoot(hashes.map((h) => Buffer.from(h, 'utf8'))).toString('hex'));
  });
});

describe('Proofs from stored nodes, cross-checked against recomputation from scratch', () => {
  const all = leaves(300);

  it('keeps a frontier whose root is the tree head, and stores each completed node where nodeHome says', () => {
    let frontier: Buffer[] = [];
    const stored = new Map<number, Buffer[]>();
    for (let n = 0; n < all.length; n += 1) {
      const next = appendLeaf(frontier, n, all[n]!);
      frontier = next.frontier;
      stored.set(n, next.completed);
      assert.ok(frontierRoot(frontier).equals(rootFromLeafHashes(all.slice(0, n + 1))), `root at size ${n + 1}`);
    }
    const scratch = nodesFromLeafHashes(all);
    for (let level = 1; 2 ** level <= all.length; level += 1) {
      for (let index = 0; (index + 1) * 2 ** level <= all.length; index += 1) {
        const home = nodeHome({ level, index });
        assert.ok(stored.get(home.leaf)![home.position]!.equals(Buffer.from(scratch(level, index))), `node ${level}/${index}`);
      }
    }
  });

  it("covers a run of leaves with aligned perfect subtrees that build the tree the leaves do, split at every cut (a verifier's pages)", () => {
    const many = leaves(1_200);
    fc.assert(
      fc.property(fc.nat(900), fc.nat(300), fc.array(fc.nat(1_200), { maxLength: 4 }), (start, n, cuts) => {
        let frontier: Buffer[] = [];
        for (let i = 0; i < start; i += 1) frontier = appendLeaf(frontier, i, many[i]!).frontier;
        const run = many.slice(start, start + n);
        const subtrees = alignedSubtrees(start, run, cuts);
        let size = start;
        const sizes: number[] = [];
        for (const { level, root } of subtrees) {
          assert.equal(size % 2 ** level, 0, 'each subtree starts at a multiple of its width');
          assert.ok(root.equals(rootFromLeafHashes(many.slice(size, size + 2 ** level))), `the subtree at ${size} is its leaves' tree`);
          frontier = appendSubtree(frontier, size, level, root).frontier;
          size += 2 ** level;
          sizes.push(size);
        }
        assert.equal(size, start + run.length, 'the subtrees cover the run');
        if (size > 0) assert.ok(frontierRoot(frontier).equals(rootFromLeafHashes(many.slice(0, size))), 'the tree head the leaves make');
        for (const cut of cuts) if (cut > start && cut < size) assert.ok(sizes.includes(cut), `a subtree ends at the cut ${cut}`);
        // As few as alignment allows: two subtrees side by side never make one aligned perfect subtree unless a cut is between them.
        for (let i = 1; i < subtrees.length; i += 1) {
          const [a, b] = [subtrees[i - 1]!, subtrees[i]!];
          const from = sizes[i - 1]! - 2 ** a.level;
          if (a.level === b.level && from % 2 ** (a.level + 1) === 0) assert.ok(cuts.includes(sizes[i - 1]!), 'merged unless cut');
        }
      }),
      { numRuns: 200 },
    );
  });

  it('proves inclusion of every leaf in every tree of 1…300 leaves', () => {
    const node = nodesFromLeafHashes(all);
    for (let size = 1; size <= 300; size += 1) {
      const root = rootFromLeafHashes(all.slice(0, size));
      const scratch = nodesFromLeafHashes(all.slice(0, size));
      for (let i = 0; i < size; i += 1) {
        const proof = inclusionProof(i, size, node);
        assert.deepEqual(proof, inclusionProof(i, size, scratch), `proof ${i}/${size}`);
        verifyInclusion(i, size, all[i]!, proof, root);
        assert.ok(nodesForRanges(inclusionRanges(i, size)).length <= 2 * Math.ceil(Math.log2(size)) + 1);
      }
    }
  });

  it('proves consistency between every pair of sizes up to 300 (every 7th first size)', () => {
    const node = nodesFromLeafHashes(all);
    const roots = Array.from({ length: 301 }, (_, n) => rootFromLeafHashes(all.slice(0, n)));
    for (let first = 1; first <= 300; first += 7) {
      for (let second = first; second <= 300; second += 1) {
        const proof = consistencyProof(first, second, node);
        verifyConsistency(first, second, proof, roots[first]!, roots[second]!);
        assert.ok(nodesForRanges(consistencyRanges(first, second)).length <= 2 * Math.ceil(Math.log2(second)) + 2);
      }
    }
  });
});

describe('Generated corruptions (each kind the peer vectors show), always run', () => {
  const all = leaves(13);
  const node = nodesFromLeafHashes(all);
  const root = (n: number) => rootFromLeafHashes(all.slice(0, n));
  const flip = (b: Buffer, bit = 0) => {
    const c = Buffer.from(b);
    c[0]! ^= 1 << bit;
    return c;
  };

  it('rejects inclusion proofs with a wrong index, size, leaf, root, or path', () => {
    for (const [i, n] of [
      [0, 1],
      [3, 8],
      [6, 13],
      [12, 13],
    ] as const) {
      const proof = inclusionProof(i, n, node);
      verifyInclusion(i, n, all[i]!, proof, root(n));
      if (i + 1 < n) rejects(() => verifyInclusion(i + 1, n, all[i]!, proof, root(n)), 'index + 1');
      if (i > 0) rejects(() => verifyInclusion(i - 1, n, all[i]!, proof, root(n)), 'index - 1');
      rejects(() => verifyInclusion(i ^ 2, n, all[i]!, proof, root(n)), 'index XOR 2');
      rejects(() => verifyInclusion(i, n * 2, all[i]!, proof, root(n)), 'size doubled');
      // (A proof alone does not pin the tree size: leaf 3's proof for 8 leaves also fits 7 against the same
      // root. The size is bound by the signed checkpoint, so only sizes the proof cannot fit are tested.)
      rejects(() => verifyInclusion(i, n, flip(all[i]!), proof, root(n)), 'leaf bit flipped');
      rejects(() => verifyInclusion(i, n, all[i]!, proof, flip(root(n))), 'wrong root');
      rejects(() => verifyInclusion(i, n, all[i]!, proof, Buffer.alloc(0)), 'empty root');
      rejects(() => verifyInclusion(i, n, Buffer.alloc(0), proof, root(n)), 'empty leaf');
      for (let p = 0; p < proof.length; p += 1) {
        const modified = proof.map((h, j) => (j === p ? flip(h, 4) : h));
        rejects(() => verifyInclusion(i, n, all[i]!, modified, root(n)), `proof[${p}] bit flipped`);
      }
      rejects(() => verifyInclusion(i, n, all[i]!, [...proof, Buffer.alloc(32, 7)], root(n)), 'trailing garbage');
      rejects(() => verifyInclusion(i, n, all[i]!, [Buffer.alloc(32, 7), ...proof], root(n)), 'preceding garbage');
      if (proof.length > 0) rejects(() => verifyInclusion(i, n, all[i]!, proof.slice(0, -1), root(n)), 'truncated');
      if (proof.length > 1) rejects(() => verifyInclusion(i, n, all[i]!, [proof[1]!, proof[0]!, ...proof.slice(2)], root(n)), 'swapped path');
    }
    rejects(() => verifyInclusion(0, 0, all[0]!, [], root(0)), 'empty tree');
  });

  it('rejects consistency proofs with wrong sizes, roots, or path', () => {
    for (const [m, n] of [
      [1, 2],
      [3, 8],
      [4, 13],
      [7, 13],
    ] as const) {
      const proof = consistencyProof(m, n, node);
      verifyConsistency(m, n, proof, root(m), root(n));
      rejects(() => verifyConsistency(m, n, proof, root(n), root(m)), 'swapped roots');
      rejects(() => verifyConsistency(m, n, proof, flip(root(m)), root(n)), 'wrong first root');
      rejects(() => verifyConsistency(m, n, proof, root(m), flip(root(n))), 'wrong second root');
      rejects(() => verifyConsistency(m + 1, n, proof, root(m), root(n)), 'first + 1');
      rejects(() => verifyConsistency(m, n * 2, proof, root(m), root(n)), 'second doubled');
      rejects(() => verifyConsistency(m, n, [], root(m), root(n)), 'empty proof');
      rejects(() => verifyConsistency(m, n, [...proof, Buffer.alloc(32, 1)], root(m), root(n)), 'trailing garbage');
      rejects(() => verifyConsistency(m, n, [Buffer.alloc(32, 1), ...proof], root(m), root(n)), 'preceding garbage');
      rejects(() => verifyConsistency(m, n, proof.slice(0, -1), root(m), root(n)), 'truncated');
      for (let p = 0; p < proof.length; p += 1) {
        rejects(
          () =>
            verifyConsistency(
              m,
              n,
              proof.map((h, j) => (j === p ? flip(h, 4) : h)),
              root(m),
              root(n),
            ),
          `proof[${p}] bit flipped`,
        );
      }
    }
    rejects(() => verifyConsistency(2, 1, [], root(2), root(1)), 'first > second');
    rejects(() => verifyConsistency(0, 3, [], root(0), root(3)), 'from empty');
    rejects(() => verifyConsistency(3, 3, [root(3)], root(3), root(3)), 'equal sizes, proof not empty');
    rejects(() => verifyConsistency(3, 3, [], root(3), root(4)), 'equal sizes, roots differ');
    verifyConsistency(3, 3, [], root(3), root(3));
  });
});

// The peer's vectors (transparency-dev/merkle testdata), read from ../shared when it is there (it is in CI).
// They are not copied into the project: the generated cases above always run.
const VECTORS = new URL('../../../shared/vectors/rfc6962/', import.meta.url).pathname;
const haveVectors = existsSync(VECTORS);

function vectorFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? vectorFiles(path) : name.endsWith('.json') ? [path] : [];
  });
}

const b64 = (s: string) => Buffer.from(s, 'base64');

describe('Peer vectors (../shared/vectors/rfc6962)', {
  skip: haveVectors ? false : 'not here: ../shared is absent (the generated cases above still ran)',
}, () => {
  it('accepts every inclusion case with wantErr false and rejects every one with wantErr true', () => {
    const files = vectorFiles(join(VECTORS, 'inclusion'));
    assert.ok(files.length > 50);
    for (const file of files) {
      const v = JSON.parse(readFileSync(file, 'utf8'));
      const run = () => verifyInclusion(v.leafIdx, v.treeSize, b64(v.leafHash ?? ''), (v.proof ?? []).map(b64), b64(v.root ?? ''));
      if (v.wantErr) assert.throws(run, ProofError, file);
      else assert.doesNotThrow(run, file);
    }
  });

  it('accepts every consistency case with wantErr false and rejects every one with wantErr true', () => {
    const files = vectorFiles(join(VECTORS, 'consistency'));
    assert.ok(files.length > 50);
    for (const file of files) {
      const v = JSON.parse(readFileSync(file, 'utf8'));
      const run = () => verifyConsistency(v.size1, v.size2, (v.proof ?? []).map(b64), b64(v.root1 ?? ''), b64(v.root2 ?? ''));
      if (v.wantErr) assert.throws(run, ProofError, file);
      else assert.doesNotThrow(run, file);
    }
  });

  it('agrees with the happy-path roots and leaf hashes', () => {
    for (const file of ['inclusion/0/happy-path.json', 'inclusion/3/happy-path.json', 'consistency/3/happy-path.json', 'consistency/4/happy-path.json']) {
      const v = JSON.parse(readFileSync(join(VECTORS, file), 'utf8'));
      const size = 'treeSize' in v ? v.treeSize : v.size2;
      const root = 'treeSize' in v ? v.root : v.root2;
      assert.equal(merkleRoot(LEAVES.slice(0, size)).toString('base64'), root, file);
    }
    const v = JSON.parse(readFileSync(join(VECTORS, 'inclusion/0/happy-path.json'), 'utf8'));
    assert.equal(leafHash(LEAVES[v.leafIdx]!).toString('base64'), v.leafHash);
  });
});
