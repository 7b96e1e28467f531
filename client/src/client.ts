/**
 * LedgerClient: every route of the service, typed from its OpenAPI document, and in verified mode (the
 * default) every append and read checked against state the client keeps, so that a server that lies is
 * caught at once, not at the next audit (docs/clients.md).
 *
 * Verified mode, per chain (a log, named by its checkpoint origin `<key name>/<chain>`):
 * - The log's key is pinned: given (`vkey`, as /tlog/vkey serves it) or taken on first use and stored.
 * - The trusted state is the latest checkpoint verified: signed by the pinned key, naming this log, with
 *   the required witness cosignatures, and consistent (RFC 9162) with the state before it.
 * - A block is accepted when its contents hash to its `hash`, and that hash is a leaf of the trusted tree
 *   (an inclusion proof), or of a newer checkpoint that is then verified and becomes the trusted state.
 * Each check costs at most one request beyond the plain one: GET …/evidence answers the checkpoint, the
 * consistency proof and the inclusion proofs together. The checks themselves, and the trusted state, are the
 * prover's (prover.ts); this class says what each call proves and asks the service.
 */
import createClient, { type Client } from 'openapi-fetch';
import { checkBlock, checkLinks, sameEvent } from './blocks.ts';
import { ApiError, type Appended, VerificationError } from './errors.ts';
import { type EvidenceQuery, Prover } from './prover.ts';
import { MemoryStore, type StateStore, type TrustedState } from './state.ts';
import type { Block, BlocksPage, ChainInfo, ChainStats, EntityTrace, EventInput, Evidence, Health, LedgerEvent, paths } from './types.ts';

export interface RetryOptions {
  /** Tries per call, the first included (default 4). */
  attempts?: number;
  /** The longest single wait, whatever Retry-After says (default 10 000 ms). */
  maxDelayMs?: number;
}

export interface WitnessPolicy {
  /** The witnesses' cosigner verifier keys (`<name>+<id>+<base64(0x04 ‖ key)>`). */
  keys: readonly string[];
  /** How many of them must have cosigned every checkpoint the client accepts (default: all). */
  required?: number;
}

export interface ClientOptions {
  /** The service's base URL, e.g. `http://localhost:2661`. */
  baseUrl: string;
  /** Sent as `X-API-Key` (or `apiKeyHeader`). */
  apiKey?: string;
  apiKeyHeader?: string;
  /** Check every answer (default true). Off, the client is a typed HTTP client and nothing more. */
  verify?: boolean;
  /** The log's verifier key (GET /tlog/vkey). Unset: the node's own, on first use, kept in the store. */
  vkey?: string;
  witnesses?: WitnessPolicy;
  /** Where the pinned key and the trusted states live (default: in memory). */
  store?: StateStore;
  retry?: RetryOptions;
  /** A fetch to use instead of the global one (tests, proxies, custom agents). */
  fetch?: typeof fetch;
  /**
   * Longest wait for one attempt, its answer read whole (default 30 000 ms): a node that never answers, or answers a
   * drop at a time, is an error, never a wait without end.
   */
  timeoutMs?: number;
  /**
   * Largest answer read, decoded (default 32 MiB, far above any the service sends: a Lambda answer is at most 6 MB):
   * an endless answer is an error, not the process's memory.
   */
  maxAnswerBytes?: number;
  /**
   * The service's SVC_OFFCHAIN_THRESHOLD_BYTES (default 65,536, the service's own default): details sent inline that
   * are no larger must come back on chain. Moved off chain, only the service's word says what they are.
   */
  offchainThresholdBytes?: number;
}

/**
 * What an append resolves to. Verified: the event's block and the signed checkpoint that proves it in
 * (`verified: true`); unverified mode answers the event id alone.
 */
export type Receipt =
  | { verified: true; event_id: string; block: Block; checkpoint: { size: number; root: string; note: string } }
  | { verified: false; event_id: string; block?: undefined; checkpoint?: undefined };

/** The most leaves one evidence request takes (the service's limit). */
const MAX_EVIDENCE_LEAVES = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `orders_4_0` → chain `orders`, block 4 (chain names may hold `_`: read from the right). */
export function parseEventId(eventId: string): { chain: string; block: number } {
  const match = /^(.+)_(\d+)_(\d+)$/.exec(eventId);
  if (!match) throw new TypeError(`'${eventId}' is not an event id <chain>_<block>_<position>`);
  return { chain: match[1]!, block: Number(match[2]) };
}

/** Redirects a GET follows (a node moved behind a CDN answers 301 or 308). */
const MAX_REDIRECTS = 5;

/**
 * `fetch` with the limits a client facing any node needs: each attempt ends at `timeoutMs` (its answer read whole
 * included), an answer past `maxAnswerBytes` is an error, and the API key goes only to the host it was given for.
 * Redirects are followed here, not by `fetch` (which keeps every header but `Authorization` on another origin): a
 * GET's, to another host without the key, never from https to plain http; another method's redirect is answered as
 * it came. Where `fetch` cannot show a redirect (a browser's opaque one), it is followed by `fetch`, without the key.
 */
function boundedFetch(base: typeof fetch, keyHeader: string, timeoutMs: number, maxAnswerBytes: number) {
  return async (request: Request): Promise<Response> => {
    let current = request;
    for (let redirects = 0; ; redirects += 1) {
      const signal = AbortSignal.any([current.signal, AbortSignal.timeout(timeoutMs)]);
      const follows = current.method === 'GET' && redirects < MAX_REDIRECTS;
      const response = await base(current, { signal, redirect: follows ? 'manual' : 'follow' });
      if (response.type === 'opaqueredirect') {
        const headers = new Headers(current.headers);
        headers.delete(keyHeader);
        return capped(await base(new Request(current, { headers }), { signal, redirect: 'follow' }), maxAnswerBytes);
      }
      const location = response.headers.get('Location');
      if (!follows || response.status < 300 || response.status > 399 || !location) return capped(response, maxAnswerBytes);
      await response.body?.cancel();
      const from = new URL(current.url);
      const to = new URL(location, from);
      if (from.protocol === 'https:' && to.protocol !== 'https:')
        throw new TypeError(`${from.host} redirected to ${to.protocol}//${to.host}, off https: not followed (give the node's https address as baseUrl)`);
      const headers = new Headers(current.headers);
      if (to.host !== from.host) headers.delete(keyHeader);
      current = new Request(to, { method: 'GET', headers, signal: current.signal });
    }
  };
}

/** The answer, its body cut off with an error past `max` bytes (decoded: `fetch` has already undone gzip or br). */
function capped(response: Response, max: number): Response {
  if (!response.body || response.status < 200) return response;
  let seen = 0;
  const limit = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      seen += chunk.byteLength;
      if (seen > max) controller.error(new RangeError(`the answer of ${new URL(response.url || 'http://node/').host} is larger than ${max} bytes`));
      else controller.enqueue(chunk);
    },
  });
  const out = new Response(response.body.pipeThrough(limit), { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperty(out, 'url', { value: response.url });
  return out;
}

export class LedgerClient {
  /** Every route, typed from the OpenAPI document (openapi-fetch): answers are not verified here. */
  readonly api: Client<paths>;
  readonly #options: ClientOptions;
  readonly #fetch: typeof fetch;
  readonly #prover: Prover;

  constructor(options: ClientOptions) {
    this.#options = options;
    const baseFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    const { attempts = 4, maxDelayMs = 10_000 } = options.retry ?? {};
    const keyHeader = options.apiKeyHeader ?? 'X-API-Key';
    const send = boundedFetch(baseFetch, keyHeader, options.timeoutMs ?? 30_000, options.maxAnswerBytes ?? 32 * 1024 * 1024);
    this.#fetch = async (input, init) => {
      const request = new Request(input, init);
      if (options.apiKey && !request.headers.has(keyHeader)) request.headers.set(keyHeader, options.apiKey);
      // Safe to send again: reads, and appends that carry an Idempotency-Key (the service answers the first result).
      const repeatable = request.method === 'GET' || request.headers.has('Idempotency-Key');
      for (let attempt = 1; ; attempt += 1) {
        let response: Response;
        try {
          response = await send(request.clone());
        } catch (error) {
          if (!repeatable || attempt >= attempts) throw error;
          await sleep(Math.min(maxDelayMs, 200 * 2 ** attempt));
          continue;
        }
        const retryable = response.status === 429 || (response.status === 503 && repeatable) || (response.status === 504 && repeatable);
        if (!retryable || attempt >= attempts) return response;
        const after = Number(response.headers.get('Retry-After'));
        await response.body?.cancel();
        await sleep(Math.min(maxDelayMs, Number.isFinite(after) && after > 0 ? after * 1000 : 200 * 2 ** attempt));
      }
    };
    this.api = createClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), fetch: this.#fetch });
    this.#prover = new Prover({
      store: options.store ?? new MemoryStore(),
      vkey: options.vkey,
      fetchVkey: () => this.tlog.vkey(),
      witnesses: options.witnesses,
      evidence: (chain, indices, query) => this.#evidence(chain, indices, query),
    });
  }

  get verifying(): boolean {
    return this.#options.verify !== false;
  }

  /** Unwraps an openapi-fetch answer, or throws the service's error as ApiError. */
  async #data<T>(method: string, call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (response.ok) return data as T;
    const body = (error ?? {}) as { detail?: unknown; request_id?: string; message?: string };
    const after = Number(response.headers.get('Retry-After'));
    const url = new URL(response.url || 'http://unknown/');
    throw new ApiError(
      response.status,
      body.detail ?? body.message ?? response.statusText,
      body.request_id ?? response.headers.get('X-Request-ID') ?? undefined,
      Number.isFinite(after) && after > 0 ? after : undefined,
      method,
      url.pathname,
    );
  }

  // -------------------------------------------------------------------------------------------------
  // Plain calls (nothing to verify: they are not the ledger's contents)

  health(): Promise<Health> {
    return this.#data('GET', this.api.GET('/api/v1/health'));
  }

  /**
   * A page of the chain list: the Main Chain first, then Sub-Chains by name, up to `limit` (default and most 1,000)
   * after the chain named `after`. A page as long as `limit` may have more after it: ask again with its last name.
   */
  chains(page: { limit?: number; after?: string } = {}): Promise<ChainInfo[]> {
    const query = { ...(page.limit !== undefined ? { limit: String(page.limit) } : {}), ...(page.after !== undefined ? { after: page.after } : {}) };
    return this.#data('GET', this.api.GET('/api/v1/chains', { params: { query } }));
  }

  stats(chain: string): Promise<ChainStats> {
    return this.#data('GET', this.api.GET('/api/v1/chains/{chain_name}/stats', { params: { path: { chain_name: chain } } }));
  }

  createChain(chain: string): Promise<{ chain_name: string; message: string }> {
    return this.#data('POST', this.api.POST('/api/v1/chains/{chain_name}/create', { params: { path: { chain_name: chain } } }));
  }

  submitProof(chain: string): Promise<{ proof_id: string; message: string }> {
    return this.#data('POST', this.api.POST('/api/v1/chains/{chain_name}/submit-proof', { params: { path: { chain_name: chain } } }));
  }

  // -------------------------------------------------------------------------------------------------
  // Appends

  /**
   * Appends one event. Retries reuse one Idempotency-Key (yours, or a fresh UUID), so a retried append
   * never lands twice. Verified, it resolves only once the event's block is proven into a signed
   * checkpoint consistent with the trusted state.
   */
  async append(chain: string, event: EventInput, options: { idempotencyKey?: string } = {}): Promise<Receipt> {
    const key = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    const before = await this.#sizeBefore(chain, options.idempotencyKey);
    const answer = await this.#data(
      'POST',
      this.api.POST('/api/v1/chains/{chain_name}/events', {
        params: { path: { chain_name: chain }, header: { 'Idempotency-Key': key } },
        body: event,
      }),
    );
    const [receipt] = await this.#receipts(chain, [answer.event_id], [event], key, before);
    return receipt!;
  }

  /** Appends up to 99 events atomically, one block each; verified like `append`. */
  async appendBatch(chain: string, events: EventInput[], options: { idempotencyKey?: string } = {}): Promise<Receipt[]> {
    const key = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    const before = await this.#sizeBefore(chain, options.idempotencyKey);
    const answer = await this.#data(
      'POST',
      this.api.POST('/api/v1/chains/{chain_name}/events/batch', {
        params: { path: { chain_name: chain }, header: { 'Idempotency-Key': key } },
        body: { events },
      }),
    );
    return this.#receipts(chain, answer.event_ids, events, key, before);
  }

  /**
   * The trusted size of `chain` before an append with a key of this client's own is sent: that append's blocks are new,
   * so none can be below it (a server answering an earlier event's id for it is caught). A caller's key may be a retry
   * of an append that landed before, so it gets no such bound.
   */
  async #sizeBefore(chain: string, callersKey: string | undefined): Promise<number> {
    if (!this.verifying || callersKey !== undefined) return 0;
    return (await this.#prover.trustedState(chain))?.size ?? 0;
  }

  /**
   * The receipts of events the service acknowledged, proven. A failure from here on is not a failed append:
   * the error says what landed (`appended`), so that the caller neither appends again nor loses the events.
   */
  async #receipts(chain: string, eventIds: string[], sent: EventInput[], idempotencyKey: string, sizeBefore: number): Promise<Receipt[]> {
    try {
      return await this.#proveReceipts(chain, eventIds, sent, sizeBefore);
    } catch (error) {
      // ApiError and VerificationError declare it; any other error (the network, after the retries) carries it too.
      if (error instanceof Error) Object.assign(error, { appended: { chain, event_ids: eventIds, idempotency_key: idempotencyKey } satisfies Appended });
      throw error;
    }
  }

  async #proveReceipts(chain: string, eventIds: string[], sent: EventInput[], sizeBefore: number): Promise<Receipt[]> {
    const indices = eventIds.map((id) => parseEventId(id).block);
    if (!this.verifying) {
      return eventIds.map((event_id) => ({ verified: false, event_id }));
    }
    const mismatch = (message: string) => new VerificationError('event-mismatch', message, chain);
    if (eventIds.length !== sent.length) throw mismatch(`${sent.length} events were sent, ${eventIds.length} event ids answered`);
    // One block each, in the order sent, consecutive (one commit).
    for (const [i, index] of indices.entries()) {
      if (i > 0 && index !== indices[i - 1]! + 1)
        throw mismatch(`the events of one batch are in blocks ${indices[i - 1]} and ${index}, not one after the other`);
    }
    const { blocks, state } = await this.#prover.prove(chain, indices, { withBlocks: true, advance: true });
    // And new: below the size trusted before the request was sent, a block cannot hold this request's event (checked
    // once the log is proven to extend that state, so that a log that went back is told as the rollback it is).
    for (const [i, index] of indices.entries()) {
      if (index < sizeBefore) throw mismatch(`event ${eventIds[i]} is in block ${index}, which was in the log before this append was sent`);
    }
    const receipts: Receipt[] = [];
    for (const [i, event_id] of eventIds.entries()) {
      const block = blocks.get(indices[i]!)!;
      const event = block.events.find((e) => e.event_id === event_id);
      // An appended event is its block's only event: another beside it would be something nobody sent.
      if (!event || block.events.length !== 1) throw mismatch(`event ${event_id} is not the only event of block ${block.index}`);
      let same = matchesInput(event, sent[i]!, this.#options.offchainThresholdBytes ?? DEFAULT_OFFCHAIN_THRESHOLD_BYTES);
      if (same === 'resolve') same = await this.#resolvedMatches(chain, event, sent[i]!);
      if (!same) throw mismatch(`event ${event_id} in block ${block.index} is not the event that was sent`);
      receipts.push({ verified: true, event_id, block, checkpoint: { size: state.size, root: state.root, note: state.checkpoint } });
    }
    return receipts;
  }

  /**
   * Whether the details a service moved off chain (only large ones: matchesInput) are the ones sent: the block read
   * again with them resolved, its event under the same reference as the proven one. The block hashes only the
   * reference, and only the service can open the payload, so this is the service's word that the reference stands for
   * the details sent, now bound to a signed checkpoint.
   */
  async #resolvedMatches(chain: string, proven: LedgerEvent, sent: EventInput): Promise<boolean> {
    const block = await this.#data(
      'GET',
      this.api.GET('/api/v1/chains/{chain_name}/blocks/{index_or_hash}', {
        params: { path: { chain_name: chain, index_or_hash: String(proven.block_index) }, query: { resolve_cid: 'true' } },
      }),
    );
    const resolved = block.events.find((e) => e.event_id === proven.event_id);
    if (!resolved || resolved.details_cid !== proven.details_cid || resolved.details_nonce !== proven.details_nonce || resolved.resolve_error) return false;
    return sameJson(resolved.details ?? {}, (sent as { details?: unknown }).details ?? {});
  }

  // -------------------------------------------------------------------------------------------------
  // Reads

  /** One block, by index or hash. */
  async block(chain: string, indexOrHash: number | string): Promise<Block> {
    if (this.verifying && typeof indexOrHash === 'number') {
      // By index, the block comes with its proof in one answer (evidence with blocks). Evidence carries a block as
      // the chain holds it, so an erasable event's details are sealed there: such a block is read again as the
      // service answers it (opened, or erased), and must have the proven hash.
      // Checked there: its hash against its contents, its chain, and its index (the answer's blocks are keyed by their own).
      const proven = (await this.#prover.prove(chain, [indexOrHash], { withBlocks: true })).blocks.get(indexOrHash)!;
      if (!proven.events.some((e) => e.subject_id !== undefined)) return proven;
      const block = await this.#blockAsAnswered(chain, indexOrHash);
      checkBlock(block, chain, indexOrHash);
      if (block.hash !== proven.hash) throw new VerificationError('wrong-block', `block ${indexOrHash} is ${block.hash}, its proof says ${proven.hash}`, chain);
      return block;
    }
    const block = await this.#blockAsAnswered(chain, indexOrHash);
    if (!this.verifying) return block;
    checkBlock(block, chain, typeof indexOrHash === 'number' ? indexOrHash : undefined);
    if (typeof indexOrHash === 'string' && !/^\d+$/.test(indexOrHash) && block.hash !== indexOrHash) {
      throw new VerificationError('wrong-block', `asked for the block with hash ${indexOrHash}, got ${block.hash}`, chain);
    }
    await this.#prover.prove(chain, [block.index], { have: [block] });
    return block;
  }

  /** The block route's answer, unchecked. */
  #blockAsAnswered(chain: string, indexOrHash: number | string): Promise<Block> {
    return this.#data(
      'GET',
      this.api.GET('/api/v1/chains/{chain_name}/blocks/{index_or_hash}', { params: { path: { chain_name: chain, index_or_hash: String(indexOrHash) } } }),
    );
  }

  /** A page of blocks: proven by its highest block's inclusion and the links between them. */
  async blocks(chain: string, page: { limit?: number; offset?: number; order?: 'asc' | 'desc' } = {}): Promise<BlocksPage> {
    const query = {
      limit: page.limit === undefined ? undefined : String(page.limit),
      offset: page.offset === undefined ? undefined : String(page.offset),
      order: page.order,
    };
    const answer = await this.#data('GET', this.api.GET('/api/v1/chains/{chain_name}/blocks', { params: { path: { chain_name: chain }, query } }));
    if (!this.verifying || answer.blocks.length === 0) return answer;
    for (const block of answer.blocks) checkBlock(block, chain);
    checkLinks(answer.blocks, chain);
    await this.#prover.prove(
      chain,
      answer.blocks.map((b) => b.index).sort((a, b) => a - b),
      { have: answer.blocks },
    );
    return answer;
  }

  /** One event by its id, from its verified block. */
  async event(eventId: string): Promise<LedgerEvent> {
    const { chain, block: index } = parseEventId(eventId);
    const block = await this.block(chain, index);
    const event = block.events.find((e) => e.event_id === eventId);
    if (!event) throw new ApiError(404, `Event '${eventId}' is not in block ${index} of '${chain}'`, undefined, undefined, 'GET', eventId);
    return event;
  }

  /**
   * An entity's events across chains (or on `chain`). Each event is checked against its block, proven
   * into its chain's tree: one evidence request per chain the trace touches (per 100 blocks). What it cannot show is that
   * no event was left out. A page at a time: `limit` events (100 by default, at most 1,000), on from `cursor` (the
   * `next_cursor` of the page before; null on the last page).
   */
  async trace(entityId: string, options: { chain?: string; limit?: number; cursor?: string } = {}): Promise<EntityTrace> {
    const answer = await this.#data(
      'GET',
      this.api.GET('/api/v1/entities/{entity_id}/trace', {
        params: {
          path: { entity_id: entityId },
          query: { chain_name: options.chain, limit: options.limit === undefined ? undefined : String(options.limit), cursor: options.cursor },
        },
      }),
    );
    if (!this.verifying) return answer;
    const byChain = new Map<string, LedgerEvent[]>();
    for (const event of answer.events) byChain.set(event.chain_name, [...(byChain.get(event.chain_name) ?? []), event]);
    await Promise.all(
      [...byChain].map(async ([chain, events]) => {
        const indices = [...new Set(events.map((e) => e.block_index))].sort((a, b) => a - b);
        // An evidence answer covers at most 100 leaves: a longer trace takes one request per 100 blocks.
        const blocks = new Map<number, Block>();
        for (let at = 0; at < indices.length; at += MAX_EVIDENCE_LEAVES) {
          for (const [index, block] of (await this.#prover.prove(chain, indices.slice(at, at + MAX_EVIDENCE_LEAVES), { withBlocks: true })).blocks) {
            blocks.set(index, block);
          }
        }
        for (const event of events) {
          const stored = blocks.get(event.block_index)?.events.find((e) => e.event_id === event.event_id);
          if (!stored || !sameEvent(event, stored)) {
            throw new VerificationError('event-mismatch', `event ${event.event_id} differs from the event in block ${event.block_index}`, chain);
          }
        }
      }),
    );
    return answer;
  }

  /** The chain's latest checkpoint, verified against the trusted state, which moves on to it. */
  async checkpoint(chain: string): Promise<TrustedState> {
    if (!this.verifying) throw new TypeError('checkpoint() verifies: it needs verified mode');
    return (await this.#prover.prove(chain, [], { advance: true })).state;
  }

  /** The trusted state of a chain, if the client has one. */
  trustedState(chain: string): Promise<TrustedState | undefined> {
    return this.#prover.trustedState(chain);
  }

  // -------------------------------------------------------------------------------------------------
  // The C2SP view (plain: the tiles are for auditors that check them themselves)

  readonly tlog = {
    vkey: async (): Promise<string> => (await this.#text('/tlog/vkey')).trim(),
    checkpoint: (chain: string): Promise<string> => this.#text(`/tlog/${encodeURIComponent(chain)}/checkpoint`),
    tile: async (chain: string, path: string): Promise<Uint8Array> => {
      const response = await this.#raw(`/tlog/${encodeURIComponent(chain)}/tile/${path}`);
      return new Uint8Array(await response.arrayBuffer());
    },
  };

  async #raw(path: string): Promise<Response> {
    const response = await this.#fetch(`${this.#options.baseUrl.replace(/\/+$/, '')}${path}`);
    if (!response.ok) {
      const body = (await response.json().catch(() => ({}))) as { detail?: unknown; request_id?: string };
      throw new ApiError(response.status, body.detail ?? response.statusText, body.request_id, undefined, 'GET', path);
    }
    return response;
  }

  async #text(path: string): Promise<string> {
    return (await this.#raw(path)).text();
  }

  /** One evidence request (the prover decides what it asks). */
  async #evidence(chain: string, indices: number[], query: EvidenceQuery): Promise<Evidence> {
    return this.#data(
      'GET',
      this.api.GET('/api/v1/chains/{chain_name}/evidence', {
        params: {
          path: { chain_name: chain },
          query: {
            leaves: indices.length ? indices.join(',') : undefined,
            tree_size: query.tree_size === undefined ? undefined : String(query.tree_size),
            known_size: query.known_size === undefined ? undefined : String(query.known_size),
            blocks: query.blocks ? 'true' : undefined,
            witnessed: query.witnessed ? 'true' : undefined,
          },
        },
      }),
    );
  }
}

/** The service's default SVC_OFFCHAIN_THRESHOLD_BYTES. */
const DEFAULT_OFFCHAIN_THRESHOLD_BYTES = 65_536;

/**
 * Whether a stored event is what the client sent: every field the request sets (entity, type, the data subject, the
 * details' metadata, and the details or the off-chain reference given for them). 'resolve' when the service moved
 * the details off chain itself: only their resolved form can be compared.
 */
function matchesInput(event: LedgerEvent, sent: EventInput, offchainThresholdBytes: number): boolean | 'resolve' {
  const input = sent as Record<string, unknown>;
  if (event.entity_id !== input.entity_id || event.event_type !== (input.event_type ?? input.event)) return false;
  if (event.subject_id !== input.subject_id) return false;
  if (!sameJson(event.details_metadata ?? null, input.details_metadata ?? null)) return false;
  if (input.subject_id !== undefined) return true; // the details are sealed under the subject's key on chain
  if (input.details_cid !== undefined && input.details_cid !== null) {
    return event.is_offchain && event.details_cid === input.details_cid && event.details_nonce === (input.details_nonce ?? null);
  }
  if (event.is_offchain) {
    // The service moves only details larger than its threshold: smaller ones off chain are a reference it chose.
    const size = new TextEncoder().encode(JSON.stringify(input.details ?? {})).length;
    return size > offchainThresholdBytes ? 'resolve' : false;
  }
  return event.details_cid == null && sameJson(event.details ?? {}, input.details ?? {});
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}
