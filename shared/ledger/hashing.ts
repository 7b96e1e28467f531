/**
 * Block hashing, exactly as docs/rules.md, "Chains and blocks" says: `hash` = lowercase hex SHA-256 of the RFC 8785 (JCS)
 * canonical JSON of the block without its `hash` field. Any client can recompute it.
 */
import { hash } from 'node:crypto';
import type { Block, UnhashedBlock } from './types.ts';

/** 64 zeros: the `previous_hash` of every genesis block. */
export const ZERO_HASH = '0'.repeat(64);

/** A 64-character lowercase hex SHA-256 digest. */
export const HASH_PATTERN = /^[0-9a-f]{64}$/;

/**
 * RFC 8785 canonical JSON of a value. Throws `TypeError` for values JSON cannot carry faithfully
 * (NaN, Infinity, lone surrogates, BigInt, cycles) so that nothing unhashable reaches a chain.
 */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = jcs(value);
  } catch (error) {
    // A cycle ends as a RangeError (stack exhausted): the value has no JSON form either way.
    throw new TypeError(`value has no canonical JSON form: ${(error as Error).message}`);
  }
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return text;
}

/**
 * RFC 8785: ECMAScript serialization of strings and numbers (what JSON.stringify does), object keys
 * sorted by UTF-16 code units (what Array.prototype.sort does), no whitespace. Written out rather than
 * taken from a library because every append and every verified block pays for it: on a block it is
 * 2.7–3 times faster than `canonicalize`, which the unit tests keep as the oracle (bench/probes/canonical-json.ts). A string with nothing to
 * escape (no quote, backslash, control character or surrogate) is quoted as it is, and a number is written
 * with ES ToString: what JSON.stringify gives for them, without a call for each.
 */
function jcs(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return quoted(value);
    case 'number':
      if (!Number.isFinite(value)) throw new Error(`${value} is not allowed`);
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new Error('BigInt is not allowed');
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i += 1) {
          if (i > 0) out += ',';
          out += jcs(value[i]) ?? 'null';
        }
        return `${out}]`;
      }
      const withJson = value as { toJSON?: () => unknown };
      if (typeof withJson.toJSON === 'function') return jcs(withJson.toJSON());
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      let out = '{';
      for (const key of keys) {
        const member = jcs(record[key]);
        if (member === undefined) continue; // undefined, functions and symbols are left out, as JSON does
        if (out.length > 1) out += ',';
        out += `${quoted(key)}:${member}`;
      }
      return `${out}}`;
    }
    default:
      return undefined;
  }
}

/** Characters JSON.stringify may write otherwise than as themselves: a string without any is only quoted. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what JSON escapes, so what this looks for
const PLAIN_STRING = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

function quoted(text: string): string {
  if (PLAIN_STRING.test(text)) return `"${text}"`;
  if (!text.isWellFormed()) throw new Error('Lone surrogate is not allowed');
  return JSON.stringify(text);
}

/** Lowercase hex SHA-256 of a UTF-8 string. */
export function sha256Hex(text: string | Uint8Array): string {
  return hash('sha256', text, 'hex');
}

/** The hash of a block: SHA-256 over the JCS form of every field but `hash`. */
export function hashBlock(block: UnhashedBlock | Block): string {
  const { hash: _ignored, ...unhashed } = block as Block;
  return sha256Hex(canonicalJson(unhashed));
}

/**
 * A block as answered, back to what was hashed. An erasable event (one with a `subject_id`) is answered
 * with its details opened by its subject's key, or, after erasure, with `details: null` and `erased:
 * true`; on chain its details are always `{}` (what it commits to is `details_sealed`). Every other event
 * is answered as it is stored.
 */
export function asStored<B extends Block>(block: B): B {
  if (!block.events.some((e) => e.subject_id !== undefined)) return block;
  return {
    ...block,
    events: block.events.map((event) => {
      if (event.subject_id === undefined) return event;
      const { erased: _erased, ...stored } = event as typeof event & { erased?: boolean };
      return { ...stored, details: {} };
    }),
  };
}

/** Seals a block: computes and attaches its hash. */
export function sealBlock(block: UnhashedBlock): Block {
  return inContractOrder({ ...block, hash: hashBlock(block) });
}

/**
 * The same block with its fields in the order docs/rules.md, "Chains and blocks" shows them, for people reading answers.
 * Key order never changes the hash: canonical JSON sorts keys.
 */
export function inContractOrder(block: Block): Block {
  return {
    index: block.index,
    chain_name: block.chain_name,
    timestamp: block.timestamp,
    previous_hash: block.previous_hash,
    hash: block.hash,
    events: block.events.map((e) => ({
      event_id: e.event_id,
      chain_name: e.chain_name,
      block_index: e.block_index,
      entity_id: e.entity_id,
      event_type: e.event_type,
      details: e.details,
      details_cid: e.details_cid,
      details_nonce: e.details_nonce,
      details_metadata: e.details_metadata,
      timestamp: e.timestamp,
      is_offchain: e.is_offchain,
      // Only on erasable events: an absent field is not hashed, so no other block's hash changes.
      ...(e.subject_id !== undefined ? { subject_id: e.subject_id, details_sealed: e.details_sealed ?? null } : {}),
      // Only on channels' events: the salt that keeps their content from being guessed from the public hash.
      ...(e.salt !== undefined ? { salt: e.salt } : {}),
      // Only on secure events: who signed it, and the signature.
      ...(e.signed !== undefined ? { signed: e.signed } : {}),
    })),
  };
}
