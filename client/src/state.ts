/**
 * Where a verifying client keeps what it trusts: the pinned log key and, per log, the latest checkpoint
 * it verified. A store holds strings by key; the client decides what they mean. MemoryStore forgets at
 * exit; FileStore (`@verifiable-ledger/client/file-store`, Node) keeps them in a file.
 */
export interface StateStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  /**
   * Optional: changes one value atomically against whatever else shares the store (another client, another process):
   * `change` is given the value as it is now and answers the new one, or undefined to keep it. A store shared that
   * way needs it, or a client's older trusted state can overwrite a newer one.
   */
  update?(key: string, change: (current: string | undefined) => string | undefined): Promise<void>;
}

export class MemoryStore implements StateStore {
  readonly #values = new Map<string, string>();
  async get(key: string) {
    return this.#values.get(key);
  }
  async set(key: string, value: string) {
    this.#values.set(key, value);
  }
  async update(key: string, change: (current: string | undefined) => string | undefined) {
    const next = change(this.#values.get(key));
    if (next !== undefined) this.#values.set(key, next);
  }
}

/** A log's trusted state: the latest checkpoint the client verified. */
export interface TrustedState {
  origin: string;
  size: number;
  /** base64, 32 bytes. */
  root: string;
  /** The signed note it came as, cosignatures included. */
  checkpoint: string;
}
