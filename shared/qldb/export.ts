/**
 * A QLDB journal export as downloaded from S3 (`aws s3 cp --recursive s3://bucket/prefix/ ./export`): its
 * manifests, its data objects in the order the completed manifest lists them, and the check of all of it
 * (docs/qldb-import.md):
 *
 * - `<exportId>.started.manifest` names the ledger, the export and its output format (ION_TEXT unless it says
 *   ION_BINARY or JSON); `<exportId>.<strandId>.completed.manifest` lists the strand's data object `keys`,
 *   in order, as S3 keys (with the prefix); a missing completed manifest means the export never finished;
 * - a data object `…/<strandId>.<first>-<last>.<ion|json>` holds blocks first…last of the strand, one per
 *   top-level Ion value (Ion text or binary) or per line (JSON Lines);
 * - every block is verified (journal.ts), each against the one before, across objects; with a digest
 *   (GetDigest's answer), the Merkle root of the block hashes from block 0 to its tip must be the digest.
 *
 * One data object is in memory at a time, whatever the export's size. Errors name the file, the key or the
 * block that is wrong (QldbExportError, QldbVerificationError).
 */
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, readSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import * as ion from 'ion-js';
import { type Hash, MerkleAccumulator } from './hashing.ts';
import {
  b64,
  type BlockAddress,
  blockFromIon,
  blockFromJson,
  isDocumentRevision,
  type JournalBlock,
  QldbVerificationError,
  verifyBlock,
  verifyLink,
} from './journal.ts';

export type OutputFormat = 'ION_TEXT' | 'ION_BINARY' | 'JSON';

export interface JournalExport {
  dir: string;
  exportId: string;
  ledgerName: string;
  prefix: string;
  outputFormat: OutputFormat;
  strandId: string;
  /** The data objects' S3 keys, in the completed manifest's order. */
  keys: string[];
  /** What one data object and one block may take (the importer's settings). */
  limits: ReadLimits;
}

/**
 * What the importer reads at most, each a setting of `npm run import:qldb` (docs/qldb-import.md): a data object past
 * one of them is refused, naming the object and the block, before the block is built. They bound the importer's memory
 * whatever the export holds: a block is built as Ion values (ion-js's DOM, a few hundred bytes a value) only after a
 * streaming pass over it has counted its bytes, values, revisions and depth without building any of them. QLDB's own
 * limits keep a real export far inside them: a document is at most 128 KB (Ion binary), a transaction (a block's
 * revisions) 4 MB and 40 documents.
 */
export interface ReadLimits {
  /**
   * An Ion data object's size: ion-js reads Ion only from memory, so an Ion object is read whole (about twice its size
   * in memory while it is read). A JSON Lines object is read a line at a time, whatever its size.
   */
  objectBytes: number;
  /** One block's size as written: its Ion value, or its JSON line. */
  blockBytes: number;
  /** The values in one block (every scalar, struct and list, at any depth): what building it costs. */
  blockValues: number;
  /** The revisions in one block. */
  blockRevisions: number;
  /**
   * The symbols of an Ion binary object's local symbol table at any point (the Ion library keeps a copy for each of its
   * readers, and builds every appended table anew): also bounds the work of building them, at 100 times this.
   */
  symbols: number;
}

export const DEFAULT_READ_LIMITS: ReadLimits = {
  objectBytes: 64 * 1024 * 1024,
  blockBytes: 8 * 1024 * 1024,
  blockValues: 200_000,
  blockRevisions: 1_000,
  symbols: 100_000,
};

/** The command-line option that raises each limit. */
export const LIMIT_OPTIONS: Record<keyof ReadLimits, string> = {
  objectBytes: '--max-object-bytes',
  blockBytes: '--max-block-bytes',
  blockValues: '--max-block-values',
  blockRevisions: '--max-block-revisions',
  symbols: '--max-symbols',
};

/** An export that cannot be read as QLDB wrote it: a manifest or data object missing, cut short, or out of order. */
export class QldbExportError extends Error {
  override name = 'QldbExportError';
}

/** The first value of an Ion (text, binary) or JSON file, as Ion. */
function loadFile(path: string): ion.dom.Value {
  let value: ion.dom.Value | null;
  try {
    value = ion.load(readFileSync(path));
  } catch (error) {
    throw new QldbExportError(`${path} is not Ion or JSON: ${(error as Error).message}`);
  }
  if (!value) throw new QldbExportError(`${path} is empty`);
  return value;
}

const text = (value: ion.dom.Value | null) => value?.stringValue() ?? undefined;

/**
 * The largest manifest read: a completed manifest lists one S3 key a data object (about 100 bytes), so this is over
 * 150,000 of them; ion-js reads a manifest whole, at about twenty times its size (a 50 MB one took 944 MB).
 */
const MANIFEST_BYTES = 16 * 1024 * 1024;

/** A manifest of the export: a regular file in its folder (not a link), of a manifest's size, holding an Ion struct. */
function loadManifest(dir: string, name: string): ion.dom.Value {
  const path = join(dir, name);
  const stat = lstatSync(path);
  if (stat.isSymbolicLink() || !stat.isFile()) {
    throw new QldbExportError(`${name} is ${stat.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}: an export's manifests are files in its folder`);
  }
  if (stat.size > MANIFEST_BYTES) throw new QldbExportError(`${name} is ${stat.size} bytes, larger than any manifest (${MANIFEST_BYTES} bytes): refused`);
  const value = loadFile(path);
  if (value.getType() !== ion.IonTypes.STRUCT) throw new QldbExportError(`${name} is not a manifest (an Ion struct), but an Ion ${value.getType().name}`);
  return value;
}

/**
 * Opens the export in `dir`: its started manifest (the only one, or the one of `exportId`) and the completed
 * manifest of its strand. QLDB journals have one strand; an export with more is refused.
 */
export function openExport(dir: string, exportId?: string, limits: ReadLimits = DEFAULT_READ_LIMITS): JournalExport {
  if (!existsSync(dir)) throw new QldbExportError(`${dir} does not exist`);
  const files = readdirSync(dir);
  const started = files.filter((f) => f.endsWith('.started.manifest') && (!exportId || f === `${exportId}.started.manifest`));
  if (started.length === 0)
    throw new QldbExportError(
      `no ${exportId ?? '<exportId>'}.started.manifest in ${dir}: download the export's prefix from S3 (aws s3 cp --recursive s3://<bucket>/<prefix>/ ${dir})`,
    );
  if (started.length > 1) throw new QldbExportError(`${dir} holds ${started.length} exports (${started.join(', ')}): name one with --export-id`);
  const manifest = loadManifest(dir, started[0]!);
  const field = (name: string) => {
    const value = manifest.get(name);
    if (value !== null && value.getType() !== ion.IonTypes.STRING && value.getType() !== ion.IonTypes.SYMBOL)
      throw new QldbExportError(`${started[0]}: its ${name} is not a string`);
    return text(value);
  };
  const id = field('exportId') ?? started[0]!.replace(/\.started\.manifest$/, '');
  const format = field('outputFormat') ?? 'ION_TEXT';
  if (format !== 'ION_TEXT' && format !== 'ION_BINARY' && format !== 'JSON')
    throw new QldbExportError(`${started[0]}: outputFormat ${format} is not one QLDB writes (ION_TEXT, ION_BINARY, JSON)`);
  const completed = files.filter((f) => f.startsWith(`${id}.`) && f.endsWith('.completed.manifest'));
  if (completed.length === 0)
    throw new QldbExportError(`export ${id} has no completed manifest (${id}.<strandId>.completed.manifest): the export job did not finish`);
  if (completed.length > 1) throw new QldbExportError(`export ${id} has ${completed.length} strands; QLDB journals have one, and only one can be imported`);
  const strandId = completed[0]!.slice(id.length + 1, -'.completed.manifest'.length);
  const keysValue = loadManifest(dir, completed[0]!).get('keys');
  if (keysValue?.getType() !== ion.IonTypes.LIST) throw new QldbExportError(`${completed[0]}: its keys are missing or not a list`);
  const keys = [...(keysValue as unknown as Iterable<ion.dom.Value>)].map((k) => k.stringValue());
  if (keys.some((k) => typeof k !== 'string')) throw new QldbExportError(`${completed[0]}: its keys are missing or not strings`);
  return {
    dir,
    exportId: id,
    ledgerName: field('ledgerName') ?? '',
    prefix: (field('prefix') ?? '').replace(/\/+$/, ''),
    outputFormat: format,
    strandId,
    keys: keys as string[],
    limits,
  };
}

/**
 * Where a key's data object is: the key under `dir`, or the key without the export's prefix under `dir`. Only a
 * regular file inside the export's folder is one: a manifest naming `../…`, an absolute path, or a symbolic link
 * (to `/etc/passwd`, say) is refused before anything is read.
 */
function pathOf(exp: JournalExport, key: string): string {
  const candidates = [key];
  if (exp.prefix && key.startsWith(`${exp.prefix}/`)) candidates.push(key.slice(exp.prefix.length + 1));
  for (const name of candidates) {
    const path = resolve(exp.dir, name);
    const inside = relative(resolve(exp.dir), path);
    if (isAbsolute(name) || inside === '' || inside.startsWith('..') || isAbsolute(inside)) {
      throw new QldbExportError(`the completed manifest names data object ${key}, which is outside the export's folder: refused`);
    }
    if (!existsSync(path)) continue;
    const stat = lstatSync(path);
    if (stat.isSymbolicLink() || !stat.isFile()) {
      throw new QldbExportError(
        `data object ${key} is ${stat.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}: an export's objects are files in its folder`,
      );
    }
    // A folder on its way may be a link too (`sub` → elsewhere): the file must be where its name says, inside.
    if (realpathSync(path) !== join(realpathSync(exp.dir), inside)) {
      throw new QldbExportError(`data object ${key} is reached through a symbolic link: an export's objects are files in its folder`);
    }
    return path;
  }
  throw new QldbExportError(
    `the completed manifest names data object ${key}, which is not in the export (looked for ${candidates.map((c) => join(exp.dir, c)).join(' and ')})`,
  );
}

/** A data object's error, named by its key (a verification error passes as it is). */
/** A block's refusal said with where the block was read (`data object K, line N` or `, value N`). */
function located(error: unknown, source: string | undefined): unknown {
  return error instanceof QldbVerificationError && source ? new QldbVerificationError(error.address, `${error.what} (${source})`) : error;
}

function objectError(key: string, error: unknown, source?: string): Error {
  if (error instanceof QldbVerificationError) return located(error, source) as Error;
  if (error instanceof QldbExportError) return error;
  if (stackRanOut(error)) return new QldbExportError(`data object ${key}: a value in it nests deeper than ${TOO_DEEP}`);
  return new QldbExportError(`data object ${key}: ${(error as Error).message}`);
}

/**
 * How deep a revision's value may nest (structs, lists, s-expressions). Reading, hashing and mapping a value recurse
 * once a level, and where the stack runs out depends on the Node and the frames around (structs from about 1,000 levels in
 * the importer's own run): a fixed limit, checked before any of them, makes the refusal the same everywhere, and no value the
 * verification accepted can fail the import half-way. QLDB documents are at most 128 KB; real ones nest a few levels.
 */
export const MAX_NESTING = 500;

/**
 * Reading and hashing a value recurse once a level: a value nested some thousands of levels deep (structs from about
 * 1,000) runs JavaScript's stack out. That is refused as a fault of the export, naming where, never thrown as a bare
 * RangeError (it had ended the importer with a raw stack trace and no NOT IMPORTED line).
 */
const TOO_DEEP = `the importer can read (${MAX_NESTING} levels)`;
const stackRanOut = (error: unknown) => error instanceof RangeError && /call stack/i.test(error.message);

/** The deepest nesting of a value (1 for a scalar), walked without recursion; stops counting past `limit`. */
function nesting(value: ion.dom.Value, limit: number): number {
  let deepest = 0;
  const stack: [ion.dom.Value, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    const type = v.getType();
    if (v.isNull() || (type !== ion.IonTypes.STRUCT && type !== ion.IonTypes.LIST && type !== ion.IonTypes.SEXP)) continue;
    for (const child of type === ion.IonTypes.STRUCT ? v.fields().map(([, f]) => f) : [...(v as unknown as Iterable<ion.dom.Value>)])
      stack.push([child, depth + 1]);
  }
  return deepest;
}

/** How deep a JSON value nests (objects and arrays), counted without recursion, up to `limit` + 1. */
function jsonNesting(root: unknown, limit: number): number {
  const stack: [unknown, number][] = [[root, 0]];
  let deepest = 0;
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    deepest = Math.max(deepest, depth);
    if (deepest > limit) return deepest;
    if (v !== null && typeof v === 'object') for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return deepest;
}

const count = (n: number) => n.toLocaleString('en-US');

/** Why a block was refused for one of the read limits: what it takes, and the setting that raises the limit. */
function overLimit(limit: keyof ReadLimits, what: string): string {
  const real =
    limit === 'symbols'
      ? 'a real export is far inside it: its symbols are its documents’ field names and symbol values'
      : 'a real QLDB block is far inside it: a transaction is at most 4 MB and 40 documents';
  return `${what} (${LIMIT_OPTIONS[limit]} raises the limit; ${real})`;
}

/** A block refused for its bytes (`bytes` or more), its values or its revisions, in the one wording each has. */
function blockOver(limits: ReadLimits, limit: 'blockBytes' | 'blockValues' | 'blockRevisions', bytes = 0): string {
  if (limit === 'blockBytes')
    return overLimit(limit, `it takes ${count(bytes)} bytes or more, over the ${count(limits.blockBytes)} the importer reads in one block`);
  const what = limit === 'blockValues' ? 'values' : 'revisions';
  return overLimit(limit, `it holds more than the ${count(limits[limit])} ${what} the importer reads in one block`);
}

/** Whether Ion's version marker (which starts every Ion binary stream) is at `at`. */
const ionVersionMarkerAt = (bytes: Uint8Array, at: number) => bytes[at] === 0xe0 && bytes[at + 1] === 0x01 && bytes[at + 2] === 0x00 && bytes[at + 3] === 0xea;

/**
 * One pass over the reader's next top-level value without building it (no value is read, only stepped over): its
 * size, values, revisions (the elements of its `revisions` field) and depth, each checked against `limits` as the pass
 * goes, so that a value past one is refused before it is built. Answers null at the end of the object.
 */
function scanValue(reader: ion.Reader, limits: ReadLimits): string | undefined | null {
  const start = reader.position();
  const type = reader.next();
  if (type === null) return null;
  const tooBig = () => {
    const bytes = reader.position() - start;
    return bytes > limits.blockBytes ? blockOver(limits, 'blockBytes', bytes) : undefined;
  };
  if (reader.annotations().length + 1 > limits.blockValues) return blockOver(limits, 'blockValues');
  if (!type.isContainer || reader.isNull()) return tooBig();
  // The block, its revisions list, a revision, then the data: the data's own depth is what MAX_NESTING limits.
  const deepest = MAX_NESTING + 3;
  let values = 1;
  let revisions = 0;
  let inRevisions = false;
  let depth = 1;
  reader.stepIn();
  while (depth > 0) {
    const next = reader.next();
    if (next === null) {
      reader.stepOut();
      depth -= 1;
      if (depth < 2) inRevisions = false;
      const over = tooBig();
      if (over) return over;
      continue;
    }
    // Each annotation counts as a value: a value's annotations are built with it (2 million on one value had taken 492 MB).
    values += 1 + reader.annotations().length;
    if (values > limits.blockValues) return blockOver(limits, 'blockValues');
    if (inRevisions && depth === 2) {
      revisions += 1;
      if (revisions > limits.blockRevisions) return blockOver(limits, 'blockRevisions');
    }
    if (next.isContainer && !reader.isNull()) {
      if (depth === 1 && reader.fieldName() === 'revisions') inRevisions = true;
      reader.stepIn();
      depth += 1;
      if (depth > deepest) return `a value in it nests deeper than ${TOO_DEEP}`;
    } else if (values % 4096 === 0) {
      const over = tooBig();
      if (over) return over;
    }
  }
  return tooBig();
}

/** The values in a JSON block, its revisions and its depth, checked against `limits` (the line's size is checked as it is read). */
function checkJsonBlock(block: unknown, limits: ReadLimits): string | undefined {
  const revisions = (block as { revisions?: unknown } | null)?.revisions;
  if (Array.isArray(revisions) && revisions.length > limits.blockRevisions) return blockOver(limits, 'blockRevisions');
  let values = 0;
  const stack: unknown[] = [block];
  while (stack.length > 0) {
    const v = stack.pop();
    values += 1;
    if (values > limits.blockValues) return blockOver(limits, 'blockValues');
    if (v !== null && typeof v === 'object') for (const child of Object.values(v)) stack.push(child);
  }
  return undefined;
}

/**
 * A JSON Lines object's lines, read a chunk at a time: memory holds one line, whatever the object's size. A line
 * longer than a block may be is refused as soon as it is, before it is all read.
 */
function* jsonLines(path: string, limits: ReadLimits, where: (line: number) => string): Generator<{ line: number; text: string }> {
  const fd = openSync(path, 'r');
  try {
    const chunk = Buffer.alloc(1024 * 1024);
    let parts: Buffer[] = [];
    let pending = 0;
    let line = 1;
    const take = (part: Buffer) => {
      pending += part.length;
      if (pending > limits.blockBytes) throw new QldbExportError(`${where(line)}: ${blockOver(limits, 'blockBytes', pending)}`);
      parts.push(Buffer.from(part));
    };
    const finish = () => {
      const text = Buffer.concat(parts).toString('utf8');
      parts = [];
      pending = 0;
      return { line: line++, text };
    };
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      const read = chunk.subarray(0, n);
      let start = 0;
      for (let end = read.indexOf(0x0a, start); end !== -1; end = read.indexOf(0x0a, start)) {
        take(read.subarray(start, end));
        yield finish();
        start = end + 1;
      }
      if (start < n) take(read.subarray(start));
    }
    if (pending > 0) yield finish();
  } finally {
    closeSync(fd);
  }
}

/** A VarUInt at `at`: its value and where it ends; undefined past the end or past 8 bytes. */
function varUInt(bytes: Uint8Array, at: number): [number, number] | undefined {
  let value = 0;
  for (let i = 0; i < 8 && at < bytes.length; i += 1) {
    const byte = bytes[at++]!;
    value = value * 128 + (byte & 0x7f);
    if (byte & 0x80) return [value, at];
  }
  return undefined;
}

/** The Ion binary value at `at` (Ion 1.0's type descriptor and length): its type, where its body starts and ends. */
function frame(bytes: Uint8Array, at: number): { type: number; body: number; end: number } | undefined {
  if (at >= bytes.length) return undefined;
  const type = bytes[at]! >> 4;
  let length = bytes[at]! & 0x0f;
  let body = at + 1;
  // A bool holds its value in its length bits, a null has no body.
  if (type === 1 || length === 15) return { type, body, end: body };
  if (length === 14 || (type === 0xd && length === 1)) {
    const read = varUInt(bytes, body);
    if (!read) return undefined;
    [length, body] = read;
  }
  return { type, body, end: body + length };
}

/** The system symbol table's symbols: a local table that imports nothing starts after them. */
const SYSTEM_SYMBOLS = 9;

/**
 * What an Ion binary object's local symbol tables cost the Ion library, found by a pass over its top-level values'
 * framing (nothing is built): each table's size (its symbols, on top of the one before when it appends to it with
 * `imports: $ion_symbol_table`) and the symbols built in all (an appended table is built whole again). ion-js reads
 * the tables inside a reader's `next()`, where the streaming pass cannot count them: a table of millions of symbols
 * had taken 1.8 GB, and 100,000 appends to one of 100,000 symbols (a 1 MB object) never ended (red team). Answers
 * why the object is refused, or undefined.
 */
function symbolTablesOver(bytes: Uint8Array, limits: ReadLimits): string | undefined {
  let size = SYSTEM_SYMBOLS;
  let built = 0;
  for (let at = 0; at < bytes.length; ) {
    if (ionVersionMarkerAt(bytes, at)) {
      size = SYSTEM_SYMBOLS;
      at += 4;
      continue;
    }
    const value = frame(bytes, at);
    // What the framing cannot follow, the Ion reader refuses.
    if (!value || value.end > bytes.length || value.end <= at) return undefined;
    at = value.end;
    if (value.type !== 0xe) continue;
    const annotations = varUInt(bytes, value.body);
    const first = annotations && varUInt(bytes, annotations[1]);
    // $ion_symbol_table is system symbol 3.
    if (!annotations || first?.[0] !== 3) continue;
    const table = frame(bytes, annotations[1] + annotations[0]);
    if (table?.type !== 0xd || table.end > value.end) continue;
    let appends = false;
    let symbols = 0;
    for (let field = table.body; field < table.end; ) {
      const name = varUInt(bytes, field);
      const item = name && frame(bytes, name[1]);
      if (!name || !item || item.end > table.end) break;
      if (name[0] === 6 && item.type === 7) {
        // imports: $ion_symbol_table (a symbol value: its id, unsigned, in the body's bytes).
        let id = 0;
        for (let i = item.body; i < item.end; i += 1) id = id * 256 + bytes[i]!;
        appends = id === 3;
      } else if (name[0] === 7 && item.type === 0xb) {
        for (let element = item.body; element < item.end; symbols += 1) {
          const next = frame(bytes, element);
          if (!next || next.end <= element) break;
          element = next.end;
        }
      }
      field = item.end;
    }
    size = (appends ? size : SYSTEM_SYMBOLS) + symbols;
    built += size;
    if (size > limits.symbols) return overLimit('symbols', `its local symbol table holds more than the ${count(limits.symbols)} symbols the importer reads`);
    if (built > 100 * limits.symbols)
      return overLimit(
        'symbols',
        `its local symbol tables make the Ion library build more than ${count(100 * limits.symbols)} symbols (a table appended to is built whole again)`,
      );
  }
  return undefined;
}

/** An Ion text local symbol table (`$ion_symbol_table::`, or its quoted or numbered spelling) annotating a value. */
const TEXT_SYMBOL_TABLE = /(?:\$ion_symbol_table|'\$ion_symbol_table'|\$3)\s*::/;

/**
 * An Ion data object as its readers take it: Ion binary as its bytes, Ion text decoded once into a string that both
 * readers share (ion-js copies and decodes what it is given as bytes, each reader its own: an Ion text object read
 * by two readers had taken about six times its size). The file's bytes are not kept once text is decoded.
 */
function ionSource(path: string): ArrayBuffer | string {
  const bytes = readFileSync(path);
  if (!ionVersionMarkerAt(bytes, 0)) return bytes.toString('utf8');
  // An ArrayBuffer, which ion-js views rather than copies: both readers read the one copy.
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  return (whole ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) as ArrayBuffer;
}

/**
 * The blocks of one data object, in its order, one at a time: a JSON Lines object is read a line at a time; an Ion
 * object is read whole (ion-js reads from memory; its size is limited), and each of its blocks is built only after a
 * streaming pass over it found it inside the read limits. Only one block's values are ever built.
 */
function* readObject(exp: JournalExport, key: string): Generator<JournalBlock> {
  const path = pathOf(exp, key);
  const { limits } = exp;
  const range = namedRange(key);
  // The block the object's name puts at its n-th block (QLDB names an object by its first and last block).
  const named = (n: number) => (range ? ` (block ${range.strandId}/${range.first + n - 1} by the object's name)` : '');
  if (exp.outputFormat === 'JSON' || key.endsWith('.json')) {
    let n = 0;
    for (const { line, text } of jsonLines(path, limits, (line) => `data object ${key}, line ${line}${named(n + 1)}`)) {
      if (text.trim() === '') continue;
      n += 1;
      let block: JournalBlock;
      const source = `data object ${key}, line ${line}`;
      try {
        const parsed: unknown = JSON.parse(text);
        const over = checkJsonBlock(parsed, limits);
        if (over) throw new QldbExportError(`${source}${named(n)}: ${over}`);
        block = blockFromJson(parsed);
      } catch (error) {
        if (error instanceof SyntaxError)
          throw new QldbExportError(`data object ${key}: line ${line} is not JSON (${error.message}): the object is cut short or damaged`);
        throw objectError(key, error, source);
      }
      block.source = source;
      yield block;
    }
    return;
  }
  const { size } = statSync(path);
  if (size > limits.objectBytes)
    throw new QldbExportError(
      `data object ${key} takes ${count(size)} bytes, over the ${count(limits.objectBytes)} an Ion data object may take: ion-js reads Ion from memory, so an Ion object is read whole (${LIMIT_OPTIONS.objectBytes} raises it; the importer then takes about twice the object's size in memory)`,
    );
  const source = ionSource(path);
  // Local symbol tables, which the Ion library reads inside `next()`, beyond the streaming pass: counted in binary by
  // their framing; in text refused (QLDB's Ion text exports write symbols as text, and have none).
  const tables =
    typeof source === 'string'
      ? TEXT_SYMBOL_TABLE.test(source)
        ? 'it holds a local symbol table ($ion_symbol_table::…), which QLDB does not write in Ion text and the importer does not read'
        : undefined
      : symbolTablesOver(new Uint8Array(source), limits);
  if (tables) throw new QldbExportError(`data object ${key}: ${tables}`);
  let reader: ion.Reader;
  let scanner: ion.Reader;
  try {
    reader = ion.makeReader(source);
    scanner = ion.makeReader(source);
  } catch (error) {
    throw objectError(key, error);
  }
  for (let value = 1; ; value += 1) {
    let block: JournalBlock;
    const source = `data object ${key}, value ${value}`;
    try {
      // The scanner goes over each value first; the reader builds it only when the scanner found it inside the limits.
      const over = scanValue(scanner, limits);
      if (over === null) return;
      if (over) throw new QldbExportError(`${source}${named(value)}: ${over}`);
      if (reader.next() === null) return;
      block = blockFromIon(ion.load(reader)!);
    } catch (error) {
      throw objectError(key, error, source);
    }
    block.source = source;
    yield block;
  }
}

/** `<strandId>.<first>-<last>.<ext>`: the blocks a data object's name says it holds. */
function namedRange(key: string): { strandId: string; first: number; last: number } | undefined {
  const m = /([^/]+)\.(\d+)-(\d+)\.[a-z]+$/.exec(key);
  return m ? { strandId: m[1]!, first: Number(m[2]), last: Number(m[3]) } : undefined;
}

/**
 * The export's blocks in journal order, one data object read at a time; each object's blocks must be the
 * ones its name says, from the strand of the manifest. Blocks are not verified here (verifyExport does).
 */
export function* exportBlocks(exp: JournalExport): Generator<{ block: JournalBlock; key: string }> {
  for (const key of exp.keys) {
    const range = namedRange(key);
    if (range && range.strandId !== exp.strandId)
      throw new QldbExportError(`data object ${key} is of strand ${range.strandId}, not the manifest's ${exp.strandId}`);
    let first: number | undefined;
    let last: number | undefined;
    const mismatch = () =>
      new QldbExportError(
        `data object ${key} holds blocks ${first ?? 'none'}–${last ?? 'none'}, its name says ${range!.first}–${range!.last}: it is cut short or not the object QLDB wrote`,
      );
    for (const block of readObject(exp, key)) {
      if (block.blockAddress.strandId !== exp.strandId)
        throw new QldbVerificationError(block.blockAddress, `it is in data object ${key} of strand ${exp.strandId}`);
      first ??= block.blockAddress.sequenceNo;
      last = block.blockAddress.sequenceNo;
      if (range && (first !== range.first || last > range.last)) throw mismatch();
      yield { block, key };
    }
    if (range && (first !== range.first || last !== range.last)) throw mismatch();
  }
}

/** A ledger digest as GetDigest answers it (`aws qldb get-digest` JSON, or its Ion): the root hash and its tip. */
export interface LedgerDigest {
  digest: Hash;
  tip: BlockAddress;
}

/** Reads a digest file: `{"Digest": "<base64>", "DigestTipAddress": {"IonText": "{strandId:…,sequenceNo:…}"}}`. */
export function parseDigest(source: string | Uint8Array): LedgerDigest {
  let value: ion.dom.Value | null;
  try {
    value = ion.load(source);
  } catch (error) {
    throw new QldbExportError(`the digest file is not JSON or Ion: ${(error as Error).message}`);
  }
  const field = (name: string) => value?.get(name) ?? value?.get(name[0]!.toLowerCase() + name.slice(1)) ?? null;
  const digestValue = field('Digest');
  const digest =
    digestValue?.getType() === ion.IonTypes.BLOB
      ? digestValue.uInt8ArrayValue()
      : digestValue?.getType() === ion.IonTypes.STRING
        ? Buffer.from(digestValue.stringValue()!, 'base64')
        : undefined;
  let tip = field('DigestTipAddress');
  const ionText = tip?.get('IonText')?.stringValue();
  if (typeof ionText === 'string') tip = ion.load(ionText);
  const strandId = tip?.get('strandId')?.stringValue();
  const sequenceNo = tip?.get('sequenceNo')?.numberValue();
  if (digest?.length !== 32 || typeof strandId !== 'string' || typeof sequenceNo !== 'number')
    throw new QldbExportError('the digest file needs Digest (32 bytes, base64) and DigestTipAddress {strandId, sequenceNo}, as GetDigest answers them');
  return { digest: Buffer.from(digest), tip: { strandId, sequenceNo } };
}

export interface ExportSummary {
  exportId: string;
  ledgerName: string;
  outputFormat: OutputFormat;
  strandId: string;
  blocks: number;
  /** Document revisions (those with metadata; QLDB's hash-only system revisions are not counted). */
  revisions: number;
  first: { address: BlockAddress; previousBlockHash: string };
  tip: { address: BlockAddress; blockHash: string };
  /**
   * What could not be recomputed: a deleted revision has no data (`revisions`); JSON Lines keeps no Ion types, so a
   * transaction's hash (`transactions`) and the data of a revision whose values are not plain JSON types (`data`:
   * its data is not bound to its hash, so unverified) cannot be rebuilt.
   */
  unchecked: { revisions: number; transactions: number; data: number };
  digest: { digest: string; tip: BlockAddress } | null;
}

/**
 * Verifies the whole export before anything is imported: every block (verifyBlock), every link, the data
 * objects' names and order, and with `digest`, QLDB's digest at its tip. Throws on the first problem.
 */
export function verifyExport(exp: JournalExport, options: { digest?: LedgerDigest; onBlock?: (block: JournalBlock) => void } = {}): ExportSummary {
  const { digest } = options;
  if (digest && digest.tip.strandId !== exp.strandId)
    throw new QldbVerificationError(undefined, `the digest is of strand ${digest.tip.strandId}, the export of ${exp.strandId}: a digest of another ledger`);
  const tree = new MerkleAccumulator();
  let previous: JournalBlock | undefined;
  let first: JournalBlock | undefined;
  let revisions = 0;
  const unchecked = { revisions: 0, transactions: 0, data: 0 };
  let digestChecked = false;
  for (const { block, key } of exportBlocks(exp)) {
    block.revisions.forEach((revision, i) => {
      // Within the revision's struct, its data one level down: the data's own depth is what is limited (a JSON
      // Lines revision's too: 20,000 nested lists had crashed the import with a stack trace, red team).
      if (
        (revision.data && nesting(revision.data, MAX_NESTING) > MAX_NESTING) ||
        (revision.json?.data && jsonNesting(revision.json.data, MAX_NESTING) > MAX_NESTING)
      )
        throw new QldbVerificationError(block.blockAddress, `in data object ${key}, revision ${i}'s data nests deeper than ${TOO_DEEP}`);
    });
    let check: ReturnType<typeof verifyBlock>;
    try {
      check = verifyBlock(block);
      if (previous) verifyLink(block, previous);
    } catch (error) {
      if (stackRanOut(error)) throw new QldbVerificationError(block.blockAddress, `in data object ${key}, a value of it nests deeper than ${TOO_DEEP}`);
      // Said with where the block was read: the line of a JSON Lines object, the value of an Ion one.
      throw located(error, block.source);
    }
    if (!previous) first = block;
    unchecked.revisions += check.revisionsUnchecked;
    unchecked.data += check.revisionsUnbound;
    if (check.transactionUnchecked) unchecked.transactions += 1;
    revisions += block.revisions.filter(isDocumentRevision).length;
    if (digest && first!.blockAddress.sequenceNo === 0) {
      tree.push(block.blockHash);
      if (block.blockAddress.sequenceNo === digest.tip.sequenceNo) {
        const root = tree.root();
        if (!root.equals(digest.digest))
          throw new QldbVerificationError(
            digest.tip,
            `the digest ${b64(digest.digest)} is not the Merkle root of the export's block hashes from block 0 to its tip (${b64(root)}): a digest of another ledger, or the export was changed`,
          );
        digestChecked = true;
      }
    }
    options.onBlock?.(block);
    previous = block;
  }
  if (!previous || !first) throw new QldbExportError(`export ${exp.exportId} holds no blocks`);
  if (digest && !digestChecked) {
    if (first.blockAddress.sequenceNo !== 0)
      throw new QldbExportError(
        `the export begins at block ${first.blockAddress.sequenceNo}: a digest covers the journal from block 0, so checking it needs an export from the ledger's creation`,
      );
    throw new QldbExportError(
      `the digest's tip is block ${digest.tip.sequenceNo}, the export ends at block ${previous.blockAddress.sequenceNo}: export up to the digest's time, or take a digest within the export`,
    );
  }
  return {
    exportId: exp.exportId,
    ledgerName: exp.ledgerName,
    outputFormat: exp.outputFormat,
    strandId: exp.strandId,
    blocks: previous.blockAddress.sequenceNo - first.blockAddress.sequenceNo + 1,
    revisions,
    first: { address: first.blockAddress, previousBlockHash: b64(first.previousBlockHash) },
    tip: { address: previous.blockAddress, blockHash: b64(previous.blockHash) },
    unchecked,
    digest: digest ? { digest: b64(digest.digest), tip: digest.tip } : null,
  };
}
