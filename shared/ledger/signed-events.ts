/**
 * Secure events (`POST /api/admin/chains/{chain}/secure-events`): an organization signs an event with its registered
 * Ed25519 key, and the event's block records who signed it and how (`signed`), so that anyone reading the block, not
 * only the admin who relayed it, can check the signature again and tell the event from a copy any writer of the chain
 * could append. One definition of the signed bytes serves the relay, the node's audit and the verifiers.
 */
import { verifyEd25519 } from '../ed25519.ts';
import { canonicalJson } from './hashing.ts';
import type { LedgerEvent } from './types.ts';

/** A block as far as its signatures go: a stored block, or one a verifier read. */
export interface SignedBlock {
  chain_name: string;
  events: readonly (Pick<LedgerEvent, 'entity_id' | 'event_type' | 'details' | 'details_metadata'> &
    Partial<Pick<LedgerEvent, 'event_id' | 'is_offchain' | 'details_cid' | 'signed'>>)[];
}

/** What a secure event's signature covers: the RFC 8785 JSON of these fields (docs/rules.md, "Admin group"). */
export function secureEventMessage(fields: {
  chain_name: string;
  entity_id: string;
  event_type: string;
  details: Record<string, unknown>;
  details_metadata?: Record<string, unknown> | null | undefined;
  node_id?: string | undefined;
  nonce: string;
}): Buffer {
  const { chain_name, entity_id, event_type, details, details_metadata, node_id, nonce } = fields;
  // Everything the event stores is signed: `details_metadata` too when it is sent (it had been stored unsigned beside a
  // signed event, 2026-12-05 red team), and the node it is meant for when named. Without them the message is as it
  // always was (the contract's five fields).
  const signed = {
    chain_name,
    entity_id,
    event_type,
    details,
    ...(details_metadata == null ? {} : { details_metadata }),
    ...(node_id === undefined ? {} : { node_id }),
    nonce,
  };
  return Buffer.from(canonicalJson(signed), 'utf8');
}

/**
 * Why a block's signed event does not verify, if one does not: its signature checked again over the message its
 * stored fields make. An event whose details went off chain (they are `{}` on chain, the signed ones in IPFS) is
 * not checked here.
 */
export function signatureProblem(block: SignedBlock): string | undefined {
  for (const event of block.events) {
    const signed = event.signed as LedgerEvent['signed'] | null;
    if (signed === undefined) continue;
    // The service writes an object or nothing: anything else (null, a string) is a malformed record, not a crash.
    if (
      signed === null ||
      typeof signed !== 'object' ||
      typeof signed.nonce !== 'string' ||
      (signed.node_id !== undefined && typeof signed.node_id !== 'string')
    ) {
      return `event ${event.event_id ?? event.entity_id} records a malformed signature`;
    }
    if (event.is_offchain || event.details_cid) continue;
    // The chain the block is on is the one the event was signed for (the block's hash binds its events to it).
    const message = secureEventMessage({
      chain_name: block.chain_name,
      entity_id: event.entity_id,
      event_type: event.event_type,
      details: event.details,
      details_metadata: event.details_metadata,
      node_id: signed.node_id,
      nonce: signed.nonce,
    });
    if (typeof signed.signature !== 'string' || !/^[0-9a-fA-F]{128}$/.test(signed.signature) || typeof signed.public_key !== 'string') {
      return `event ${event.event_id ?? event.entity_id} records a malformed signature`;
    }
    if (!verifyEd25519(signed.public_key, message, Buffer.from(signed.signature, 'hex'))) {
      return `event ${event.event_id ?? event.entity_id}'s signature by '${signed.org_id}' does not verify with the key it names`;
    }
  }
  return undefined;
}
