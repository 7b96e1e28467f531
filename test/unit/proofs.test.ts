/**
 * Proofs read the tree nodes the blocks hold strongly consistent: the newest nodes sit on blocks
 * committed moments before the head said the tree has them, and an eventually consistent read that
 * missed one would turn a valid request into a 500. DynamoDB Local is always consistent, so this is
 * checked here, on the reads the proofs ask for.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { ChainAppender } from '#shared/ledger/appender';
import { createLedger } from '#shared/ledger/ledger';
import { frontierRoot, leafHash, verifyConsistency, verifyInclusion } from '#shared/ledger/merkle';
import { createProofs, runsOf } from '#shared/ledger/proofs';
import type { LedgerRepository } from '#shared/ledger/repository';
import { extendTree } from '#shared/ledger/tree';
import type { ChainHead } from '#shared/ledger/types';
import { eventDraft } from '../support/drafts.ts';
import { createMemoryLedgerRepository } from '../support/memory-ledger-repository.ts';

function chain(size: number) {
  const hashes = Array.from({ length: size }, (_, i) => createHash('sha256').update(`b${i}`).digest('hex'));
  const { frontier, treeNodes } = extendTree([], 0, hashes);
  const head = { chainName: 'c', headIndex: size - 1, headHash: hashes[size - 1]!, frontier } as ChainHead;
  const reads = { consistent: 0, eventual: 0 };
  const repository = {
    getHead: async () => head,
    readTreeData: async (_: string, indices: readonly number[], consistent?: boolean) => {
      reads[consistent ? 'consistent' : 'eventual'] += indices.length;
      return new Map(indices.map((i) => [i, { hash: hashes[i]!, treeNodes: treeNodes[i]! }]));
    },
  } as unknown as LedgerRepository;
  const signer = async () => ({ nodeId: 'n', publicKey: '00'.repeat(32), sign: () => Buffer.alloc(64) });
  return { proofs: createProofs({ repository, signer }), hashes, reads };
}

describe('proofs read the tree strongly consistent', () => {
  it('inclusion and consistency proofs verify, and none of their reads is eventually consistent', async () => {
    const { proofs, hashes, reads } = chain(1000);
    const inclusion = await proofs.inclusion('c', '999');
    verifyInclusion(
      999,
      1000,
      leafHash(Buffer.from(hashes[999]!, 'hex')),
      inclusion.proof.map((h) => Buffer.from(h, 'hex')),
      Buffer.from(inclusion.root, 'hex'),
    );
    const consistency = await proofs.consistency('c', 300, 1000);
    verifyConsistency(
      300,
      1000,
      consistency.proof.map((h) => Buffer.from(h, 'hex')),
      Buffer.from(consistency.first_root, 'hex'),
      Buffer.from(consistency.second_root, 'hex'),
    );
    assert.ok(reads.consistent > 0);
    assert.equal(reads.eventual, 0);
  });
});

describe('evidence: what a verifying client needs, in one answer', () => {
  it('proves each run of leaves by its last leaf, the consistency from the known size, and signs the latest checkpoint', async () => {
    const { hashes } = chain(300);
    const { frontier, treeNodes } = extendTree([], 0, hashes);
    const head = { chainName: 'c', headIndex: 299, headHash: hashes[299]!, frontier } as ChainHead;
    const repository = {
      getHead: async () => head,
      readTreeData: async (_: string, indices: readonly number[]) => new Map(indices.map((i) => [i, { hash: hashes[i]!, treeNodes: treeNodes[i]! }])),
    } as unknown as LedgerRepository;
    const notes: [string, number, string][] = [];
    const proofs = createProofs({
      repository,
      signer: async () => ({ nodeId: 'n', publicKey: '00'.repeat(32), sign: () => Buffer.alloc(64) }),
      signedNote: async (chainName, size, rootHex) => {
        notes.push([chainName, size, rootHex]);
        return `note of ${size}\n`;
      },
    });
    const evidence = await proofs.evidence('c', { leaves: [3, 4, 5, 9, 200], knownSize: 120 });
    assert.deepEqual(runsOf([3, 4, 5, 9, 200]), [
      [3, 5],
      [9, 9],
      [200, 200],
    ]);
    assert.deepEqual(
      evidence.inclusion.map((p) => p.leaf_index),
      [5, 9, 200],
    );
    assert.equal(evidence.checkpoint, 'note of 300\n');
    const root = Buffer.from(notes[0]![2], 'hex');
    for (const { leaf_index, proof } of evidence.inclusion) {
      verifyInclusion(
        leaf_index,
        300,
        leafHash(Buffer.from(hashes[leaf_index]!, 'hex')),
        proof.map((h) => Buffer.from(h, 'base64')),
        root,
      );
    }
    const { frontier: old } = extendTree([], 0, hashes.slice(0, 120));
    verifyConsistency(
      120,
      300,
      evidence.consistency!.proof.map((h) => Buffer.from(h, 'base64')),
      frontierRoot(old.map((h) => Buffer.from(h, 'hex'))),
      root,
    );
    // Against a size the client trusts: no checkpoint, no consistency proof.
    const atTrusted = await proofs.evidence('c', { leaves: [7], treeSize: 120 });
    assert.equal(atTrusted.checkpoint, null);
    assert.equal(atTrusted.tree_size, 120);
    await assert.rejects(proofs.evidence('c', { leaves: [150], treeSize: 120 }), /not in the first 120 blocks/);
  });
});

describe('evidence at a tree size the instance has seen', () => {
  it('needs no read of the head: the proof against a fixed size never changes, and is the same proof', async () => {
    const hashes = Array.from({ length: 300 }, (_, i) => createHash('sha256').update(`b${i}`).digest('hex'));
    const { frontier, treeNodes } = extendTree([], 0, hashes);
    let head = { chainName: 'c', headIndex: 199, headHash: hashes[199]!, frontier: extendTree([], 0, hashes.slice(0, 200)).frontier } as ChainHead;
    let headReads = 0;
    const repository = {
      getHead: async () => {
        headReads += 1;
        return head;
      },
      readTreeData: async (_: string, indices: readonly number[]) => new Map(indices.map((i) => [i, { hash: hashes[i]!, treeNodes: treeNodes[i]! }])),
      getBlockRange: async (_: string, from: number, to: number, _d: boolean, consistent: boolean) => {
        rangeReads.push(consistent);
        // An eventually consistent read may miss the newest blocks: here, block 150.
        return Array.from({ length: to - from + 1 }, (_, k) => ({ index: from + k, hash: hashes[from + k]! })).filter((b) => consistent || b.index !== 150);
      },
    } as unknown as LedgerRepository;
    const rangeReads: boolean[] = [];
    const proofs = createProofs({
      repository,
      signer: async () => ({ nodeId: 'n', publicKey: '00'.repeat(32), sign: () => Buffer.alloc(64) }),
      signedNote: async (_chain, size) => `note of ${size}\n`,
    });
    // Before the instance has seen the chain, a fixed size still reads the head (is the chain that long?).
    await assert.rejects(proofs.evidence('c', { leaves: [7], treeSize: 250 }), /has 200 blocks/);
    const seen = headReads;
    const first = await proofs.evidence('c', { leaves: [7, 150], treeSize: 120 + 80 });
    const again = await proofs.evidence('c', { leaves: [7], treeSize: 120 });
    assert.equal(headReads, seen, 'no read of the head for sizes up to the 200 blocks seen');
    assert.equal(first.tree_size, 200);
    assert.equal(again.checkpoint, null);
    assert.equal(again.consistency, null);
    const root120 = frontierRoot(extendTree([], 0, hashes.slice(0, 120)).frontier.map((h) => Buffer.from(h, 'hex')));
    verifyInclusion(
      7,
      120,
      leafHash(Buffer.from(hashes[7]!, 'hex')),
      again.inclusion[0]!.proof.map((h) => Buffer.from(h, 'base64')),
      root120,
    );
    await assert.rejects(proofs.evidence('c', { leaves: [150], treeSize: 120 }), /not in the first 120 blocks/);
    // With its blocks (a verified client's read by index): read as a plain read is, consistently only if one is missed.
    const withBlocks = await proofs.evidence('c', { leaves: [7, 8], treeSize: 120, withBlocks: true });
    assert.deepEqual(
      withBlocks.blocks?.map((b) => b.index),
      [7, 8],
    );
    assert.deepEqual(withBlocks.inclusion, (await proofs.evidence('c', { leaves: [7, 8], treeSize: 120 })).inclusion);
    assert.deepEqual(
      (await proofs.evidence('c', { leaves: [150], treeSize: 200, withBlocks: true })).blocks?.map((b) => b.hash),
      [hashes[150]],
    );
    assert.deepEqual(rangeReads, [false, false, true]);
    assert.equal(headReads, seen, 'nor with its blocks');
    // The chain grew: a size past what this instance saw reads the head again, once.
    head = { chainName: 'c', headIndex: 299, headHash: hashes[299]!, frontier } as ChainHead;
    assert.equal((await proofs.evidence('c', { leaves: [250], treeSize: 280 })).tree_size, 280);
    assert.equal(headReads, seen + 1);
  });
});

describe('evidence kept by an instance', () => {
  it('against a fixed size is built once, kept frozen, and answered again with no read; the latest tree is never kept', async () => {
    const hashes = Array.from({ length: 200 }, (_, i) => createHash('sha256').update(`b${i}`).digest('hex'));
    const { frontier, treeNodes } = extendTree([], 0, hashes);
    const head = { chainName: 'c', headIndex: 199, headHash: hashes[199]!, frontier } as ChainHead;
    const reads = { head: 0, tree: 0, blocks: 0 };
    const repository = {
      getHead: async () => {
        reads.head += 1;
        return head;
      },
      readTreeData: async (_: string, indices: readonly number[]) => {
        reads.tree += 1;
        return new Map(indices.map((i) => [i, { hash: hashes[i]!, treeNodes: treeNodes[i]! }]));
      },
      getBlockRange: async (_: string, from: number, to: number) => {
        reads.blocks += 1;
        return Array.from({ length: to - from + 1 }, (_, k) => ({ index: from + k, hash: hashes[from + k]! }));
      },
    } as unknown as LedgerRepository;
    const store = new Map<string, unknown>();
    const proofs = createProofs({
      repository,
      signer: async () => ({ nodeId: 'n', publicKey: '00'.repeat(32), sign: () => Buffer.alloc(64) }),
      signedNote: async (_chain, size) => `note of ${size}\n`,
      kept: { get: (key) => store.get(key) as never, set: (key, evidence) => store.set(key, evidence) },
    });
    const latest = await proofs.evidence('c', { leaves: [7], withBlocks: true });
    assert.equal(store.size, 0, 'the latest tree (with its signed checkpoint) is not kept: the next append changes it');
    const first = await proofs.evidence('c', { leaves: [7], treeSize: 120, withBlocks: true });
    assert.ok(Object.isFrozen(first.blocks![0]) && Object.isFrozen(first.inclusion[0]!.proof), 'kept frozen, inside too');
    const before = { ...reads };
    const again = await proofs.evidence('c', { leaves: [7], treeSize: 120, withBlocks: true });
    assert.deepEqual(reads, before, 'answered again with no read at all');
    assert.deepEqual(again, first);
    assert.notDeepEqual(again.inclusion, latest.inclusion, 'a proof at 120, not at 200');
    // Another request is another answer: without its blocks, at another size, of other leaves.
    const plain = await proofs.evidence('c', { leaves: [7], treeSize: 120 });
    assert.equal(plain.blocks, undefined);
    assert.equal((await proofs.evidence('c', { leaves: [7], treeSize: 121 })).tree_size, 121);
    assert.equal((await proofs.evidence('c', { leaves: [8], treeSize: 120 })).inclusion[0]!.leaf_index, 8);
    assert.equal(store.size, 4);
  });
});

describe('evidence against witnessed checkpoints', () => {
  function witnessedChain(size: number, cosignedSize: number) {
    const hashes = Array.from({ length: size }, (_, i) => createHash('sha256').update(`b${i}`).digest('hex'));
    const { frontier, treeNodes } = extendTree([], 0, hashes);
    const head = { chainName: 'c', headIndex: size - 1, headHash: hashes[size - 1]!, frontier } as ChainHead;
    const repository = {
      getHead: async () => head,
      readTreeData: async (_: string, indices: readonly number[]) => new Map(indices.map((i) => [i, { hash: hashes[i]!, treeNodes: treeNodes[i]! }])),
    } as unknown as LedgerRepository;
    const { frontier: cosignedFrontier } = extendTree([], 0, hashes.slice(0, cosignedSize));
    const root = frontierRoot(cosignedFrontier.map((h) => Buffer.from(h, 'hex'))).toString('base64');
    let witnessings = 0;
    const proofs = createProofs({
      repository,
      signer: async () => ({ nodeId: 'n', publicKey: '00'.repeat(32), sign: () => Buffer.alloc(64) }),
      signedNote: async (_chain, n) => `note of ${n}\n`,
      witnessed: {
        latest: async () => ({ size: cosignedSize, root, lines: ['\u2014 w cosig\n'] }),
        witnessNow: async () => void (witnessings += 1),
      },
    });
    return { proofs, witnessings: () => witnessings };
  }

  it('a known size past the log is no "retry later": the cosigned checkpoint comes with no consistency proof, and the client sees the rollback', async () => {
    // The red-team request: …/evidence?witnessed=true&known_size=100 on a 7-block chain whose witnesses cosigned 6.
    const { proofs } = witnessedChain(7, 6);
    const evidence = await proofs.evidence('c', { leaves: [], knownSize: 100, witnessed: true });
    assert.equal(evidence.tree_size, 6);
    assert.equal(evidence.consistency, null);
    assert.equal(evidence.checkpoint, 'note of 6\n\u2014 w cosig\n');
  });

  it('waits (503) only for what the log has and its witnesses have not cosigned yet; a leaf past the log is 404 at once', async () => {
    const { proofs, witnessings } = witnessedChain(7, 6);
    await assert.rejects(
      proofs.evidence('c', { leaves: [6], witnessed: true }),
      (e: Error) => e.name === 'NotWitnessedYetError' && /has 6 blocks, not 7/.test(e.message),
    );
    await assert.rejects(proofs.evidence('c', { leaves: [], knownSize: 7, witnessed: true }), (e: Error) => e.name === 'NotWitnessedYetError');
    const before = witnessings();
    await assert.rejects(proofs.evidence('c', { leaves: [10], witnessed: true }), (e: Error) => e.name === 'NotFoundError');
    assert.equal(witnessings(), before, 'nothing is sent to the witnesses for a leaf the log does not have');
    const ok = await proofs.evidence('c', { leaves: [5], knownSize: 6, witnessed: true });
    assert.deepEqual([ok.tree_size, ok.consistency], [6, { from: 6, proof: [] }]);
  });
});

describe("a Sub-Chain's anchors (red team: the entity index named after a chain is anyone's to fill)", () => {
  const draft = (entity: string, i: number) => eventDraft(entity, { i });
  async function anchoredWorld(putAnchorFails = false) {
    const repository = createMemoryLedgerRepository();
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 99 }) });
    const proofs = createProofs({ repository, signer: async () => ({ nodeId: 'n', publicKey: '00'.repeat(32), sign: () => Buffer.alloc(64) }) });
    await ledger.createSubChain('orders');
    await ledger.createSubChain('noise');
    await ledger.appendEvents('orders', [draft('o-1', 1), draft('o-2', 2)]);
    if (putAnchorFails) repository.faults.set('putAnchor', [new Error('throttled')]);
    const first = await ledger.submitProof('orders');
    await ledger.appendEvents('orders', [draft('o-3', 3)]);
    const second = await ledger.submitProof('orders');
    // Any writer of any chain names events after the chain: 300 entries of the entity index 'orders'.
    for (let n = 0; n < 3; n += 1)
      await ledger.appendEvents(
        'noise',
        Array.from({ length: 99 }, (_, i) => draft('orders', i)),
      );
    await ledger.appendEvents('noise', [draft('orders', 99), draft('orders', 100), draft('orders', 101)]);
    return { repository, proofs, first, second };
  }
  const entityReads = (repository: ReturnType<typeof createMemoryLedgerRepository>) => repository.calls.get('queryEntityBlocks') ?? 0;

  it('finds them by the head they anchor, never reading the entity index, however full it is', async () => {
    const { repository, proofs, first, second } = await anchoredWorld();
    const one = await proofs.anchor('orders', '1');
    assert.equal(one.anchor.proof_id, first.proof_id, 'block 1 is covered first by the first anchor');
    assert.equal(one.anchor.head_index, 2);
    const three = await proofs.anchor('orders', '3');
    assert.equal(three.anchor.proof_id, second.proof_id);
    await assert.rejects(proofs.anchor('noise', '1'), /not anchored yet/);
    const report = await proofs.verify('orders');
    assert.equal(report.valid, true, JSON.stringify(report));
    assert.equal(report.anchors_checked, 2);
    assert.equal(entityReads(repository), 0, 'the entity index was not read');
  });

  it('rebuilds the list once from the entity index where an anchor item is missing, then reads the items only', async () => {
    const { repository, proofs, first, second } = await anchoredWorld(true);
    // The first proof's item was not written: block 1 is answered the second anchor, which covers it too.
    assert.equal((await proofs.anchor('orders', '1')).anchor.proof_id, second.proof_id);
    assert.equal(entityReads(repository), 0);
    // A verify finds the head counting two proofs and one item: it rebuilds the list, and checks both anchors.
    assert.equal((await proofs.verify('orders')).anchors_checked, 2);
    assert.equal(entityReads(repository), 1);
    assert.equal((await proofs.anchor('orders', '1')).anchor.proof_id, first.proof_id, 'the missing item was written');
    assert.equal((await proofs.verify('orders')).anchors_checked, 2);
    assert.equal(entityReads(repository), 1, 'rebuilt once');
  });

  it('finds the anchors of a chain anchored before the items existed (none noted), from the entity index once', async () => {
    const { repository, proofs, first } = await anchoredWorld();
    for (const key of [...repository.anchorItems().keys()]) {
      repository.anchorItems().delete(key);
    }
    assert.equal((await proofs.anchor('orders', '0')).anchor.proof_id, first.proof_id);
    assert.equal((await proofs.anchor('orders', '2')).anchor.proof_id, first.proof_id);
    assert.equal(entityReads(repository), 1);
  });
});
