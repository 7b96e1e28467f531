/**
 * Makes QLDB journals and journal exports for tests and the import benchmark, hashed by shared/qldb/hashing.ts
 * (whose hashing the real block and the Ion Hash vectors of test/unit/qldb-hashing.test.ts check): a strand of
 * blocks, each with its transactionInfo (statements, and the table of each document), a hash standing for
 * QLDB's internal metadata, and its revisions (inserts, updates, deletes, and now and then a hash-only system
 * revision); and an export of them as QLDB writes one to S3 (manifests and data objects, in its three formats).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as ion from 'ion-js';
import { blockHash, ionHash, merkleRoot, revisionHash } from '#shared/qldb/hashing';
import { ionToJson } from '#shared/qldb/mapping';

const blob = (h: Uint8Array) => `{{${Buffer.from(h).toString('base64')}}}`;
const str = (s: string) => JSON.stringify(s);
const sha = (s: string) => createHash('sha256').update(s).digest();

export interface MadeBlock {
  /** The block as Ion text. */
  ion: string;
  blockHash: Buffer;
  sequenceNo: number;
  /** Document revisions in it (hash-only system revisions not counted). */
  revisions: number;
}

export interface StrandOptions {
  strandId?: string;
  count: number;
  revisionsPerBlock?: number;
  from?: number;
  previous?: Buffer;
  seed?: string;
  /** Documents are updated and deleted as well as inserted (each 5th revision an update, each 23rd a delete). */
  mixed?: boolean;
  /** More Ion fields in every document's data (`NegZero:-0.00,…`), to try values the defaults do not hold. */
  extraData?: string;
  /**
   * Documents of plain JSON types only (strings, ints, decimals without trailing zeros, booleans, lists, structs):
   * a JSON Lines export of them can be bound to its hashes, which one with timestamps, blobs or symbols cannot.
   */
  plainData?: boolean;
  /** From this sequence number on, every document's name differs: a journal the same as the default up to there. */
  variantFrom?: number;
}

/** `count` blocks of `strandId` from `from`, each with `revisionsPerBlock` revisions; deterministic from `seed`. */
export function* strandBlocks(options: StrandOptions): Generator<MadeBlock> {
  const strandId = options.strandId ?? 'HbD9IggL584EPHmfwjmVz0';
  const perBlock = options.revisionsPerBlock ?? 2;
  const seed = options.seed ?? 'seed';
  let previous = options.previous ?? Buffer.alloc(32);
  const live: { id: string; version: number; table: string }[] = [];
  let made = 0;
  for (let n = 0; n < options.count; n += 1) {
    const sequenceNo = (options.from ?? 0) + n;
    const txId = sha(`${seed}-tx-${sequenceNo}`).toString('base64url').slice(0, 22);
    const time = new Date(Date.UTC(2024, 0, 1) + sequenceNo * 1000).toISOString();
    const documents: string[] = [];
    const touched = new Set<string>();
    const revisions = Array.from({ length: perBlock }, (_, r) => {
      made += 1;
      // A document changes at most once a block (its transactionInfo names it once, as QLDB's does).
      const candidate = live.length > 0 ? live[(made * 7) % live.length]! : undefined;
      const free = candidate !== undefined && !touched.has(candidate.id);
      const update = options.mixed && made % 5 === 0 && free;
      const remove = options.mixed && !update && made % 23 === 0 && free;
      let doc: { id: string; version: number; table: string };
      if (update || remove) {
        doc = candidate!;
        doc.version += 1;
        if (remove) live.splice(live.indexOf(doc), 1);
      } else {
        doc = { id: sha(`${seed}-doc-${sequenceNo}-${r}`).toString('base64url').slice(0, 22), version: 0, table: r % 3 === 2 ? 'Vehicle' : 'Person' };
        if (options.mixed) live.push(doc);
      }
      touched.add(doc.id);
      // A deletion is its transaction's DELETE statement's (the second), everything else its first.
      documents.push(
        `${str(doc.id)}:{tableName:${str(doc.table)},tableId:${str(sha(doc.table).toString('base64url').slice(0, 22))},statements:[${remove ? 1 : 0}]}`,
      );
      const metadata = `{id:${str(doc.id)},version:${doc.version},txTime:${time},txId:${str(txId)}}`;
      if (remove) return { text: `{hash:${blob(ionHash(metadata))},metadata:${metadata}}`, hash: ionHash(metadata) };
      const name = `person ${sequenceNo}-${r}${options.variantFrom !== undefined && sequenceNo >= options.variantFrom ? ' (another)' : ''}`;
      const data = options.plainData
        ? `{Name:${str(name)},Balance:${sequenceNo * 10 + r}.5,Active:true,Tags:["a","b"],Address:{City:"Oslo",Zip:${1000 + r}},Revision:${doc.version}}`
        : `{Name:${str(name)},Balance:${sequenceNo * 10 + r}.50,Joined:2020-01-0${1 + (r % 9)}T,Tags:[a,"b"],Photo:{{${Buffer.from(`p${r}`).toString('base64')}}},Score:1.5e0,Big:12345678901234567890,Nothing:null.string,Revision:${doc.version}${options.extraData ? `,${options.extraData}` : ''}}`;
      const hash = revisionHash(metadata, data);
      return { text: `{blockAddress:{strandId:${str(strandId)},sequenceNo:${sequenceNo}},hash:${blob(hash)},data:${data},metadata:${metadata}}`, hash };
    });
    // Now and then a system revision, exported as its hash only (QLDB's own bookkeeping).
    if (sequenceNo % 5 === 0) {
      const hash = sha(`${seed}-system-revision-${sequenceNo}`);
      revisions.unshift({ text: `{hash:${blob(hash)}}`, hash });
    }
    const deletes = documents.some((d) => d.endsWith('statements:[1]}'));
    const statements = [
      `{statement:${str(`INSERT INTO Person ${sequenceNo}`)},startTime:${time},statementDigest:${blob(sha(txId))}}`,
      ...(deletes
        ? [`{statement:${str(`DELETE FROM Person AS p WHERE p.n = ${sequenceNo}`)},startTime:${time},statementDigest:${blob(sha(`${txId}-delete`))}}`]
        : []),
    ];
    const transactionInfo = `{statements:[${statements.join(',')}],documents:{${documents.join(',')}}}`;
    const system = sha(`${seed}-system-${sequenceNo}`);
    const entriesHashList = [system, ...(revisions.length > 0 ? [merkleRoot(revisions.map((r) => r.hash))] : []), ionHash(transactionInfo)];
    const entriesHash = merkleRoot(entriesHashList);
    const hash = blockHash(entriesHash, previous);
    const text = `{blockAddress:{strandId:${str(strandId)},sequenceNo:${sequenceNo}},transactionId:${str(txId)},blockTimestamp:${time},blockHash:${blob(hash)},entriesHash:${blob(entriesHash)},previousBlockHash:${blob(previous)},entriesHashList:[${entriesHashList.map(blob).join(',')}],transactionInfo:${transactionInfo},revisions:[${revisions.map((r) => r.text).join(',')}]}`;
    yield { ion: text, blockHash: hash, sequenceNo, revisions: perBlock };
    previous = hash;
  }
}

export function makeStrand(options: StrandOptions): MadeBlock[] {
  return [...strandBlocks(options)];
}

export type ExportFormat = 'ION_TEXT' | 'ION_BINARY' | 'JSON';

/** A block's Ion text as the export's format writes it. */
export function encodeBlocks(blocks: readonly string[], format: ExportFormat): string | Uint8Array {
  if (format === 'ION_TEXT') return `${blocks.join('\n')}\n`;
  if (format === 'ION_BINARY') return ion.dumpBinary(...blocks.map((b) => ion.load(b)));
  return `${blocks.map((b) => JSON.stringify(ionToJson(ion.load(b)!))).join('\n')}\n`;
}

export interface WrittenExport {
  dir: string;
  exportId: string;
  strandId: string;
  /** The data objects' S3 keys (with the prefix), in order, and the files they are in. */
  objects: { key: string; path: string; first: number; last: number }[];
  blocks: number;
  revisions: number;
  tipHash: Buffer;
  /** The QLDB digest of the strand at its tip: the Merkle root of all block hashes (the export starts at 0). */
  digest: Buffer;
}

/**
 * Writes a journal export into `dir` as `aws s3 cp --recursive s3://bucket/journalExport/ dir` leaves it:
 * `<exportId>.started.manifest`, the data objects under `YYYY/MM/DD/HH/`, `<exportId>.<strandId>.completed.manifest`
 * listing their keys (with the prefix), `blocksPerObject` blocks each.
 */
export function writeExport(
  dir: string,
  options: StrandOptions & { format?: ExportFormat; exportId?: string; blocksPerObject?: number; ledgerName?: string },
): WrittenExport {
  const format = options.format ?? 'ION_TEXT';
  const exportId = options.exportId ?? 'EXPORT8UyXulxccYLAsbN1';
  const strandId = options.strandId ?? 'HbD9IggL584EPHmfwjmVz0';
  const perObject = options.blocksPerObject ?? 50;
  const ext = format === 'JSON' ? 'json' : 'ion';
  const manifest = (fields: Record<string, unknown>) =>
    format === 'ION_BINARY'
      ? ion.dumpBinary(ion.load(JSON.stringify(fields)))
      : format === 'JSON'
        ? JSON.stringify(fields)
        : ion.dumpText(ion.load(JSON.stringify(fields)));
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `${exportId}.started.manifest`),
    manifest({
      ledgerName: options.ledgerName ?? 'vehicle-registration',
      exportId,
      bucket: 'amzn-s3-demo-bucket',
      prefix: 'journalExport',
      objectEncryptionType: 'NO_ENCRYPTION',
      outputFormat: format,
    }),
  );
  const written: WrittenExport = { dir, exportId, strandId, objects: [], blocks: 0, revisions: 0, tipHash: Buffer.alloc(0), digest: Buffer.alloc(0) };
  const hashes: Buffer[] = [];
  let pending: MadeBlock[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const first = pending[0]!.sequenceNo;
    const last = pending.at(-1)!.sequenceNo;
    const hour = String(Math.floor(first / 3600) % 24).padStart(2, '0');
    const relative = `2024/01/01/${hour}/${strandId}.${first}-${last}.${ext}`;
    const path = join(dir, relative);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(
      path,
      encodeBlocks(
        pending.map((b) => b.ion),
        format,
      ),
    );
    written.objects.push({ key: `journalExport/${relative}`, path, first, last });
    pending = [];
  };
  for (const block of strandBlocks({ ...options, strandId })) {
    pending.push(block);
    hashes.push(block.blockHash);
    written.blocks += 1;
    written.revisions += block.revisions;
    written.tipHash = block.blockHash;
    if (pending.length === perObject) flush();
  }
  flush();
  writeFileSync(join(dir, `${exportId}.${strandId}.completed.manifest`), manifest({ keys: written.objects.map((o) => o.key) }));
  written.digest = merkleRoot(hashes);
  return written;
}

/** A digest file as `aws qldb get-digest` writes it. */
export function digestFile(digest: Uint8Array, strandId: string, sequenceNo: number): string {
  return JSON.stringify({
    Digest: Buffer.from(digest).toString('base64'),
    DigestTipAddress: { IonText: `{strandId:${str(strandId)},sequenceNo:${sequenceNo}}` },
  });
}
