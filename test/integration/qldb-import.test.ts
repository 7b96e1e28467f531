/**
 * `npm run import:qldb` as a user runs it, against the running local stack: a QLDB journal export (made by
 * test/support/qldb-journal.ts, whose hashing the real QLDB block and the Ion Hash vectors check) verified and
 * imported in its three formats, anchored on the Main Chain with its record, checked again by
 * `ledger-verify --qldb`; killed mid-import and run again (every revision once, in order); a later export of the
 * same journal continuing the chain; and each bad export refused with nothing imported. The stack requires API keys, as a deployment does: the import runs with a
 * writer's key.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { digestFile, makeStrand, writeExport } from '#test/support/qldb-journal';
import { merkleRoot } from '#shared/qldb/hashing';
import { call as callAs, keysCli, startStack, stopAndRemove, type Stack } from '#test/support/stack';

const ROOT = new URL('../../', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'qldb-import-'));
let stack: Stack;
let writerKey = '';
const ADMIN_KEY = 'qldb-import-admin-key-0123456789abcdef';
/** A request with the writer's key. */
const call = (base: string, method: string, path: string, body?: unknown) => callAs(base, method, path, body, { 'X-API-Key': writerKey });

before(async () => {
  stack = await startStack({ env: { SVC_AUTH_ENABLED: 'true', SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_AUTH_CACHE_SECONDS: '0' } });
  const made = await keysCli(stack.dataDir, ['create', '--role', 'writer']);
  writerKey = /Key \(shown once, store it now\): (\S+)/.exec(made)?.[1] ?? '';
  assert.ok(writerKey, made);
});
after(async () => {
  await stopAndRemove(stack);
  rmSync(work, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  out: string;
}

/** A command as its npm script runs it: the verifier from its bin, the others through bin/run.mjs. */
function spawnTool(script: string, args: string[]): { child: ChildProcess; done: Promise<Run> } {
  const command = script === 'shared/verify/cli.ts' ? ['bin/ledger-verify.mjs'] : ['bin/run.mjs', script];
  const child = spawn(process.execPath, [...command, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const done = new Promise<Run>((resolve) => child.once('exit', (code) => resolve({ code, out })));
  return { child, done };
}

const importQldb = (...args: string[]) => spawnTool('shared/qldb/cli.ts', ['--url', stack.url, '--api-key', writerKey, ...args]).done;
const ledgerVerify = (...args: string[]) => spawnTool('shared/verify/cli.ts', ['--url', stack.url, '--api-key', writerKey, ...args]).done;

async function stats(chain: string) {
  return call(stack.url, 'GET', `/api/v1/chains/${chain}/stats`);
}

/** Every event of a chain, in order (block 0, the genesis, holds none). */
async function chainEvents(chain: string): Promise<any[]> {
  const events: any[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await call(stack.url, 'GET', `/api/v1/chains/${chain}/blocks?limit=100&offset=${offset}`);
    assert.equal(page.status, 200, page.text);
    for (const block of page.body.blocks) events.push(...block.events);
    if (offset + 100 >= page.body.total) return events;
  }
}

describe('npm run import:qldb', () => {
  it('verifies and imports an Ion text export with its digest, records it on the Main Chain, and ledger-verify --qldb rebuilds it', async () => {
    const dir = join(work, 'text');
    const made = writeExport(dir, { count: 60, revisionsPerBlock: 3, mixed: true, blocksPerObject: 8 });
    writeFileSync(join(work, 'text.digest'), digestFile(made.digest, made.strandId, 59));
    const run = await importQldb('--export', dir, '--chain', 'qldb-text', '--digest', join(work, 'text.digest'));
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, /verified: 60 blocks \(0…59\), 180 document revisions, tip hash \S+, digest \S+ at block 59 matches/);
    assert.match(run.out, /imported: 60 blocks, 180 revisions into 'qldb-text', 240 events appended in 3 batches/);

    const events = await chainEvents('qldb-text');
    assert.equal(events.length, 60 + 180 + 1, 'a block event per block, an event per revision, the record');
    const insert = events.find((e) => e.event_type === 'Person.insert');
    const q = insert.details_metadata.qldb;
    assert.equal(insert.entity_id, q.document_id);
    assert.equal(q.export_id, made.exportId);
    assert.match(q.revision_hash, /^[A-Za-z0-9+/]{43}=$/);
    assert.equal(typeof insert.details.Balance, 'number');
    const record = events.at(-1);
    assert.equal(record.event_type, 'qldb_import');
    assert.equal(record.details.tip.block_hash, made.tipHash.toString('base64'));
    assert.equal(record.details.digest.digest, made.digest.toString('base64'));

    const main = await call(stack.url, 'GET', '/api/v1/chains/main/blocks?limit=1&order=desc');
    const anchor = main.body.blocks[0].events[0];
    assert.equal(anchor.event_type, 'sub_chain_proof');
    assert.equal(anchor.details.sub_chain, 'qldb-text');
    assert.deepEqual(anchor.details.qldb_import, record.details, "the Main Chain's anchor carries the import's record");

    const verified = await ledgerVerify('--chain', 'qldb-text', '--qldb');
    assert.equal(verified.code, 0, verified.out);
    assert.match(
      verified.out,
      /QLDB: export \S+, 60 blocks rebuilt and verified by QLDB's hashing up to \S+\/59 .*180 revisions \(\d+ rehashed from their Ion/,
    );
    const deletions = events.filter((e) => e.details_metadata?.qldb?.operation === 'delete');
    assert.ok(deletions.length > 0 && deletions.every((e) => e.details_metadata.qldb.revision_hash_checked === false));
    assert.match(
      verified.out,
      new RegExp(`note: ${deletions.length} deletions' revision hashes, and with them their metadata, rest on their blocks' hashes alone`),
    );

    const again = await importQldb('--export', dir, '--chain', 'qldb-text');
    assert.equal(again.code, 0, again.out);
    assert.match(again.out, /already imported: chain 'qldb-text' holds export \S+ whole/);
    assert.equal((await stats('qldb-text')).body.total_events, 241, 'nothing appended again');

    // Another export under the same export id and strand, which verifies by itself: not taken for the one imported
    // (it had been answered "already imported", never compared).
    const forgedDir = join(work, 'forged');
    const forged = writeExport(forgedDir, { count: 60, revisionsPerBlock: 3, mixed: true, blocksPerObject: 8, seed: 'forged', exportId: made.exportId });
    assert.notEqual(forged.tipHash.toString('base64'), made.tipHash.toString('base64'));
    const refused = await importQldb('--export', forgedDir, '--chain', 'qldb-text');
    assert.equal(refused.code, 1, refused.out);
    assert.match(
      refused.out,
      /IMPORT STOPPED: chain 'qldb-text' holds export \S+ whole, ending at block 59 \(\S+\); this export ends at block 59 \(\S+\): it is not the export that was imported/,
    );
    assert.match(refused.out, /it is not the export that was imported, from block 0 on \(the chain holds a block 0 of hash \S+, the export's is \S+\)/);
    // One the same up to block 41 and another from there: the first block that differs is named.
    const laterDir = join(work, 'later');
    writeExport(laterDir, { count: 60, revisionsPerBlock: 3, mixed: true, blocksPerObject: 8, exportId: made.exportId, variantFrom: 42 });
    const later = await importQldb('--export', laterDir, '--chain', 'qldb-text');
    assert.equal(later.code, 1, later.out);
    assert.match(later.out, /it is not the export that was imported, from block 42 on/);
    assert.equal((await stats('qldb-text')).body.total_events, 241, 'nothing appended');
  });

  for (const format of ['ION_BINARY', 'JSON'] as const) {
    it(`imports a ${format} export, and ledger-verify --qldb checks it`, async () => {
      const dir = join(work, format);
      writeExport(dir, { count: 20, revisionsPerBlock: 2, mixed: true, format, blocksPerObject: 6 });
      const chain = ['--chain', `qldb-${format.toLowerCase().replace('_', '-')}`];
      if (format === 'JSON') {
        // Its documents hold timestamps, blobs and symbols, which JSON does not keep: their data cannot be bound to
        // their hashes, so the import is refused unless told (it had imported them as verified).
        const refused = await importQldb('--export', dir, ...chain);
        assert.equal(refused.code, 1, refused.out);
        assert.match(refused.out, /NOT IMPORTED: \d+ revisions' data in this JSON Lines export (is|are) not bound to their hashes/);
        assert.match(refused.out, /pass --accept-unverified-data/);
      }
      const run = await importQldb('--export', dir, ...chain, ...(format === 'JSON' ? ['--accept-unverified-data'] : []));
      assert.equal(run.code, 0, run.out);
      if (format === 'JSON') {
        // Its transactions bind (their shape is known), its documents' data does not.
        assert.match(run.out, /not recomputable: \d+ deleted revisions' hashes \(a deletion carries no data\); each is still covered/);
        assert.doesNotMatch(run.out, /transactions \(the tables/);
        assert.match(run.out, /unverified: \d+ revisions' data .* each marked data_verified: false/);
      }
      const verified = await ledgerVerify(...chain, '--qldb');
      assert.equal(verified.code, 0, verified.out);
      assert.match(verified.out, /20 blocks rebuilt and verified/);
    });
  }

  it('goes on where it stopped when killed mid-import: every revision once, in journal order', async () => {
    const dir = join(work, 'killed');
    const made = writeExport(dir, { count: 300, revisionsPerBlock: 3, mixed: true, blocksPerObject: 40 });
    const first = spawnTool('shared/qldb/cli.ts', ['--url', stack.url, '--api-key', writerKey, '--export', dir, '--chain', 'qldb-killed']);
    // Killed once some batches have landed (SIGKILL: no chance to finish a batch or clean up).
    const until = Date.now() + 60_000;
    for (;;) {
      const s = await stats('qldb-killed');
      if (s.status === 200 && s.body.total_events >= 300) break;
      assert.ok(Date.now() < until, 'the import made no progress');
      await new Promise((r) => setTimeout(r, 50));
    }
    first.child.kill('SIGKILL');
    await first.done;
    const cut = (await stats('qldb-killed')).body.total_events;
    assert.ok(cut < 1201, `killed before the end (${cut} events)`);

    // Another export under the same id, the same journal up to block 4: not continued onto the first one's part (it
    // had been, the chain then holding two journals' blocks as one).
    const otherDir = join(work, 'killed-other');
    writeExport(otherDir, { count: 300, revisionsPerBlock: 3, mixed: true, blocksPerObject: 40, exportId: made.exportId, variantFrom: 5 });
    const mixed = await importQldb('--export', otherDir, '--chain', 'qldb-killed');
    assert.equal(mixed.code, 1, mixed.out);
    assert.match(mixed.out, /holds part of export \S+, up to block \d+, and it is not this export's, from block 5 on .*: import this export into a new chain/);
    assert.equal((await stats('qldb-killed')).body.total_events, cut, 'nothing appended');

    const second = await importQldb('--export', dir, '--chain', 'qldb-killed');
    assert.equal(second.code, 0, second.out);
    assert.match(second.out, /resuming: the chain holds this import up to block \d+/);
    const events = await chainEvents('qldb-killed');
    assert.equal(events.length, 300 + 900 + 1);
    const revisions = events.filter((e) => e.details_metadata?.qldb?.revision_index !== undefined);
    const positions = revisions.map((e) => `${e.details_metadata.qldb.block_address.sequence_no}/${e.details_metadata.qldb.revision_index}`);
    assert.equal(new Set(positions).size, 900, 'no revision twice');
    const verified = await ledgerVerify('--chain', 'qldb-killed', '--qldb');
    assert.equal(verified.code, 0, verified.out);
  });

  it('continues the chain with a later export of the same journal, checked against its tip; ledger-verify --qldb checks both and a digest over them', async () => {
    // One journal of 40 blocks, exported twice: blocks 0-19, then 15-39 (QLDB exports by time range: they overlap).
    const journal = makeStrand({ count: 40, revisionsPerBlock: 2 });
    const earlier = writeExport(join(work, 'incr-a'), { count: 20, revisionsPerBlock: 2, blocksPerObject: 10, exportId: 'EXPORTincrementalAAAAA' });
    const later = writeExport(join(work, 'incr-b'), {
      from: 15,
      previous: journal[14]!.blockHash,
      count: 25,
      revisionsPerBlock: 2,
      blocksPerObject: 10,
      exportId: 'EXPORTincrementalBBBBB',
    });
    assert.ok(later.tipHash.equals(journal[39]!.blockHash), 'the later export is the same journal');
    assert.equal((await importQldb('--export', earlier.dir, '--chain', 'qldb-incr')).code, 0);
    const held = (await stats('qldb-incr')).body.total_events;

    // A gap, another journal's blocks from 20 on, and another strand are refused, and nothing is appended.
    const gap = writeExport(join(work, 'incr-gap'), {
      from: 22,
      previous: journal[21]!.blockHash,
      count: 5,
      revisionsPerBlock: 2,
      exportId: 'EXPORTincrementalGAPPP',
    });
    const foreign = writeExport(join(work, 'incr-foreign'), { from: 20, count: 5, revisionsPerBlock: 2, seed: 'another', exportId: 'EXPORTincrementalOTHER' });
    const strand = writeExport(join(work, 'incr-strand'), {
      strandId: 'AnotherStrandAAAAAAAAA',
      count: 25,
      revisionsPerBlock: 2,
      exportId: 'EXPORTincrementalSTRAN',
    });
    for (const [made, reason] of [
      [gap, /holds export EXPORTincrementalAAAAA up to block 19 \(\S+\); this export begins at block 22: blocks 20–21 are missing/],
      [foreign, /this export's block 20 follows a block of hash \S+: it is not a later export of the same journal/],
      [strand, /of strand HbD9IggL584EPHmfwjmVz0; this export is of strand AnotherStrandAAAAAAAAA: another ledger's journal/],
    ] as const) {
      const run = await importQldb('--export', made.dir, '--chain', 'qldb-incr');
      assert.equal(run.code, 1, run.out);
      assert.match(run.out, reason);
      assert.equal((await stats('qldb-incr')).body.total_events, held, 'nothing appended');
    }

    const run = await importQldb('--export', later.dir, '--chain', 'qldb-incr');
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, /continuing export EXPORTincrementalAAAAA's import: this export from block 20 on/);
    assert.match(run.out, /imported: 20 blocks, 40 revisions into 'qldb-incr', continuing export EXPORTincrementalAAAAA's import, 60 events appended/);
    const events = await chainEvents('qldb-incr');
    assert.equal(events.length, held + 20 + 40 + 1, 'blocks 15-19 are not imported twice');
    const record = events.at(-1);
    assert.deepEqual(record.details.continues, {
      export_id: 'EXPORTincrementalAAAAA',
      tip: { block_address: { strand_id: later.strandId, sequence_no: 19 }, block_hash: journal[19]!.blockHash.toString('base64') },
    });
    assert.deepEqual(record.details.first_block.block_address.sequence_no, 20);

    // The chain's two imports, each anchored, and QLDB's digest at block 39 against every block hash from block 0.
    writeFileSync(join(work, 'incr.digest'), digestFile(merkleRoot(journal.map((b) => b.blockHash)), later.strandId, 39));
    const verified = await ledgerVerify('--chain', 'qldb-incr', '--qldb', '--qldb-digest', join(work, 'incr.digest'));
    assert.equal(verified.code, 0, verified.out);
    assert.match(
      verified.out,
      /QLDB: exports EXPORTincrementalAAAAA, EXPORTincrementalBBBBB, each continuing the one before, 40 blocks rebuilt .* each of the 2 records anchored/,
    );
    assert.match(verified.out, /QLDB digest: the Merkle root of the block hashes from block 0 to 39 matches it/);
    writeFileSync(join(work, 'incr-wrong.digest'), digestFile(merkleRoot(journal.slice(0, 39).map((b) => b.blockHash)), later.strandId, 38));
    const wrong = await ledgerVerify('--chain', 'qldb-incr', '--qldb', '--qldb-digest', join(work, 'incr-wrong.digest'));
    assert.equal(wrong.code, 0, `a digest at block 38 matches too: ${wrong.out}`);
    writeFileSync(join(work, 'incr-other.digest'), digestFile(later.tipHash, later.strandId, 39));
    const other = await ledgerVerify('--chain', 'qldb-incr', '--qldb', '--qldb-digest', join(work, 'incr-other.digest'));
    assert.equal(other.code, 1, other.out);
    assert.match(other.out, /NOT VERIFIED: .*QLDB block \S+\/39: the digest \S+ is not the Merkle root of the imported block hashes from block 0 to its tip/);

    // An export under an id the chain already holds, continuing it: refused (its record would be refused as a replay,
    // the chain left unfinished; red team).
    const reused = writeExport(join(work, 'incr-reused'), {
      from: 40,
      previous: later.tipHash,
      count: 10,
      revisionsPerBlock: 2,
      exportId: 'EXPORTincrementalAAAAA',
    });
    const chainBefore = (await stats('qldb-incr')).body.total_events;
    const again = await importQldb('--export', reused.dir, '--chain', 'qldb-incr');
    assert.equal(again.code, 1, again.out);
    assert.match(again.out, /already holds export EXPORTincrementalAAAAA \(an earlier import of it\)/);
    assert.equal((await stats('qldb-incr')).body.total_events, chainBefore, 'nothing appended');
    // A writer's own qldb_import event, naming block 19 of the journal with its real hash: not taken for an import
    // (the export's blocks 0-19 had been skipped as imported; red team).
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/qldb-forged-tip/create')).status, 201);
    const forgedRecord = {
      entity_id: 'qldb-export:FAKE',
      event_type: 'qldb_import',
      details: {
        export_id: 'FAKE',
        tip: { block_address: { strand_id: later.strandId, sequence_no: 19 }, block_hash: journal[19]!.blockHash.toString('base64') },
      },
    };
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/qldb-forged-tip/events', forgedRecord)).status, 200);
    const tricked = await importQldb('--export', later.dir, '--chain', 'qldb-forged-tip');
    assert.equal(tricked.code, 1, tricked.out);
    assert.match(tricked.out, /IMPORT STOPPED: chain 'qldb-forged-tip' does not hold a QLDB import that verifies up to block 1/);
    assert.equal((await stats('qldb-forged-tip')).body.total_events, 1, 'nothing appended');

    // Run again: already imported. The later export's id with other blocks from 30 on: the first block that differs is
    // named (its place on the chain found after the earlier import's record).
    assert.match((await importQldb('--export', later.dir, '--chain', 'qldb-incr')).out, /already imported/);
    const changed = writeExport(join(work, 'incr-changed'), {
      from: 15,
      previous: journal[14]!.blockHash,
      count: 25,
      revisionsPerBlock: 2,
      exportId: 'EXPORTincrementalBBBBB',
      variantFrom: 30,
    });
    const refused = await importQldb('--export', changed.dir, '--chain', 'qldb-incr');
    assert.equal(refused.code, 1, refused.out);
    assert.match(refused.out, /it is not the export that was imported, from block 30 on/);
  });

  it('refuses a changed revision, a cut-short object, a missing object and a foreign digest, naming each, and imports nothing', async () => {
    const dir = join(work, 'bad');
    const made = writeExport(dir, { count: 30, revisionsPerBlock: 2, blocksPerObject: 10 });
    const object = made.objects[0]!;
    const whole = readFileSync(object.path, 'utf8');
    const refused = async (expected: RegExp, ...args: string[]) => {
      const run = await importQldb('--export', dir, '--chain', 'qldb-bad', ...args);
      assert.equal(run.code, 1, run.out);
      assert.match(run.out, expected);
      assert.match(run.out, /nothing was imported/);
      assert.equal((await stats('qldb-bad')).status, 404, 'the chain was not even made');
    };

    writeFileSync(object.path, whole.replace('person 7-1', 'person 7-9'));
    await refused(/NOT IMPORTED: block \S+\/7: revision 1's hash \S+ is not the hash of its metadata and data/);
    writeFileSync(object.path, whole.slice(0, whole.length - 200));
    await refused(new RegExp(`NOT IMPORTED: data object ${object.key}`));
    rmSync(object.path);
    await refused(new RegExp(`NOT IMPORTED: the completed manifest names data object ${object.key}, which is not in the export`));
    writeFileSync(object.path, whole);
    const other = writeExport(join(work, 'other'), { count: 30, revisionsPerBlock: 2, seed: 'another ledger' });
    writeFileSync(join(work, 'other.digest'), digestFile(other.digest, made.strandId, 29));
    await refused(/NOT IMPORTED: block \S+\/29: the digest \S+ is not the Merkle root/, '--digest', join(work, 'other.digest'));
  });

  it('checks an export with --verify-only, sending nothing; without a key the import stops at the first request, naming the 401', async () => {
    const checked = await spawnTool('shared/qldb/cli.ts', ['--export', join(work, 'text'), '--verify-only']).done;
    assert.equal(checked.code, 0, checked.out);
    assert.match(checked.out, /verified: 60 blocks/);
    assert.match(checked.out, /peak memory \d+ MB/);
    const keyless = await spawnTool('shared/qldb/cli.ts', ['--url', stack.url, '--export', join(work, 'text'), '--chain', 'qldb-keyless']).done;
    assert.equal(keyless.code, 1, keyless.out);
    assert.match(keyless.out, /IMPORT STOPPED: cannot read chain 'qldb-keyless': 401/);
  });

  it('refuses a chain that holds other events, and ledger-verify --qldb finds an event added after the import', async () => {
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/qldb-used/create')).status, 201);
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/qldb-used/events', { entity_id: 'x', event_type: 'y' })).status, 200);
    const run = await importQldb('--export', join(work, 'text'), '--chain', 'qldb-used');
    assert.equal(run.code, 1, run.out);
    assert.match(run.out, /IMPORT STOPPED: chain 'qldb-used' already holds 1 block\(s\) that are not this export's import: import into a new chain/);

    const added = await call(stack.url, 'POST', '/api/v1/chains/qldb-ion-binary/events', { entity_id: 'x', event_type: 'Person.update', details: { n: 1 } });
    assert.equal(added.status, 200);
    const verified = await ledgerVerify('--chain', 'qldb-ion-binary', '--qldb');
    assert.equal(verified.code, 1, verified.out);
    assert.match(verified.out, /NOT VERIFIED: block \d+ of 'qldb-ion-binary' \(QLDB block \S+\/19: event \S+ follows the import's closing qldb_import event\)/);
  });
});
