/**
 * `npm run witness -- --log <log vkey> [--log …] [--port 2680] [--dir .data/witness] [--name witness.local/w1] [--max-origins 10000]
 *   [--new-origins-per-minute 60] [--requests-per-minute 1200]`
 * `npm run witness -- --print-vkey [--dir …] [--name …]`: its cosigner vkey (making its key on first use), then exit.
 *
 * A C2SP tlog-witness for local use and tests (infra/witness/witness.ts). It serves
 *   POST /add-checkpoint   the protocol (submission and monitoring prefix: the server's root)
 *   GET  /vkey             its cosigner verifier key (type 0x04), what logs and clients are given
 * Its Ed25519 key is made at first start (<dir>/key.json, mode 0600) and its state, the latest cosigned
 * size and root per origin, is kept in one file per origin under <dir>/origins/ (infra/witness/store.ts),
 * on disk before each answer. It keeps at most --max-origins logs: a new origin past that is refused (507),
 * since any writer of a trusted log can make new chains, each an origin; it admits at most
 * --new-origins-per-minute new ones (429), and forgets none to make room (a forgotten log would be cosigned
 * again from size 0, a fork of it too). A checkpoint it holds, sent again, is cosigned from memory with no write. Each source
 * address may send --requests-per-minute requests (429 with Retry-After past it), so that one client's flood
 * leaves the logs' own submissions their time. Each `--log` is a log's note vkey
 * (GET /tlog/vkey of the service), trusted for every origin under its key name (`<name>/`), or for the
 * origins under a prefix given as `<vkey>=<prefix>`. `--dir` is relative to where the command was typed.
 * Prints `witness ready at <url> vkey <vkey>` when it listens; SIGTERM/SIGINT stop it.
 */
import { stopWhenOrphaned } from '../local/orphan.ts';
import { generateKeyPairSync, createPrivateKey, sign } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { parseArgsOrExit } from '../../shared/cli-args.ts';
import { fileWitnessStore } from './store.ts';
import { DEFAULT_MAX_ORIGINS, DEFAULT_NEW_ORIGINS_PER_MINUTE, type TrustedLog, type WitnessKey, cosignerVkey, createWitness, trustedLog } from './witness.ts';

/** Requests a source address may send a minute by default (a log with many chains gets a higher one). */
const DEFAULT_REQUESTS_PER_MINUTE = 1_200;

const MAX_BODY_BYTES = 64 * 1024;

function loadKey(dir: string, name: string): WitnessKey {
  const file = join(dir, 'key.json');
  if (!existsSync(file)) {
    const { privateKey } = generateKeyPairSync('ed25519');
    writeFileSync(file, `${JSON.stringify({ name, private_key: privateKey.export({ format: 'pem', type: 'pkcs8' }) }, null, 2)}\n`, { mode: 0o600 });
  }
  const saved = JSON.parse(readFileSync(file, 'utf8')) as { name: string; private_key: string };
  if (saved.name !== name) throw new Error(`${file} is the key of '${saved.name}', not '${name}': give --name ${saved.name}, or another --dir`);
  const privateKey = createPrivateKey(saved.private_key);
  const publicKey = Buffer.from((privateKey.export({ format: 'jwk' }) as { x: string }).x, 'base64url');
  return { name, publicKey, sign: (message) => sign(null, message, privateKey) };
}

const USAGE = `Usage: npm run witness -- --log <log vkey>[=<origin prefix>] [--log …] [--port 2680] [--dir .data/witness] [--name witness.local/w1]
         [--max-origins 10000] [--new-origins-per-minute 60] [--requests-per-minute 1200]
       npm run witness -- --print-vkey [--dir .data/witness] [--name witness.local/w1]

A log vkey is what GET /tlog/vkey of the service answers; --print-vkey prints this witness's own (made on first use).`;

async function main(): Promise<void> {
  const { values } = parseArgsOrExit(
    {
      args: process.argv.slice(2),
      options: {
        log: { type: 'string', multiple: true, default: [] },
        port: { type: 'string', default: '2680' },
        host: { type: 'string', default: '127.0.0.1' },
        dir: { type: 'string', default: '.data/witness' },
        name: { type: 'string', default: 'witness.local/w1' },
        'max-origins': { type: 'string', default: String(DEFAULT_MAX_ORIGINS) },
        'new-origins-per-minute': { type: 'string', default: String(DEFAULT_NEW_ORIGINS_PER_MINUTE) },
        'requests-per-minute': { type: 'string', default: String(DEFAULT_REQUESTS_PER_MINUTE) },
        'print-vkey': { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    },
    USAGE,
    2,
  );
  if (values.help) {
    console.log(USAGE);
    return;
  }
  // `--dir` is relative to where the command was typed (npm runs scripts from the repository's root).
  values.dir = resolve(process.env.INIT_CWD ?? '.', values.dir!);
  if (values['print-vkey']) {
    // Makes the key if there is none yet, and prints its vkey: what a log's SVC_WITNESSES and clients are given.
    mkdirSync(values.dir!, { recursive: true });
    console.log(cosignerVkey(loadKey(values.dir!, values.name!)));
    return;
  }
  if (values.log!.length === 0) {
    console.error(USAGE);
    process.exit(2);
  }
  let logs: TrustedLog[];
  try {
    // An Ed25519 vkey's base64 (33 bytes) has no '=': the first one starts the prefix.
    logs = values.log!.map((entry) => {
      const [vkey, prefix] = entry.split('=', 2) as [string, string | undefined];
      return trustedLog(vkey, prefix);
    });
  } catch (error) {
    console.error(`witness: a --log is not a verifier key: ${(error as Error).message}`);
    process.exit(2);
  }
  const positive = (name: 'max-origins' | 'new-origins-per-minute' | 'requests-per-minute'): number => {
    const value = Number(values[name]);
    if (!Number.isSafeInteger(value) || value < 1) {
      console.error(`witness: --${name} must be a positive integer, not '${values[name]}'`);
      process.exit(2);
    }
    return value;
  };
  const maxOrigins = positive('max-origins');
  const newOriginsPerMinute = positive('new-origins-per-minute');
  const requestsPerMinute = positive('requests-per-minute');
  mkdirSync(values.dir!, { recursive: true });
  const key = loadKey(values.dir!, values.name!);
  const witness = createWitness({ key, logs, store: fileWitnessStore(values.dir!), maxOrigins, newOriginsPerMinute });
  // Requests per source address and minute: a fixed window, forgotten as each minute ends.
  let window = { minute: -1, counts: new Map<string, number>() };
  const overLimit = (address: string): number | undefined => {
    const minute = Math.floor(Date.now() / 60_000);
    if (window.minute !== minute) window = { minute, counts: new Map() };
    const count = (window.counts.get(address) ?? 0) + 1;
    window.counts.set(address, count);
    return count > requestsPerMinute ? Math.max(1, Math.ceil(((minute + 1) * 60_000 - Date.now()) / 1000)) : undefined;
  };
  const vkey = cosignerVkey(key);

  const server = createServer(async (req, res) => {
    const answer = (status: number, body: string, contentType = 'text/plain; charset=utf-8') => {
      res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    try {
      const retryAfter = overLimit(req.socket.remoteAddress ?? '-');
      if (retryAfter !== undefined) {
        res.writeHead(429, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': String(retryAfter) });
        res.end(`more than ${requestsPerMinute} requests a minute from this address\n`);
        return;
      }
      if (req.url === '/vkey' && req.method === 'GET') return answer(200, `${vkey}\n`);
      if (req.url !== '/add-checkpoint') return answer(404, 'not found\n');
      if (req.method !== 'POST') return answer(405, 'add-checkpoint is a POST\n');
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of req) {
        size += (chunk as Buffer).length;
        if (size > MAX_BODY_BYTES) return answer(413, `the body is over ${MAX_BODY_BYTES} bytes\n`);
        chunks.push(chunk as Buffer);
      }
      const result = await witness.addCheckpoint(Buffer.concat(chunks).toString('utf8'));
      console.log(
        JSON.stringify({ level: 'info', message: 'add-checkpoint', status: result.status, detail: result.status === 200 ? undefined : result.body.trim() }),
      );
      answer(result.status, result.body, result.contentType);
    } catch (error) {
      console.error(JSON.stringify({ level: 'error', message: 'add-checkpoint failed', error: String(error) }));
      answer(500, 'internal error\n');
    }
  });
  server.keepAliveTimeout = 30_000;
  server.listen(Number(values.port), values.host, () => {
    const { port } = server.address() as AddressInfo;
    console.log(`witness ready at http://${values.host}:${port} vkey ${vkey}`);
  });
  // Kept-alive connections are closed too: waiting for them to go idle held a stop for up to 30 s.
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // `npm run witness` stopped by npm's pid (`kill %1`): its shell does not pass the signal on.
  stopWhenOrphaned(stop);
}

await main();
