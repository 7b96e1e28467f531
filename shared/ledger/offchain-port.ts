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

/** Encrypts JSON values into envelope text and back, with no storage of its own (identity, inline values). */
export interface Sealer {
  seal(value: unknown): Promise<string>;
  /** UnreadablePayloadError (422) when it cannot decrypt. */
  unseal(sealed: string): Promise<unknown>;
}

export interface OffchainStore extends Sealer {
  /** Encrypts and stores a JSON value. 503 when IPFS or KMS cannot be reached. */
  put(value: unknown): Promise<StoredPayload>;
  /** Fetches and decrypts a payload. UnreadablePayloadError (422) when it cannot be read; 503 when a dependency is down. */
  get(cid: string, nonce: string): Promise<unknown>;
  /** Throws when IPFS cannot be reached. */
  ping(): Promise<void>;
  /**
   * Removes a payload's blocks from our IPFS node (unpinned, then deleted): false when they were not
   * there. Copies other nodes made are out of reach; encrypted payloads stay ciphertext there.
   */
  remove(cid: string): Promise<boolean>;
}
