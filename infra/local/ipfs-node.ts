/**
 * The local stack's embedded IPFS node: the Kubo RPC subset the service uses (add, cat, pin add/ls/rm, refs, block rm,
 * id, version) on loopback, over real IPFS libraries — ipfs-unixfs-importer/-exporter and blockstore-fs —
 * so that data survives restarts and CIDs are the ones Kubo gives for the same bytes and options
 * (default: CIDv0, 256 KiB chunks, balanced DAG; `cid-version=1`: CIDv1 with raw leaves).
 * It is an adapter, not a node: no networking, no DHT, nothing fetched from elsewhere.
 *
 * Also runnable alone: `node --import tsx infra/local/ipfs-node.ts --dir DIR [--port P]`.
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as dagPb from '@ipld/dag-pb';
import { FsBlockstore } from 'blockstore-fs';
import { exporter } from 'ipfs-unixfs-exporter';
import { importer, type ImporterOptions } from 'ipfs-unixfs-importer';
import { base58btc } from 'multiformats/bases/base58';
import { CID } from 'multiformats/cid';

export const EMBEDDED_VERSION = '0.32.1-embedded';

export interface IpfsNode {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface IpfsNodeOptions {
  /** Where blocks, pins and the node's identity live. */
  dir: string;
  host?: string;
  port?: number;
  /** Largest upload accepted. */
  maxUploadBytes?: number;
}

class RpcError extends Error {
  readonly status: number;
  constructor(message: string, status = 500) {
    super(message);
    this.status = status;
  }
}

/** A stable peer id: an Ed25519 public key as a libp2p identity multihash, base58btc (`12D3KooW…`). */
function peerId(dir: string): string {
  const file = join(dir, 'peer-id');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  // protobuf PublicKey { Type: Ed25519 (1), Data: 32 bytes }, wrapped in an identity multihash.
  const protobuf = Buffer.concat([Buffer.from([0x08, 0x01, 0x12, 0x20]), raw]);
  const multihash = Buffer.concat([Buffer.from([0x00, protobuf.length]), protobuf]);
  const id = base58btc.baseEncode(multihash);
  writeFileSync(file, `${id}\n`);
  return id;
}

class Pins {
  private readonly file: string;
  private readonly set: Set<string>;

  constructor(dir: string) {
    this.file = join(dir, 'pins.json');
    this.set = new Set(existsSync(this.file) ? (JSON.parse(readFileSync(this.file, 'utf8')) as string[]) : []);
  }
  add(cid: string): void {
    this.set.add(cid);
    this.save();
  }
  remove(cid: string): boolean {
    const had = this.set.delete(cid);
    this.save();
    return had;
  }
  has(cid: string): boolean {
    return this.set.has(cid);
  }
  all(): string[] {
    return [...this.set];
  }
  private save(): void {
    writeFileSync(this.file, JSON.stringify(this.all()));
  }
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new RpcError(`upload larger than ${limit} bytes`, 413);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function parseCid(arg: string | null): CID {
  if (!arg) throw new RpcError('argument "ipfs-path" is required', 400);
  try {
    return CID.parse(arg.replace(/^\/ipfs\//, ''));
  } catch {
    throw new RpcError(`invalid path "${arg}": invalid cid`, 500);
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export async function startIpfsNode(options: IpfsNodeOptions): Promise<IpfsNode> {
  mkdirSync(join(options.dir, 'blocks'), { recursive: true });
  const blockstore = new FsBlockstore(join(options.dir, 'blocks'));
  await blockstore.open();
  const pins = new Pins(options.dir);
  const id = peerId(options.dir);
  const maxUpload = options.maxUploadBytes ?? 64 * 1024 * 1024;

  async function add(req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> {
    const contentType = req.headers['content-type'] ?? '';
    if (!contentType.startsWith('multipart/form-data')) throw new RpcError('expected a multipart/form-data body', 400);
    const form = await new Response(await readBody(req, maxUpload), { headers: { 'content-type': contentType } }).formData();
    const cidV1 = url.searchParams.get('cid-version') === '1';
    const rawLeaves = url.searchParams.get('raw-leaves');
    const importerOptions: Partial<ImporterOptions> = cidV1
      ? { cidVersion: 1, rawLeaves: rawLeaves !== 'false' }
      : ({ profile: 'unixfs-v0-2015' } as Partial<ImporterOptions>);
    const pin = url.searchParams.get('pin') !== 'false';
    const lines: string[] = [];
    for (const [, value] of form) {
      if (typeof value === 'string') throw new RpcError('file parts must carry a filename', 400);
      const content = new Uint8Array(await value.arrayBuffer());
      for await (const entry of importer([{ content }], blockstore, importerOptions)) {
        const cid = entry.cid.toString();
        if (pin) pins.add(cid);
        lines.push(JSON.stringify({ Name: decodeURIComponent(value.name) || cid, Hash: cid, Size: String(entry.size) }));
      }
    }
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'X-Chunked-Output': '1' });
    res.end(lines.map((l) => `${l}\n`).join(''));
  }

  async function cat(url: URL, res: ServerResponse): Promise<void> {
    const cid = parseCid(url.searchParams.get('arg'));
    if (!(await blockstore.has(cid))) {
      // A real node would now search the network; this one is offline and says so at once.
      throw new RpcError(`block was not found locally (offline): ${cid}`, 500);
    }
    const entry = await exporter(cid, blockstore);
    if (entry.type !== 'file' && entry.type !== 'raw') throw new RpcError('this dag node is a directory', 500);
    const offset = Number(url.searchParams.get('offset') ?? 0) || 0;
    const length = url.searchParams.has('length') ? Number(url.searchParams.get('length')) : undefined;
    res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Stream-Output': '1' });
    for await (const chunk of entry.content({ offset, ...(length !== undefined ? { length } : {}) })) res.write(chunk);
    res.end();
  }

  /** The CIDs a DAG links to (`recursive`: all below it), as Kubo's `refs` streams them. */
  async function refs(url: URL, res: ServerResponse): Promise<void> {
    const root = parseCid(url.searchParams.get('arg'));
    const recursive = url.searchParams.get('recursive') === 'true';
    const lines: string[] = [];
    const walk = async (cid: CID, deep: boolean): Promise<void> => {
      if (cid.code !== dagPb.code) return; // raw leaves link to nothing
      const chunks: Uint8Array[] = [];
      for await (const chunk of blockstore.get(cid)) chunks.push(chunk);
      const node = dagPb.decode(Buffer.concat(chunks));
      for (const link of node.Links) {
        lines.push(JSON.stringify({ Ref: link.Hash.toString(), Err: '' }));
        if (deep) await walk(link.Hash, deep);
      }
    };
    if (!(await blockstore.has(root))) throw new RpcError(`block was not found locally (offline): ${root}`, 500);
    await walk(root, recursive);
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'X-Chunked-Output': '1' });
    res.end(lines.map((l) => `${l}\n`).join(''));
  }

  /** Deletes blocks from the blockstore, as Kubo's `block rm` does (a pinned root is refused). */
  async function blockRm(url: URL, res: ServerResponse): Promise<void> {
    const lines: string[] = [];
    for (const arg of url.searchParams.getAll('arg')) {
      const cid = parseCid(arg);
      if (pins.has(cid.toString())) {
        lines.push(JSON.stringify({ Hash: cid.toString(), Error: 'pinned: recursive' }));
      } else if (!(await blockstore.has(cid))) {
        lines.push(JSON.stringify({ Hash: cid.toString(), Error: 'ipld: could not find block' }));
      } else {
        await blockstore.delete(cid);
        lines.push(JSON.stringify({ Hash: cid.toString() }));
      }
    }
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'X-Chunked-Output': '1' });
    res.end(lines.map((l) => `${l}\n`).join(''));
  }

  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (req.method !== 'POST') throw new RpcError(`${req.method} not allowed: the RPC API takes POST`, 405);
      switch (url.pathname) {
        case '/api/v0/add':
          return await add(req, url, res);
        case '/api/v0/cat':
          return await cat(url, res);
        case '/api/v0/id':
          return json(res, 200, { ID: id, PublicKey: '', Addresses: [], AgentVersion: `kubo/${EMBEDDED_VERSION}`, Protocols: [] });
        case '/api/v0/version':
          return json(res, 200, { Version: EMBEDDED_VERSION, Commit: '', Repo: '16', System: `${process.arch}/${process.platform}`, Golang: 'none' });
        case '/api/v0/pin/add': {
          const cid = parseCid(url.searchParams.get('arg'));
          if (!(await blockstore.has(cid))) throw new RpcError(`block was not found locally (offline): ${cid}`);
          pins.add(cid.toString());
          return json(res, 200, { Pins: [cid.toString()] });
        }
        case '/api/v0/pin/ls': {
          const arg = url.searchParams.get('arg');
          const listed = arg ? [parseCid(arg).toString()] : pins.all();
          for (const cid of listed) if (!pins.has(cid)) throw new RpcError(`path '${cid}' is not pinned`);
          return json(res, 200, { Keys: Object.fromEntries(listed.map((cid) => [cid, { Type: 'recursive' }])) });
        }
        case '/api/v0/refs':
          return await refs(url, res);
        case '/api/v0/block/rm':
          return await blockRm(url, res);
        case '/api/v0/pin/rm': {
          const cid = parseCid(url.searchParams.get('arg')).toString();
          if (!pins.remove(cid)) throw new RpcError('not pinned or pinned indirectly');
          return json(res, 200, { Pins: [cid] });
        }
        default:
          throw new RpcError(`command not found: ${url.pathname}`, 404);
      }
    } catch (error) {
      const status = error instanceof RpcError ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      if (!res.headersSent) json(res, status, { Message: message, Code: 0, Type: 'error' });
      else res.destroy();
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: async () => {
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
      await blockstore.close();
    },
  };
}

// Run alone: a node on its own, e.g. for tests that stop IPFS under a running service.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { dir: { type: 'string' }, port: { type: 'string' } } });
  if (!values.dir) {
    process.stderr.write('Usage: node --import tsx infra/local/ipfs-node.ts --dir DIR [--port PORT]\n');
    process.exit(2);
  }
  const node = await startIpfsNode({ dir: values.dir, ...(values.port ? { port: Number(values.port) } : {}) });
  process.stdout.write(`IPFS node ready at ${node.url}\n`);
  const stop = () => void node.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
