/**
 * Appends combined across instances, through DynamoDB only. Each ChainAppender here is a separate
 * instance (its own writer id, its own queue, nothing shared in memory), as separate Lambda instances
 * are; they meet only in DynamoDB Local. Then what a crashed leader and an impatient follower do.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ChainAppender } from '#shared/ledger/appender';
import { createLedger, type Ledger } from '#shared/ledger/ledger';
import { pendingSk, type LedgerRepository } from '#shared/ledger/repository';
import type { Block } from '#shared/ledger/types';
import { ChainContendedError } from '#shared/errors';
import { createHash } from 'node:crypto';
import { canonicalJson } from '#shared/ledger/hashing';
import { checkBlocks } from '#test/support/chain';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';

let storage: TestDynamo;
let repo: LedgerRepository;

before(async () => {
  storage = await startTestDynamo('combining');
  repo = storage.repository;
});

after(() => storage?.stop());

interface Instance {
  ledger: Ledger;
  appender: ChainAppender;
}

function instance(repository: LedgerRepository = repo, options: Partial<ConstructorParameters<typeof ChainAppender>[1]> = {}): Instance {
  const appender = new ChainAppender(repository, { maxAttempts: 8, batchMax: 25, ...options });
  return { ledger: createLedger({ repository, appender }), appender };
}

const draft = (who: string, n: number) => ({
  entity_id: who,
  event_type: 'tick',
  details: { who, n },
  details_cid: null,
  details_nonce: null,
  details_metadata: null,
  is_offchain: false,
});

async function chainBlocks(chain: string): Promise<Block[]> {
  const head = await repo.getHead(chain);
  assert.ok(head);
  const blocks = await repo.getBlockRange(chain, 0, head.headIndex + 5, false);
  assert.deepEqual(
    blocks.map((b) => b.index),
    Array.from({ length: head.headIndex + 1 }, (_, i) => i),
    'contiguous, nothing past the head',
  );
  assert.equal(checkBlocks(blocks).forks, 0);
  return blocks;
}

/** Every acknowledged event is on the chain exactly once, under the id it was acknowledged with. */
function assertExactlyOnce(blocks: Block[], acknowledged: Map<string, string>) {
  const seen = new Map<string, string[]>();
  for (const block of blocks.slice(1)) {
    for (const event of block.events) {
      const k = `${event.details.who}/${event.details.n}`;
      seen.set(k, [...(seen.get(k) ?? []), event.event_id]);
    }
  }
  for (const [k, id] of acknowledged) assert.deepEqual(seen.get(k), [id], `${k} on chain once, as ${id}`);
  return seen;
}

describe('Appends combined across instances (DynamoDB only)', () => {
  it('8 instances, one request each at a time: every event once, in fewer transactions than events', async () => {
    const instances = Array.from({ length: 8 }, () => instance());
    await instances[0]!.ledger.createSubChain('combined');
    const acknowledged = new Map<string, string>();
    await Promise.all(
      instances.map(async (inst, i) => {
        for (let n = 0; n < 25; n += 1) {
          const { event_id, block } = await inst.ledger.appendEvent('combined', draft(`i${i}`, n));
          assert.equal(block.events[0]!.event_id, event_id);
          assert.equal(block.events[0]!.details.n, n, 'the block answered is the one sealed for this request');
          acknowledged.set(`i${i}/${n}`, event_id);
        }
      }),
    );
    const blocks = await chainBlocks('combined');
    assert.equal(blocks.length, 1 + 8 * 25);
    assertExactlyOnce(blocks, acknowledged);
    const commits = instances.reduce((n, x) => n + x.appender.counters.commits, 0);
    const followed = instances.reduce((n, x) => n + x.appender.counters.followed, 0);
    assert.ok(followed > 0, 'some appends were handed to another instance');
    assert.ok(commits < 8 * 25, `${commits} transactions for ${8 * 25} events`);
    // Each instance answered its own requests in order: its n-th event comes after its (n-1)-th.
    for (let i = 0; i < 8; i += 1) {
      const indices = Array.from({ length: 25 }, (_, n) => Number(acknowledged.get(`i${i}/${n}`)!.split('_')[1]));
      assert.deepEqual(
        indices,
        [...indices].sort((a, b) => a - b),
      );
    }
  });

  it('keeps batches whole and anchors correct when they are combined', async () => {
    const [a, b, c] = [instance(), instance(), instance()];
    await a.ledger.createSubChain('mixed');
    const [batch, ...singles] = await Promise.all([
      a.ledger.appendEvents(
        'mixed',
        Array.from({ length: 30 }, (_, n) => draft('batch', n)),
      ),
      ...Array.from({ length: 10 }, (_, n) => (n % 2 ? b : c).ledger.appendEvent('mixed', draft('single', n))),
    ]);
    const indices = (batch as { block: Block }[]).map((r) => r.block.index);
    assert.deepEqual(
      indices,
      indices.map((_, i) => indices[0]! + i),
      'a batch occupies consecutive blocks',
    );
    assert.equal(singles.length, 10);
    const proofs = await Promise.all([a, b, c].map((x) => x.ledger.submitProof('mixed')));
    assert.equal(proofs.filter((p) => p.created).length, 1, 'one anchor for one head, however many asked at once');
    assert.equal(new Set(proofs.map((p) => p.proof_id)).size, 1);
    await chainBlocks('main');
  });

  it('a leader that dies holding the lease stalls the others for at most the lease, and loses nothing acknowledged', async () => {
    const LEASE_MS = 400;
    // The dying instance takes the lease, then never commits (as if its host were SIGKILLed mid-combine).
    let dead = false;
    const dying: LedgerRepository = {
      ...repo,
      commitRound: async (commit) => {
        if (dead) return new Promise(() => undefined);
        return repo.commitRound(commit);
      },
    };
    const victim = instance(dying, { leaseMs: LEASE_MS });
    const others = Array.from({ length: 4 }, () => instance(repo, { leaseMs: LEASE_MS }));
    await victim.ledger.createSubChain('crashy');
    dead = true;
    void victim.ledger.appendEvent('crashy', draft('victim', 0)).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50)); // it holds the lease now
    const started = performance.now();
    const acknowledged = new Map<string, string>();
    await Promise.all(
      others.map(async (inst, i) => {
        for (let n = 0; n < 5; n += 1) acknowledged.set(`o${i}/${n}`, (await inst.ledger.appendEvent('crashy', draft(`o${i}`, n))).event_id);
      }),
    );
    const elapsed = performance.now() - started;
    assert.ok(elapsed < LEASE_MS + 3_000, `the others finished in ${Math.round(elapsed)} ms`);
    const blocks = await chainBlocks('crashy');
    const seen = assertExactlyOnce(blocks, acknowledged);
    // Its drafts waited as a pending append above the cursor: a later leader may seal them (its caller was
    // never answered, as after any timeout), but once at most.
    assert.ok((seen.get('victim/0') ?? []).length <= 1, 'the dead leader’s own event is on the chain once at most');
  });

  it('a leader that dies between its commit and its records: the next holder writes them, and every block reads back', async () => {
    const LEASE_MS = 300;
    // The dying instance commits, then never writes its round's records or segment (SIGKILLed right after the commit).
    const frozen: LedgerRepository = {
      ...repo,
      writeRound: async (chainName, round) =>
        round.records.some((b) => b.events[0]?.entity_id === 'victim') ? new Promise(() => undefined) : repo.writeRound(chainName, round),
    };
    const victim = instance(frozen, { leaseMs: LEASE_MS });
    const others = Array.from({ length: 3 }, () => instance(repo, { leaseMs: LEASE_MS }));
    await others[0]!.ledger.createSubChain('half-done');
    void victim.ledger.appendEvent('half-done', draft('victim', 0)).catch(() => undefined);
    let head = await repo.getHead('half-done');
    for (let i = 0; i < 100 && head!.headIndex < 1; i += 1) {
      await new Promise((r) => setTimeout(r, 10));
      head = await repo.getHead('half-done');
    }
    assert.equal(head!.headIndex, 1, 'the victim committed');
    assert.equal(head!.materialized, 0, 'and wrote no record');
    // Its block reads back already, rebuilt from its pending append.
    assert.equal((await repo.getBlock('half-done', 1, true))?.events[0]?.details.who, 'victim');
    const acknowledged = new Map<string, string>();
    await Promise.all(
      others.map(async (inst, i) => {
        for (let n = 0; n < 3; n += 1) acknowledged.set(`o${i}/${n}`, (await inst.ledger.appendEvent('half-done', draft(`o${i}`, n))).event_id);
      }),
    );
    const blocks = await chainBlocks('half-done');
    assertExactlyOnce(blocks, acknowledged);
    const after = (await repo.getHead('half-done'))!;
    assert.equal(after.materialized, after.headIndex, 'every record is written now');
    assert.ok((await repo.findRecord(blocks[1]!.hash)) !== undefined, 'the victim’s block has its record, found by hash');
  });

  it('spreads a busy chain’s pending appends over more partitions, and still seals every one exactly once', async () => {
    const instances = Array.from({ length: 20 }, () => instance(repo, { pendingShards: 4 }));
    await instances[0]!.ledger.createSubChain('spread');
    assert.equal((await repo.getHead('spread'))!.pendingShards, 1, 'a chain starts with one pending partition');
    const acknowledged = new Map<string, string>();
    const burst = async (round: number) => {
      // Another instance holds the lease a moment, so that the burst queues as pending appends.
      const holder = `busy-${round}-${Date.now()}`;
      await repo.acquireLease('spread', holder, Date.now(), Date.now() + 300);
      await Promise.all(
        instances.map(async (inst, i) => {
          const { event_id } = await inst.ledger.appendEvent('spread', draft(`r${round}i${i}`, 0));
          acknowledged.set(`r${round}i${i}/0`, event_id);
        }),
      );
    };
    await burst(1);
    const grown = (await repo.getHead('spread'))!.pendingShards!;
    assert.ok(grown >= 2 && grown <= 4, `the leader that found 20 waiting doubled the partitions (now ${grown})`);
    await burst(2);
    await burst(3);
    assert.ok((await repo.getHead('spread'))!.pendingShards! <= 4, 'never past SVC_APPEND_PENDING_SHARDS');
    const blocks = await chainBlocks('spread');
    assert.equal(blocks.length, 1 + 3 * 20);
    assertExactlyOnce(blocks, acknowledged);
  });

  it('a follower that waits past its deadline withdraws its append: 503, and it never lands', async () => {
    const holder = `stuck-${Date.now()}`;
    const patient = instance(repo, { waitMs: 400 });
    await patient.ledger.createSubChain('stuck');
    // Another instance holds the lease for a long while and does nothing.
    await repo.acquireLease('stuck', holder, Date.now(), Date.now() + 60_000);
    await assert.rejects(patient.ledger.appendEvent('stuck', draft('late', 0)), ChainContendedError);
    const stuck = (await repo.getHead('stuck'))!;
    assert.deepEqual(
      (await repo.listPending('stuck', 1, stuck.cursor ?? '', pendingSk(Date.now() + 60_000, 'ffffffffffff'), 10)).appends,
      [],
      'the append was withdrawn: the cursor is past it, no leader can seal it',
    );
    await repo.releaseLease('stuck', holder);
    const { event_id } = await instance().ledger.appendEvent('stuck', draft('later', 0));
    const blocks = await chainBlocks('stuck');
    assert.deepEqual(
      blocks.slice(1).map((b) => b.events[0]!.event_id),
      [event_id],
      'only the later event is on the chain',
    );
  });
});

describe('Idempotency-Key across instances (DynamoDB only)', () => {
  const key = (name: string) => ({ idempotency: { caller: '-', key: `${name}-${Date.now()}` } });

  it('answers a retry with the first result, from any instance, and appends it once', async () => {
    const [a, b] = [instance(), instance()];
    await a.ledger.createSubChain('idem');
    const options = key('retry');
    const first = await a.ledger.appendEvent('idem', draft('idem', 1), options);
    const retry = await b.ledger.appendEvent('idem', draft('idem', 1), options);
    assert.equal(retry.event_id, first.event_id);
    assert.equal(retry.block.hash, first.block.hash);
    assert.equal(retry.replayed, true);
    assert.equal(first.replayed, undefined);
    await assert.rejects(b.ledger.appendEvent('idem', draft('idem', 2), options), (e: Error) => e.name === 'IdempotencyKeyReusedError');
    const batchOptions = key('batch');
    const batch = await a.ledger.appendEvents('idem', [draft('b', 0), draft('b', 1)], batchOptions);
    const batchRetry = await b.ledger.appendEvents('idem', [draft('b', 0), draft('b', 1)], batchOptions);
    assert.deepEqual(
      batchRetry.map((r) => r.event_id),
      batch.map((r) => r.event_id),
    );
    assert.equal((await chainBlocks('idem')).length, 1 + 1 + 2);
  });

  it('concurrent requests with one key: one append; the others get its answer or 409, never a second block', async () => {
    const instances = Array.from({ length: 6 }, () => instance());
    await instances[0]!.ledger.createSubChain('idem-race');
    const options = key('race');
    const outcomes = await Promise.allSettled(instances.map((inst) => inst.ledger.appendEvent('idem-race', draft('race', 0), options)));
    const answered = outcomes.filter((o) => o.status === 'fulfilled').map((o) => (o as PromiseFulfilledResult<{ event_id: string }>).value.event_id);
    const refused = outcomes.filter((o) => o.status === 'rejected').map((o) => ((o as PromiseRejectedResult).reason as Error).name);
    assert.ok(answered.length >= 1);
    assert.equal(new Set(answered).size, 1, 'every answer names the same event');
    assert.ok(
      refused.every((name) => name === 'IdempotencyKeyInUseError'),
      refused.join(),
    );
    assert.equal((await chainBlocks('idem-race')).length, 2, 'one block');
  });

  it('is answered after its instance dies right after the commit: the key is completed in the same transaction', async () => {
    // This instance's commits land, and then it never answers (as if SIGKILLed right after the commit).
    const frozen: LedgerRepository = {
      ...repo,
      commitRound: async (commit) => {
        await repo.commitRound(commit);
        return new Promise(() => {});
      },
    };
    const dying = instance(frozen);
    await instance().ledger.createSubChain('idem-crash');
    const options = key('crash');
    void dying.ledger.appendEvent('idem-crash', draft('crash', 0), options);
    let landed: Block[] = [];
    for (let i = 0; i < 100 && landed.length < 2; i += 1) {
      await new Promise((r) => setTimeout(r, 20));
      landed = await repo.getBlockRange('idem-crash', 0, 5, false);
    }
    assert.equal(landed.length, 2, 'the dying instance committed the block');
    // The client's retry reaches another instance at once: the key already names that block.
    const retry = await instance().ledger.appendEvent('idem-crash', draft('crash', 0), options);
    assert.equal(retry.replayed, true);
    assert.equal(retry.event_id, landed[1]!.events[0]!.event_id);
    assert.equal((await chainBlocks('idem-crash')).length, 2, 'not appended twice');
  });

  it('refuses a retry while the first request holds the key (409), and takes over a hold that lapsed', async () => {
    await instance().ledger.createSubChain('idem-held');
    const options = key('held');
    const fingerprint = createHash('sha256')
      .update(canonicalJson({ kind: 'event', drafts: [draft('held', 0)] }))
      .digest('hex');
    // Another instance claimed the key a moment ago and is still appending (or died: its hold lapses).
    const claim = { id: `idem-held#-#${options.idempotency.key}`, token: 'other-instance' };
    assert.deepEqual(await repo.claimIdempotency(claim, fingerprint, Date.now(), Date.now() + 300, Math.floor(Date.now() / 1000) + 60), { status: 'claimed' });
    await assert.rejects(instance().ledger.appendEvent('idem-held', draft('held', 0), options), (e: Error) => e.name === 'IdempotencyKeyInUseError');
    await assert.rejects(instance().ledger.appendEvent('idem-held', draft('held', 1), options), (e: Error) => e.name === 'IdempotencyKeyReusedError');
    await new Promise((r) => setTimeout(r, 350));
    const retry = await instance().ledger.appendEvent('idem-held', draft('held', 0), options);
    assert.equal(retry.replayed, undefined, 'the lapsed hold is taken over and the event appended');
    // The first holder, had it gone on, could not complete the key now: its token no longer holds it.
    await repo.releaseIdempotency(claim);
    const replay = await instance().ledger.appendEvent('idem-held', draft('held', 0), options);
    assert.equal(replay.event_id, retry.event_id);
    assert.equal((await chainBlocks('idem-held')).length, 2);
  });

  it('a request that failed lets go of its key, so a retry appends at once', async () => {
    const failing: LedgerRepository = {
      ...repo,
      commitRound: async () => Promise.reject(Object.assign(new Error('unreachable'), { name: 'ServiceUnavailableError' })),
    };
    const a = instance(failing, { maxAttempts: 1 });
    await instance().ledger.createSubChain('idem-fail');
    const options = key('fail');
    await assert.rejects(a.ledger.appendEvent('idem-fail', draft('fail', 0), options));
    const retry = await instance().ledger.appendEvent('idem-fail', draft('fail', 0), options);
    assert.equal(retry.replayed, undefined, 'appended now, not replayed');
    assert.equal((await chainBlocks('idem-fail')).length, 2);
  });

  it('a key whose answer was never recorded is answered from the pending append its record names, held or taken over', async () => {
    // The leader's write of the key's answer, after its round's commit, fails: the record stays in progress,
    // naming the pending append it was bound to before that append was written.
    const unanswered: LedgerRepository = { ...repo, completeIdempotency: async () => Promise.reject(new Error('lost on the way')) };
    const a = {
      ledger: createLedger({ repository: unanswered, appender: new ChainAppender(unanswered, { maxAttempts: 8, batchMax: 25 }), idempotencyHoldMs: 400 }),
    };
    await instance().ledger.createSubChain('idem-bound');
    const options = key('bound');
    const first = await a.ledger.appendEvent('idem-bound', draft('bound', 0), options);
    const probe = { id: `idem-bound#-#${options.idempotency.key}`, token: 'probe' };
    const record = await repo.claimIdempotency(probe, 'x', Date.now(), Date.now() + 60_000, Math.floor(Date.now() / 1000) + 60);
    assert.equal(record.status, 'in-progress', 'the answer was not recorded');
    assert.ok(record.status === 'in-progress' && record.bound, 'the record names the pending append');
    // While the first request's hold is live: the append its record names is sealed, so that is the answer (not 409).
    const held = await instance().ledger.appendEvent('idem-bound', draft('bound', 0), options);
    assert.equal(held.replayed, true);
    assert.equal(held.event_id, first.event_id);
    await assert.rejects(instance().ledger.appendEvent('idem-bound', draft('bound', 1), options), (e: Error) => e.name === 'IdempotencyKeyReusedError');
    // Once the hold lapsed, a retry takes the key over: it settles the append the record names (sealed: the answer).
    await new Promise((r) => setTimeout(r, 450));
    const taken = await instance().ledger.appendEvent('idem-bound', draft('bound', 0), options);
    assert.equal(taken.replayed, true);
    assert.equal(taken.block.hash, first.block.hash);
    // The taker recorded the answer: a later retry reads it from the record.
    const later = await instance().ledger.appendEvent('idem-bound', draft('bound', 0), options);
    assert.equal(later.event_id, first.event_id);
    assert.equal((await chainBlocks('idem-bound')).length, 2, 'appended once');
  });

  it("a new key's record is made naming the pending append's key (one write, no bind after); a record already there is not", async () => {
    const claim = { id: `idem-first#-#${Date.now()}`, token: 'a' };
    const first = { ref: { shard: 0, sk: pendingSk(Date.now(), 7n) }, after: 0 };
    const expires = Math.floor(Date.now() / 1000) + 60;
    assert.deepEqual(await repo.claimIdempotency(claim, 'fp', Date.now(), Date.now() + 60_000, expires, first), { status: 'claimed', first: true });
    const held = await repo.claimIdempotency({ ...claim, token: 'b' }, 'fp', Date.now(), Date.now() + 60_000, expires, first);
    assert.equal(held.status, 'in-progress');
    assert.deepEqual(held.status === 'in-progress' && held.bound, { ref: first.ref, after: 0, token: 'a', fingerprint: 'fp' });
    // Let go, then taken over: the new holder is told what the record names, and the record keeps naming it.
    await repo.releaseIdempotency(claim);
    const taken = await repo.claimIdempotency({ ...claim, token: 'c' }, 'fp2', Date.now(), Date.now() + 60_000, expires, first);
    assert.deepEqual(taken, { status: 'claimed', bound: { ref: first.ref, after: 0, token: 'a', fingerprint: 'fp' } });
    assert.equal(await repo.bindIdempotency(claim, first.ref, 0), false, 'the first holder can bind nothing any more');
    assert.equal(await repo.bindIdempotency({ ...claim, token: 'c' }, { shard: 1, sk: first.ref.sk }, 3), true);
  });
});
