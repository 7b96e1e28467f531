/**
 * Blocks as the service hashes them (docs/verification.md, "The byte rules"): `hash` is the lowercase hex
 * SHA-256 of the RFC 8785 (JCS) JSON of the block without `hash`, events as stored. An erasable event
 * (one with a `subject_id`) is stored with `details: {}` and without `erased`, whatever it is answered with.
 */
import { sha256 } from './sha256.ts';
import canonicalize from 'canonicalize';
import { VerificationError } from './errors.ts';
import type { Block, LedgerEvent } from './types.ts';
import { fromHex, toHex, utf8, verifyEd25519 } from './tlog.ts';

/**
 * An event as it was hashed: an erasable event with its sealed details only, without the `erased` mark its answer may
 * carry. Any other event is hashed as answered: no mark is taken off it (verified reads never ask for resolved
 * details, so no `resolve_error` either), as ledger-verify hashes it.
 */
export function storedEvent(event: LedgerEvent): LedgerEvent {
  if (event.subject_id === undefined) return event;
  const { erased: _erased, ...stored } = event;
  return { ...stored, details: {} };
}

/** The hash a block's contents give. */
export function computeBlockHash(block: Block): string {
  const { hash: _hash, ...unhashed } = block;
  const text = canonicalize({ ...unhashed, events: unhashed.events.map(storedEvent) });
  if (text === undefined) throw new VerificationError('block-hash', `block ${block.index} has no canonical JSON form`, block.chain_name);
  return toHex(sha256(utf8(text)));
}

/** Checks a block is the one asked for and hashes to its `hash`. */
export function checkBlock(block: Block, chain: string, index?: number): void {
  if (block.chain_name !== chain || (index !== undefined && block.index !== index)) {
    throw new VerificationError('wrong-block', `asked for block ${index ?? '?'} of '${chain}', got block ${block.index} of '${block.chain_name}'`, chain);
  }
  if (block.events.some((e) => e.chain_name !== chain || e.block_index !== block.index)) {
    throw new VerificationError('wrong-block', `an event of block ${block.index} names another block`, chain);
  }
  if (computeBlockHash(block) !== block.hash) {
    throw new VerificationError('block-hash', `block ${block.index}'s hash does not match its contents`, chain);
  }
  for (const event of block.events) {
    const problem = signatureProblem(event);
    if (problem) throw new VerificationError('event-signature', `block ${block.index}: ${problem}`, chain);
  }
}

/**
 * Why a secure event's recorded signature (`signed`) does not verify, if it does not: checked again over the RFC 8785
 * JSON the organization signed (chain_name, entity_id, event_type, details, details_metadata unless null, node_id if
 * named, nonce), with the key it names. An event whose details went off chain (`{}` here) is not checked.
 */
export function signatureProblem(event: LedgerEvent): string | undefined {
  const signed = event.signed as typeof event.signed | null;
  if (signed === undefined) return undefined;
  // The service writes an object or nothing: anything else (null, a string) is a malformed record, not a crash here.
  if (
    signed === null ||
    typeof signed !== 'object' ||
    typeof signed.nonce !== 'string' ||
    (signed.node_id !== undefined && typeof signed.node_id !== 'string')
  ) {
    return `event ${event.event_id} records a malformed signature`;
  }
  if (event.is_offchain || event.details_cid) return undefined;
  const message = canonicalize({
    chain_name: event.chain_name,
    entity_id: event.entity_id,
    event_type: event.event_type,
    details: event.details,
    ...(event.details_metadata == null ? {} : { details_metadata: event.details_metadata }),
    ...(signed.node_id === undefined ? {} : { node_id: signed.node_id }),
    nonce: signed.nonce,
  });
  const ok =
    message !== undefined &&
    typeof signed.public_key === 'string' &&
    typeof signed.signature === 'string' &&
    /^[0-9a-fA-F]{64}$/.test(signed.public_key) &&
    /^[0-9a-fA-F]{128}$/.test(signed.signature) &&
    verifyEd25519(fromHex(signed.public_key.toLowerCase()), utf8(message), fromHex(signed.signature.toLowerCase()));
  return ok ? undefined : `event ${event.event_id}'s signature by '${signed.org_id}' does not verify with the key it names`;
}

/** Checks blocks of consecutive indices (either order) link: each names the hash of the one before it. */
export function checkLinks(blocks: readonly Block[], chain: string): void {
  const ascending = [...blocks].sort((a, b) => a.index - b.index);
  for (let i = 1; i < ascending.length; i += 1) {
    const [before, after] = [ascending[i - 1]!, ascending[i]!];
    if (after.index !== before.index + 1) throw new VerificationError('wrong-block', `blocks ${before.index} and ${after.index} are not consecutive`, chain);
    if (after.previous_hash !== before.hash) {
      throw new VerificationError('block-link', `block ${after.index} does not link to block ${before.index}`, chain);
    }
  }
}

/**
 * Whether an event answered by a read is the event of its hashed block: equal in every stored field. For
 * an erasable event the answer may carry its opened details (or null once erased): only what was hashed
 * is compared.
 */
export function sameEvent(answered: LedgerEvent, stored: LedgerEvent): boolean {
  return canonicalize(storedEvent(answered)) === canonicalize(storedEvent(stored));
}
