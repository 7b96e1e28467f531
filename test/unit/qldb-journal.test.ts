/**
 * QLDB journal blocks read from an export's data objects and verified by QLDB's rules (shared/qldb/journal.ts):
 * the real block (test/support/qldb-real-block.ts) read as Ion, generated strands in Ion text and binary, and
 * each way a block can be wrong, named by its address.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as ion from 'ion-js';
import { QldbVerificationError, readBlocks, verifyBlock, verifyStrand } from '#shared/qldb/journal';
import { makeStrand } from '../support/qldb-journal.ts';
import { BLOCK_ION } from '../support/qldb-real-block.ts';

/** The error a check throws, asserted to be a QldbVerificationError. */
function refusal(check: () => unknown): QldbVerificationError {
  try {
    check();
  } catch (error) {
    assert.ok(error instanceof QldbVerificationError, String(error));
    return error;
  }
  assert.fail('verified, and should not have');
}

describe('QLDB journal blocks', () => {
  it("reads the real block from Ion and verifies it; its revision with the fixture's edited data is refused, naming the block", () => {
    const [block] = [...readBlocks(BLOCK_ION)];
    assert.deepEqual(block!.blockAddress, { strandId: 'HbD9IggL584EPHmfwjmVz0', sequenceNo: 3 });
    verifyBlock(block!);
    const edited = refusal(() => verifyBlock([...readBlocks(BLOCK_ION.replace('FirstName: "Testing new 600"', 'FirstName: "Nova"'))][0]!));
    assert.match(edited.message, /^block HbD9IggL584EPHmfwjmVz0\/3: revision 0's hash vJFOcsNRM14gsIBSEnwPhMVgRAWf\/4EUW5gPYbtmDv0= is not the hash/);
  });

  it('verifies a generated strand in Ion text and in Ion binary, and answers its tip', () => {
    const made = makeStrand({ count: 20, revisionsPerBlock: 3 });
    const text = made.map((b) => b.ion).join('\n');
    const tip = verifyStrand(readBlocks(text));
    assert.equal(tip?.blockAddress.sequenceNo, 19);
    assert.deepEqual(tip?.blockHash, made.at(-1)!.blockHash);
    const binary = ion.dumpBinary(...ion.loadAll(text));
    assert.equal(verifyStrand(readBlocks(binary))?.blockAddress.sequenceNo, 19);
    // A strand read in two parts (two data objects): the second checked against the first's tip.
    const first = verifyStrand(
      readBlocks(
        made
          .slice(0, 8)
          .map((b) => b.ion)
          .join('\n'),
      ),
    );
    assert.equal(
      verifyStrand(
        readBlocks(
          made
            .slice(8)
            .map((b) => b.ion)
            .join('\n'),
        ),
        first,
      )?.blockAddress.sequenceNo,
      19,
    );
  });

  it('refuses each way a block can be wrong, naming the block and the hash', () => {
    const made = makeStrand({ count: 6 });
    const strand = (blocks: string[]) => () => verifyStrand(readBlocks(blocks.join('\n')));
    const ions = made.map((b) => b.ion);
    // A changed byte in a revision's data.
    const changed = ions.map((b, i) => (i === 3 ? b.replace('person 3-1', 'person 3-2') : b));
    assert.match(refusal(strand(changed)).message, /^block HbD9IggL584EPHmfwjmVz0\/3: revision 1's hash .* is not the hash of its metadata and data/);
    // A block left out: sequence 2 missing.
    assert.match(refusal(strand([ions[0]!, ions[1]!, ions[3]!])).message, /^block .*\/3: it follows block 1: sequence number 2 is missing or out of order/);
    // Two blocks swapped.
    assert.match(refusal(strand([ions[0]!, ions[2]!, ions[1]!])).message, /^block .*\/2: it follows block 0/);
    // A block of another export of the same strand (other hashes) in its place.
    const other = makeStrand({ count: 6, seed: 'another ledger' }).map((b) => b.ion);
    assert.match(refusal(strand([ions[0]!, ions[1]!, other[2]!])).message, /^block .*\/2: its previousBlockHash .* is not the hash of block 1/);
    // An entries hash, a block hash, a transaction changed.
    const entries = ions[4]!.match(/entriesHash:\{\{([^}]+)\}\}/)![1]!;
    const flipped = Buffer.from(entries, 'base64');
    flipped[0]! ^= 1;
    assert.match(
      refusal(strand([ions[4]!.replace(`entriesHash:{{${entries}}}`, `entriesHash:{{${flipped.toString('base64')}}}`)])).message,
      /^block .*\/4: its entriesHash .* is not the Merkle root of its entriesHashList/,
    );
    assert.match(
      refusal(strand([ions[5]!.replace('INSERT INTO Person 5', 'INSERT INTO Person 6')])).message,
      /^block .*\/5: the hash of its transactionInfo .* is not in its entriesHashList/,
    );
    const block = ions[2]!.match(/blockHash:\{\{([^}]+)\}\}/)![1]!;
    assert.match(
      refusal(strand([ions[2]!.replace(`blockHash:{{${block}}}`, `blockHash:{{${Buffer.alloc(32).toString('base64')}}}`)])).message,
      /^block .*\/2: its blockHash .* is not its entries hash joined with its previousBlockHash/,
    );
  });
});
