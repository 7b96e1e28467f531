/**
 * One page of a chain's blocks, checked on its own: each block's index and chain, its hash recomputed from the
 * public rule (RFC 8785 + SHA-256), and its link to the block before it on the page. What links pages together
 * and builds the tree is the verifier's (verifier.ts), in order; a page is checked wherever it is fetched, in the
 * verifier's thread or in a worker (page-workers.ts), so that an audit uses every core. Pure client code.
 */
import { asStored, hashBlock } from '../ledger/hashing.ts';
import { signatureProblem } from '../ledger/signed-events.ts';
import { alignedSubtrees, leafHash } from '../ledger/merkle.ts';

/** A block as the verifier reads it (the fields it checks; the rest is hashed as it comes). */
export interface Block {
  index: number;
  chain_name: string;
  previous_hash: string;
  hash: string;
  events: {
    event_id?: string;
    entity_id: string;
    event_type: string;
    details: Record<string, unknown>;
    details_metadata: Record<string, unknown> | null;
    is_offchain?: boolean;
  }[];
}

/** Blocks per page: the API's largest, at offsets that are multiples of it (a node keeps such pages whole). */
export const PAGE = 100;

/** A problem the verdict names: its message, and the first block it concerns when one can be named. */
export class Failure extends Error {
  readonly block: number | null;
  /** The node refused the request (401, 403): nothing was found wrong, nothing could be checked. */
  readonly refused: boolean;
  constructor(message: string, block: number | null = null, refused = false) {
    super(message);
    this.block = block;
    this.refused = refused;
  }
}

/** Whether a status is the node refusing the request (a key missing, unknown, or without the right): no evidence. */
export const isRefusal = (status: number) => status === 401 || status === 403;

export interface PageRequest {
  chain: string;
  /** The page's first block. */
  offset: number;
  /** Blocks the verifier checks (the signed tree's size): blocks past it are ignored. */
  size: number;
  /** Whether the checked blocks are wanted back (an anchor's or a caller's reading of them). */
  keepBlocks: boolean;
  /** Tree sizes inside the page at which the verifier needs the root (an anchor's, a saved checkpoint's). */
  cuts?: number[];
}

export interface CheckedPage {
  /** The hashes of the page's blocks that passed every check, in order from the page's first block. */
  hashes: string[];
  /** The first block's `previous_hash`, for the verifier to link to the page before. */
  previous: string | null;
  /**
   * Those blocks' part of the tree (RFC 6962): the perfect subtrees over their hashes, in order, split at the
   * request's cuts (merkle.ts, alignedSubtrees), each root in hex. The verifier appends these, not each block.
   */
  subtrees: { level: number; root: string }[];
  /** Events of those blocks whose data subject was erased. */
  erased: number;
  /** Those blocks, when asked for. */
  blocks?: Block[];
  /**
   * The first check that failed, at the block after the last good one; `block` null when the page itself could
   * not be had (the node unreachable, or an error answer): nothing of it was checked.
   */
  failure?: { message: string; block: number | null; refused?: boolean };
  /** How long the page took to arrive (its request sent to its answer parsed) and to check, in ms. */
  timing?: PageTiming;
}

export interface PageTiming {
  fetchMs: number;
  checkMs: number;
}

/** The most pages a verifier keeps in flight: a node 100 ms away then answers up to 320 pages (32,000 blocks) a second. */
export const MAX_PAGES_IN_FLIGHT = 32;

/**
 * How many pages to keep in flight, from how long they take to arrive and to check (Little's law). Each lane (a
 * worker, or the verifier's own thread) checks a page in `checkMs`; to be never left waiting, it needs the pages
 * that arrive while it checks: 1 + fetchMs / checkMs of them. `fetchMs` is the quickest page seen, the node's
 * distance and its own work, not the time a page queued behind the others in flight: with the local stack (10–15 ms
 * for its quickest page, about 1 ms to check one) that is 10–32 pages; with a node in another region, the cap.
 * A fixed 6 in flight held an audit of a node 100 ms away to 6 pages a round trip: 4,100–4,600 blocks/s, with the
 * verifier's CPU half idle (`bench/probes/verifier-threads.ts` with DELAY_MS=100).
 */
export class PageWindow {
  private quickestFetchMs = Number.POSITIVE_INFINITY;
  private checkMs: number | undefined;

  private readonly lanes: number;
  private readonly least: number;
  private readonly most: number;
  constructor(lanes: number, least: number, most = MAX_PAGES_IN_FLIGHT) {
    this.lanes = lanes;
    this.least = least;
    this.most = most;
  }

  observe(timing: PageTiming | undefined): void {
    if (!timing) return;
    this.quickestFetchMs = Math.min(this.quickestFetchMs, timing.fetchMs);
    // A moving average: a page's check time varies with its blocks' size and with what else the cores do.
    this.checkMs = this.checkMs === undefined ? timing.checkMs : this.checkMs + (timing.checkMs - this.checkMs) / 5;
  }

  get size(): number {
    if (this.checkMs === undefined || !Number.isFinite(this.quickestFetchMs)) return this.least;
    const wanted = Math.ceil(Math.max(1, this.lanes) * (1 + this.quickestFetchMs / Math.max(this.checkMs, 0.1)));
    return Math.min(this.most, Math.max(this.least, wanted));
  }
}

/**
 * The headers of every request to a node: its API key, if any, and the codings it may answer in. A node compresses a
 * large answer (a page of blocks) for a caller that accepts it, which saves the network five bytes in six and costs
 * both ends CPU: across a network it pays, and brotli (which `fetch` decodes, though it asks for gzip only) is the
 * cheaper for the node and the smaller; over loopback there is nothing to save, so a node on this machine is asked
 * for none.
 */
export function nodeHeaders(base: string, apiKey?: string, apiKeyHeader = 'X-API-Key'): Record<string, string> {
  const host = new URL(base).hostname;
  const local = host === 'localhost' || host === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(host);
  return { ...(apiKey ? { [apiKeyHeader]: apiKey } : {}), 'Accept-Encoding': local ? 'identity' : 'br, gzip' };
}

/**
 * A page of the signed tree's blocks. Named by the tree's size (`tree_size`), the answer never changes: a node that
 * has seen its chain reach that size answers it without reading the chain's head, and any cache may keep it. A node
 * that does not know `tree_size` answers the chain as it is now, and the blocks past `size` are not checked.
 */
export function pagePath(chain: string, offset: number, size: number): string {
  return `/api/v1/chains/${encodeURIComponent(chain)}/blocks?limit=${PAGE}&offset=${offset}&tree_size=${size}`;
}

/** A secure event's signature that does not verify, said as a page's failure (shared/ledger/signed-events.ts). */
function signedIn(block: Block): string | undefined {
  const problem = signatureProblem(block);
  return problem === undefined ? undefined : `block ${block.index} of '${block.chain_name}': ${problem}`;
}

/** Checks a page's blocks in order, up to the first that fails, and covers those that passed with their subtrees. */
export function checkPage(blocks: readonly Block[], { chain, offset, size, keepBlocks, cuts }: PageRequest): CheckedPage {
  const page: CheckedPage = { hashes: [], previous: blocks[0]?.previous_hash ?? null, erased: 0, subtrees: [], ...(keepBlocks ? { blocks: [] } : {}) };
  for (const block of blocks) {
    const expected = offset + page.hashes.length;
    if (expected >= size) break;
    const problem = !wellFormed(block)
      ? `block ${expected} of '${chain}' is malformed (not a block with a list of events)`
      : block.index !== expected
        ? `block ${expected} of '${chain}' is missing (the next block is ${block.index})`
        : block.chain_name !== chain
          ? `block ${expected} of '${chain}' names chain '${block.chain_name}'`
          : // Erasable events are answered opened (or erased): hashed as stored, with their sealed details.
            hashBlock(asStored(block as never)) !== block.hash
            ? `block ${expected} of '${chain}': its hash does not match its contents`
            : expected > offset && block.previous_hash !== page.hashes.at(-1)
              ? `block ${expected} of '${chain}' does not link to block ${expected - 1}`
              : signedIn(block);
    if (problem !== undefined) {
      page.failure = { message: problem, block: expected };
      break;
    }
    for (const event of block.events) if ((event as { erased?: boolean }).erased) page.erased += 1;
    page.hashes.push(block.hash);
    page.blocks?.push(block);
  }
  const leaves = page.hashes.map((hash) => leafHash(Buffer.from(hash, 'hex')));
  page.subtrees = alignedSubtrees(offset, leaves, cuts).map(({ level, root }) => ({ level, root: root.toString('hex') }));
  return page;
}

/** A node's answer as a verifier reads it: its status, its headers, and its body whole (decoded, if it was compressed). */
export interface NodeAnswer {
  status: number;
  headers: { get(name: string): string | null };
  body: Buffer;
}

/** A GET of a node: `fetch` (fromFetch) in the verifier's library, node:http in the CLI (node-get.ts, cheaper). */
export type NodeGet = (url: string, init: { headers: Record<string, string>; signal: AbortSignal }) => Promise<NodeAnswer>;

/**
 * `get`, noting in `seen.ok` once the node has answered a request with success: a refusal (401, 403) before that says
 * the verifier was not let in (nothing checked); after it, the node withheld what it had shown it could serve.
 */
export function notingSuccess(get: NodeGet, seen: { ok: boolean }): NodeGet {
  return async (url, init) => {
    const answer = await get(url, init);
    if (isOk(answer.status)) seen.ok = true;
    return answer;
  };
}

/** A `fetch` (the platform's, or a test's) as a NodeGet. */
export function fromFetch(http: typeof fetch): NodeGet {
  return async (url, init) => {
    const res = await http(url, init);
    return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
  };
}

/** A 2xx status: the answer is what was asked for. */
export const isOk = (status: number): boolean => status >= 200 && status < 300;

/** How a verifier reaches a node: its GET, base URL and headers, and whom to tell when the node asks it to wait. */
export interface NodeLink {
  http: NodeGet;
  base: string;
  headers: Record<string, string>;
  onWait?: ((wait: NodeWait) => void) | undefined;
}

/** A node's request to wait: over its rate limit (429, `limit` requests a minute when it says), or busy (503). */
export interface NodeWait {
  status: number;
  seconds: number;
  limit: number | null;
  path: string;
}

/**
 * Times a request is sent again after the node asked to wait: a node's rate limit (100 requests a minute per key by
 * default) stops an audit of more than about 10,000 blocks within its minute, and every page is a GET, safe to repeat.
 */
export const NODE_ATTEMPTS = 5;
/** The longest wait a node may ask for (its rate limit's window is a minute): a longer Retry-After ends the run. */
export const MAX_NODE_WAIT_S = 120;

/**
 * A GET of the node, sent again when the node answers 429 or 503 with a wait it names (Retry-After in seconds or as
 * a date; 1 s when it names none), up to NODE_ATTEMPTS times and MAX_NODE_WAIT_S a wait; any other answer, or the
 * last, is the caller's. A node out of reach is a Failure naming it.
 */
export async function askNode(node: NodeLink, path: string): Promise<NodeAnswer> {
  for (let attempt = 1; ; attempt += 1) {
    let res: NodeAnswer;
    try {
      res = await node.http(`${node.base}${path}`, { headers: node.headers, signal: AbortSignal.timeout(30_000) });
    } catch (error) {
      throw new Failure(`cannot reach ${node.base}: ${(error as Error).message}`);
    }
    if ((res.status !== 429 && res.status !== 503) || attempt >= NODE_ATTEMPTS) return res;
    const seconds = retryAfterSeconds(res.headers.get('retry-after'));
    if (seconds > MAX_NODE_WAIT_S) return res;
    const limit = Number(res.headers.get('x-ratelimit-limit'));
    node.onWait?.({ status: res.status, seconds, limit: Number.isInteger(limit) && limit > 0 ? limit : null, path });
    // Only the verifier's own process waits here (the CLI, a client): no function of the service verifies a node.
    await new Promise((done) => setTimeout(done, seconds * 1000));
  }
}

/** Retry-After as seconds: a number of them, or an HTTP date (RFC 9110 10.2.3); 1 when absent or unreadable. */
export function retryAfterSeconds(value: string | null): number {
  const text = value?.trim() ?? '';
  if (text === '') return 1;
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? 1 : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether an answered block has the shape a block's hash can be checked on: an object, its events objects in a list. */
export function wellFormed(block: unknown): boolean {
  return isObject(block) && Array.isArray(block.events) && block.events.every(isObject);
}

/** Fetches a page of the node and checks it; a node out of reach, or an error answer, is a Failure naming it. */
export async function fetchPage(node: NodeLink, request: PageRequest): Promise<CheckedPage> {
  const sent = performance.now();
  const answer = await getJson<{ blocks?: unknown } | null>(node, pagePath(request.chain, request.offset, request.size));
  if (!isObject(answer) || !Array.isArray(answer.blocks)) {
    throw new Failure(`the node's page of '${request.chain}' from block ${request.offset} holds no list of blocks`);
  }
  const blocks = answer.blocks as Block[];
  const arrived = performance.now();
  const page = checkPage(blocks, request);
  page.timing = { fetchMs: arrived - sent, checkMs: performance.now() - arrived };
  return page;
}

/** A JSON answer of the node; a node out of reach, or an error answer, is a Failure naming it. */
export async function getJson<T>(node: NodeLink, path: string): Promise<T> {
  const res = await askNode(node, path);
  let body: (T & { detail?: unknown }) | null = null;
  try {
    body = JSON.parse(res.body.toString('utf8')) as T & { detail?: unknown };
  } catch {
    // not JSON: named below if the status is an error's, else the caller finds nothing where it looks
  }
  if (!isOk(res.status)) throw new Failure(`${path} answered ${res.status}: ${JSON.stringify(body?.detail ?? body)}`, null, isRefusal(res.status));
  return body as T;
}
