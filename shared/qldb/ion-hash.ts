/**
 * The Ion Hash of a value already read (an ion-js DOM value), by the Ion Hash specification as ion-hash-js
 * implements it, without its cost: ion-hash-js builds an Ion binary writer for every scalar and every field
 * name to learn its bytes, which made hashing a QLDB journal most of an import's work. Here the common scalars
 * (strings, symbols, field names, ints, bools, blobs, clobs, nulls) are encoded directly; floats, decimals and
 * timestamps still go through ion-js's writer, whose encoding of them the specification takes as it is.
 *
 * The serialization, per value:
 * - a scalar: 0x0B, its type qualifier (the Ion binary type code in the high nibble; the low nibble 0x0F for a
 *   null, the value for a bool, otherwise 0), its Ion binary representation (symbols as their text's UTF-8)
 *   with 0x0B, 0x0E and 0x0C escaped by 0x0C, then 0x0E;
 * - a list or s-expression: 0x0B, its type qualifier, each element's serialization, 0x0E;
 * - a struct: 0x0B, its type qualifier, then the digests of its fields, each hashed on its own (the field
 *   name serialized as a symbol, then the value), sorted as unsigned bytes and escaped, then 0x0E;
 * - annotations wrap the value: 0x0B, 0xE0, each annotation serialized as a symbol, the value, 0x0E.
 *
 * Checked against the Ion project's Ion Hash vectors (test/unit/qldb-hashing.test.ts), byte for byte.
 */
import { createHash } from 'node:crypto';
import * as ion from 'ion-js';

/** What the vectors and QLDB need of a hash function: bytes in, a digest out (then fresh again). */
export interface IonHasher {
  update(bytes: Uint8Array): void;
  digest(): Uint8Array;
}
export type IonHasherProvider = () => IonHasher;

export const sha256Hasher: IonHasherProvider = () => {
  let hash = createHash('sha256');
  return {
    update: (bytes) => void hash.update(bytes),
    digest: () => {
      const out = hash.digest();
      hash = createHash('sha256');
      return out;
    },
  };
};

const BEGIN = Uint8Array.of(0x0b);
const END = Uint8Array.of(0x0e);
const ANNOTATED = Uint8Array.of(0xe0);
const EMPTY = new Uint8Array(0);
const qualifiers = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));

function escaped(bytes: Uint8Array): Uint8Array {
  let specials = 0;
  for (const b of bytes) if (b === 0x0b || b === 0x0e || b === 0x0c) specials += 1;
  if (specials === 0) return bytes;
  const out = new Uint8Array(bytes.length + specials);
  let j = 0;
  for (const b of bytes) {
    if (b === 0x0b || b === 0x0e || b === 0x0c) out[j++] = 0x0c;
    out[j++] = b;
  }
  return out;
}

function scalar(h: IonHasher, qualifier: number, representation: Uint8Array): void {
  h.update(BEGIN);
  h.update(qualifiers[qualifier]!);
  if (representation.length > 0) h.update(escaped(representation));
  h.update(END);
}

const symbol = (h: IonHasher, text: string) => scalar(h, 0x70, Buffer.from(text, 'utf8'));

/** An int's magnitude, big-endian, in as few bytes as it takes (none for zero). */
function magnitude(n: bigint): Uint8Array {
  if (n === 0n) return EMPTY;
  let hex = n.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  return Buffer.from(hex, 'hex');
}

/** The type code and representation of a float, decimal or timestamp, as ion-js's binary writer encodes it. */
function written(value: ion.dom.Value): [number, Uint8Array] {
  const writer = ion.makeBinaryWriter();
  const type = value.getType();
  if (type === ion.IonTypes.FLOAT) writer.writeFloat64(value.numberValue());
  else if (type === ion.IonTypes.DECIMAL) writer.writeDecimal(value.decimalValue());
  else writer.writeTimestamp(value.timestampValue());
  writer.close();
  const bytes = writer.getBytes().subarray(4); // after the version marker
  let offset = 1;
  if ((bytes[0]! & 0x0f) === 0x0e) while ((bytes[offset++]! & 0x80) === 0); // a VarUInt length
  return [bytes[0]! & 0xf0, bytes.subarray(offset)];
}

function serialize(value: ion.dom.Value, h: IonHasher, provider: IonHasherProvider): void {
  const annotations = value.getAnnotations();
  if (annotations.length > 0) {
    h.update(BEGIN);
    h.update(ANNOTATED);
    for (const a of annotations) symbol(h, a);
  }
  const type = value.getType();
  const code = type.binaryTypeId << 4;
  if (value.isNull()) scalar(h, code | 0x0f, EMPTY);
  else if (type === ion.IonTypes.STRING || type === ion.IonTypes.SYMBOL)
    scalar(h, type === ion.IonTypes.SYMBOL ? 0x70 : code, Buffer.from(value.stringValue()!, 'utf8'));
  else if (type === ion.IonTypes.INT) {
    const n = value.bigIntValue()!;
    scalar(h, n < 0n ? 0x30 : 0x20, magnitude(n < 0n ? -n : n));
  } else if (type === ion.IonTypes.BOOL) scalar(h, 0x10 | (value.booleanValue() ? 1 : 0), EMPTY);
  else if (type === ion.IonTypes.BLOB || type === ion.IonTypes.CLOB) scalar(h, code, value.uInt8ArrayValue()!);
  else if (type === ion.IonTypes.FLOAT || type === ion.IonTypes.DECIMAL || type === ion.IonTypes.TIMESTAMP) {
    const [qualifier, representation] = written(value);
    scalar(h, qualifier, representation);
  } else if (type === ion.IonTypes.STRUCT) {
    h.update(BEGIN);
    h.update(qualifiers[code]!);
    const digests = value.allFields().flatMap(([name, children]) =>
      children.map((child) => {
        const field = provider();
        symbol(field, name);
        serialize(child, field, provider);
        return field.digest();
      }),
    );
    digests.sort(Buffer.compare);
    for (const d of digests) h.update(escaped(d));
    h.update(END);
  } else {
    // A list or an s-expression.
    h.update(BEGIN);
    h.update(qualifiers[code]!);
    for (const child of value as unknown as Iterable<ion.dom.Value>) serialize(child, h, provider);
    h.update(END);
  }
  if (annotations.length > 0) h.update(END);
}

/** The Ion Hash of `value` (SHA-256 unless another hasher is given). */
export function ionHashValue(value: ion.dom.Value, provider: IonHasherProvider = sha256Hasher): Uint8Array {
  const h = provider();
  serialize(value, h, provider);
  return h.digest();
}
