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
  /** The revision's metadata and data as JSON, when the export is JSON Lines (no Ion types: see jsonRevisionHash). */
  json?: { metadata: Record<string, unknown>; data?: Record<string, unknown> };
  /**
   * Set by verifyBlock on a JSON Lines revision whose data it could not bind to its hash: read back as Ion the natural
   * way, metadata and data do not hash to it (a timestamp, a blob, a symbol or a decimal's precision in the document,
   * which JSON does not keep; or a changed value). Its data is unverified.
   */
  unbound?: boolean;
}

/** Whether a revision is a document's (its metadata exported), not one of QLDB's own exported as its hash only. */
export const isDocumentRevision = (revision: JournalRevision): boolean => Boolean(revision.metadata || revision.json);

/** Which table each document of a block belongs to (its transactionInfo's `documents`). */
export type BlockDocuments = Record<string, { tableName: string; tableId?: string; statements?: number[] }>;

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
  /** Where it was read: `data object <key>, line N` (JSON Lines) or `, value N` (Ion), for what is said of it. */
  source?: string;
}

/** What verifyBlock could not recompute (a JSON Lines export keeps no Ion types; a deleted revision has no data). */
export interface BlockCheck {
  revisionsUnchecked: number;
  /** JSON Lines revisions with data whose data could not be bound to their hash (JournalRevision.unbound). */
  revisionsUnbound: number;
  transactionUnchecked: boolean;
}

/** A block that does not hash as QLDB hashed it, or does not follow the block before it. */
export class QldbVerificationError extends Error {
  override name = 'QldbVerificationError';
  readonly address: BlockAddress | undefined;
  readonly what: string;
  constructor(address: BlockAddress | undefined, what: string) {
    super(`${address ? `block ${address.strandId}/${address.sequenceNo}` : 'the export'}: ${what}`);
    this.address = address;
    this.what = what;
  }
}

export const b64 = (h: Uint8Array) => Buffer.from(h).toString('base64');
/** Base64 as QLDB's JSON writes hashes and blobs. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An Ion timestamp as QLDB's JSON writes one (its Ion text): `2019-06-05T20:53:21.530Z`, `2020-01-01T`, … */
const ION_TIMESTAMP = /^\d{4}(-\d{2}(-\d{2}(T(\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?)?)?)?T?$/;
/** The values of an Ion list (none for a missing one): ion-js's DOM lists iterate, its types do not say so. */
const items = (list: ion.dom.Value | null): ion.dom.Value[] => [...((list as unknown as Iterable<ion.dom.Value> | null) ?? [])];

function hashField(value: ion.dom.Value, name: string, address?: BlockAddress): Hash {
  const v = value.get(name);
  const bytes = v?.uInt8ArrayValue();
  if (!bytes) throw new QldbVerificationError(address, `its ${name} is missing or not a blob`);
  return Buffer.from(bytes);
}

function documentsOf(entries: Iterable<[string, { tableName?: unknown; tableId?: unknown; statements?: unknown }]>): BlockDocuments {
  const documents: BlockDocuments = {};
  for (const [id, d] of entries) {
    if (typeof d?.tableName !== 'string') continue;
    const statements = Array.isArray(d.statements) ? d.statements.filter((n): n is number => typeof n === 'number') : undefined;
    documents[id] = { tableName: d.tableName, ...(typeof d.tableId === 'string' ? { tableId: d.tableId } : {}), ...(statements ? { statements } : {}) };
  }
  return documents;
}

/** The statements' texts a block's transaction ran: from its transactionInfo when there is one (hashed), else as read. */
function statementTexts(block: JournalBlock): string[] {
  if (!block.transactionInfo) return block.statements;
  return items(block.transactionInfo.get('statements')).map((s) => s.get('statement')?.stringValue() ?? '');
}

/** The documents a transactionInfo names, with their tables and the statements that changed them. */
export function transactionDocuments(transactionInfo: ion.dom.Value | null | undefined): BlockDocuments {
  const fields = transactionInfo?.get('documents')?.fields() ?? [];
  const entry = (d: ion.dom.Value) => ({
    tableName: d.get('tableName')?.stringValue(),
    tableId: d.get('tableId')?.stringValue(),
    statements: items(d.get('statements')).map((n) => n.numberValue()),
  });
  return documentsOf(fields.map(([id, d]) => [id, entry(d)] as const));
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
    if (typeof v !== 'string' || !BASE64.test(v)) throw new QldbVerificationError(address, `its ${name} is missing or not base64`);
    return Buffer.from(v, 'base64');
  };
  const tx = isObject(value.transactionInfo) ? value.transactionInfo : {};
  // The shapes QLDB writes, or a refusal: a value of another shape had been read as absent (revisions given as an
  // object vanished, data given as a string was imported as a delete, a numeric timestamp became 1970).
  if (value.revisions !== undefined && !Array.isArray(value.revisions)) throw new QldbVerificationError(address, 'its revisions are not a list');
  if (typeof value.blockTimestamp !== 'string' || Number.isNaN(Date.parse(value.blockTimestamp)))
    throw new QldbVerificationError(address, 'its blockTimestamp is missing or not a timestamp');
  const revisions = ((value.revisions as unknown[] | undefined) ?? []).map((r: unknown, i) => {
    if (!isObject(r)) throw new QldbVerificationError(address, `revision ${i} is not a struct`);
    const rev = r;
    for (const field of ['metadata', 'data'] as const)
      if (rev[field] !== undefined && rev[field] !== null && !isObject(rev[field]))
        throw new QldbVerificationError(address, `revision ${i}'s ${field} is not a struct`);
    return {
      hash: hash(rev.hash, `revision ${i}'s hash`),
      ...(typeof rev.dataHash === 'string' ? { dataHash: hash(rev.dataHash, `revision ${i}'s dataHash`) } : {}),
      ...(isObject(rev.metadata) ? { json: { metadata: rev.metadata, ...(isObject(rev.data) ? { data: rev.data } : {}) } } : {}),
    };
  });
  const entriesHashList = (Array.isArray(value.entriesHashList) ? value.entriesHashList : []).map((h, i) => hash(h, `entriesHashList[${i}]`));
  // The transactionInfo read back as Ion by its known shape (startTime a timestamp, statementDigest a blob): when it
  // hashes to one of the entries it is the one QLDB hashed, and is kept as Ion, as an Ion export's is. Otherwise it
  // is unchecked, and what it says (the tables, which documents the block changed) unverified.
  const transactionInfo = isObject(value.transactionInfo) ? jsonTransactionInfo(value.transactionInfo) : undefined;
  const bound = transactionInfo && entriesHashList.some((h) => h.equals(ionHash(transactionInfo)));
  return {
    blockAddress: address,
    transactionId: typeof value.transactionId === 'string' ? value.transactionId : '',
    blockTimestamp: new Date(value.blockTimestamp),
    blockHash: hash(value.blockHash, 'blockHash'),
    entriesHash: hash(value.entriesHash, 'entriesHash'),
    previousBlockHash: hash(value.previousBlockHash, 'previousBlockHash'),
    entriesHashList,
    ...(bound ? { transactionInfo } : {}),
    statements: (Array.isArray(tx.statements) ? tx.statements : []).map((s) => (isObject(s) && typeof s.statement === 'string' ? s.statement : '')),
    documents: documentsOf(Object.entries(isObject(tx.documents) ? tx.documents : {}) as [string, { tableName?: unknown }][]),
    revisions,
    json: { transactionInfo: isObject(value.transactionInfo) },
  };
}

/** A JSON Lines transactionInfo as Ion, by the shape QLDB writes it; undefined when it is not that shape. */
function jsonTransactionInfo(tx: Record<string, unknown>): ion.dom.Value | undefined {
  try {
    const typed = { startTime: 'timestamp', statementDigest: 'blob' } as const;
    const struct = (o: unknown) => (isObject(o) ? ionStruct(o, typed) : JSON.stringify(o));
    const parts = Object.entries(tx).map(([name, value]) => {
      if (name === 'statements' && Array.isArray(value)) return `${JSON.stringify(name)}:[${value.map(struct).join(',')}]`;
      if (name === 'documents' && isObject(value))
        return `${JSON.stringify(name)}:{${Object.entries(value)
          .map(([id, d]) => `${JSON.stringify(id)}:${struct(d)}`)
          .join(',')}}`;
      return `${JSON.stringify(name)}:${JSON.stringify(value)}`;
    });
    return ion.load(`{${parts.join(',')}}`) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * A JSON object as Ion text, JSON being Ion text, but for the fields `typed` names: those QLDB wrote as an Ion
 * timestamp (its text) or blob (its base64), when the value reads as one.
 */
function ionStruct(o: Record<string, unknown>, typed: Readonly<Record<string, 'timestamp' | 'blob'>>): string {
  const fields = Object.entries(o).map(([name, value]) => {
    const type = typed[name];
    const text =
      type === 'timestamp' && typeof value === 'string' && ION_TIMESTAMP.test(value)
        ? value
        : type === 'blob' && typeof value === 'string' && BASE64.test(value)
          ? `{{${value}}}`
          : JSON.stringify(value);
    return `${JSON.stringify(name)}:${text}`;
  });
  return `{${fields.join(',')}}`;
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
  let revisionsUnbound = 0;
  block.revisions.forEach((revision, i) => {
    // A redacted revision has its data's hash instead of its data: one with both would be imported as redacted and
    // checked by its data (red team).
    if ((revision.data || revision.json?.data) && revision.dataHash)
      throw new QldbVerificationError(at, `revision ${i} carries both its data and a dataHash: QLDB writes one or the other`);
    if (revision.json && (revision.json.data || revision.dataHash)) {
      // JSON Lines: checked as far as JSON allows. Read back as Ion the natural way, metadata and data that hash to
      // the revision's hash are the ones QLDB hashed; any other is unverified (unbound), and the import refuses it
      // unless told to take it so.
      const computed = jsonRevisionHash(revision.json.metadata, revision.json.data, revision.dataHash);
      revision.unbound = !computed?.equals(revision.hash);
      if (revision.unbound) revisionsUnbound += 1;
      return;
    }
    if (!revision.metadata || !(revision.data || revision.dataHash)) {
      // Hash-only (system) revisions have nothing else to check; a deleted one cannot be rebuilt (it has no data).
      if (isDocumentRevision(revision)) revisionsUnchecked += 1;
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
  return { revisionsUnchecked, revisionsUnbound, transactionUnchecked: !block.transactionInfo };
}

/**
 * A JSON Lines revision's hash, its values read back as Ion the natural way: JSON is Ion text, so numbers without a
 * fraction or exponent are ints, with a fraction decimals, with an exponent floats; the metadata's `txTime` is the
 * timestamp QLDB wrote as its text. A document of strings, ints, decimals, booleans, nulls, lists and structs hashes
 * as QLDB hashed it; a timestamp, blob, symbol, float or a decimal's trailing zeros in it does not (JSON keeps none
 * of them), and neither does a changed value. Undefined when the JSON cannot be read as Ion at all.
 */
export function jsonRevisionHash(metadata: Record<string, unknown>, data: Record<string, unknown> | undefined, dataHash?: Hash): Hash | undefined {
  try {
    const meta = ion.load(ionStruct(metadata, { txTime: 'timestamp' }));
    if (!meta) return undefined;
    if (data) {
      const value = ion.load(JSON.stringify(data));
      return value ? revisionHash(meta, value) : undefined;
    }
    return dataHash ? dot(ionHash(meta), dataHash) : undefined;
  } catch {
    return undefined;
  }
}

/** A revision's version, from its metadata (Ion or JSON); undefined when it has none that is a number. */
function versionOf(revision: JournalRevision): number | undefined {
  const version = revision.metadata ? revision.metadata.get('version')?.numberValue() : revision.json?.metadata.version;
  return typeof version === 'number' ? version : undefined;
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
  // A revision with its metadata and no data is a deletion, which only a DELETE statement makes (one that begins with
  // DELETE: the word inside an INSERT's value had passed, red team), and never a document's first revision (version 0,
  // its insert): an insert or update cut down to its metadata had been imported as a delete, its block still verifying.
  const texts = statementTexts(block);
  block.revisions.forEach((revision, i) => {
    if (!isDocumentRevision(revision) || revision.data || revision.json?.data || revision.dataHash) return;
    const id = documentIdOf(revision);
    const ran = (id !== undefined ? (block.documents[id]?.statements ?? []) : []).map((n) => texts[n] ?? '');
    if (!ran.some((statement) => /^\s*delete\b/i.test(statement)))
      throw new QldbVerificationError(
        at,
        `revision ${i} (document ${id}) has no data, and no DELETE statement of its transaction changed it: an insert or update cut down to its metadata`,
      );
    const version = versionOf(revision);
    if (version === undefined || version < 1)
      throw new QldbVerificationError(
        at,
        `revision ${i} (document ${id}) has no data and version ${version}: a deletion is never a document's first revision (version 0 is its insert)`,
      );
  });
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
