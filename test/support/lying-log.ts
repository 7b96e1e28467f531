/**
 * A lying server for the verified client's tests: an HTTP proxy in front of the real stack that plays the
 * log itself. It signs checkpoints with its own key (the client pins it), computes the evidence from a
 * *view* of the chain's leaves, and in each mode lies one way: a changed block, a forked or rolled-back
 * history, another signing key, a dropped proof, another event for an append (or the newest block changed
 * under it), cosignatures dropped or forged. In `honest` mode it tells the truth, so the client's acceptance of the truth is tested too.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { consistencyProof, inclusionProof, leafHash, nodesFromLeafHashes, rootFromLeafHashes } from '#shared/ledger/merkle';
import { sealBlock } from '#shared/ledger/hashing';
import { checkpointText, signNote, verifierKey } from '#shared/tlog/note';

export type Lie =
  | 'honest'
  | 'tamper-block'
  | 'fork'
  | 'rollback'
  | 'same-size-other-root'
  | 'other-key'
  | 'drop-proof'
  | 'wrong-event'
  /** The same content appended twice: the second append answered with the first's event id, appending nothing. */
  | 'same-event-twice'
  /** The newest block: another event beside the appended one. */
  | 'inject-event'
  /** The newest block: its event's details_metadata changed. */
  | 'swap-metadata'
  /** The newest block: its event's details replaced by an off-chain reference the service chose. */
  | 'offchain-swap'
  /** As 'offchain-swap', and the block read with resolve_cid=true answers the details that were sent. */
  | 'offchain-swap-resolved'
  | 'drop-cosignature'
  | 'forge-cosignature'
  | 'retry-after-append'
  /** A forked history (as 'fork') to requests with `x-view: b` only, the honest one to the rest; no witness asked. */
  | 'fork-view-b'
  /** A split view: the honest history to requests without `x-view: b`, a forked one to those with it; each checkpoint is sent to the witness. */
  | 'split-view';

export interface Ed25519Signer {
  pub: Buffer;
  sign(bytes: Uint8Array): Buffer;
}

export function ed25519Signer(): Ed25519Signer {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { pub: publicKey.export({ format: 'der', type: 'spki' }).subarray(-32), sign: (bytes) => sign(null, bytes, privateKey) };
}

/** A C2SP cosigner (tlog-cosignature, Ed25519): its vkey (type 0x04) and the signature line it adds to a note. */
export function cosigner(name: string) {
  const key = ed25519Signer();
  const id = createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`), Buffer.from([0x04]), key.pub]))
    .digest()
    .subarray(0, 4);
  return {
    vkey: `${name}+${id.toString('hex')}+${Buffer.concat([Buffer.from([0x04]), key.pub]).toString('base64')}`,
    line(text: string, time = BigInt(Math.floor(Date.now() / 1000)), forge = false): string {
      const stamp = Buffer.alloc(8);
      stamp.writeBigUInt64BE(time);
      const signature = key.sign(Buffer.from(`cosignature/v1\ntime ${time}\n${text}`));
      if (forge) signature[0]! ^= 1;
      return `\u2014 ${name} ${Buffer.concat([id, stamp, signature]).toString('base64')}\n`;
    },
  };
}

interface RealBlock {
  index: number;
  hash: string;
  chain_name: string;
  timestamp: number;
  previous_hash: string;
  events: { details: Record<string, unknown>; event_id: string }[];
}

export interface LyingLog {
  url: string;
  /** The verifier key the lying log signs with (what a client pins). */
  vkey: string;
  lie: Lie;
  witness: ReturnType<typeof cosigner>;
  /** The real witness (`npm run witness`) that `split-view` sends its checkpoints to. */
  witnessUrl?: string;
  close(): Promise<void>;
}

export async function startLyingLog(upstream: string): Promise<LyingLog> {
  const own = ed25519Signer();
  const stranger = ed25519Signer();
  const realVkey = (await (await fetch(`${upstream}/tlog/vkey`)).text()).trim();
  const name = realVkey.split('+')[0]!;
  const vkey = verifierKey(name, own.pub.toString('hex'));
  const witness = cosigner('witness.test/w1');
  let appendsAnswered = 0;
  /** The last append's body and answer (for 'same-event-twice'). */
  let lastAppend: { body: string; answer: unknown } | undefined;
  /** The size the real witness last cosigned for each origin (what it answers 409 with). */
  const witnessed = new Map<string, number>();

  /** Sends a checkpoint of `leaves` to the real witness (C2SP add-checkpoint); its cosignature line, if it gives one. */
  async function cosignByWitness(origin: string, note: string, leaves: Buffer[]): Promise<string> {
    const size = leaves.length;
    const nodes = nodesFromLeafHashes(leaves);
    for (let round = 0; round < 2; round += 1) {
      const old = witnessed.get(origin) ?? 0;
      const proof = old > 0 && old < size ? consistencyProof(old, size, nodes) : [];
      const res = await fetch(`${state.witnessUrl}/add-checkpoint`, {
        method: 'POST',
        body: `old ${old}\n${proof.map((p) => `${p.toString('base64')}\n`).join('')}\n${note}`,
      });
      const text = await res.text();
      if (res.status === 409) {
        witnessed.set(origin, Number(text.trim()));
        continue;
      }
      if (res.status === 200) {
        witnessed.set(origin, size);
        return text;
      }
      return ''; // refused (422: the tree does not extend what it cosigned): no cosignature
    }
    return '';
  }

  const blocksOf = async (chain: string): Promise<RealBlock[]> => {
    const page = (await (await fetch(`${upstream}/api/v1/chains/${chain}/blocks?limit=100`)).json()) as { blocks: RealBlock[] };
    return page.blocks;
  };
  /** Block 1 with other details: the lie of a forked history (its hash is a leaf of the fake tree). */
  const forged = (block: RealBlock) => {
    const { hash: _hash, ...rest } = block;
    return sealBlock({ ...rest, events: rest.events.map((e) => ({ ...e, details: { ...e.details, forged: true } })) } as never) as unknown as RealBlock;
  };

  /** The newest block as `lie` changes it, sealed again: the fake tree is built over it. */
  const changedNewest = (block: RealBlock, lie: Lie): RealBlock => {
    const { hash: _hash, ...rest } = block;
    const [event] = rest.events as Record<string, unknown>[];
    const events =
      lie === 'inject-event'
        ? [event, { ...event, event_id: `${block.chain_name}_${block.index}_1`, entity_id: 'mallory', details: { amount: 1_000_000 } }]
        : lie === 'swap-metadata'
          ? [{ ...event, details_metadata: { signed_by: 'mallory' } }]
          : [
              {
                ...event,
                details: {},
                is_offchain: true,
                details_cid: 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku',
                details_nonce: '00'.repeat(12),
              },
            ];
    return sealBlock({ ...rest, events } as never) as unknown as RealBlock;
  };
  const CHANGES_NEWEST: Lie[] = ['inject-event', 'swap-metadata', 'offchain-swap', 'offchain-swap-resolved'];

  /** A block with a changed field and its old hash. */
  const tampered = (block: RealBlock) => ({ ...block, events: block.events.map((e) => ({ ...e, details: { ...e.details, amount: 1_000_000 } })) });

  async function evidence(chain: string, query: URLSearchParams, state: LyingLog, view: string | undefined): Promise<unknown> {
    let blocks = await blocksOf(chain);
    if (state.lie === 'fork' || state.lie === 'same-size-other-root' || ((state.lie === 'split-view' || state.lie === 'fork-view-b') && view === 'b')) {
      const at = state.lie === 'same-size-other-root' ? blocks.length - 1 : 1;
      blocks = blocks.map((b) => (b.index === at ? forged(b) : b));
    }
    if (state.lie === 'rollback') blocks = blocks.slice(0, -1);
    if (CHANGES_NEWEST.includes(state.lie)) blocks = blocks.map((b, i) => (i === blocks.length - 1 ? changedNewest(b, state.lie) : b));
    const leaves = blocks.map((b) => leafHash(Buffer.from(b.hash, 'hex')));
    const node = nodesFromLeafHashes(leaves);
    const asked = (query.get('leaves') ?? '').split(',').filter(Boolean).map(Number);
    const treeSize = query.get('tree_size') ? Number(query.get('tree_size')) : leaves.length;
    const known = query.get('known_size') ? Number(query.get('known_size')) : undefined;
    const runEnds = asked.filter((leaf, i) => asked[i + 1] !== leaf + 1);
    let checkpoint: string | null = null;
    if (!query.get('tree_size')) {
      const text = checkpointText({ origin: `${name}/${chain}`, size: treeSize, root: rootFromLeafHashes(leaves.slice(0, treeSize)) });
      const signer = state.lie === 'other-key' ? stranger : own;
      checkpoint = signNote(text, name, signer.pub.toString('hex'), (bytes) => signer.sign(bytes));
      if (state.lie === 'split-view') checkpoint += await cosignByWitness(`${name}/${chain}`, checkpoint, leaves.slice(0, treeSize));
      else if (state.lie !== 'drop-cosignature') checkpoint += witness.line(text, undefined, state.lie === 'forge-cosignature');
    }
    const b64 = (hashes: Buffer[]) => hashes.map((h) => h.toString('base64'));
    return {
      chain_name: chain,
      tree_size: treeSize,
      checkpoint,
      consistency:
        known !== undefined && known >= 1 && known <= treeSize
          ? { from: known, proof: b64(known === treeSize ? [] : consistencyProof(known, treeSize, node)) }
          : null,
      inclusion: state.lie === 'drop-proof' ? [] : runEnds.map((leaf) => ({ leaf_index: leaf, proof: b64(inclusionProof(leaf, treeSize, node)) })),
      ...(query.get('blocks') === 'true'
        ? { blocks: blocks.filter((b) => asked.includes(b.index)).map((b) => (state.lie === 'tamper-block' ? tampered(b) : b)) }
        : {}),
    };
  }

  const state = { url: '', vkey, lie: 'honest' as Lie, witness } as LyingLog;
  const server: Server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', upstream);
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        const text = typeof body === 'string' ? body : JSON.stringify(body);
        res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json', ...headers });
        res.end(text);
      };
      if (url.pathname === '/tlog/vkey') return send(200, `${vkey}\n`);
      const evidenceMatch = /^\/api\/v1\/chains\/([^/]+)\/evidence$/.exec(url.pathname);
      if (evidenceMatch && req.method === 'GET')
        return send(200, await evidence(evidenceMatch[1]!, url.searchParams, state, req.headers['x-view'] as string | undefined));

      const isAppend = req.method === 'POST' && /\/events$/.test(url.pathname);
      const sentBody = Buffer.concat(chunks).toString();
      if (isAppend && state.lie === 'same-event-twice' && lastAppend?.body === sentBody) return send(200, lastAppend.answer);
      if (
        state.lie === 'offchain-swap-resolved' &&
        req.method === 'GET' &&
        /\/blocks\/\d+$/.test(url.pathname) &&
        url.searchParams.get('resolve_cid') === 'true'
      ) {
        const real = (await (await fetch(`${upstream}${url.pathname}`)).json()) as RealBlock;
        const swapped = changedNewest(real, 'offchain-swap') as RealBlock & { events: Record<string, unknown>[] };
        const sentDetails = (JSON.parse(lastAppend?.body ?? '{}') as { details?: unknown }).details ?? {};
        return send(200, { ...swapped, events: swapped.events.map((e) => ({ ...e, details: sentDetails })) });
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
      const forwarded = await fetch(url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
      const text = await forwarded.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      if (isAppend && forwarded.ok) lastAppend = { body: sentBody, answer: body };
      if (isAppend && state.lie === 'retry-after-append' && appendsAnswered++ === 0) {
        // The append landed, but the answer is lost: a 503 asking to retry.
        return send(503, { detail: 'Service unavailable', request_id: 'lying' }, { 'Retry-After': '1' });
      }
      if (isAppend && state.lie === 'wrong-event' && forwarded.ok) {
        const chain = url.pathname.split('/')[4]!;
        body = { ...(body as object), event_id: `${chain}_1_0` };
      }
      if (state.lie === 'tamper-block' && req.method === 'GET' && /\/blocks\/\d+$/.test(url.pathname) && forwarded.ok) body = tampered(body as RealBlock);
      const forkedView = state.lie === 'fork' || ((state.lie === 'split-view' || state.lie === 'fork-view-b') && req.headers['x-view'] === 'b');
      if (forkedView && req.method === 'GET' && /\/blocks\/1$/.test(url.pathname) && forwarded.ok) body = forged(body as RealBlock);
      return send(forwarded.status, body);
    } catch (error) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: String(error) }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise((resolve) => server.close(() => resolve()));
  return state;
}
