/**
 * A QLDB journal export made by a second implementation, for the importer to verify byte for byte (issue 68): it
 * shares none of the importer's code. Ion values are hashed by the Ion project's own ion-hash-js (SHA-256, over a
 * reader, as its README shows); the join of two hashes and the Merkle tree are written here from AWS's description
 * ("Data verification in Amazon QLDB": two hashes are sorted as signed bytes compared from the last, concatenated and
 * hashed; a tree's root is its two halves joined, the left half the largest power of two below the count: a tree built
 * top down, where the importer's pairs a level at a time bottom up). Blocks, transactionInfo and revisions take the
 * shape QLDB's journal exports write; documents hold most Ion types.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ion from 'ion-js';
import { cryptoHasherProvider, makeHashReader } from 'ion-hash-js';

/** The Ion hash of the first value of `text`, by ion-hash-js. */
function ionHashOf(text: string): Buffer {
  const reader = makeHashReader(ion.makeReader(text), cryptoHasherProvider('sha256'));
  reader.next();
  reader.next();
  return Buffer.from(reader.digest());
}

/** Signed bytes, compared from the last byte towards the first. */
function before(a: Buffer, b: Buffer): boolean {
  for (let i = 31; i >= 0; i -= 1) {
    const x = a.readInt8(i);
    const y = b.readInt8(i);
    if (x !== y) return x < y;
  }
  return false;
}

function join2(a: Buffer, b: Buffer): Buffer {
  const [first, second] = before(a, b) ? [a, b] : [b, a];
  return createHash('sha256')
    .update(Buffer.concat([first, second]))
    .digest();
}

/** The Merkle root, top down: the largest power of two below the count on the left. */
function root(hashes: Buffer[]): Buffer {
  if (hashes.length === 1) return hashes[0]!;
  let split = 1;
  while (split * 2 < hashes.length) split *= 2;
  return join2(root(hashes.slice(0, split)), root(hashes.slice(split)));
}

const blob = (h: Buffer) => `{{${h.toString('base64')}}}`;
const sha = (s: string) => createHash('sha256').update(s).digest();
const id = (s: string) =>
  sha(s)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '')
    .slice(0, 22);

/** Documents of many Ion types: what a real ledger's tables could hold. */
function documentData(n: number, version: number): string {
  const values = [
    `Vin:"${id(`vin-${n}`)}"`,
    `Owner:{Name:"Owner ${n} é😀",Since:2019-0${1 + (n % 9)}-1${n % 10}T0${n % 10}:30:00.${n % 1000}-07:00}`,
    `Price:${n + 1}${n % 3}.${n % 7}0d-1`,
    `Ratio:${n % 2 === 0 ? 'nan' : '-0e0'}`,
    `Limit:${n % 5 === 0 ? '+inf' : '5e-324'}`,
    `Counter:${n % 4 === 0 ? '18446744073709551616' : `-${n + 1}`}`,
    `Zero:-0.00`,
    `When:2020T`,
    `Unknown:2021-06-02T07:03:05-00:00`,
    `Raw:{{${Buffer.from(`raw ${n}`).toString('base64')}}}`,
    `Note:{{"clob ${n}"}}`,
    `Tags:[red,'blue green',"x",null.symbol]`,
    `Expr:(plus ${n} 1)`,
    `Annotated:kind::"v${version}"`,
    `Nothing:null.int`,
    `Version:${version}`,
  ];
  return `{${values.join(',')}}`;
}

export interface IndependentExport {
  dir: string;
  exportId: string;
  strandId: string;
  blockHashes: Buffer[];
  /** The Merkle root of every block hash: QLDB's digest at the last block. */
  digest: Buffer;
  revisions: number;
}

/**
 * Writes an export of `count` blocks (Ion text or binary) into `dir`, as `aws s3 cp` leaves QLDB's: the manifests and
 * data objects of 10 blocks each. Each block's transaction inserts, updates (every third) or deletes (every seventh)
 * documents of two tables; now and then a hash-only system revision, and one redacted revision.
 */
export function writeIndependentExport(dir: string, count: number, format: 'ION_TEXT' | 'ION_BINARY'): IndependentExport {
  const strandId = 'IndependentStrand00001';
  const exportId = 'IndependentExport00001';
  let previous: Buffer = Buffer.alloc(32);
  const blockHashes: Buffer[] = [];
  const live: { id: string; version: number; table: string; n: number }[] = [];
  const blocks: string[] = [];
  let revisionCount = 0;
  for (let seq = 0; seq < count; seq += 1) {
    const txId = id(`tx-${seq}`);
    const time = new Date(Date.UTC(2022, 4, 1) + seq * 1_234).toISOString();
    const revisions: { text: string; hash: Buffer }[] = [];
    const documents: string[] = [];
    const statements: string[] = [];
    const touched = new Set<string>();
    for (let r = 0; r < 3; r += 1) {
      const n = seq * 3 + r;
      const target = live.length > 4 ? live[(n * 5) % live.length]! : undefined;
      const kind = target && !touched.has(target.id) ? (n % 7 === 0 ? 'delete' : n % 3 === 0 ? 'update' : 'insert') : 'insert';
      let doc: { id: string; version: number; table: string; n: number };
      if (kind === 'insert') {
        doc = { id: id(`doc-${n}`), version: 0, table: n % 2 === 0 ? 'Vehicle' : 'Owner', n };
        live.push(doc);
      } else {
        doc = target!;
        doc.version += 1;
        if (kind === 'delete') live.splice(live.indexOf(doc), 1);
      }
      touched.add(doc.id);
      statements.push(`{statement:"${kind.toUpperCase()} ${doc.table} ${n}",startTime:${time},statementDigest:${blob(sha(`digest-${n}`))}}`);
      documents.push(`"${doc.id}":{tableName:"${doc.table}",tableId:"${id(doc.table)}",statements:[${statements.length - 1}]}`);
      const metadata = `{id:"${doc.id}",version:${doc.version},txTime:${time},txId:"${txId}"}`;
      const address = `blockAddress:{strandId:"${strandId}",sequenceNo:${seq}}`;
      revisionCount += 1;
      if (kind === 'delete') {
        // QLDB does not publish how a deletion's hash is made: any hash, covered by the block's.
        const hash = sha(`deleted-${doc.id}-${doc.version}`);
        revisions.push({ text: `{${address},hash:${blob(hash)},metadata:${metadata}}`, hash });
      } else if (seq === 7 && r === 1) {
        // A redacted revision: its data's hash in place of its data.
        const dataHash = ionHashOf(documentData(doc.n, doc.version));
        const hash = join2(ionHashOf(metadata), dataHash);
        revisions.push({ text: `{${address},hash:${blob(hash)},dataHash:${blob(dataHash)},metadata:${metadata}}`, hash });
      } else {
        const data = documentData(doc.n, doc.version);
        const hash = join2(ionHashOf(metadata), ionHashOf(data));
        revisions.push({ text: `{${address},hash:${blob(hash)},data:${data},metadata:${metadata}}`, hash });
      }
    }
    if (seq % 4 === 0) {
      const hash = sha(`system-${seq}`);
      revisions.push({ text: `{hash:${blob(hash)}}`, hash });
    }
    const transactionInfo = `{statements:[${statements.join(',')}],documents:{${documents.join(',')}}}`;
    const entries = [root(revisions.map((r) => r.hash)), ionHashOf(transactionInfo), sha(`internal-${seq}`)];
    const entriesHash = root(entries);
    const blockHash = join2(entriesHash, previous);
    blocks.push(
      `{blockAddress:{strandId:"${strandId}",sequenceNo:${seq}},transactionId:"${txId}",blockTimestamp:${time},blockHash:${blob(blockHash)},` +
        `entriesHash:${blob(entriesHash)},previousBlockHash:${blob(previous)},entriesHashList:[${entries.map(blob).join(',')}],` +
        `transactionInfo:${transactionInfo},revisions:[${revisions.map((r) => r.text).join(',')}]}`,
    );
    blockHashes.push(blockHash);
    previous = blockHash;
  }
  const keys: string[] = [];
  for (let first = 0; first < count; first += 10) {
    const last = Math.min(count, first + 10) - 1;
    const relative = `2022/05/01/00/${strandId}.${first}-${last}.ion`;
    mkdirSync(join(dir, '2022/05/01/00'), { recursive: true });
    const part = blocks.slice(first, last + 1);
    writeFileSync(join(dir, relative), format === 'ION_TEXT' ? `${part.join('\n')}\n` : ion.dumpBinary(...part.map((b) => ion.load(b))));
    keys.push(`journal/${relative}`);
  }
  const outputFormat = format;
  writeFileSync(
    join(dir, `${exportId}.started.manifest`),
    `{ledgerName:"independent",exportId:"${exportId}",bucket:"b",prefix:"journal",objectEncryptionType:"NO_ENCRYPTION",outputFormat:"${outputFormat}"}`,
  );
  writeFileSync(join(dir, `${exportId}.${strandId}.completed.manifest`), `{keys:[${keys.map((k) => `"${k}"`).join(',')}]}`);
  return { dir, exportId, strandId, blockHashes, digest: root(blockHashes), revisions: revisionCount };
}
