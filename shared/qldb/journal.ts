/**
 * QLDB journal blocks, as a journal export's data objects hold them (Ion text or binary; one block per top-level
 * value), and their verification by QLDB's own hashing (./hashing.ts): each block's revisions, transaction,
 * entries and block hash, then the links between consecutive blocks of a strand. A failure names the block's
 * address and the hash that failed (QldbVerificationError).
 *
 * Values that feed a hash (a revision's metadata and data, a block's transactionInfo) are kept as the Ion
 * they were read as (binary), so that hashing them is hashing what QLDB exported.
 */
import * as ion from 'ion-js';
import { blockHash, type Hash, ionHash, merkleRoot, revisionHash } from './hashing.ts';

export interface BlockAddress {
  strandId: string;
  sequenceNo: number;
}

export interface JournalRevision {
  hash: Hash;
  /** The revision's metadata and data, as Ion binary (absent for a revision QLDB exported as a hash only). */
  metadata?: Uint8Array;
  data?: Uint8Array;
}

export interface JournalBlock {
  blockAddress: BlockAddress;
  transactionId: string;
  blockTimestamp: Date;
  blockHash: Hash;
  entriesHash: Hash;
  previousBlockHash: Hash;
  entriesHashList: Hash[];
  /** The block's transactionInfo, as Ion binary. */
  transactionInfo?: Uint8Array;
  revisions: JournalRevision[];
}

/** A block that does not hash as QLDB hashed it, or does not follow the block before it. */
export class QldbVerificationError extends Error {
  override name = 'QldbVerificationError';
  constructor(
    readonly address: BlockAddress | undefined,
    readonly what: string,
  ) {
    super(`${address ? `block ${address.strandId}/${address.sequenceNo}` : 'the export'}: ${what}`);
  }
}

const b64 = (h: Uint8Array) => Buffer.from(h).toString('base64');
const binary = (value: ion.dom.Value) => ion.dumpBinary(value);
/** The values of an Ion list (none for a missing one): ion-js's DOM lists iterate, its types do not say so. */
const items = (list: ion.dom.Value | null): ion.dom.Value[] => [...((list as unknown as Iterable<ion.dom.Value> | null) ?? [])];

function hashField(value: ion.dom.Value, name: string, address?: BlockAddress): Hash {
  const v = value.get(name);
  const bytes = v?.uInt8ArrayValue();
  if (!bytes) throw new QldbVerificationError(address, `its ${name} is missing or not a blob`);
  return Buffer.from(bytes);
}

/** One block from its Ion value. */
export function blockFromIon(value: ion.dom.Value): JournalBlock {
  const addressValue = value.get('blockAddress');
  const strandId = addressValue ? addressValue.get('strandId')?.stringValue() : undefined;
  const sequenceNo = addressValue ? addressValue.get('sequenceNo')?.numberValue() : undefined;
  if (typeof strandId !== 'string' || typeof sequenceNo !== 'number') throw new QldbVerificationError(undefined, 'a block without a blockAddress');
  const address = { strandId, sequenceNo };
  const revisions = items(value.get('revisions')).map((r) => {
    const metadata = r.get('metadata');
    const data = r.get('data');
    return {
      hash: hashField(r, 'hash', address),
      ...(metadata ? { metadata: binary(metadata) } : {}),
      ...(data ? { data: binary(data) } : {}),
    };
  });
  const transactionInfo = value.get('transactionInfo');
  const timestamp = value.get('blockTimestamp')?.timestampValue();
  return {
    blockAddress: address,
    transactionId: value.get('transactionId')?.stringValue() ?? '',
    blockTimestamp: timestamp ? timestamp.getDate() : new Date(0),
    blockHash: hashField(value, 'blockHash', address),
    entriesHash: hashField(value, 'entriesHash', address),
    previousBlockHash: hashField(value, 'previousBlockHash', address),
    entriesHashList: items(value.get('entriesHashList')).map((h) => Buffer.from(h.uInt8ArrayValue() ?? new Uint8Array())),
    ...(transactionInfo ? { transactionInfo: binary(transactionInfo) } : {}),
    revisions,
  };
}

/** The blocks of one data object (Ion text or binary), in order. */
export function* readBlocks(source: string | Uint8Array): Generator<JournalBlock> {
  for (const value of ion.loadAll(source)) yield blockFromIon(value);
}

/**
 * Checks one block by QLDB's rules: each revision that carries its metadata and data hashes to its hash; the
 * transaction's hash and the revisions' Merkle root are among the entries; the entries' root is the entries
 * hash; the entries hash joined with the previous block's is the block hash. Throws QldbVerificationError.
 */
export function verifyBlock(block: JournalBlock): void {
  const at = block.blockAddress;
  block.revisions.forEach((revision, i) => {
    if (!revision.metadata || !revision.data) return;
    const computed = revisionHash(revision.metadata, revision.data);
    if (!computed.equals(revision.hash))
      throw new QldbVerificationError(at, `revision ${i}'s hash ${b64(revision.hash)} is not the hash of its metadata and data (${b64(computed)})`);
  });
  const entries = new Set(block.entriesHashList.map(b64));
  if (block.transactionInfo) {
    const tx = ionHash(block.transactionInfo);
    if (!entries.has(b64(tx))) throw new QldbVerificationError(at, `the hash of its transactionInfo (${b64(tx)}) is not in its entriesHashList`);
  }
  if (block.revisions.length > 0) {
    const root = merkleRoot(block.revisions.map((r) => r.hash));
    if (!entries.has(b64(root))) throw new QldbVerificationError(at, `the Merkle root of its revisions' hashes (${b64(root)}) is not in its entriesHashList`);
  }
  const entriesHash = merkleRoot(block.entriesHashList);
  if (!entriesHash.equals(block.entriesHash))
    throw new QldbVerificationError(at, `its entriesHash ${b64(block.entriesHash)} is not the Merkle root of its entriesHashList (${b64(entriesHash)})`);
  const computed = blockHash(block.entriesHash, block.previousBlockHash);
  if (!computed.equals(block.blockHash))
    throw new QldbVerificationError(at, `its blockHash ${b64(block.blockHash)} is not its entries hash joined with its previousBlockHash (${b64(computed)})`);
}

/**
 * Checks a strand's blocks in order, each by verifyBlock and each against the one before: the same strand,
 * the next sequence number, its previousBlockHash the block hash before. Answers the last block (the tip).
 */
export function verifyStrand(blocks: Iterable<JournalBlock>, after?: JournalBlock): JournalBlock | undefined {
  let previous = after;
  for (const block of blocks) {
    verifyBlock(block);
    if (previous) {
      const at = block.blockAddress;
      if (at.strandId !== previous.blockAddress.strandId)
        throw new QldbVerificationError(at, `it follows block ${previous.blockAddress.strandId}/${previous.blockAddress.sequenceNo} of another strand`);
      if (at.sequenceNo !== previous.blockAddress.sequenceNo + 1)
        throw new QldbVerificationError(
          at,
          `it follows block ${previous.blockAddress.sequenceNo}: sequence number ${previous.blockAddress.sequenceNo + 1} is missing or out of order`,
        );
      if (!block.previousBlockHash.equals(previous.blockHash))
        throw new QldbVerificationError(
          at,
          `its previousBlockHash ${b64(block.previousBlockHash)} is not the hash of block ${previous.blockAddress.sequenceNo} (${b64(previous.blockHash)})`,
        );
    }
    previous = block;
  }
  return previous;
}
