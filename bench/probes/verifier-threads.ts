/**
 * What `ledger-verify --threads` buys a verifier whose node is not on its own machine: a chain of PROBE_BLOCKS
 * blocks (50,000 by default) built here, signed, and served from memory by a bare HTTP server in this process (a
 * page costs it next to nothing, as a remote node's costs the verifier nothing), then verified with 0, 1 and 2
 * worker threads (THREADS), twice each, alternating. Each run's blocks/s and the verifier's CPU in % of a core.
 * On this machine's 2 cores the server and the verifier share them; on a laptop auditing a cloud node, they do not.
 * DELAY_MS: each answer is sent that much later, as a node in another region answers (how many pages in flight that needs).
 * `node --import tsx bench/probes/verifier-threads.ts`
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { publicKeyToHex } from '#shared/ed25519';
import { buildBlocks, type BlockDraft } from '#shared/ledger/blocks';
import { checkpointMessage } from '#shared/ledger/checkpoint';
import { sealBlock, ZERO_HASH } from '#shared/ledger/hashing';
import { blockHashesRoot } from '#shared/ledger/merkle';
import type { Block } from '#shared/ledger/types';
import { cpuSeconds } from '../resources.ts';

const BLOCKS = Number(process.env.PROBE_BLOCKS ?? 50_000);
const THREADS = (process.env.THREADS ?? '0,1,2').split(',');
const DELAY_MS = Number(process.env.DELAY_MS ?? 0);

// The chain: blocks of one event each, as the bench's are.
const blocks: Block[] = [sealBlock({ index: 0, chain_name: 'main', timestamp: 1_764_000_000, previous_hash: ZERO_HASH, events: [] })];
while (blocks.length < BLOCKS) {
  const head = blocks.at(-1)!;
  const drafts: BlockDraft[] = Array.from({ length: Math.min(1_000, BLOCKS - blocks.length) }, (_, i) => ({
    events: [
      {
        entity_id: `entity-${head.index + i}`,
        event_type: 'recorded',
        details: { n: head.index + i, note: 'raw conditional append' },
        details_cid: null,
        details_nonce: null,
        details_metadata: null,
        is_offchain: false,
      },
    ],
  }));
  blocks.push(...buildBlocks('main', { headIndex: head.index, headHash: head.hash }, drafts, () => 1_764_000_000.5));
}
const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const fields = { chain_name: 'main', tree_size: BLOCKS, root: blockHashesRoot(blocks.map((b) => b.hash)), timestamp: 1_764_000_001, node_id: 'probe' };
const checkpoint = JSON.stringify({ ...fields, signature: sign(null, checkpointMessage(fields), privateKey).toString('hex') });
const identity = JSON.stringify({ node_id: 'probe', public_key: publicKeyToHex(publicKey) });
const pages = new Map<number, string>();
for (let offset = 0; offset < BLOCKS; offset += 100) {
  pages.set(offset, JSON.stringify({ chain_name: 'main', total: BLOCKS, limit: 100, offset, blocks: blocks.slice(offset, offset + 100) }));
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://probe');
  const body =
    url.pathname === '/api/v1/identity'
      ? identity
      : url.pathname === '/api/v1/chains/main/checkpoint'
        ? checkpoint
        : url.pathname === '/api/v1/chains/main/blocks'
          ? pages.get(Number(url.searchParams.get('offset')))
          : undefined;
  // DELAY_MS: the node as far away as a cloud region is (each answer sent that much later).
  setTimeout(() => {
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
    res.end(body ?? '{}');
  }, DELAY_MS);
});
await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

function verify(threads: string): Promise<{ seconds: number; cpu: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, '..', '..', 'bin', 'ledger-verify.mjs'), '--url', url, '--chain', 'main', '--threads', threads],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    let cpu = 0;
    const timer = setInterval(() => (cpu = cpuSeconds(child.pid!)), 50);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(timer);
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) return reject(new Error(`ledger-verify exited ${code}: ${out}`));
      resolve({ seconds, cpu: Math.round((cpu / seconds) * 100) });
    });
  });
}

try {
  for (let round = 0; round < 2; round += 1) {
    for (const threads of THREADS) {
      const { seconds, cpu } = await verify(threads);
      console.log(
        `--threads ${threads}: ${Math.round(BLOCKS / seconds)} blocks/s over ${BLOCKS} blocks (${seconds.toFixed(2)} s); verifier CPU ${cpu} % of a core`,
      );
    }
  }
} finally {
  server.close();
}
