/**
 * QLDB journal blocks, as a journal export's data objects hold them (Ion text or binary; one block per top-level
 * value), and their verification by QLDB's own hashing (./hashing.ts): each block's revisions, transaction,
 * entries and block hash, then the links between consecutive blocks of a strand. A failure names the block's
 * address and the hash that failed (QldbVerificationError).
 *
 * Values that feed a hash (a revision's metadata and data, a block's transactionInfo) are kept as the Ion
 * values they were read as, so that hashing them is hashing what QLDB exported.
 */
import * as ion from 'ion-js';
import { blockHash, dot, type Hash, ionHash, merkleRoot, revisionHash } from './hashing.ts';

export interface BlockAddress {
  strandId: string;
  sequenceNo: number;
}

export interface JournalRevision {
  hash: Hash;
  /** The revision's metadata and data, as read (absent for a revision QLDB exported as a hash only). */
  metadata?: ion.dom.Value;
  data?: ion.dom.Value;
  /** A redacted revision's data hash, which stands for its data. */
  dataHash?: Hash;
  /** The revision's metadata and data as JSON, when the export is JSON Lines (no Ion: the hash cannot be rebuilt). */
  json?: { metadata: Record<string, unknown>; data?: Record<string, unknown> };
}

/** Which table each document of a block belongs to (its transactionInfo's `documents`). */
export type BlockDocuments = Record<string, { tableName: string; tableId?: string }>;

export interface JournalBlock {
  blockAddress: BlockAddress;
  transactionId: string;
  blockTimestamp: Date;
  blockHash: Hash;
  entriesHash: Hash;
  previousBlockHash: Hash;
  entriesHashList: Hash[];
  /** The block's transactionInfo, as read (absent from a JSON Lines export, which keeps no Ion types). */
  transactionInfo?: ion.dom.Value;
  /** The PartiQL statements of the transaction, as QLDB recorded them. */
  statements: string[];
  documents: BlockDocuments;
  revisions: JournalRevision[];
  /** Set for a block read from a JSON Lines export: whether it had a transactionInfo (which JSON keeps as an object). */
  json?: { transactionInfo: boolean };
}

/** What verifyBlock could not recompute (a JSON Lines export keeps no Ion types; a deleted revision has no data). */
export interface BlockCheck {
  revisionsUnchecked: number;
  transactionUnchecked: boolean;
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

export const b64 = (h: Uint8Array) => Buffer.from(h).toString('base64');
/** The values of an Ion list (none for a missing one): ion-js's DOM lists iterate, its types do not say so. */
const items = (list: ion.dom.Value | null): ion.dom.Value[] => [...((list as unknown as Iterable<ion.dom.Value> | null) ?? [])];

function hashField(value: ion.dom.Value, name: string, address?: BlockAddress): Hash {
  const v = value.get(name);
  const bytes = v?.uInt8ArrayValue();
  if (!bytes) throw new QldbVerificationError(address, `its ${name} is missing or not a blob`);
  return Buffer.from(bytes);
}

function documentsOf(entries: Iterable<[string, { tableName?: unknown; tableId?: unknown }]>): BlockDocuments {
  const documents: BlockDocuments = {};
  for (const [id, d] of entries) {
    if (typeof d?.tableName === 'string') documents[id] = { tableName: d.tableName, ...(typeof d.tableId === 'string' ? { tableId: d.tableId } : {}) };
  }
  return documents;
}

/** The documents a transactionInfo names, with their tables. */
export function transactionDocuments(transactionInfo: ion.dom.Value | null | undefined): BlockDocuments {
  const documents = transactionInfo?.get('documents');
  return documentsOf(
    documents ? documents.fields().map(([id, d]) => [id, { tableName: d.get('tableName')?.stringValue(), tableId: d.get('tableId')?.stringValue() }]) : [],
  );
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
    const dataHash = r.get('dataHash')?.uInt8ArrayValue();
    return {
      hash: hashField(r, 'hash', address),
      ...(metadata ? { metadata } : {}),
      ...(data ? { data } : {}),
      ...(dataHash ? { dataHash: Buffer.from(dataHash) } : {}),
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
    ...(transactionInfo ? { transactionInfo } : {}),
    statements: items(transactionInfo?.get('statements') ?? null).map((s) => s.get('statement')?.stringValue() ?? ''),
    documents: transactionDocuments(transactionInfo),
    revisions,
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * One block from a line of a JSON Lines export. QLDB down-converts Ion to JSON there: blobs become base64
 * strings, timestamps strings, decimals numbers. Hashes and the block chain survive; the Ion types of a
 * revision's data and of the transaction do not, so their hashes cannot be recomputed (verifyBlock counts them).
 */
export function blockFromJson(line: unknown): JournalBlock {
  const value = isObject(line) ? line : {};
  const addressValue = isObject(value.blockAddress) ? value.blockAddress : {};
  const { strandId, sequenceNo } = addressValue;
  if (typeof strandId !== 'string' || typeof sequenceNo !== 'number') throw new QldbVerificationError(undefined, 'a block without a blockAddress');
  const address = { strandId, sequenceNo };
  const hash = (v: unknown, name: string): Hash => {
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v)) throw new QldbVerificationError(address, `its ${name} is missing or not base64`);
    return Buffer.from(v, 'base64');
  };
  const tx = isObject(value.transactionInfo) ? value.transactionInfo : {};
  const revisions = (Array.isArray(value.revisions) ? value.revisions : []).map((r: unknown, i) => {
    const rev = isObject(r) ? r : {};
    return {
      hash: hash(rev.hash, `revision ${i}'s hash`),
      ...(typeof rev.dataHash === 'string' ? { dataHash: hash(rev.dataHash, `revision ${i}'s dataHash`) } : {}),
      ...(isObject(rev.metadata) ? { json: { metadata: rev.metadata, ...(isObject(rev.data) ? { data: rev.data } : {}) } } : {}),
    };
  });
  return {
    blockAddress: address,
    transactionId: typeof value.transactionId === 'string' ? value.transactionId : '',
    blockTimestamp: new Date(typeof value.blockTimestamp === 'string' ? value.blockTimestamp : 0),
    blockHash: hash(value.blockHash, 'blockHash'),
    entriesHash: hash(value.entriesHash, 'entriesHash'),
    previousBlockHash: hash(value.previousBlockHash, 'previousBlockHash'),
    entriesHashList: (Array.isArray(value.entriesHashList) ? value.entriesHashList : []).map((h, i) => hash(h, `entriesHashList[${i}]`)),
    statements: (Array.isArray(tx.statements) ? tx.statements : []).map((s) => (isObject(s) && typeof s.statement === 'string' ? s.statement : '')),
    documents: documentsOf(Object.entries(isObject(tx.documents) ? tx.documents : {}) as [string, { tableName?: unknown }][]),
    revisions,
    json: { transactionInfo: isObject(value.transactionInfo) },
  };
}

/** The blocks of one data object (Ion text or binary), in order. */
export function* readBlocks(source: string | Uint8Array): Generator<JournalBlock> {
  for (const value of ion.loadAll(source)) yield blockFromIon(value);
}

/**
 * Checks one block by QLDB's rules: each revision that carries its metadata and data (or, redacted, its data's
 * hash) hashes to its hash; the transaction's hash and the revisions' Merkle root are among the entries; the
 * entries' root is the entries hash; the entries hash joined with the previous block's is the block hash.
 * Throws QldbVerificationError; answers what could not be recomputed.
 */
export function verifyBlock(block: JournalBlock): BlockCheck {
  const at = block.blockAddress;
  accountForRevisions(block);
  let revisionsUnchecked = 0;
  block.revisions.forEach((revision, i) => {
    if (!revision.metadata || !(revision.data || revision.dataHash)) {
      // Hash-only (system) revisions have nothing else to check; a deleted one or a JSON one cannot be rebuilt.
      if (revision.metadata || revision.json) revisionsUnchecked += 1;
      return;
    }
    const computed = revision.data ? revisionHash(revision.metadata, revision.data) : dot(ionHash(revision.metadata), revision.dataHash!);
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
  return { revisionsUnchecked, transactionUnchecked: !block.transactionInfo };
}

/** A revision's document id, from its metadata (Ion or JSON); undefined for a revision exported as its hash only. */
function documentIdOf(revision: JournalRevision): string | undefined {
  const id = revision.metadata ? revision.metadata.get('id')?.stringValue() : revision.json?.metadata.id;
  return typeof id === 'string' ? id : undefined;
}

/**
 * Every revision accounted for: the block's transactionInfo (whose hash its entries hold) names each document the
 * transaction changed, and each must be here with its metadata. A revision exported as its hash only is QLDB's own
 * bookkeeping, and is left out of the import: a document revision cut down to its hash, or a block's revisions
 * removed, had passed as that and vanished, the block and the chain still verifying (their hashes are the same). A
 * block that holds revisions without a transactionInfo cannot say which documents it changed, and is refused.
 */
function accountForRevisions(block: JournalBlock): void {
  const at = block.blockAddress;
  const hasTransactionInfo = block.json ? block.json.transactionInfo : block.transactionInfo !== undefined;
  if (!hasTransactionInfo && block.revisions.length > 0)
    throw new QldbVerificationError(
      at,
      `it holds ${block.revisions.length} revision(s) and no transactionInfo: QLDB writes one in every block, and without it nothing says which documents the block changed`,
    );
  const present = new Set(block.revisions.map(documentIdOf).filter((id) => id !== undefined));
  for (const [id, { tableName }] of Object.entries(block.documents)) {
    if (!present.has(id))
      throw new QldbVerificationError(
        at,
        `its transactionInfo names document ${id} (table ${tableName}), and no revision of it is here with its metadata: a revision left out, or cut down to its hash`,
      );
  }
}

/** Checks `block` against the block before it: the same strand, the next sequence number, the previous hash. */
export function verifyLink(block: JournalBlock, previous: JournalBlock | { blockAddress: BlockAddress; blockHash: Hash }): void {
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

/**
 * Checks a strand's blocks in order, each by verifyBlock and each against the one before (verifyLink).
 * Answers the last block (the tip).
 */
export function verifyStrand(blocks: Iterable<JournalBlock>, after?: JournalBlock): JournalBlock | undefined {
  let previous = after;
  for (const block of blocks) {
    verifyBlock(block);
    if (previous) verifyLink(block, previous);
    previous = block;
  }
  return previous;
}
