/**
 * The verified client against the running stack, and against a lying server (test/support/lying-log.ts)
 * that lies one way per case: every lie is a VerificationError naming what failed, and the honest path
 * passes. Also: retries reuse the Idempotency-Key (an append whose answer was lost lands once), the
 * trusted state persists in a file, and a verified read by index costs no request more than a plain one.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LedgerClient } from '#client/client';
import { ApiError, VerificationError } from '#client/errors';
import { FileStore } from '#client/file-store';
import { MemoryStore } from '#client/state';
import { ROOT } from '#infra/bundling';
import { blockSchema, blocksPageSchema, evidenceSchema, traceSchema } from '#shared/api/responses';
import { type LyingLog, cosigner, startLyingLog } from '#test/support/lying-log';
import { call, removeDir, sharedStack, startStack, stopAndRemove, tempDataDir, type Stack } from '#test/support/stack';
import { type WitnessProcess, startWitness } from '#test/support/witness';

let stack: Stack;
let liar: LyingLog;
const dir = mkdtempSync(join(tmpdir(), 'client-test-'));

/** A fetch that counts requests, to price verification. */
function counting() {
  const count = { n: 0 };
  const fetchCounted: typeof fetch = (input, init) => {
    count.n += 1;
    return fetch(input, init);
  };
  return { count, fetch: fetchCounted };
}

async function rejects(promise: Promise<unknown>, failure: VerificationError['failure']): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof VerificationError, `expected a VerificationError (${failure}), got ${error}`);
    assert.equal(error.failure, failure, error.message);
    return true;
  });
}

before(async () => {
  stack = await sharedStack();
  const plain = new LedgerClient({ baseUrl: stack.url, verify: false });
  await plain.createChain('orders');
  await plain.appendBatch(
    'orders',
    Array.from({ length: 12 }, (_, i) => ({ entity_id: `pkg-${i % 3}`, event_type: 'moved', details: { step: i } })),
  );
  liar = await startLyingLog(stack.url);
});

after(async () => {
  await liar?.close();
  await stopAndRemove(stack);
});

describe('the verified client against the real service', () => {
  it('appends and reads, every answer checked, the trusted state moving on', async () => {
    const { count, fetch } = counting();
    const store = new FileStore(join(dir, 'state.json'));
    const client = new LedgerClient({ baseUrl: stack.url, store, fetch });
    const receipt = await client.append('orders', { entity_id: 'pkg-9', event_type: 'delivered', details: { to: 'dock 4' } });
    assert.equal(receipt.verified, true);
    assert.equal(receipt.block?.events[0]?.details?.to, 'dock 4');
    assert.equal(receipt.checkpoint?.size, receipt.block!.index + 1);
    assert.match(receipt.checkpoint!.note, /\/orders\n\d+\n[A-Za-z0-9+/]{43}=\n\n\u2014 /);

    // The chain list, a page at a time (the shared stack holds other files' chains too).
    const names = (await client.chains()).map((c) => c.name);
    assert.equal(names[0], 'main');
    const previous = names[names.indexOf('orders') - 1]!;
    assert.deepEqual(
      (await client.chains({ limit: 1, after: previous })).map((c) => c.name),
      ['orders'],
    );

    const block = await client.block('orders', 5);
    blockSchema.parse(block);
    assert.equal((await client.block('orders', block.hash)).index, 5);
    const page = await client.blocks('orders', { limit: 6, offset: 2 });
    blocksPageSchema.parse(page);
    assert.deepEqual(
      page.blocks.map((b) => b.index),
      [2, 3, 4, 5, 6, 7],
    );
    assert.equal((await client.blocks('orders', { limit: 4, order: 'desc' })).blocks[0]!.index, receipt.block!.index);
    const event = await client.event(receipt.event_id);
    assert.equal(event.entity_id, 'pkg-9');
    const trace = await client.trace('pkg-1');
    traceSchema.parse(trace);
    assert.equal(trace.events.length, 4);

    // A batch: one evidence request for all of it (its last block proven, the rest linked).
    const before = count.n;
    const receipts = await client.appendBatch('orders', [
      { entity_id: 'pkg-10', event_type: 'packed' },
      { entity_id: 'pkg-10', event_type: 'shipped', details: { carrier: 'ups' } },
    ]);
    assert.equal(count.n - before, 2);
    assert.deepEqual(
      receipts.map((r) => r.block?.index),
      [receipt.block!.index + 1, receipt.block!.index + 2],
    );

    // The trusted state is kept in the file: a new client (a new process) carries on from it.
    const saved = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8'));
    assert.match(saved.vkey, /\+[0-9a-f]{8}\+/);
    const state = JSON.parse(Object.entries(saved).find(([k]) => k.startsWith('log:'))![1] as string);
    assert.equal(state.size, receipt.block!.index + 3);
    const again = new LedgerClient({ baseUrl: stack.url, store: new FileStore(join(dir, 'state.json')) });
    assert.equal((await again.trustedState('orders'))?.size, state.size);
    assert.equal((await again.checkpoint('orders')).size, state.size);
  });

  it('appends details large enough for the service to move off chain, checked through their resolved form', async () => {
    const client = new LedgerClient({ baseUrl: stack.url });
    const details = { scan: 'x'.repeat(70_000) };
    const receipt = await client.append('orders', { entity_id: 'pkg-large', event_type: 'scanned', details });
    assert.equal(receipt.verified, true);
    assert.equal(receipt.block?.events[0]?.is_offchain, true);
    assert.ok(receipt.block?.events[0]?.details_cid, 'the block holds the reference');
    assert.deepEqual(receipt.block?.events[0]?.details, {});
  });

  it('two clients sharing one state file: neither rolls back what the other trusts (red team)', async () => {
    // Each client had kept the file in memory and written it whole: one's old copy undid the other's newer state, and
    // a fork after the newer one was then accepted.
    const shared = join(dir, 'shared-state.json');
    const a = new LedgerClient({ baseUrl: stack.url, store: new FileStore(shared) });
    const b = new LedgerClient({ baseUrl: stack.url, store: new FileStore(shared) });
    const first = (await a.checkpoint('orders')).size;
    const plain = new LedgerClient({ baseUrl: stack.url, verify: false });
    await plain.append('orders', { entity_id: 'pkg-s', event_type: 'one' });
    await plain.append('orders', { entity_id: 'pkg-s', event_type: 'two' });
    assert.equal((await b.checkpoint('orders')).size, first + 2);
    await a.checkpoint('main'); // a change of a's: written on the file as it is now
    assert.equal((await a.trustedState('orders'))?.size, first + 2, 'a sees what b trusts');
    const saved = JSON.parse(readFileSync(shared, 'utf8')) as Record<string, string>;
    const orders = Object.entries(saved).find(([k]) => k.endsWith('/orders'))!;
    assert.equal(JSON.parse(orders[1]).size, first + 2);
  });

  it('a verified read by index costs no request more than a plain one (the block comes with its proof), by hash one more', async () => {
    const plain = counting();
    const verified = counting();
    const a = new LedgerClient({ baseUrl: stack.url, verify: false, fetch: plain.fetch });
    const b = new LedgerClient({ baseUrl: stack.url, fetch: verified.fetch });
    await b.checkpoint('orders'); // pin the key and a first state
    verified.count.n = 0;
    await a.block('orders', 3);
    const block = await b.block('orders', 3);
    assert.equal(plain.count.n, 1);
    assert.equal(verified.count.n, 1);
    await b.block('orders', block.hash);
    assert.equal(verified.count.n, 3);
  });

  it('the evidence answer matches its schema, and is refused for bad leaves', async () => {
    const res = await call(stack.url, 'GET', '/api/v1/chains/orders/evidence?leaves=0-3,7&known_size=2&blocks=true');
    assert.equal(res.status, 200, res.text);
    const evidence = evidenceSchema.parse(res.body);
    assert.deepEqual(
      evidence.inclusion.map((p) => p.leaf_index),
      [3, 7],
    );
    assert.equal(evidence.blocks?.length, 5);
    for (const bad of ['leaves=5-2', 'leaves=a', `leaves=0-200`]) {
      assert.equal((await call(stack.url, 'GET', `/api/v1/chains/orders/evidence?${bad}`)).status, 422, bad);
    }
    assert.equal((await call(stack.url, 'GET', '/api/v1/chains/orders/evidence?leaves=9999')).status, 404);
  });

  it('a retried append lands once: the lost answer is retried with the same Idempotency-Key', async () => {
    liar.lie = 'retry-after-append';
    const client = new LedgerClient({ baseUrl: liar.url, vkey: liar.vkey, witnesses: { keys: [liar.witness.vkey] } });
    const before = (await call(stack.url, 'GET', '/api/v1/chains/orders/stats')).body.total_blocks;
    const receipt = await client.append('orders', { entity_id: 'pkg-retry', event_type: 'once' });
    assert.equal(receipt.verified, true);
    assert.equal((await call(stack.url, 'GET', '/api/v1/chains/orders/stats')).body.total_blocks, before + 1);
  });

  it('an error answer is a typed ApiError with status, detail and request id', async () => {
    const client = new LedgerClient({ baseUrl: stack.url });
    await assert.rejects(client.block('nope', 1), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 404);
      assert.match(String(error.detail), /nope/);
      assert.match(error.requestId ?? '', /^[0-9a-f-]{36}$/);
      return true;
    });
  });
});

describe('a lying server is caught', () => {
  /** A client that trusts the lying log's key and one witness, with a trusted state of the honest history. */
  async function trustingClient() {
    liar.lie = 'honest';
    const client = new LedgerClient({ baseUrl: liar.url, vkey: liar.vkey, witnesses: { keys: [liar.witness.vkey], required: 1 } });
    await client.checkpoint('orders');
    return client;
  }

  it('the honest path passes through it', async () => {
    const client = await trustingClient();
    await client.block('orders', 4);
    await client.append('orders', { entity_id: 'pkg-honest', event_type: 'ok' });
  });

  it('a changed field of a block', async () => {
    const client = await trustingClient();
    liar.lie = 'tamper-block';
    await rejects(client.block('orders', 4), 'block-hash');
  });

  it('a forked history (an old block rewritten) shown to a client that trusts the real one', async () => {
    const client = await trustingClient();
    await new LedgerClient({ baseUrl: stack.url, verify: false }).append('orders', { entity_id: 'pkg-x', event_type: 'grows' });
    liar.lie = 'fork';
    await rejects(client.checkpoint('orders'), 'consistency');
    // Its trusted state is unchanged, and the forged block 1 is not a leaf of it.
    await rejects(client.block('orders', 1), 'inclusion');
  });

  it('alone, a fresh client cannot tell a forked history from the real one (that is what witnesses are for)', async () => {
    liar.lie = 'fork';
    const fresh = new LedgerClient({ baseUrl: liar.url, vkey: liar.vkey, witnesses: { keys: [liar.witness.vkey] } });
    const block = await fresh.block('orders', 1);
    assert.equal(block.events[0]?.details?.forged, true);
  });

  it('a checkpoint rolled back', async () => {
    const client = await trustingClient();
    liar.lie = 'rollback';
    await rejects(client.checkpoint('orders'), 'rollback');
  });

  it('two roots for one size', async () => {
    const client = await trustingClient();
    liar.lie = 'same-size-other-root';
    await rejects(client.checkpoint('orders'), 'fork');
  });

  it('a checkpoint signed by another key', async () => {
    const client = await trustingClient();
    await new LedgerClient({ baseUrl: stack.url, verify: false }).append('orders', { entity_id: 'pkg-x', event_type: 'grows' });
    liar.lie = 'other-key';
    await rejects(client.checkpoint('orders'), 'signature');
  });

  it('a missing inclusion proof', async () => {
    const client = await trustingClient();
    liar.lie = 'drop-proof';
    await rejects(client.block('orders', 2), 'missing-proof');
  });

  it('an append answered with another event', async () => {
    const client = await trustingClient();
    liar.lie = 'wrong-event';
    await rejects(client.append('orders', { entity_id: 'pkg-w', event_type: 'mine' }), 'event-mismatch');
  });

  it('an appended block that holds the event sent and another beside it', async () => {
    const client = await trustingClient();
    liar.lie = 'inject-event';
    await rejects(client.append('orders', { entity_id: 'pkg-i', event_type: 'mine' }), 'event-mismatch');
  });

  it("an appended event whose details' metadata was changed", async () => {
    const client = await trustingClient();
    liar.lie = 'swap-metadata';
    await rejects(client.append('orders', { entity_id: 'pkg-m', event_type: 'signed', details_metadata: { signed_by: 'alice' } }), 'event-mismatch');
    // Metadata where none was sent (a fresh client: the first one trusts the signed tree that holds the lie).
    const other = await trustingClient();
    liar.lie = 'swap-metadata';
    await rejects(other.append('orders', { entity_id: 'pkg-m', event_type: 'unsigned' }), 'event-mismatch');
  });

  it('small details swapped for an off-chain reference that does not resolve to them', async () => {
    const client = await trustingClient();
    liar.lie = 'offchain-swap';
    await rejects(client.append('orders', { entity_id: 'pkg-o', event_type: 'small', details: { amount: 1 } }), 'event-mismatch');
    // Even when the block read with its details resolved answers the ones sent (red team, second pass): details this
    // small the service keeps on chain.
    const other = await trustingClient();
    liar.lie = 'offchain-swap-resolved';
    await rejects(other.append('orders', { entity_id: 'pkg-o', event_type: 'small', details: { amount: 2 } }), 'event-mismatch');
  });

  it("a second append of the same content answered with the first's event id", async () => {
    const client = await trustingClient();
    liar.lie = 'same-event-twice';
    const event = { entity_id: 'pkg-twice', event_type: 'paid', details: { amount: 5 } };
    assert.equal((await client.append('orders', event)).verified, true);
    await rejects(client.append('orders', event), 'event-mismatch');
    // With the caller's own key the client cannot know whether it is a retry of an append that landed before.
    assert.equal((await client.append('orders', event, { idempotencyKey: 'callers-own' })).verified, true);
  });

  it('two clients sharing a store: a fork shown to one after the other stored the real history is caught (red team)', async () => {
    // The liar answers client a's evidence only once client b has stored the honest checkpoint, and shows a a fork.
    // a had kept b's state and returned the forked checkpoint as verified, the two never compared.
    liar.lie = 'fork-view-b';
    const store = new MemoryStore();
    const b = new LedgerClient({ baseUrl: liar.url, vkey: liar.vkey, store });
    let held = false;
    const viewB: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      if (!held && request.url.includes('/evidence')) {
        held = true;
        await b.checkpoint('orders');
      }
      const headers = new Headers(request.headers);
      headers.set('x-view', 'b');
      return fetch(new Request(request, { headers }));
    };
    const a = new LedgerClient({ baseUrl: liar.url, vkey: liar.vkey, store, fetch: viewB });
    await rejects(a.checkpoint('orders'), 'fork');
    liar.lie = 'honest';
    assert.equal((await a.checkpoint('orders')).root, (await b.trustedState('orders'))!.root, 'the honest history still passes');
  });

  it('a dropped or forged witness cosignature', async () => {
    const client = await trustingClient();
    await new LedgerClient({ baseUrl: stack.url, verify: false }).append('orders', { entity_id: 'pkg-x', event_type: 'grows' });
    liar.lie = 'drop-cosignature';
    await rejects(client.checkpoint('orders'), 'witnesses');
    liar.lie = 'forge-cosignature';
    await rejects(client.checkpoint('orders'), 'witnesses');
    // A witness the client does not know does not count.
    const other = new LedgerClient({ baseUrl: liar.url, vkey: liar.vkey, witnesses: { keys: [cosigner('witness.test/w2').vkey] } });
    liar.lie = 'honest';
    await rejects(other.checkpoint('orders'), 'witnesses');
  });

  it('two clients sharing one witness catch a split view that neither would alone', async () => {
    // A second lying log, whose checkpoints a real witness process (npm run witness) is asked to cosign.
    const witnessDir = tempDataDir('split-witness');
    let witness: WitnessProcess | undefined;
    let split: LyingLog | undefined;
    try {
      split = await startLyingLog(stack.url);
      witness = await startWitness({ dir: witnessDir, logs: [split.vkey] });
      split.witnessUrl = witness.url;
      split.lie = 'split-view';
      const viewB: typeof fetch = (input, init) => {
        const request = new Request(input, init);
        request.headers.set('x-view', 'b');
        return fetch(request);
      };
      const policy = { keys: [witness.vkey], required: 1 };
      const alice = new LedgerClient({ baseUrl: split.url, vkey: split.vkey, witnesses: policy });
      const bob = new LedgerClient({ baseUrl: split.url, vkey: split.vkey, witnesses: policy, fetch: viewB });
      // alice is shown the real history, which the witness cosigns.
      assert.equal((await alice.block('orders', 1)).events[0]?.details?.forged, undefined);
      // Alone, bob cannot tell: without a witness policy the forked history verifies (its proofs are its own).
      const bobAlone = new LedgerClient({ baseUrl: split.url, vkey: split.vkey, fetch: viewB });
      assert.equal((await bobAlone.block('orders', 1)).events[0]?.details?.forged, true);
      // Requiring the witness alice relies on, bob is refused the fork: the witness will not cosign it.
      await rejects(bob.block('orders', 1), 'witnesses');
    } finally {
      await split?.close();
      await witness?.stop();
      removeDir(witnessDir);
    }
  });

  it('a server whose key is not the pinned one', async () => {
    const pinnedReal = new LedgerClient({ baseUrl: liar.url, vkey: (await (await fetch(`${stack.url}/tlog/vkey`)).text()).trim() });
    liar.lie = 'honest';
    await rejects(pinnedReal.block('orders', 1), 'signature');
  });
});

describe("when the operator replaces the node's key (docs/clients.md)", () => {
  it("a client pinned to the old key is told (signature); given the new vkey, it keeps its trusted state when the origin is the operator's own", async () => {
    const dataDir = tempDataDir('rotate');
    const env = { SVC_TLOG_ORIGIN: 'ledger.rotation.test' };
    let service = await startStack({ dataDir, env });
    try {
      const store = new MemoryStore();
      const first = new LedgerClient({ baseUrl: service.url, store });
      await first.createChain('rotating');
      await first.append('rotating', { entity_id: 'r-1', event_type: 'before' });
      const trusted = JSON.parse((await store.get('log:ledger.rotation.test/rotating'))!) as { size: number };
      await service.stop();
      // A restart alone keeps the key: the client goes on.
      service = await startStack({ dataDir, env });
      await new LedgerClient({ baseUrl: service.url, store }).append('rotating', { entity_id: 'r-2', event_type: 'restart' });
      await service.stop();
      // The operator replaces it.
      const init = spawnSync(process.execPath, ['bin/run.mjs', 'infra/local/identity.ts', 'init', '--force'], {
        cwd: ROOT,
        env: { ...process.env, SVC_DATA_DIR: dataDir },
        encoding: 'utf8',
      });
      assert.equal(init.status, 0, init.stderr);
      service = await startStack({ dataDir, env });
      await rejects(new LedgerClient({ baseUrl: service.url, store }).append('rotating', { entity_id: 'r-3', event_type: 'rotated' }), 'signature');
      const vkey = (await (await fetch(`${service.url}/tlog/vkey`)).text()).trim();
      const told = new LedgerClient({ baseUrl: service.url, store, vkey });
      const receipt = await told.append('rotating', { entity_id: 'r-4', event_type: 'rotated' });
      assert.equal(receipt.verified, true);
      // The same log to the client: its new trusted state extends the one from before the key changed.
      const now = JSON.parse((await store.get('log:ledger.rotation.test/rotating'))!) as { size: number };
      assert.ok(now.size > trusted.size);
      assert.equal(await store.get('vkey'), vkey, 'the new key is pinned in place of the old');
    } finally {
      await service.stop();
      removeDir(dataDir);
    }
  });
});
