/**
 * What a QLDB journal becomes on a Sub-Chain (docs/qldb-import.md, "What maps to what"); the way back, QLDB's
 * blocks rebuilt from the chain's events and verified, is ./audit.ts.
 *
 * In journal order, each QLDB block becomes:
 * - one `qldb_block` event (entity `qldb-block:<strandId>/<sequenceNo>`): its address, transaction, hashes,
 *   entries, every revision's hash (QLDB's hash-only system revisions included) and statements; the
 *   transactionInfo as Ion text in `details_metadata.qldb`;
 * - one event per document revision: `entity_id` the document id, `event_type` `<table>.<insert|update|delete>`,
 *   `details` the revision's data down-converted to JSON, and in `details_metadata.qldb` its provenance (block
 *   address, transaction id, version, revision hash, table) with its metadata and data as Ion text: the JSON
 *   is for reading, the Ion is what hashes to QLDB's revision hash.
 * The import ends with one `qldb_import` event: the export, the tip's address and hash, the digest if one was
 * checked; the anchor that follows copies it to the Main Chain.
 */
import * as ion from 'ion-js';
import { b64, type BlockAddress, isDocumentRevision, type JournalBlock, type JournalRevision } from './journal.ts';

export const QLDB_BLOCK_EVENT = 'qldb_block';
import { QLDB_IMPORT_EVENT } from '../ledger/event-types.ts';

export { QLDB_IMPORT_EVENT };

/** The longest event type the service takes; a longer `<table>.<operation>` becomes `qldb.<operation>`. */
const MAX_EVENT_TYPE = 128;

export interface ImportedEvent {
  entity_id: string;
  event_type: string;
  details: Record<string, unknown>;
  details_metadata: { qldb: Record<string, unknown> };
}

/** Where an event comes from in the journal: the block, and the revision (-1 for the block's own event). */
export interface JournalPosition {
  sequenceNo: number;
  revision: number;
}

export const comparePositions = (a: JournalPosition, b: JournalPosition) => a.sequenceNo - b.sequenceNo || a.revision - b.revision;

/**
 * An Ion value as JSON, by the usual down-conversion (QLDB's for JSON exports): nulls null; ints, decimals and
 * floats numbers (NaN and infinities null); timestamps their Ion text; symbols and strings strings; clobs
 * strings; blobs base64; lists and s-expressions arrays; structs objects; annotations dropped.
 */
export function ionToJson(value: ion.dom.Value): unknown {
  if (value.isNull()) return null;
  switch (value.getType()) {
    case ion.IonTypes.BOOL:
      return value.booleanValue();
    case ion.IonTypes.INT:
    case ion.IonTypes.DECIMAL:
    case ion.IonTypes.FLOAT: {
      const n = value.numberValue();
      // JSON has no negative zero (it stores -0 as 0): an Ion -0.00, -0d-3 or -0e0 is 0 here, as it is once stored,
      // so that `ledger-verify --qldb` compares like with like. The Ion itself, which the hashes are of, keeps it.
      if (n === 0) return 0;
      return n !== null && Number.isFinite(n) ? n : null;
    }
    case ion.IonTypes.TIMESTAMP:
      return value.timestampValue()!.toString();
    case ion.IonTypes.SYMBOL:
    case ion.IonTypes.STRING:
      return value.stringValue();
    case ion.IonTypes.CLOB:
      return Buffer.from(value.uInt8ArrayValue()!).toString('latin1');
    case ion.IonTypes.BLOB:
      return b64(value.uInt8ArrayValue()!);
    case ion.IonTypes.LIST:
    case ion.IonTypes.SEXP:
      return [...(value as unknown as Iterable<ion.dom.Value>)].map(ionToJson);
    case ion.IonTypes.STRUCT:
      return Object.fromEntries(value.fields().map(([name, field]) => [name, ionToJson(field)]));
    default:
      return null;
  }
}

const ionText = (value: ion.dom.Value) => ion.dumpText(value);
const jsonOf = (value: ion.dom.Value) => ionToJson(value) as Record<string, unknown>;

/** A revision's metadata fields, from its Ion or its JSON. */
function metadataOf(revision: JournalRevision): { id: string; version: number; txTime: string; txId: string } {
  const m = revision.metadata ? jsonOf(revision.metadata) : (revision.json?.metadata ?? {});
  return { id: String(m.id ?? ''), version: Number(m.version ?? 0), txTime: String(m.txTime ?? ''), txId: String(m.txId ?? '') };
}

const addressJson = (a: BlockAddress) => ({ strand_id: a.strandId, sequence_no: a.sequenceNo });

/** The events of one QLDB block, in order: the block's own, then one per document revision. */
export function eventsOfBlock(block: JournalBlock, exportId: string): { position: JournalPosition; event: ImportedEvent }[] {
  const at = block.blockAddress;
  const out: { position: JournalPosition; event: ImportedEvent }[] = [
    {
      position: { sequenceNo: at.sequenceNo, revision: -1 },
      event: {
        entity_id: `qldb-block:${at.strandId}/${at.sequenceNo}`,
        event_type: QLDB_BLOCK_EVENT,
        details: {
          block_address: addressJson(at),
          transaction_id: block.transactionId,
          block_timestamp: block.blockTimestamp.toISOString(),
          block_hash: b64(block.blockHash),
          entries_hash: b64(block.entriesHash),
          previous_block_hash: b64(block.previousBlockHash),
          entries_hash_list: block.entriesHashList.map(b64),
          revision_hashes: block.revisions.map((r) => b64(r.hash)),
          // The revisions that have an event of their own (the others are QLDB's hash-only system revisions).
          document_revisions: block.revisions.flatMap((r, i) => (isDocumentRevision(r) ? [i] : [])),
          statements: block.statements,
        },
        details_metadata: { qldb: { export_id: exportId, ...(block.transactionInfo ? { transaction_info_ion: ionText(block.transactionInfo) } : {}) } },
      },
    },
  ];
  block.revisions.forEach((revision, index) => {
    if (!isDocumentRevision(revision)) return; // a system revision: its hash is in the block's event
    const meta = metadataOf(revision);
    const table = block.documents[meta.id]?.tableName ?? 'unknown';
    const hasData = Boolean(revision.data || revision.json?.data);
    const operation = hasData || revision.dataHash ? (meta.version === 0 ? 'insert' : 'update') : 'delete';
    const type = `${table}.${operation}`;
    out.push({
      position: { sequenceNo: at.sequenceNo, revision: index },
      event: {
        entity_id: meta.id,
        event_type: type.length <= MAX_EVENT_TYPE ? type : `qldb.${operation}`,
        details: revision.data ? jsonOf(revision.data) : (revision.json?.data ?? {}),
        details_metadata: {
          qldb: {
            export_id: exportId,
            block_address: addressJson(at),
            revision_index: index,
            transaction_id: block.transactionId,
            document_id: meta.id,
            version: meta.version,
            tx_time: meta.txTime,
            table_name: table,
            ...(block.documents[meta.id]?.tableId ? { table_id: block.documents[meta.id]!.tableId } : {}),
            operation,
            revision_hash: b64(revision.hash),
            ...(revision.dataHash ? { redacted: true, data_hash: b64(revision.dataHash) } : {}),
            // A deletion carries no data, and QLDB does not publish how its revision hash is made: its hash (and with it
            // its metadata) rests on its block's hash alone, never recomputed.
            ...(operation === 'delete' ? { revision_hash_checked: false } : {}),
            // A JSON Lines revision whose data could not be bound to its hash (imported only when told to).
            ...(revision.unbound ? { data_verified: false } : {}),
            ...(revision.metadata ? { metadata_ion: ionText(revision.metadata) } : {}),
            ...(revision.data ? { data_ion: ionText(revision.data) } : {}),
          },
        },
      },
    });
  });
  return out;
}

/** The position an imported event names, or undefined for an event that is not one of an import of `exportId`. */
export function positionOf(
  event: { event_type: string; details?: unknown; details_metadata?: unknown },
  exportId?: string,
): JournalPosition | 'end' | undefined {
  const q = (event.details_metadata as { qldb?: Record<string, unknown> } | null | undefined)?.qldb;
  const id = event.event_type === QLDB_IMPORT_EVENT ? (event.details as { export_id?: string })?.export_id : q?.export_id;
  if (typeof id !== 'string' || (exportId !== undefined && id !== exportId)) return undefined;
  if (event.event_type === QLDB_IMPORT_EVENT) return 'end';
  if (event.event_type === QLDB_BLOCK_EVENT)
    return { sequenceNo: Number((event.details as { block_address?: { sequence_no?: number } }).block_address?.sequence_no), revision: -1 };
  const address = q?.block_address as { sequence_no?: number } | undefined;
  return { sequenceNo: Number(address?.sequence_no), revision: Number(q?.revision_index) };
}
