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

export interface AdminRepository {
  /** Marks a nonce of a signer (its key) used; false when it already was. Kept until `expiresAt` (epoch seconds). */
  useNonce(signer: string, nonce: string, expiresAt: number): Promise<boolean>;
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
