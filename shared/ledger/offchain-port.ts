/**
 * What the ledger needs for off-chain payloads: the port. shared/offchain implements it (AES-256-GCM
 * envelopes in IPFS); the ledger only offloads, verifies and resolves through it.
 */

export interface StoredPayload {
  cid: string;
  /** The 96-bit GCM nonce, 24 hex characters, recorded on chain beside the CID. */
  nonce: string;
  /** Bytes of the payload's JSON (the plaintext). */
  size: number;
}

/**
 * Where an encrypted payload may be read, named in its envelope's authenticated data and in its data key's
 * wrapping (KMS's encryption context), so that neither can be changed without decryption failing:
 * - `chain:<name>`: an event's details on that chain (read by those who may read the chain);
 * - `collection:<channel>/<collection>`: a private value (read by the channel's members);
 * - `org:<id>`: put off chain by a key of that organization without naming where it goes (read by its keys);
 * - `public`: put off chain by a key with no organization without naming where it goes (read by any key);
 * - `service`: the service's own secrets (peers' keys, cursor tokens), never read through a request;
 * - `identity`: the node identity's private key, apart from every other secret so that an IAM policy can deny its
 *   unwrapping (the KMS encryption context) to every function that does not sign as the node.
 * Admins read every scope. The service decrypts a payload only for a caller entitled to its scope, whatever
 * event, route or reference names it (PayloadOpener).
 */
export type PayloadScope = `chain:${string}` | `collection:${string}/${string}` | `org:${string}` | 'public' | 'service' | 'identity';

export const payloadScope = {
  chain: (chainName: string): PayloadScope => `chain:${chainName}`,
  collection: (channel: string, collection: string): PayloadScope => `collection:${channel}/${collection}`,
  organization: (orgId: string): PayloadScope => `org:${orgId}`,
  public: 'public' as PayloadScope,
  service: 'service' as PayloadScope,
  identity: 'identity' as PayloadScope,
};

/** A scope's parts, or undefined for a string that is none. */
export function parsePayloadScope(
  scope: string,
):
  | { kind: 'chain'; chain: string }
  | { kind: 'collection'; channel: string; collection: string }
  | { kind: 'org'; org_id: string }
  | { kind: 'public' }
  | { kind: 'service' }
  | { kind: 'identity' }
  | undefined {
  if (scope === 'public' || scope === 'service' || scope === 'identity') return { kind: scope };
  let m = /^chain:(.+)$/s.exec(scope);
  if (m) return { kind: 'chain', chain: m[1]! };
  m = /^collection:([^/]+)\/(.+)$/s.exec(scope);
  if (m) return { kind: 'collection', channel: m[1]!, collection: m[2]! };
  m = /^org:(.+)$/s.exec(scope);
  if (m) return { kind: 'org', org_id: m[1]! };
  return undefined;
}

/**
 * Whether the caller a payload is decrypted for may read `scope`; `null` is an envelope written before scopes
 * (version 1). Made from the caller's principal by access control (shared/access/access.ts, payloadOpener); the
 * store asks it before it decrypts anything.
 */
export type PayloadOpener = (scope: PayloadScope | null) => Promise<boolean>;

/** The service's own reads of its own secrets (the identity, peers' keys): never a caller's. */
export const SERVICE_OPENER: PayloadOpener = async (scope) => scope === 'service' || scope === null;

/** The node identity's reads of its own key: sealed under `identity`, or under `service` before 2026-12-07. */
export const IDENTITY_OPENER: PayloadOpener = async (scope) => scope === 'identity' || scope === 'service' || scope === null;

/** Encrypts JSON values into envelope text and back, with no storage of its own (identity, inline values). */
export interface Sealer {
  seal(value: unknown, scope: PayloadScope): Promise<string>;
  /** UnreadablePayloadError (422) when it cannot decrypt, or `opener` refuses its scope. */
  unseal(sealed: string, opener: PayloadOpener): Promise<unknown>;
  /**
   * The service's own state handed to a caller and back (a trace's cursor): opaque, compact base64url that names no
   * key, bound to `context` (what it is for, and for which request), opened only by this service's own key.
   */
  sealToken(value: unknown, context: string): Promise<string>;
  /** UnreadablePayloadError (422) when `token` is not one sealToken made for `context` under this service's key. */
  unsealToken(token: string, context: string): Promise<unknown>;
}

export interface OffchainStore extends Sealer {
  /** Encrypts and stores a JSON value for `scope`. 503 when IPFS or KMS cannot be reached. */
  put(value: unknown, scope: PayloadScope): Promise<StoredPayload>;
  /**
   * Fetches and decrypts a payload for a caller: UnreadablePayloadError (422) when it cannot be read, or `opener`
   * refuses its scope (nothing is decrypted then); 503 when a dependency is down. Its bytes count against the
   * request's reads (shared/read-allowance.ts); `fetched` is told their number before anything is decrypted.
   */
  get(cid: string, nonce: string, opener: PayloadOpener, fetched?: (bytes: number) => void): Promise<unknown>;
  /** Throws when IPFS cannot be reached. */
  ping(): Promise<void>;
  /**
   * Removes a payload's blocks from our IPFS node (unpinned, then deleted): false when they were not
   * there. Copies other nodes made are out of reach; encrypted payloads stay ciphertext there.
   */
  remove(cid: string): Promise<boolean>;
}
