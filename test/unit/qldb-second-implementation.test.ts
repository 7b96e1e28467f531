/**
 * The importer against an export it did not make (issue 68): test/support/qldb-independent.ts writes a QLDB journal
 * export with the Ion project's ion-hash-js and its own join and Merkle tree, sharing none of the importer's code.
 * The importer verifies it byte for byte (every block hash, the tip, QLDB's digest), its events rebuild it, and a
 * changed value is refused.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { auditImportedChain, type ChainEvent } from '#shared/qldb/audit';
import { exportBlocks, openExport, verifyExport } from '#shared/qldb/export';
import { QldbVerificationError } from '#shared/qldb/journal';
import { eventsOfBlock } from '#shared/qldb/mapping';
import { writeIndependentExport } from '../support/qldb-independent.ts';

const root = mkdtempSync(join(tmpdir(), 'qldb-independent-'));
after(() => rmSync(root, { recursive: true, force: true }));

describe('The QLDB importer, on an export made by a second implementation', () => {
  for (const format of ['ION_TEXT', 'ION_BINARY'] as const) {
    it(`verifies a ${format} export block for block, with its digest, and its events rebuild it`, () => {
      const made = writeIndependentExport(join(root, format), 30, format);
      const exp = openExport(made.dir);
      const summary = verifyExport(exp, { digest: { digest: made.digest, tip: { strandId: made.strandId, sequenceNo: 29 } } });
      assert.equal(summary.blocks, 30);
      assert.equal(summary.revisions, made.revisions);
      assert.equal(summary.tip.blockHash, made.blockHashes[29]!.toString('base64'));
      assert.ok(summary.digest, 'the digest was checked');
      assert.ok(summary.unchecked.revisions > 0, 'it holds deletions');
      const read = [...exportBlocks(exp)].map(({ block }) => block.blockHash.toString('base64'));
      assert.deepEqual(
        read,
        made.blockHashes.map((h) => h.toString('base64')),
        'every block hash, as the other implementation made it',
      );

      const events: ChainEvent[] = [];
      for (const { block } of exportBlocks(exp))
        for (const { event } of eventsOfBlock(block, exp.exportId)) events.push({ ...JSON.parse(JSON.stringify(event)), event_id: `e${events.length}` });
      const record: ChainEvent = {
        entity_id: `qldb-export:${made.exportId}`,
        event_type: 'qldb_import',
        details: { export_id: made.exportId, tip: { block_address: { strand_id: made.strandId, sequence_no: 29 }, block_hash: summary.tip.blockHash } },
        details_metadata: null,
      };
      const audit = auditImportedChain([...events, record], { digest: { digest: made.digest, tip: { strandId: made.strandId, sequenceNo: 29 } } });
      assert.equal(audit.blocks, 30);
      assert.equal(audit.revisions, made.revisions);
      assert.ok(audit.deletions > 0 && audit.digestMatched);
    });
  }

  it('refuses it with one value changed, naming the block', () => {
    const made = writeIndependentExport(join(root, 'changed'), 12, 'ION_TEXT');
    const object = join(made.dir, '2022/05/01/00', `${made.strandId}.10-11.ion`);
    writeFileSync(object, readFileSync(object, 'utf8').replace('Owner 31 é😀', 'Owner 31 e😀'));
    assert.throws(
      () => verifyExport(openExport(made.dir)),
      (error: Error) => error instanceof QldbVerificationError && /^block IndependentStrand00001\/10: revision \d+'s hash/.test(error.message),
    );
  });
});
