/** What the admin domain needs from storage: the port (the registry table implements it). */

export interface PeerRecord {
  peer_id: string;
  url: string;
  /** Ed25519, 64 hex characters. */
  public_key: string;
  /** An API key for calling the peer, sealed (never stored or answered in clear). */
  sealed_api_key: string | null;
  created_at: string;
}

/** How a signer of nonces is named: by its signing key, `key:<Ed25519 public key, hex>` (an organization's id before 2026-12-06). */
export const NONCE_KEY_SIGNER = 'key:';

export interface AdminRepository {
  /**
   * Marks a nonce of a signer (its key) used, for good; false when it already was. Kept as long as the event it let in
   * (a nonce that expired let the same signed body in again, red team 2026-12-07).
   */
  useNonce(signer: string, nonce: string): Promise<boolean>;
  /** Gives a nonce back (its event could not be appended), so that a retry is not refused. */
  releaseNonce(signer: string, nonce: string): Promise<void>;
  putPeer(peer: PeerRecord): Promise<boolean>;
  getPeer(peerId: string): Promise<PeerRecord | undefined>;
  listPeers(): Promise<PeerRecord[]>;
  /** The node identity document kept in the table (cloud), if any. */
  getIdentity(): Promise<string | undefined>;
  /** Stores the identity document unless one exists; false when one did (another instance won). */
  putIdentity(document: string): Promise<boolean>;
  /** Replaces the identity document if it is still `current` (the same key sealed anew); false when it was not. */
  replaceIdentity(current: string, next: string): Promise<boolean>;
}
