/** Talking to the service: the key rides in a header on HTTP and in `?api_key=` on the WebSocket. */

export interface ExplorerConfig {
  ws_url: string | null;
  api_key_header: string;
  /** The witnesses' cosigner vkeys the service is given (pinned by the page at first use). */
  witnesses?: string[];
}

export interface ChainInfo {
  name: string;
  type: 'main' | 'sub';
  block_count: number;
  latest_block_hash: string | null;
}

export interface LedgerEvent {
  event_id: string;
  entity_id: string;
  event_type: string;
  chain_name?: string;
  details: Record<string, unknown>;
  /** A data subject's event: its details are sealed in the block, and shown as the service opened them. */
  subject_id?: string;
  /** A secure event: who signed it (the verified client checks the signature with the block). */
  signed?: { org_id: string; public_key: string };
}

export interface Block {
  index: number;
  chain_name: string;
  timestamp: number;
  previous_hash: string;
  hash: string;
  events: LedgerEvent[];
}

export interface BlockPage {
  chain_name: string;
  total: number;
  limit: number;
  offset: number;
  blocks: Block[];
}

export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const KEY_STORE = 'ledger-explorer-key';
let config: ExplorerConfig = { ws_url: null, api_key_header: 'X-API-Key' };

/** The header a key rides in (the service's setting, from its config). */
export const apiKeyHeader = (): string => config.api_key_header;

/** The witnesses' cosigner vkeys the service says it has (the page pins them at first use: verify.ts). */
export const configuredWitnesses = (): string[] => config.witnesses ?? [];

export const apiKey = {
  get: (): string => sessionStorage.getItem(KEY_STORE) ?? '',
  set: (value: string): void => (value ? sessionStorage.setItem(KEY_STORE, value) : sessionStorage.removeItem(KEY_STORE)),
};

export async function loadConfig(): Promise<void> {
  config = (await request<ExplorerConfig>('/explorer/config.json')) ?? config;
}

/** Calls the API; a non-2xx answer becomes an ApiError carrying the contract's `detail`. */
export async function request<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const headers: Record<string, string> = {};
  const key = apiKey.get();
  if (key) headers[config.api_key_header] = key;
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  const text = await response.text();
  const json = text ? (JSON.parse(text) as unknown) : undefined;
  if (!response.ok) {
    const detail = (json as { detail?: unknown } | undefined)?.detail;
    throw new ApiError(response.status, typeof detail === 'string' ? detail : `${response.status} ${response.statusText}`);
  }
  return json as T;
}

export function webSocketUrl(): string {
  const base = config.ws_url ?? `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
  const key = apiKey.get();
  return key ? `${base}${base.includes('?') ? '&' : '?'}api_key=${encodeURIComponent(key)}` : base;
}

export const path = {
  chains: () => '/api/v1/chains',
  blocks: (chain: string, limit: number, offset: number) => `/api/v1/chains/${encodeURIComponent(chain)}/blocks?limit=${limit}&offset=${offset}&order=desc`,
  block: (chain: string, id: string | number) => `/api/v1/chains/${encodeURIComponent(chain)}/blocks/${encodeURIComponent(String(id))}`,
  proof: (chain: string, index: number) => `/api/v1/chains/${encodeURIComponent(chain)}/blocks/${index}/proof`,
  anchor: (chain: string, index: number) => `/api/v1/chains/${encodeURIComponent(chain)}/blocks/${index}/anchor`,
  identity: () => '/api/admin/identity',
  decode: () => '/api/admin/ipfs/decode',
};
