/**
 * Makes QLDB journal blocks for tests, hashed by shared/qldb/hashing.ts (whose hashing the real block and the
 * Ion Hash vectors of test/unit/qldb-hashing.test.ts check): a strand of blocks, each with its revisions, its
 * transactionInfo and a hash standing for QLDB's internal metadata, as an export's data object holds them.
 */
import { createHash } from 'node:crypto';
import { blockHash, ionHash, merkleRoot, revisionHash } from '#shared/qldb/hashing';

const blob = (h: Uint8Array) => `{{${Buffer.from(h).toString('base64')}}}`;
const str = (s: string) => JSON.stringify(s);

export interface MadeBlock {
  /** The block as Ion text. */
  ion: string;
  blockHash: Buffer;
}

/** `count` blocks of `strandId` from `from`, each with `revisionsPerBlock` revisions; deterministic from `seed`. */
export function makeStrand(options: {
  strandId?: string;
  count: number;
  revisionsPerBlock?: number;
  from?: number;
  previous?: Buffer;
  seed?: string;
}): MadeBlock[] {
  const strandId = options.strandId ?? 'HbD9IggL584EPHmfwjmVz0';
  const perBlock = options.revisionsPerBlock ?? 2;
  const seed = options.seed ?? 'seed';
  let previous = options.previous ?? Buffer.alloc(32);
  const blocks: MadeBlock[] = [];
  for (let n = 0; n < options.count; n += 1) {
    const sequenceNo = (options.from ?? 0) + n;
    const txId = createHash('sha256').update(`${seed}-tx-${sequenceNo}`).digest('base64url').slice(0, 22);
    const time = new Date(Date.UTC(2024, 0, 1) + sequenceNo * 1000).toISOString();
    const revisions = Array.from({ length: perBlock }, (_, r) => {
      const id = createHash('sha256').update(`${seed}-doc-${sequenceNo}-${r}`).digest('base64url').slice(0, 22);
      const metadata = `{id:${str(id)},version:${r % 3},txTime:${time},txId:${str(txId)}}`;
      const data = `{Name:${str(`person ${sequenceNo}-${r}`)},Balance:${sequenceNo * 10 + r}.50,Joined:2020-01-0${1 + (r % 9)}T,Tags:[a,"b"]}`;
      return { metadata, data, hash: revisionHash(metadata, data) };
    });
    const transactionInfo = `{statements:[{statement:${str(`INSERT INTO Person ${sequenceNo}`)},startTime:${time},statementDigest:${blob(createHash('sha256').update(txId).digest())}}],documents:{}}`;
    const system = createHash('sha256').update(`${seed}-system-${sequenceNo}`).digest();
    const entriesHashList = [system, ...(perBlock > 0 ? [merkleRoot(revisions.map((r) => r.hash))] : []), ionHash(transactionInfo)];
    const entriesHash = merkleRoot(entriesHashList);
    const hash = blockHash(entriesHash, previous);
    const ion = `{blockAddress:{strandId:${str(strandId)},sequenceNo:${sequenceNo}},transactionId:${str(txId)},blockTimestamp:${time},blockHash:${blob(hash)},entriesHash:${blob(entriesHash)},previousBlockHash:${blob(previous)},entriesHashList:[${entriesHashList.map(blob).join(',')}],transactionInfo:${transactionInfo},revisions:[${revisions
      .map((r) => `{blockAddress:{strandId:${str(strandId)},sequenceNo:${sequenceNo}},hash:${blob(r.hash)},data:${r.data},metadata:${r.metadata}}`)
      .join(',')}]}`;
    blocks.push({ ion, blockHash: hash });
    previous = hash;
  }
  return blocks;
}
