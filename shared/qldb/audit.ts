/**
 * The way back from an imported chain (docs/qldb-import.md, "Proofs carried forward"): QLDB's blocks rebuilt from
 * the chain's events (./mapping.ts says what each event holds) and verified by QLDB's own hashing, so an auditor
 * can show that nothing changed between QLDB and here. `ledger-verify --qldb` feeds it the chain page by page.
 */
import { isDeepStrictEqual } from 'node:util';
import * as ion from 'ion-js';
import { QLDB_IMPORT_EVENT } from '../ledger/event-types.ts';
import type { LedgerDigest } from './export.ts';
import { type Hash, MerkleAccumulator } from './hashing.ts';
import {
  b64,
  type BlockAddress,
  type JournalBlock,
  jsonRevisionHash,
  QldbVerificationError,
  transactionDocuments,
  verifyBlock,
  verifyLink,
} from './journal.ts';
import { ionToJson, QLDB_BLOCK_EVENT } from './mapping.ts';

/** An event as the chain answers it (the fields the audit reads). */
export interface ChainEvent {
  event_id?: string;
  entity_id: string;
  event_type: string;
  details: Record<string, unknown> | null;
  details_metadata: Record<string, unknown> | null;
  is_offchain?: boolean;
}

export interface ImportAudit {
  /** The export of the chain's last import (a later export of the journal continues the one before it). */
  exportId: string | null;
  /** Every export the chain imports, in order. */
  exports: string[];
  /** The `qldb_import` record of each import that finished, in order. */
  records: Record<string, unknown>[];
  /** With a digest: the block at its tip, where the Merkle root of every block hash from block 0 matched it. */
  digestMatched: BlockAddress | null;
  blocks: number;
  revisions: number;
  /** Revisions whose hash was rebuilt from their Ion; the others (JSON exports, deletions) are checked through their block. */
  revisionsRehashed: number;
  /** Deletions: their hash, and so their metadata, rest on their block's hash alone (QLDB does not publish a deletion's hash rule). */
  deletions: number;
  /** Revision events imported from JSON Lines with data not bound to their hash (`data_verified: false`). */
  dataUnverified: number;
  /** Off-chain or erased details, which the audit cannot compare with their Ion. */
  detailsNotCompared: number;
  tip: { address: BlockAddress; blockHash: string } | null;
  /** The closing `qldb_import` record of the chain's last import, if it finished. */
  record: Record<string, unknown> | null;
}

const unb64 = (s: unknown, what: string, at?: BlockAddress): Hash => {
  if (typeof s !== 'string') throw new QldbVerificationError(at, `${what} is missing`);
  return Buffer.from(s, 'base64');
};

/**
 * Rebuilds QLDB's blocks from an imported chain's events, in chain order, and verifies them by QLDB's hashing:
 * each revision event's Ion hashes to the revision hash it names, its JSON details are its Ion data, and its
 * provenance is its metadata; each block's revisions, entries and block hash; each link; the closing record
 * names the last block. Throws QldbVerificationError naming the block (and the event) that fails.
 */
export function auditImportedChain(events: Iterable<ChainEvent>, options: { digest?: LedgerDigest } = {}): ImportAudit {
  const auditor = new ImportAuditor(options);
  for (const event of events) auditor.add(event);
  return auditor.finish();
}

/** auditImportedChain one event at a time (a chain read page by page). */
export class ImportAuditor {
  readonly audit: ImportAudit = {
    exportId: null,
    exports: [],
    records: [],
    digestMatched: null,
    blocks: 0,
    revisions: 0,
    revisionsRehashed: 0,
    deletions: 0,
    detailsNotCompared: 0,
    dataUnverified: 0,
    tip: null,
    record: null,
  };
  #current: JournalBlock | undefined;
  #previous: JournalBlock | undefined;
  /** The current block's revisions that must have an event, and those whose event has come. */
  #expected: number[] = [];
  #seen = new Set<number>();
  /** Revisions of the current export imported with data not bound to their hash, held to its record's count. */
  #unverified = 0;
  readonly #digest: LedgerDigest | undefined;
  /** Every block hash from block 0, for the digest (undefined when the chain's first imported block is not block 0). */
  #tree: MerkleAccumulator | undefined;

  constructor(options: { digest?: LedgerDigest } = {}) {
    this.#digest = options.digest;
  }

  #close(): void {
    const current = this.#current;
    if (!current) return;
    const missing = this.#expected.filter((i) => !this.#seen.has(i));
    if (missing.length > 0) throw new QldbVerificationError(current.blockAddress, `the events of its revisions ${missing.join(', ')} are missing`);
    verifyBlock(current);
    if (this.#previous) verifyLink(current, this.#previous);
    else if (current.blockAddress.sequenceNo === 0) this.#tree = new MerkleAccumulator();
    const digest = this.#digest;
    if (this.#tree && digest && !this.audit.digestMatched) {
      this.#tree.push(current.blockHash);
      if (current.blockAddress.sequenceNo === digest.tip.sequenceNo && current.blockAddress.strandId === digest.tip.strandId) {
        const root = this.#tree.root();
        if (!root.equals(digest.digest))
          throw new QldbVerificationError(
            digest.tip,
            `the digest ${b64(digest.digest)} is not the Merkle root of the imported block hashes from block 0 to its tip (${b64(root)}): a digest of another ledger, or the chain was changed`,
          );
        this.audit.digestMatched = current.blockAddress;
      }
    }
    this.audit.blocks += 1;
    this.audit.tip = { address: current.blockAddress, blockHash: b64(current.blockHash) };
    this.#previous = current;
    this.#current = undefined;
  }

  finish(): ImportAudit {
    this.#close();
    const digest = this.#digest;
    if (digest && !this.audit.digestMatched)
      throw new QldbVerificationError(
        digest.tip,
        this.#tree
          ? `the digest's tip is block ${digest.tip.sequenceNo} of strand ${digest.tip.strandId}; the chain's imports end at block ${this.audit.tip?.address.sequenceNo} of ${this.audit.tip?.address.strandId}`
          : `the chain's imports do not begin at block 0 (they begin after a block of hash ${b64(this.#firstPrevious!)}): a digest covers the journal from block 0`,
      );
    return this.audit;
  }

  /** The previous hash of the chain's first imported block (named when a digest cannot be checked from block 0). */
  #firstPrevious: Hash | undefined;

  add(event: ChainEvent): void {
    const audit = this.audit;
    const q = (event.details_metadata as { qldb?: Record<string, unknown> } | null)?.qldb;
    if (event.event_type === QLDB_IMPORT_EVENT) {
      if (audit.record)
        throw new QldbVerificationError(audit.tip?.address, `event ${event.event_id ?? ''} follows the import's closing ${QLDB_IMPORT_EVENT} event`);
      this.#close();
      const record = event.details ?? {};
      const tip = record.tip as { block_hash?: string; block_address?: { strand_id?: string; sequence_no?: number } } | undefined;
      if (!audit.tip || tip?.block_hash !== audit.tip.blockHash || tip?.block_address?.sequence_no !== audit.tip.address.sequenceNo)
        throw new QldbVerificationError(audit.tip?.address, `the import's record names tip ${JSON.stringify(tip)}, the chain's blocks end here`);
      if (record.export_id !== audit.exportId)
        throw new QldbVerificationError(
          audit.tip.address,
          `the import's record names export ${String(record.export_id)}, the chain's events are of ${audit.exportId}`,
        );
      // A later export's record names the import it continues, which is the one before it on the chain; the first names none.
      const before = audit.records.at(-1);
      const continues = record.continues as { export_id?: unknown; tip?: unknown } | undefined;
      if (before ? continues?.export_id !== before.export_id || !isDeepStrictEqual(continues?.tip, before.tip) : continues !== undefined)
        throw new QldbVerificationError(
          audit.tip.address,
          before
            ? `the record of export ${audit.exportId} says it continues ${JSON.stringify(continues ?? null)}; the import before it on the chain is export ${String(before.export_id)}, ending at ${JSON.stringify(before.tip)}`
            : `the record of export ${audit.exportId} says it continues ${JSON.stringify(continues)}; the chain holds no import before it`,
        );
      // Revisions imported unverified are as many as the import's record says it imported so, none when it says none.
      const said = Number((record.unchecked as { data?: number } | undefined)?.data ?? 0);
      if (this.#unverified !== said)
        throw new QldbVerificationError(
          audit.tip.address,
          `${this.#unverified} revision events say their data is unverified; the import's record says ${said}`,
        );
      audit.record = record;
      audit.records.push(record);
      return;
    }
    // After an import's record, only a later export of the same journal, from its next block (linked in #close).
    if (audit.record && (!q || audit.exports.includes(String(q.export_id)) || event.event_type !== QLDB_BLOCK_EVENT))
      throw new QldbVerificationError(audit.tip?.address, `event ${event.event_id ?? ''} follows the import's closing ${QLDB_IMPORT_EVENT} event`);
    if (!q)
      throw new QldbVerificationError(this.#previous?.blockAddress, `event ${event.event_id ?? ''} carries no QLDB provenance: it is not part of an import`);
    const exportId = String(q.export_id);
    if (audit.record) {
      audit.record = null;
      this.#unverified = 0;
    } else if (audit.exportId !== null && exportId !== audit.exportId)
      throw new QldbVerificationError(undefined, `event ${event.event_id ?? ''} is of export ${exportId}, not ${audit.exportId}`);
    if (audit.exportId !== exportId) {
      audit.exportId = exportId;
      audit.exports.push(exportId);
    }
    if (event.event_type === QLDB_BLOCK_EVENT) {
      this.#close();
      this.#current = blockOfEvent(event, q);
      this.#firstPrevious ??= this.#current.previousBlockHash;
      this.#expected = ((event.details?.document_revisions as number[] | undefined) ?? []).map(Number);
      this.#seen = new Set();
      return;
    }
    const current = this.#current;
    const where = current?.blockAddress;
    const index = Number(q.revision_index);
    const slot = current?.revisions[index];
    const address = q.block_address as { sequence_no?: number } | undefined;
    if (!current || !slot || address?.sequence_no !== current.blockAddress.sequenceNo)
      throw new QldbVerificationError(
        where,
        `event ${event.event_id ?? ''} names revision ${index} of block ${address?.sequence_no}, which is not the block before it`,
      );
    const what = `revision ${index} (event ${event.event_id ?? event.entity_id})`;
    if (this.#seen.has(index) || !this.#expected.includes(index))
      throw new QldbVerificationError(where, `${what} is not one of the block's document revisions, or comes twice`);
    this.#seen.add(index);
    if (unb64(q.revision_hash, `${what}'s revision_hash`, where).compare(slot.hash) !== 0)
      throw new QldbVerificationError(where, `${what} names hash ${String(q.revision_hash)}, the block's revision is ${b64(slot.hash)}`);
    audit.revisions += 1;
    if (q.operation === 'delete') {
      // Said by the event itself, as the import wrote it: nothing can recompute a deletion's hash.
      if (q.revision_hash_checked !== false)
        throw new QldbVerificationError(where, `${what}: a deletion that does not say its hash rests on its block alone (revision_hash_checked: false)`);
      audit.deletions += 1;
    } else if (q.revision_hash_checked !== undefined) throw new QldbVerificationError(where, `${what}: only a deletion says revision_hash_checked`);
    // What the hashes cannot say is held to what the import writes (red team): an event is its document's; a delete
    // and a redacted revision carry no details; its type is its table and operation.
    if (event.entity_id !== q.document_id) throw new QldbVerificationError(where, `${what}: its entity is not its document id`);
    const noDetails = event.details === null || (typeof event.details === 'object' && Object.keys(event.details).length === 0);
    if ((q.operation === 'delete' || typeof q.data_hash === 'string') && !noDetails && !event.is_offchain)
      throw new QldbVerificationError(where, `${what}: a ${q.operation === 'delete' ? 'deletion' : 'redacted revision'} with details`);
    if (event.event_type !== `${String(q.table_name)}.${String(q.operation)}` && event.event_type !== `qldb.${String(q.operation)}`)
      throw new QldbVerificationError(where, `${what}: its type ${event.event_type} is not its table and operation`);
    const table = current.documents[String(q.document_id)]?.tableName;
    if (table !== undefined && table !== q.table_name)
      throw new QldbVerificationError(where, `${what}: table ${String(q.table_name)}, where the block's transaction says ${table}`);
    if (q.data_verified === false) {
      audit.dataUnverified += 1;
      this.#unverified += 1;
    }
    if (typeof q.metadata_ion !== 'string') {
      // Its document is accounted for against the block's transactionInfo (kept as Ion when it bound at import); its
      // metadata is QLDB's four fields, as the import read them.
      const metadata = { id: q.document_id, version: q.version, txTime: q.tx_time, txId: q.transaction_id };
      const dataHash = typeof q.data_hash === 'string' ? unb64(q.data_hash, `${what}'s data_hash`, where) : undefined;
      const hasData = q.operation !== 'delete' && !dataHash;
      slot.json = { metadata, ...(hasData ? { data: (event.details ?? {}) as Record<string, unknown> } : {}) };
      if (dataHash) slot.dataHash = dataHash;
      // Rehashed as the import bound it (its details read back as Ion), unless it was imported unbound (data_verified:
      // false, counted against the record) or has no data: then it is checked through its block.
      if (q.data_verified === false || q.operation === 'delete') return;
      if (event.is_offchain || event.details === null) {
        audit.detailsNotCompared += 1;
        return;
      }
      const computed = jsonRevisionHash(metadata, dataHash ? undefined : (event.details as Record<string, unknown>), dataHash);
      if (!computed?.equals(slot.hash))
        throw new QldbVerificationError(where, `${what}: its details and metadata, read back as Ion, do not hash to the block's revision (${b64(slot.hash)})`);
      audit.revisionsRehashed += 1;
      return;
    }
    const metadata = ion.load(q.metadata_ion)!;
    const m = ionToJson(metadata) as Record<string, unknown>;
    if (m.id !== event.entity_id || m.id !== q.document_id || m.version !== q.version || m.txId !== q.transaction_id)
      throw new QldbVerificationError(where, `${what}: its entity, document id, version or transaction is not what its Ion metadata says`);
    slot.metadata = metadata;
    if (q.operation !== 'delete' && typeof q.data_hash !== 'string' && typeof q.data_ion !== 'string')
      throw new QldbVerificationError(where, `${what}: an ${String(q.operation)} without its Ion data`);
    if (typeof q.data_ion === 'string') {
      const data = ion.load(q.data_ion)!;
      slot.data = data;
      if (event.is_offchain || event.details === null) audit.detailsNotCompared += 1;
      else if (!isDeepStrictEqual(event.details, ionToJson(data))) throw new QldbVerificationError(where, `${what}: its details are not its Ion data`);
    } else if (typeof q.data_hash === 'string') {
      slot.dataHash = unb64(q.data_hash, `${what}'s data_hash`, where);
    }
    if (slot.data || slot.dataHash) audit.revisionsRehashed += 1;
  }
}

/** The QLDB block a `qldb_block` event describes (its revisions by hash; the revision events fill them in). */
function blockOfEvent(event: ChainEvent, q: Record<string, unknown>): JournalBlock {
  const d = event.details ?? {};
  const address = d.block_address as { strand_id: string; sequence_no: number } | undefined;
  const at = { strandId: String(address?.strand_id), sequenceNo: Number(address?.sequence_no) };
  const transactionInfo = typeof q.transaction_info_ion === 'string' ? ion.load(q.transaction_info_ion)! : undefined;
  return {
    blockAddress: at,
    transactionId: String(d.transaction_id ?? ''),
    blockTimestamp: new Date(String(d.block_timestamp)),
    blockHash: unb64(d.block_hash, 'its block_hash', at),
    entriesHash: unb64(d.entries_hash, 'its entries_hash', at),
    previousBlockHash: unb64(d.previous_block_hash, 'its previous_block_hash', at),
    entriesHashList: ((d.entries_hash_list as string[]) ?? []).map((h) => unb64(h, 'an entry hash', at)),
    ...(transactionInfo ? { transactionInfo } : {}),
    statements: [],
    // The documents its transaction changed, each of which must have come as a revision event with its metadata.
    documents: transactionDocuments(transactionInfo),
    // A JSON export's import keeps no transactionInfo Ion: what its transaction changed was accounted for at import.
    ...(transactionInfo ? {} : { json: { transactionInfo: true } }),
    revisions: ((d.revision_hashes as string[]) ?? []).map((h) => ({ hash: unb64(h, 'a revision hash', at) })),
  };
}
