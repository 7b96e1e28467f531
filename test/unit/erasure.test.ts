/**
 * Personal data and erasure through the ledger, offline: createLedger over in-memory ports with the real
 * subject keys, the real envelope and an in-memory IPFS. What a user would notice: reads show the details
 * while the subject's key exists; after erasure every read shows `details: null, erased: true`, resolving
 * the payload is 410, every block still hashes to what it was, the erasure is on the Main Chain once,
 * and the plaintext is in none of the stores.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { GoneError, NotFoundError } from '#shared/errors';
import { ChainAppender } from '#shared/ledger/appender';
import { asStored, canonicalJson, hashBlock } from '#shared/ledger/hashing';
import { createLedger } from '#shared/ledger/ledger';
import type { Block } from '#shared/ledger/types';
import { LocalKeyProvider } from '#shared/offchain/key-providers';
import { createOffchainStore } from '#shared/offchain/offchain';
import { createPersonalData, createSubjectKeys } from '#shared/subjects/subjects';
import { createMemoryIpfs } from '../support/memory-ipfs.ts';
import { createMemoryLedgerRepository } from '../support/memory-ledger-repository.ts';
import { createMemorySubjects } from '../support/memory-subjects.ts';

function world() {
  const repository = createMemoryLedgerRepository();
  const subjects = createMemorySubjects();
  const ipfs = createMemoryIpfs();
  const blobs = ipfs.blobs;
  const keys = new LocalKeyProvider(randomBytes(32));
  const offchain = createOffchainStore({ keys, ipfs });
  const ledger = createLedger({
    repository,
    appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 99 }),
    offchain,
    personalData: createPersonalData(createSubjectKeys({ repository: subjects, keys })),
    offchainThresholdBytes: 2048,
  });
  /** Everything the service keeps, as text: blocks, subject records, IPFS objects. */
  const everything = () =>
    JSON.stringify([repository.blocksOf('people'), repository.blocksOf('main'), [...subjects.items.values()]]) +
    [...blobs.values()].map((b) => Buffer.from(b).toString('utf8')).join('');
  return { ledger, repository, everything, blobs, subjects };
}

const person = (details: Record<string, unknown>) => ({
  entity_id: 'customer-17',
  event_type: 'registered',
  details,
  details_cid: null,
  details_nonce: null,
  details_metadata: null,
  is_offchain: false,
  subject_id: 'subj-17',
});

const verifies = (block: Block) => assert.equal(hashBlock(asStored(block)), block.hash, `block ${block.index} hashes as it did`);

describe('personal data through the ledger (offline)', () => {
  it('commits only sealed details, shows them while the key exists, and after erasure shows none, verifiably', async () => {
    const { ledger, repository, everything, blobs } = world();
    await ledger.createSubChain('people');
    const small = await ledger.appendEvent('people', person({ name: 'Alice Smith', email: 'alice@example.com' }));
    const large = await ledger.appendEvent('people', person({ name: 'Alice Smith', cv: 'Alice Smith '.repeat(400) }));
    await ledger.appendEvent('people', { ...person({ sku: 'x' }), subject_id: undefined } as never);
    assert.ok(!everything().includes('Alice'), 'the plaintext is in no store, on chain or off');

    const stored = repository.blocksOf('people');
    assert.deepEqual(stored[1]!.events[0]!.details, {});
    assert.equal(typeof stored[1]!.events[0]!.details_sealed, 'string');
    assert.equal(stored[2]!.events[0]!.is_offchain, true, 'the large one went to IPFS, sealed');

    const shown = await ledger.getBlock('people', { kind: 'index', index: small.block.index });
    assert.deepEqual(shown.events[0]!.details, { name: 'Alice Smith', email: 'alice@example.com' });
    verifies(shown);
    const resolved = await ledger.getBlock('people', { kind: 'index', index: large.block.index }, { resolveCid: true, opener: async () => true });
    assert.equal((resolved.events[0]!.details as { name: string }).name, 'Alice Smith');

    const payload = stored[2]!.events[0]!.details_cid!;
    assert.ok(blobs.has(payload));
    const erasure = await ledger.eraseSubject('subj-17', { erased_by: 'admin-1', reason: 'request #42' });
    assert.equal(erasure.status, 'erased');
    assert.equal(erasure.events, 2);
    assert.deepEqual([erasure.payloads, erasure.payloads_removed], [1, 1]);
    assert.ok(!blobs.has(payload), 'the IPFS copy we hold is removed');
    const anchor = repository.blocksOf('main').at(-1)!;
    assert.deepEqual(anchor.events[0]!.event_type, 'erasure');
    assert.deepEqual(anchor.events[0]!.details, {
      subject_id: 'subj-17',
      erased_at: erasure.erased_at,
      erased_by: 'admin-1',
      reason: 'request #42',
      events: 2,
    });

    const page = await ledger.listBlocks('people', { limit: 10, offset: 0, descending: false });
    for (const block of page.blocks) verifies(block);
    const [, first, second, third] = page.blocks;
    for (const block of [first!, second!]) {
      assert.equal(block.events[0]!.details, null);
      assert.equal((block.events[0] as { erased?: boolean }).erased, true);
    }
    assert.deepEqual(third!.events[0]!.details, { sku: 'x' }, 'other events are untouched');
    await assert.rejects(ledger.getBlock('people', { kind: 'index', index: large.block.index }, { resolveCid: true, opener: async () => true }), GoneError);
    const trace = await ledger.traceEntity('customer-17');
    assert.ok(trace.events.filter((e) => e.subject_id).every((e) => e.details === null && (e as { erased?: boolean }).erased));

    const again = await ledger.eraseSubject('subj-17', { erased_by: 'admin-2', reason: 'again' });
    assert.deepEqual([again.status, again.payloads, again.payloads_removed, again.event_id], ['already_erased', 1, 0, erasure.event_id]);
    assert.equal(repository.blocksOf('main').filter((b) => b.events[0]?.event_type === 'erasure').length, 1, 'recorded once');
    await assert.rejects(ledger.appendEvent('people', person({ name: 'Alice again' })), GoneError);
    await assert.rejects(ledger.eraseSubject('nobody', { erased_by: null, reason: 'x' }), NotFoundError);
  });

  it('writes the erasure on the Main Chain once, even when the erasure that destroyed the key died before writing it', async () => {
    const { ledger, repository, subjects } = world();
    await ledger.createSubChain('people');
    await ledger.appendEvent('people', person({ name: 'Alice' }));
    // As if an erasure destroyed the key two minutes ago and its instance died before the Main Chain append.
    await subjects.erase('subj-17', { erased_at: new Date(Date.now() - 120_000).toISOString(), erased_by: 'admin-1', reason: 'crashed' });
    const recovered = await ledger.eraseSubject('subj-17', { erased_by: 'admin-2', reason: 'again' });
    assert.equal(recovered.status, 'already_erased');
    assert.equal(recovered.reason, 'crashed', 'the record is the first erasure’s');
    const erasures = () => repository.blocksOf('main').filter((b) => b.events[0]?.event_type === 'erasure');
    assert.equal(erasures().length, 1);
    assert.equal(recovered.event_id, erasures()[0]!.events[0]!.event_id);
    await ledger.eraseSubject('subj-17', { erased_by: 'admin-3', reason: 'third' });
    assert.equal(erasures().length, 1, 'and never twice');
  });

  it('of two erasures at once, both answers name the one Main Chain event, however slow its append', async () => {
    const { ledger, repository } = world();
    await ledger.createSubChain('people');
    await ledger.appendEvent('people', person({ name: 'Alice' }));
    // The erasure that destroys the key takes 150 ms to commit its Main Chain event; the other finds the key gone at once.
    repository.holds.set('commitRound', () => new Promise((resolve) => setTimeout(resolve, 150)));
    const answers = await Promise.all([
      ledger.eraseSubject('subj-17', { erased_by: 'admin-1', reason: 'one' }),
      ledger.eraseSubject('subj-17', { erased_by: 'admin-2', reason: 'two' }),
    ]);
    assert.deepEqual(answers.map((a) => a.status).sort(), ['already_erased', 'erased'], 'one erases');
    const erasures = repository.blocksOf('main').filter((b) => b.events[0]?.event_type === 'erasure');
    assert.equal(erasures.length, 1, 'one Main Chain event');
    assert.deepEqual(
      answers.map((a) => a.event_id),
      [erasures[0]!.events[0]!.event_id, erasures[0]!.events[0]!.event_id],
      'both answers name it',
    );
  });

  it('lets no Idempotency-Key confirm a guess of erased details: the fingerprint is keyed by the subject, and every replay after erasure is 410', async () => {
    // The red-team finding: after erasure the same key and body answered 200 (replayed), a changed body 422.
    const { ledger, repository } = world();
    const fingerprints: string[] = [];
    const claim = repository.claimIdempotency.bind(repository);
    repository.claimIdempotency = async (c, fingerprint, ...rest) => {
      fingerprints.push(fingerprint);
      return claim(c, fingerprint, ...rest);
    };
    await ledger.createSubChain('people');
    const bob = { ...person({ name: 'BOB-PII', email: 'bob@example.com' }), subject_id: 'subj-2' };
    const key = (k: string) => ({ idempotency: { caller: 'acme-writer', key: k } });
    const first = await ledger.appendEvent('people', bob, key('k-bob-1'));
    const replay = await ledger.appendEvent('people', bob, key('k-bob-1'));
    assert.equal(replay.replayed, true, 'while the subject exists, a retry is answered as usual');
    assert.equal(replay.event_id, first.event_id);
    await assert.rejects(ledger.appendEvent('people', { ...bob, details: { name: 'CAROL', email: 'bob@example.com' } }, key('k-bob-1')), /different request/);
    // The same details under another subject's key give another fingerprint; no fingerprint is a plain hash of them.
    await ledger.appendEvent('people', { ...bob, subject_id: 'subj-3' }, key('k-bob-3'));
    assert.equal(new Set(fingerprints).size, 3, 'bob twice, carol, and bob under subj-3');
    const plain = (drafts: unknown[]) =>
      createHash('sha256')
        .update(canonicalJson({ kind: 'event', drafts }))
        .digest('hex');
    assert.ok(!fingerprints.includes(plain([bob])), 'not the unkeyed hash of the drafts');

    await ledger.eraseSubject('subj-2', { erased_by: 'admin-1', reason: 'request #43' });
    for (const [draft, options] of [
      [bob, key('k-bob-1')],
      [{ ...bob, details: { name: 'CAROL', email: 'bob@example.com' } }, key('k-bob-1')],
      [bob, key('k-bob-2')],
    ] as const) {
      await assert.rejects(ledger.appendEvent('people', draft, options), (error: unknown) => error instanceof GoneError);
    }
    assert.equal(repository.blocksOf('people').length, 3, 'nothing more was appended');
  });

  it('makes no subject key for an idempotent erasable event on a chain that does not exist', async () => {
    const { ledger, subjects } = world();
    await assert.rejects(
      ledger.appendEvent('nowhere', person({ name: 'x' }), { idempotency: { caller: 'c', key: 'k' } }),
      (error: unknown) => error instanceof NotFoundError,
    );
    assert.equal(subjects.items.size, 0);
  });
});
