/**
 * A QLDB journal export read and verified as a whole (shared/qldb/export.ts), in its three formats, with and
 * without a digest; each way an export can be wrong, named; and the mapping to events and back
 * (shared/qldb/mapping.ts, audit.ts): an imported chain's events rebuild QLDB's blocks, and any change to them is found.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import * as ion from 'ion-js';
import { exportBlocks, openExport, parseDigest, QldbExportError, verifyExport } from '#shared/qldb/export';
import { verifyForImport } from '#shared/qldb/importer';
import { blockHash as qldbBlockHash, ionHash, MerkleAccumulator, merkleRoot, revisionHash } from '#shared/qldb/hashing';
import { blockFromIon, QldbVerificationError, verifyBlock } from '#shared/qldb/journal';
import { auditImportedChain, type ChainEvent } from '#shared/qldb/audit';
import { eventsOfBlock, QLDB_BLOCK_EVENT } from '#shared/qldb/mapping';
import { digestFile, encodeBlocks, makeStrand, type WrittenExport, writeExport } from '../support/qldb-journal.ts';

const root = mkdtempSync(join(tmpdir(), 'qldb-export-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(root, `e${(n += 1)}`);

/** The error `check` throws, of the given class. */
function refusal<E extends Error>(kind: new (...args: never[]) => E, check: () => unknown): E {
  try {
    check();
  } catch (error) {
    assert.ok(error instanceof kind, `${String(error)} is not a ${kind.name}`);
    return error as E;
  }
  assert.fail('accepted, and should not have');
}

/** The events an import sends for an export, as the chain answers them (JSON through and back). */
/** The import's closing record, as the importer writes it, naming the export's tip (block `tip`). */
function closingRecord(made: WrittenExport, tip: number): ChainEvent {
  return {
    entity_id: `qldb-export:${made.exportId}`,
    event_type: 'qldb_import',
    details: { export_id: made.exportId, tip: { block_address: { strand_id: made.strandId, sequence_no: tip }, block_hash: made.tipHash.toString('base64') } },
    details_metadata: null,
  };
}

function chainEventsOf(dir: string): ChainEvent[] {
  const exp = openExport(dir);
  const events: ChainEvent[] = [];
  for (const { block } of exportBlocks(exp))
    for (const { event } of eventsOfBlock(block, exp.exportId)) events.push({ ...JSON.parse(JSON.stringify(event)), event_id: `c_${events.length + 1}_0` });
  return events;
}

describe('QLDB digest tree', () => {
  it('builds, one hash at a time, the root merkleRoot builds from the whole list, for every size from 1 to 70', () => {
    const hashes = makeStrand({ count: 70, revisionsPerBlock: 1 }).map((b) => b.blockHash);
    const tree = new MerkleAccumulator();
    hashes.forEach((h, i) => {
      tree.push(h);
      assert.deepEqual(tree.root(), merkleRoot(hashes.slice(0, i + 1)), `size ${i + 1}`);
    });
  });

  it('reads a digest as `aws qldb get-digest` writes it, and as Ion; refuses one without its tip', () => {
    const digest = Buffer.alloc(32, 7);
    assert.deepEqual(parseDigest(digestFile(digest, 'S1', 41)), { digest, tip: { strandId: 'S1', sequenceNo: 41 } });
    assert.deepEqual(parseDigest(`{digest:{{${digest.toString('base64')}}},digestTipAddress:{strandId:"S1",sequenceNo:41}}`).tip.sequenceNo, 41);
    assert.match(refusal(QldbExportError, () => parseDigest('{"Digest": "AAAA"}')).message, /needs Digest \(32 bytes, base64\) and DigestTipAddress/);
  });
});

describe('QLDB journal export', () => {
  for (const format of ['ION_TEXT', 'ION_BINARY', 'JSON'] as const) {
    it(`verifies a ${format} export across its data objects, with its digest, and counts what it could not recompute`, () => {
      const dir = fresh();
      const made = writeExport(dir, { count: 40, revisionsPerBlock: 3, mixed: true, format, blocksPerObject: 9 });
      assert.equal(made.objects.length, 5);
      const summary = verifyExport(openExport(dir), { digest: parseDigest(digestFile(made.digest, made.strandId, 39)) });
      assert.equal(summary.outputFormat, format);
      assert.equal(summary.blocks, 40);
      assert.equal(summary.revisions, 120);
      assert.equal(summary.tip.blockHash, made.tipHash.toString('base64'));
      assert.equal(summary.digest?.tip.sequenceNo, 39);
      const deletions = chainEventsOf(dir).filter((e) => e.event_type.endsWith('.delete')).length;
      assert.ok(deletions > 0);
      if (format === 'JSON')
        assert.deepEqual(
          summary.unchecked,
          { revisions: deletions, transactions: 0, data: 120 - deletions },
          "no document's data binds to its hash: each holds a timestamp, a blob, a symbol and a float, which JSON does not keep; the transactions, of known shape, do",
        );
      else assert.deepEqual(summary.unchecked, { revisions: deletions, transactions: 0, data: 0 }, 'the deletions carry no data');
      // A digest taken at an earlier tip checks the blocks up to it.
      const earlier = merkleRoot(
        makeStrand({ count: 40, revisionsPerBlock: 3, mixed: true })
          .slice(0, 25)
          .map((b) => b.blockHash),
      );
      assert.equal(verifyExport(openExport(dir), { digest: { digest: earlier, tip: { strandId: made.strandId, sequenceNo: 24 } } }).blocks, 40);
    });
  }

  it('refuses an unfinished export, a missing data object, objects out of order, and a cut-short object, naming each', () => {
    const dir = fresh();
    const made = writeExport(dir, { count: 30, revisionsPerBlock: 2, blocksPerObject: 10 });
    const completed = join(dir, `${made.exportId}.${made.strandId}.completed.manifest`);
    const manifest = readFileSync(completed, 'utf8');

    renameSync(completed, `${completed}.away`);
    assert.match(refusal(QldbExportError, () => openExport(dir)).message, /has no completed manifest .*the export job did not finish/);
    renameSync(`${completed}.away`, completed);

    renameSync(made.objects[1]!.path, `${made.objects[1]!.path}.away`);
    assert.match(
      refusal(QldbExportError, () => verifyExport(openExport(dir))).message,
      new RegExp(`the completed manifest names data object ${made.objects[1]!.key}, which is not in the export`),
    );
    renameSync(`${made.objects[1]!.path}.away`, made.objects[1]!.path);

    const keys = made.objects.map((o) => o.key);
    writeFileSync(completed, ion.dumpText(ion.load(JSON.stringify({ keys: [keys[0], keys[2], keys[1]] }))));
    assert.match(
      refusal(QldbVerificationError, () => verifyExport(openExport(dir))).message,
      /^block HbD9IggL584EPHmfwjmVz0\/20: it follows block 9: sequence number 10 is missing or out of order/,
    );
    writeFileSync(completed, manifest);

    const object = made.objects[2]!;
    const whole = readFileSync(object.path, 'utf8');
    writeFileSync(object.path, whole.slice(0, Math.floor(whole.length * 0.6))); // cut inside a block
    assert.match(refusal(QldbExportError, () => verifyExport(openExport(dir))).message, new RegExp(`^data object ${object.key}: `));
    writeFileSync(object.path, `${whole.split('\n').slice(0, 7).join('\n')}\n`); // cut between blocks
    assert.match(
      refusal(QldbExportError, () => verifyExport(openExport(dir))).message,
      new RegExp(`data object ${object.key} holds blocks 20–26, its name says 20–29: it is cut short`),
    );
  });

  it('reads no file outside the export: a key naming ../ or an absolute path, and a symbolic link, are refused before any read (red team)', () => {
    // The importer had followed `../` in a manifest's keys and a symlinked object, and echoed /etc/passwd in its error.
    const dir = fresh();
    const made = writeExport(dir, { count: 10, revisionsPerBlock: 1, blocksPerObject: 10 });
    const completed = join(dir, `${made.exportId}.${made.strandId}.completed.manifest`);
    const manifest = readFileSync(completed, 'utf8');
    for (const key of ['../../../../etc/passwd', '/etc/passwd', `${made.objects[0]!.key}/../../../../../../../../../etc/passwd`]) {
      writeFileSync(completed, ion.dumpText(ion.load(JSON.stringify({ keys: [key] }))));
      const error = refusal(QldbExportError, () => verifyExport(openExport(dir)));
      assert.match(error.message, /outside the export's folder: refused/, key);
      assert.doesNotMatch(error.message, /root:/, 'nothing of the file is echoed');
    }
    writeFileSync(completed, manifest);
    const object = made.objects[0]!;
    renameSync(object.path, `${object.path}.real`);
    symlinkSync('/etc/passwd', object.path);
    const linked = refusal(QldbExportError, () => verifyExport(openExport(dir)));
    assert.match(linked.message, /is a symbolic link/);
    assert.doesNotMatch(linked.message, /root:/);
  });

  it('follows no link to a folder or a manifest, and refuses a manifest that is not one or is too large, naming it (red team)', () => {
    // A symlinked folder inside the export and a symlinked manifest had been followed; a manifest of another Ion type had
    // crashed with "Value#get() is not supported by Ion type symbol"; a 50 MB manifest took 944 MB.
    const dir = fresh();
    const made = writeExport(dir, { count: 10, revisionsPerBlock: 1, blocksPerObject: 10 });
    const completed = join(dir, `${made.exportId}.${made.strandId}.completed.manifest`);
    const started = join(dir, `${made.exportId}.started.manifest`);
    const [manifest, startedText] = [readFileSync(completed, 'utf8'), readFileSync(started, 'utf8')];
    // A folder inside the export that is a link elsewhere (here, to the export's own folder: it reads the same file).
    const object = made.objects[0]!;
    symlinkSync(dir, join(dir, 'elsewhere'));
    const relativeKey = object.path.slice(dir.length + 1);
    writeFileSync(completed, ion.dumpText(ion.load(JSON.stringify({ keys: [`elsewhere/${relativeKey}`] }))));
    assert.match(refusal(QldbExportError, () => verifyExport(openExport(dir))).message, /is reached through a symbolic link/);
    writeFileSync(completed, manifest);
    // A manifest that is a link.
    renameSync(started, `${started}.real`);
    symlinkSync(`${started}.real`, started);
    assert.match(refusal(QldbExportError, () => openExport(dir)).message, /started\.manifest is a symbolic link/);
    rmSync(started);
    // Not a struct; a field of another type; keys not a list.
    writeFileSync(started, 'foo');
    assert.match(refusal(QldbExportError, () => openExport(dir)).message, /started\.manifest is not a manifest \(an Ion struct\), but an Ion symbol/);
    writeFileSync(started, '{exportId: 7}');
    assert.match(refusal(QldbExportError, () => openExport(dir)).message, /its exportId is not a string/);
    writeFileSync(started, startedText);
    writeFileSync(completed, '{keys: "x"}');
    assert.match(refusal(QldbExportError, () => openExport(dir)).message, /its keys are missing or not a list/);
    // Larger than any manifest: refused before it is parsed.
    writeFileSync(completed, `{keys: [${'"k",'.repeat(5_000_000)}]}`);
    assert.match(refusal(QldbExportError, () => openExport(dir)).message, /completed\.manifest is \d+ bytes, larger than any manifest/);
    writeFileSync(completed, manifest);
    assert.doesNotThrow(() => verifyExport(openExport(dir)));
  });

  it('refuses a strand that skips a block, a changed byte in a revision, and a digest of another ledger', () => {
    const dir = fresh();
    const made = writeExport(dir, { count: 20, revisionsPerBlock: 2, blocksPerObject: 20 });
    const object = made.objects[0]!;
    const lines = readFileSync(object.path, 'utf8').trimEnd().split('\n');

    // Block 12 left out, the object's name still true to what it holds.
    writeFileSync(object.path, `${[...lines.slice(0, 12), ...lines.slice(13)].join('\n')}\n`);
    assert.match(
      refusal(QldbVerificationError, () => verifyExport(openExport(dir))).message,
      /^block \S+\/13: it follows block 11: sequence number 12 is missing/,
    );

    const changed = lines.map((l, i) => (i === 7 ? l.replace('person 7-1', 'person 7-2') : l));
    assert.notDeepEqual(changed, lines);
    writeFileSync(object.path, `${changed.join('\n')}\n`);
    assert.match(
      refusal(QldbVerificationError, () => verifyExport(openExport(dir))).message,
      /^block \S+\/7: revision 1's hash \S+ is not the hash of its metadata and data/,
    );

    writeFileSync(object.path, `${lines.join('\n')}\n`);
    const other = writeExport(fresh(), { count: 20, revisionsPerBlock: 2, seed: 'another ledger' });
    assert.match(
      refusal(QldbVerificationError, () => verifyExport(openExport(dir), { digest: parseDigest(digestFile(other.digest, made.strandId, 19)) })).message,
      /^block \S+\/19: the digest \S+ is not the Merkle root of the export's block hashes from block 0 to its tip/,
    );
    assert.match(
      refusal(QldbExportError, () => verifyExport(openExport(dir), { digest: parseDigest(digestFile(made.digest, made.strandId, 25)) })).message,
      /the digest's tip is block 25, the export ends at block 19/,
    );
    assert.match(
      refusal(QldbVerificationError, () => verifyExport(openExport(dir), { digest: parseDigest(digestFile(made.digest, 'AnotherStrand', 19)) })).message,
      /the digest is of strand AnotherStrand, the export of \S+: a digest of another ledger/,
    );
  });

  it('refuses a value nested thousands of levels deep, naming the block or the object, as a fault of the export (it had crashed with a raw stack trace)', () => {
    // At the limit (498 structs in the data's field: 500 levels with the data and the scalar), an export verifies.
    const atLimit = fresh();
    writeExport(atLimit, { count: 2, revisionsPerBlock: 1, extraData: `Deep:${'{a:'.repeat(498)}1${'}'.repeat(498)}` });
    assert.equal(verifyExport(openExport(atLimit)).blocks, 2);
    // One more: past the limit, refused before hashing; 10,000: past what the Ion reader itself can read.
    for (const levels of [499, 10_000]) {
      const dir = fresh();
      const made = writeExport(dir, { count: 6, revisionsPerBlock: 2, blocksPerObject: 6 });
      const object = made.objects[0]!;
      const lines = readFileSync(object.path, 'utf8').trimEnd().split('\n');
      const deep = `Deep:${'{a:'.repeat(levels)}1${'}'.repeat(levels)}`;
      writeFileSync(object.path, `${lines.map((l, i) => (i === 3 ? l.replace('Revision:0}', `Revision:0,${deep}}`) : l)).join('\n')}\n`);
      let error: unknown;
      try {
        verifyExport(openExport(dir));
      } catch (caught) {
        error = caught;
      }
      assert.ok(error instanceof QldbVerificationError || error instanceof QldbExportError, `${levels} levels: ${String(error)}`);
      assert.match(
        error.message,
        new RegExp(
          levels === 499
            ? `^block \\S+/3: in data object ${object.key}, revision 0's data nests deeper than the importer can read \\(500 levels\\)`
            : // Found by the streaming pass before the block is built, with the block the object's name puts there.
              `^data object ${object.key}, value 4 \\(block \\S+/3 by the object's name\\): a value in it nests deeper than the importer can read \\(500 levels\\)`,
        ),
        `${levels} levels`,
      );
    }
  });

  it('accounts for every revision its transactionInfo names: one cut to its hash, revisions removed, no transactionInfo (red team)', () => {
    // Each edit left the block and chain hashes as they were, and the import had reported "verified" with the same tip
    // while a document's revision vanished (taken for QLDB's own hash-only bookkeeping).
    const dir = fresh();
    const made = writeExport(dir, { count: 6, revisionsPerBlock: 2, blocksPerObject: 6, mixed: true });
    const object = made.objects[0]!;
    const lines = readFileSync(object.path, 'utf8').trimEnd().split('\n');
    const edited = (edit: (line: string) => string) => {
      writeFileSync(object.path, `${lines.map((l, i) => (i === 2 ? edit(l) : l)).join('\n')}\n`);
      return refusal(QldbVerificationError, () => verifyExport(openExport(dir))).message;
    };
    const revisionsOf = (line: string) => [...(ion.load(line)!.get('revisions') as unknown as Iterable<ion.dom.Value>)];
    const firstDoc = String(
      revisionsOf(lines[2]!)
        .find((r) => r.get('metadata'))!
        .get('metadata')!
        .get('id')!
        .stringValue(),
    );
    // A document revision reduced to {hash: …}.
    const cut = edited((l) => {
      const start = l.indexOf('{blockAddress:', l.indexOf('revisions:['));
      const hashAt = l.indexOf('hash:', start);
      const hash = l.slice(hashAt, l.indexOf('}}', hashAt) + 2);
      const end = l.indexOf('},{blockAddress:', start);
      return `${l.slice(0, start)}{${hash}}${l.slice(end + 1)}`;
    });
    assert.match(
      cut,
      new RegExp(`^block \\S+/2: its transactionInfo names document ${firstDoc} \\(table \\w+\\), and no revision of it is here with its metadata`),
    );
    // The whole revisions list removed.
    assert.match(
      edited((l) => `${l.slice(0, l.indexOf(',revisions:['))}}`),
      /^block \S+\/2: its transactionInfo names document \S+ \(table \w+\), and no revision of it is here/,
    );
    // No transactionInfo.
    assert.match(
      edited((l) => l.replace(/,transactionInfo:\{statements:.*?\}\}\}(?=,revisions:)/, '')),
      /^block \S+\/2: it holds \d+ revision\(s\) and no transactionInfo: QLDB writes one in every block/,
    );
    writeFileSync(object.path, `${lines.join('\n')}\n`);
    assert.equal(verifyExport(openExport(dir)).blocks, 6, 'the genuine export verifies');
  });

  it('refuses a cut-short object in Ion binary and in JSON Lines too, naming the object (and the line)', () => {
    for (const format of ['ION_BINARY', 'JSON'] as const) {
      const dir = fresh();
      const made = writeExport(dir, { count: 12, revisionsPerBlock: 2, format, blocksPerObject: 6 });
      const object = made.objects[1]!;
      const whole = readFileSync(object.path);
      writeFileSync(object.path, whole.subarray(0, Math.floor(whole.length * 0.7)));
      const refused = refusal(QldbExportError, () => verifyExport(openExport(dir)));
      assert.match(refused.message, new RegExp(`^data object ${object.key}: `), format);
      if (format === 'JSON') assert.match(refused.message, /line \d+ is not JSON .*the object is cut short or damaged/);
    }
  });

  it('asks which export when a folder holds two, and reads the one named', () => {
    const dir = fresh();
    writeExport(dir, { count: 4, exportId: 'FirstExport0000000000A' });
    writeExport(dir, { count: 6, exportId: 'SecondExport000000000B', seed: 'second' });
    assert.match(refusal(QldbExportError, () => openExport(dir)).message, /holds 2 exports .*name one with --export-id/);
    assert.equal(verifyExport(openExport(dir, 'SecondExport000000000B')).blocks, 6);
    assert.match(refusal(QldbExportError, () => openExport(dir, 'NoSuchExport')).message, /no NoSuchExport\.started\.manifest in /);
  });

  it('refuses a digest check of an export that does not begin at block 0', () => {
    const dir = fresh();
    const first = makeStrand({ count: 10 });
    const made = writeExport(dir, { count: 10, from: 10, previous: first.at(-1)!.blockHash });
    assert.equal(verifyExport(openExport(dir)).first.address.sequenceNo, 10);
    assert.match(
      refusal(QldbExportError, () => verifyExport(openExport(dir), { digest: parseDigest(digestFile(made.digest, made.strandId, 15)) })).message,
      /the export begins at block 10: a digest covers the journal from block 0/,
    );
  });
});

describe('QLDB JSON Lines exports, checked as far as JSON allows', () => {
  const plain = () => {
    const dir = fresh();
    return { dir, made: writeExport(dir, { count: 12, revisionsPerBlock: 3, mixed: true, plainData: true, format: 'JSON', blocksPerObject: 4 }) };
  };
  /** Rewrites the first line of the export's first data object that matches, with `edit`. */
  const editLine = (made: WrittenExport, match: RegExp, edit: (line: string) => string) => {
    for (const object of made.objects) {
      const lines = readFileSync(object.path, 'utf8').split('\n');
      const at = lines.findIndex((line) => match.test(line));
      if (at < 0) continue;
      lines[at] = edit(lines[at]!);
      writeFileSync(object.path, lines.join('\n'));
      return;
    }
    assert.fail(`no line matches ${match}`);
  };

  it("binds a document of plain JSON types to its hash: every revision's data checked, as in Ion", () => {
    const { dir } = plain();
    const summary = verifyExport(openExport(dir));
    const deletions = chainEventsOf(dir).filter((e) => e.event_type.endsWith('.delete')).length;
    assert.deepEqual(summary.unchecked, { revisions: deletions, transactions: 0, data: 0 }, 'its transactions bind too, by their known shape');
    assert.doesNotThrow(() => verifyForImport({ exportDir: dir }));
  });

  it('refuses a changed value (which had been imported as verified), and imports it only when told, marked data_verified: false', () => {
    const { dir, made } = plain();
    editLine(made, /"City":"Oslo"/, (line) => line.replace('"City":"Oslo"', '"City":"Bergen"'));
    const summary = verifyExport(openExport(dir));
    assert.equal(summary.unchecked.data, 1, "the block still verifies: only its revision's data is unbound");
    const refused = refusal(QldbExportError, () => verifyForImport({ exportDir: dir }));
    assert.match(refused.message, /1 revisions' data in this JSON Lines export is not bound to their hashes/);
    assert.match(refused.message, /export the journal as ION_TEXT or ION_BINARY, or pass --accept-unverified-data/);
    const lines: string[] = [];
    verifyForImport({ exportDir: dir, acceptUnverifiedData: true, log: (line) => lines.push(line) });
    assert.ok(
      lines.some((line) => /unverified: 1 revisions' data .* each marked data_verified: false/.test(line)),
      lines.join('\n'),
    );
    // The import verifies each block again as it maps it: that is where a revision is found unbound.
    const marked = [...exportBlocks(openExport(dir))]
      .flatMap(({ block }) => {
        verifyBlock(block);
        return eventsOfBlock(block, 'x').map((e) => e.event);
      })
      .filter((e) => (e.details_metadata as { qldb?: { data_verified?: boolean } }).qldb?.data_verified === false);
    assert.equal(marked.length, 1);
    assert.equal((marked[0]!.details as { Address: { City: string } }).Address.City, 'Bergen');
  });

  it("ledger-verify --qldb rehashes a bound JSON import's revisions from the chain's events, and catches a changed detail", () => {
    const { dir, made } = plain();
    const events = chainEventsOf(dir);
    events.push(closingRecord(made, 11));
    const withData = events.filter((e) => /\.(insert|update)$/.test(e.event_type)).length;
    const audit = auditImportedChain(events);
    assert.equal(audit.revisionsRehashed, withData, 'every revision with data rehashed, as from Ion');
    const changed = events.map((e) => JSON.parse(JSON.stringify(e)) as ChainEvent);
    const target = changed.find((e) => e.event_type.endsWith('.insert'))!;
    (target.details as { Address: { City: string } }).Address.City = 'Bergen';
    assert.match(refusal(QldbVerificationError, () => auditImportedChain(changed)).message, /do not hash to the block's revision/);
  });

  it("holds what the hashes cannot say to what the import writes: ledger-verify --qldb refuses each edit the red team's chain passed with", () => {
    // An edit of a revision event's details, with a cover that had let it pass the audit.
    type Q = Record<string, unknown>;
    const forge = (format: 'JSON' | 'ION_TEXT', cover: (e: ChainEvent, q: Q) => void): string => {
      const dir = fresh();
      const made = writeExport(dir, { count: 6, revisionsPerBlock: 3, mixed: true, plainData: true, format, blocksPerObject: 3 });
      const events = [...chainEventsOf(dir), closingRecord(made, 5)].map((e) => JSON.parse(JSON.stringify(e)) as ChainEvent);
      const target = events.find((e) => e.event_type.endsWith('.insert'))!;
      (target.details as { Name: string }).Name = 'forged';
      cover(target, (target.details_metadata as { qldb: Q }).qldb);
      return refusal(QldbVerificationError, () => auditImportedChain(events)).message;
    };
    assert.match(
      forge('JSON', (_, q) => (q.data_verified = false)),
      /1 revision events say their data is unverified; the import's record says 0/,
    );
    assert.match(
      forge('JSON', (e, q) => {
        q.operation = 'delete';
        q.revision_hash_checked = false;
        e.event_type = e.event_type.replace('insert', 'delete');
      }),
      /a deletion with details/,
    );
    // A deletion says its hash rests on its block alone (it cannot be recomputed); nothing else may say so.
    assert.match(
      forge('JSON', (e, q) => {
        q.operation = 'delete';
        e.event_type = e.event_type.replace('insert', 'delete');
      }),
      /a deletion that does not say its hash rests on its block alone \(revision_hash_checked: false\)/,
    );
    assert.match(
      forge('JSON', (_, q) => (q.revision_hash_checked = false)),
      /only a deletion says revision_hash_checked/,
    );
    for (const format of ['JSON', 'ION_TEXT'] as const) {
      assert.match(
        forge(format, (_, q) => (q.data_hash = Buffer.alloc(32).toString('base64'))),
        /a redacted revision with details/,
      );
      assert.match(
        forge(format, (e, q) => {
          q.table_name = 'Payroll';
          e.event_type = 'Payroll.insert';
        }),
        /table Payroll, where the block's transaction says/,
      );
      assert.match(
        forge(format, (e) => (e.event_type = 'Payroll.insert')),
        /its type Payroll.insert is not its table and operation/,
      );
    }
    assert.match(
      forge('ION_TEXT', (_, q) => delete q.data_ion),
      /an insert without its Ion data/,
    );
  });

  it('refuses a revision with both its data and a dataHash, and JSON data nested past the limit, naming the block', () => {
    const withBoth = plain();
    editLine(withBoth.made, /^\{"blockAddress":\{"strandId":"[^"]*","sequenceNo":0\}/, (line) => {
      const block = JSON.parse(line) as { revisions: Record<string, unknown>[] };
      block.revisions[1]!.dataHash = Buffer.alloc(32).toString('base64');
      return JSON.stringify(block);
    });
    assert.match(refusal(QldbVerificationError, () => verifyExport(openExport(withBoth.dir))).message, /revision 1 carries both its data and a dataHash/);
    const deep = plain();
    // Written as text: 20,000 levels are past what JSON.stringify itself can nest.
    editLine(deep.made, /"Tags":\["a","b"\]/, (line) => line.replace('"Tags":["a","b"]', `"Tags":${'['.repeat(20_000)}1${']'.repeat(20_000)}`));
    assert.match(refusal(QldbVerificationError, () => verifyExport(openExport(deep.dir))).message, /revision 1's data nests deeper than/);
  });

  it('refuses an insert or update cut down to its metadata (it had been imported as a delete): only a DELETE statement deletes', () => {
    // Ion text: the first update's data taken out. Its hash is the block's still; its transaction ran no DELETE.
    const dir = fresh();
    const made = writeExport(dir, { count: 12, revisionsPerBlock: 3, mixed: true, blocksPerObject: 12, format: 'ION_TEXT' });
    const object = made.objects[0]!;
    const text = readFileSync(object.path, 'utf8');
    const stripped = text.replace(/,data:\{Name:"person \d+-\d+",[^}]*\{\{[^}]*\}\}[^}]*Revision:[1-9]\d*\}/, '');
    assert.notEqual(stripped, text, 'an update was found and stripped');
    writeFileSync(object.path, stripped);
    assert.match(
      refusal(QldbVerificationError, () => verifyExport(openExport(dir))).message,
      /has no data, and no DELETE statement of its transaction changed it/,
    );
    // The word inside an INSERT (its value says 'do not delete'), and a DELETE statement with a document's first
    // revision (version 0): neither deletes (red team: the insert's data vanished, the block still verifying).
    const strand = 'HbD9IggL584EPHmfwjmVz0';
    const block = (statement: string, version: number) => {
      const time = '2024-01-01T00:00:00.000Z';
      const metadata = `{id:"doc1",version:${version},txTime:${time},txId:"tx1"}`;
      const data = `{name:"Ann",note:"do not delete"}`;
      const revision = revisionHash(metadata, data);
      const transactionInfo = `{statements:[{statement:${JSON.stringify(statement)},startTime:${time},statementDigest:{{${Buffer.alloc(32, 1).toString('base64')}}}}],documents:{doc1:{tableName:"Person",tableId:"t1",statements:[0]}}}`;
      const entries = [merkleRoot([revision]), ionHash(transactionInfo)];
      const entriesHash = merkleRoot(entries);
      const hash = qldbBlockHash(entriesHash, Buffer.alloc(32));
      const b64 = (h: Uint8Array) => `{{${Buffer.from(h).toString('base64')}}}`;
      return blockFromIon(
        ion.load(
          `{blockAddress:{strandId:"${strand}",sequenceNo:0},transactionId:"tx1",blockTimestamp:${time},blockHash:${b64(hash)},entriesHash:${b64(entriesHash)},previousBlockHash:${b64(Buffer.alloc(32))},entriesHashList:[${entries.map(b64).join(',')}],transactionInfo:${transactionInfo},revisions:[{blockAddress:{strandId:"${strand}",sequenceNo:0},hash:${b64(revision)},metadata:${metadata}}]}`,
        )!,
      );
    };
    assert.match(
      refusal(QldbVerificationError, () => verifyBlock(block("INSERT INTO Person VALUE {'name':'Ann','note':'do not delete'}", 0))).message,
      /has no data, and no DELETE statement of its transaction changed it/,
    );
    assert.match(
      refusal(QldbVerificationError, () => verifyBlock(block("DELETE FROM Person AS p WHERE p.name = 'Ann'", 0))).message,
      /has no data and version 0: a deletion is never a document's first revision/,
    );
    assert.doesNotThrow(() => verifyBlock(block("DELETE FROM Person AS p WHERE p.name = 'Ann'", 3)));
    // A real deletion, made by its DELETE statement, verifies.
    const genuine = fresh();
    writeExport(genuine, { count: 30, revisionsPerBlock: 3, mixed: true, blocksPerObject: 10, format: 'ION_TEXT' });
    assert.ok(chainEventsOf(genuine).some((e) => e.event_type.endsWith('.delete')));
    assert.doesNotThrow(() => verifyExport(openExport(genuine)));
  });

  it('refuses the shapes QLDB does not write, which had been read as absent, naming the block', () => {
    type Line = { revisions: unknown; blockTimestamp: unknown };
    const cases: [(block: Line) => void, RegExp][] = [
      // revisions given as an object: they had vanished.
      [(block) => (block.revisions = (block.revisions as unknown[])[1]), /its revisions are not a list/],
      // data given as a string: imported as a delete.
      [(block) => ((block.revisions as { data?: unknown }[])[1]!.data = 'person'), /revision 1's data is not a struct/],
      // a numeric timestamp: it had become 1970.
      [(block) => (block.blockTimestamp = 1704067200), /its blockTimestamp is missing or not a timestamp/],
    ];
    for (const [change, reason] of cases) {
      const { dir, made } = plain();
      editLine(made, /^\{"blockAddress":\{"strandId":"[^"]*","sequenceNo":0\}/, (line) => {
        const block = JSON.parse(line) as Line;
        change(block);
        return JSON.stringify(block);
      });
      const refused = refusal(QldbVerificationError, () => verifyExport(openExport(dir)));
      assert.match(refused.message, /^block \S+\/0: /);
      assert.match(refused.message, reason);
      assert.match(refused.message, /\(data object \S+\.json, line 1\)$/, 'where it was read');
    }
    // An Ion object's block is named by its place in the object: block 5 is the second value of the second object.
    const ionDir = fresh();
    const ionMade = writeExport(ionDir, { count: 9, revisionsPerBlock: 2, blocksPerObject: 4, format: 'ION_TEXT' });
    const object = ionMade.objects[1]!;
    writeFileSync(object.path, readFileSync(object.path, 'utf8').replace('"person 5-1"', '"person 5-X"'));
    const changed = refusal(QldbVerificationError, () => verifyExport(openExport(ionDir))).message;
    assert.match(changed, /^block \S+\/5: revision \d+'s hash .* \(data object \S+\.4-7\.ion, value 2\)$/);
    // A document id given as a number: no revision is then of the document the transactionInfo names.
    const { dir, made } = plain();
    editLine(made, /"metadata":\{"id":"/, (l) => l.replace(/"metadata":\{"id":"[^"]*"/, '"metadata":{"id":12345'));
    assert.match(refusal(QldbVerificationError, () => verifyExport(openExport(dir))).message, /no revision of it is here with its metadata/);
  });
});

describe('QLDB journal as events', () => {
  it('maps each block to its event and each document revision to one, with its table, operation and provenance', () => {
    const dir = fresh();
    writeExport(dir, { count: 30, revisionsPerBlock: 3, mixed: true });
    const events = chainEventsOf(dir);
    assert.equal(events.filter((e) => e.event_type === QLDB_BLOCK_EVENT).length, 30);
    const revisions = events.filter((e) => e.event_type !== QLDB_BLOCK_EVENT);
    assert.equal(revisions.length, 90, 'hash-only system revisions make no event');
    const types = new Set(revisions.map((e) => e.event_type));
    assert.deepEqual(
      [...types].sort(),
      ['Person.delete', 'Person.insert', 'Person.update', 'Vehicle.delete', 'Vehicle.insert', 'Vehicle.update'].filter((t) => types.has(t)),
    );
    for (const op of ['insert', 'update', 'delete'])
      assert.ok(
        [...types].some((t) => t.endsWith(`.${op}`)),
        op,
      );
    const insert = revisions.find((e) => e.event_type === 'Person.insert')!;
    const q = insert.details_metadata!.qldb as Record<string, unknown>;
    assert.equal(insert.entity_id, q.document_id);
    assert.equal(q.version, 0);
    assert.equal(q.table_name, 'Person');
    assert.match(String(q.data_ion), /Balance:\d+\.50/, 'the Ion keeps its decimal');
    assert.equal(typeof insert.details!.Balance, 'number');
    assert.match(String(insert.details!.Joined), /^2020-01-0\dT$/);
    const deleted = revisions.find((e) => e.event_type.endsWith('.delete'))!;
    assert.deepEqual(deleted.details, {});
    assert.equal((deleted.details_metadata!.qldb as Record<string, unknown>).data_ion, undefined);
  });

  it('verifies an import whose values are negative zero, as decimal, float and exponent (JSON stores them as 0)', () => {
    // `ledger-verify --qldb` had called a correct import NOT VERIFIED: the stored JSON 0 against the Ion's -0.
    const dir = fresh();
    const made = writeExport(dir, { count: 6, revisionsPerBlock: 2, extraData: 'NegDecimal:-0.00,NegExp:-0d-3,NegFloat:-0e0,Nested:{z:[-0.0]}' });
    const events = chainEventsOf(dir);
    const revision = events.find((e) => e.event_type === 'Person.insert')!;
    assert.match(String((revision.details_metadata!.qldb as Record<string, unknown>).data_ion), /NegDecimal:-0\.00/, 'the Ion keeps its -0');
    assert.deepEqual([revision.details!.NegDecimal, revision.details!.NegExp, revision.details!.NegFloat, revision.details!.Nested], [0, 0, 0, { z: [0] }]);
    const record = closingRecord(made, 5);
    const audit = auditImportedChain([...events, record]);
    assert.equal(audit.blocks, 6);
    assert.equal(audit.revisions, 12);
  });

  it('rebuilds and verifies the blocks from the events, and finds a changed detail, Ion, order or record', () => {
    const dir = fresh();
    const made = writeExport(dir, { count: 25, revisionsPerBlock: 3, mixed: true });
    const events = chainEventsOf(dir);
    const record = closingRecord(made, 24);
    const audit = auditImportedChain([...events, record]);
    assert.equal(audit.blocks, 25);
    assert.equal(audit.revisions, 75);
    assert.equal(audit.revisionsRehashed, 75 - 3);
    assert.equal(audit.deletions, 3, 'the deletions, whose hashes rest on their blocks alone, are counted');
    assert.equal(audit.tip?.blockHash, made.tipHash.toString('base64'));
    assert.ok(audit.record);

    const at = events.findIndex((e) => e.event_type === 'Person.insert' && e.entity_id);
    const copy = () => events.map((e) => JSON.parse(JSON.stringify(e)) as ChainEvent);
    const detail = copy();
    detail[at]!.details!.Name = 'someone else';
    assert.match(
      refusal(QldbVerificationError, () => auditImportedChain(detail)).message,
      /: revision \d+ \(event c_\d+_0\): its details are not its Ion data/,
    );
    const data = copy();
    const q = data[at]!.details_metadata!.qldb as Record<string, string>;
    q.data_ion = q.data_ion!.replace(/Balance:(\d+)\.50/, 'Balance:$1.51');
    data[at]!.details!.Balance = Number(data[at]!.details!.Balance) + 0.01;
    assert.match(refusal(QldbVerificationError, () => auditImportedChain(data)).message, /revision \d+'s hash \S+ is not the hash of its metadata and data/);
    const swapped = copy();
    const second = swapped.findIndex((e, i) => i > 0 && e.event_type === QLDB_BLOCK_EVENT);
    [swapped[second], swapped[second + 1]] = [swapped[second + 1]!, swapped[second]!]; // a revision before its block
    assert.match(refusal(QldbVerificationError, () => auditImportedChain(swapped)).message, /names revision \d+ of block 1, which is not the block before it/);
    const dropped = copy().filter((_, i) => i !== 5);
    assert.match(refusal(QldbVerificationError, () => auditImportedChain(dropped)).message, /^block \S+\/1: the events of its revisions 0 are missing/);
    const twice = copy();
    twice.splice(6, 0, twice[5]!);
    assert.match(refusal(QldbVerificationError, () => auditImportedChain(twice)).message, /is not one of the block's document revisions, or comes twice/);
    const wrongTip = { ...record, details: { ...record.details, tip: { block_address: { sequence_no: 23 }, block_hash: 'x' } } };
    assert.match(refusal(QldbVerificationError, () => auditImportedChain([...events, wrongTip])).message, /the import's record names tip/);
    assert.match(
      refusal(QldbVerificationError, () => auditImportedChain([...events, record, { ...events[1]! }])).message,
      /follows the import's closing qldb_import event/,
    );
  });

  it('audits a chain of two exports of one journal: the later record names the import it continues, its blocks link on, a digest holds over both', () => {
    const journal = makeStrand({ count: 20, revisionsPerBlock: 2 });
    const earlier = writeExport(fresh(), { count: 10, revisionsPerBlock: 2, exportId: 'EXPORTearlierAAAAAAAAA' });
    const later = writeExport(fresh(), { from: 10, previous: journal[9]!.blockHash, count: 10, revisionsPerBlock: 2, exportId: 'EXPORTlaterBBBBBBBBBBB' });
    const first = closingRecord(earlier, 9);
    const continues = { export_id: earlier.exportId, tip: first.details!.tip };
    const second = closingRecord(later, 19);
    const both = (record: ChainEvent, laterEvents = chainEventsOf(later.dir)) => [...chainEventsOf(earlier.dir), first, ...laterEvents, record];
    const withContinues = { ...second, details: { ...second.details, continues } };
    const digest = { digest: merkleRoot(journal.map((b) => b.blockHash)), tip: { strandId: later.strandId, sequenceNo: 19 } };
    const audit = auditImportedChain(both(withContinues), { digest });
    assert.deepEqual(audit.exports, [earlier.exportId, later.exportId]);
    assert.equal(audit.records.length, 2);
    assert.equal(audit.blocks, 20);
    assert.deepEqual(audit.digestMatched, { strandId: later.strandId, sequenceNo: 19 });
    // The later record must name the import before it; the first must name none.
    assert.match(
      refusal(QldbVerificationError, () => auditImportedChain(both(second))).message,
      /says it continues null; the import before it on the chain is export EXPORTearlier/,
    );
    assert.match(
      refusal(QldbVerificationError, () => auditImportedChain([...chainEventsOf(earlier.dir), { ...first, details: { ...first.details, continues } }])).message,
      /says it continues .*; the chain holds no import before it/,
    );
    // Another journal's export after the record does not link on.
    const foreign = writeExport(fresh(), { from: 10, count: 10, revisionsPerBlock: 2, seed: 'another', exportId: 'EXPORTforeignCCCCCCCCC' });
    const foreignRecord = { ...closingRecord(foreign, 19), details: { ...closingRecord(foreign, 19).details, continues } };
    assert.match(
      refusal(QldbVerificationError, () => auditImportedChain([...chainEventsOf(earlier.dir), first, ...chainEventsOf(foreign.dir), foreignRecord])).message,
      /^block \S+\/10: its previousBlockHash \S+ is not the hash of block 9/,
    );
    // A digest that is not the journal's, and one past the chain's imports, are refused.
    assert.match(
      refusal(QldbVerificationError, () => auditImportedChain(both(withContinues), { digest: { ...digest, digest: Buffer.alloc(32) } })).message,
      /is not the Merkle root of the imported block hashes from block 0 to its tip/,
    );
    assert.match(
      refusal(QldbVerificationError, () => auditImportedChain(both(withContinues), { digest: { ...digest, tip: { ...digest.tip, sequenceNo: 25 } } })).message,
      /the digest's tip is block 25 of strand \S+; the chain's imports end at block 19/,
    );
  });

  it('reads the real QLDB block into its events: the revision is a Person insert whose Ion hashes to its published hash', async () => {
    const { BLOCK_ION } = await import('../support/qldb-real-block.ts');
    const block = ion.load(BLOCK_ION)!;
    const [, revision] = eventsOfBlock((await import('#shared/qldb/journal')).blockFromIon(block), 'real');
    assert.equal(revision!.event.event_type, 'Person.insert');
    assert.equal(revision!.event.entity_id, 'D35qd3e2prnJYmtKW6kok1');
    assert.equal(revision!.event.details.FirstName, 'Testing new 600');
    assert.equal(revision!.event.details_metadata.qldb.revision_hash, 'vJFOcsNRM14gsIBSEnwPhMVgRAWf/4EUW5gPYbtmDv0=');
    const audit = auditImportedChain(
      eventsOfBlock((await import('#shared/qldb/journal')).blockFromIon(block), 'real').map((e) => JSON.parse(JSON.stringify(e.event))),
    );
    assert.equal(audit.revisionsRehashed, 1);
    assert.ok(encodeBlocks([BLOCK_ION], 'JSON'));
  });
});
