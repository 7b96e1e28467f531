/**
 * `npm run smoke -- --url URL [--api-key KEY]`: walks every group the service has against any
 * deployment — the local gateway, LocalStack, AWS — and checks what a client would: statuses, bodies,
 * headers, and the ledger's own proofs (each block hash recomputed, each link followed, the anchor's
 * Merkle root recomputed). Each later feature adds its steps here.
 *
 * It writes, per run: two Sub-Chains named `smoke-…` (three events, a batch of two and one anchor; two off-chain
 * events), two encrypted payloads in IPFS, and per business prefix two organizations, a channel with
 * private data, and two contracts — all named `smoke…`; and a signing organization, a chain with one
 * signed event and a peer pointing at the node itself.
 * The key may also come from SVC_SMOKE_API_KEY. Exit code 0 when every check passed.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { secureEventMessage } from '#shared/admin/admin';
import { verifyEd25519 } from '#shared/ed25519';
import { hashBlock } from '#shared/ledger/hashing';
import { checkpointMessage } from '#shared/ledger/checkpoint';
import { openNote, parseCheckpointText, parseVerifierKey } from '#shared/tlog/note';
import { blockHashesRoot, leafHash, verifyConsistency, verifyInclusion } from '#shared/ledger/merkle';
import { call } from '#test/support/stack';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { url: { type: 'string' }, 'ws-url': { type: 'string' }, 'api-key': { type: 'string' }, 'header-name': { type: 'string' } },
});
const base = values.url?.replace(/\/+$/, '');
if (!base) {
  process.stderr.write('Usage: npm run smoke -- --url http://127.0.0.1:2661 [--ws-url wss://…/live] [--api-key KEY] [--header-name X-API-Key]\n');
  process.exit(2);
}
const apiKey = values['api-key'] ?? process.env.SVC_SMOKE_API_KEY;
// The local gateway serves WebSocket at /ws; in the cloud, pass the stack's WebSocketUrl output.
const wsUrl = values['ws-url'] ?? `${base.replace(/^http/, 'ws')}/ws`;
const headerName = values['header-name'] ?? 'X-API-Key';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Answer = Awaited<ReturnType<typeof call>>;

function request(method: string, path: string, body?: unknown, options: { key?: boolean; raw?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (apiKey && options.key !== false) headers[headerName] = apiKey;
  return call(base!, method, path, options.raw ?? body, headers);
}

class CheckFailed extends Error {}
function expect(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CheckFailed(message);
}
function expectStatus(res: Answer, status: number, what: string): void {
  if (res.status === 401 && status !== 401) {
    throw new CheckFailed(`${what}: 401 — the service wants an API key: pass --api-key (or SVC_SMOKE_API_KEY)`);
  }
  expect(res.status === status, `${what}: expected ${status}, got ${res.status} ${res.text.slice(0, 200)}`);
}
function expectEdgeHeaders(res: Answer, what: string): void {
  expect(UUID.test(res.headers.get('x-request-id') ?? ''), `${what}: no UUID X-Request-ID`);
  expect(res.headers.get('x-frame-options') === 'DENY', `${what}: no X-Frame-Options: DENY`);
  expect(res.headers.get('x-content-type-options') === 'nosniff', `${what}: no X-Content-Type-Options`);
  expect(res.headers.get('strict-transport-security'), `${what}: no Strict-Transport-Security`);
  expect(res.headers.get('content-security-policy'), `${what}: no Content-Security-Policy`);
}

let passed = 0;
let failed = 0;
let unreachable = false;

async function check(name: string, run: () => Promise<void>): Promise<void> {
  if (unreachable) return;
  const started = performance.now();
  try {
    await run();
    passed += 1;
    process.stdout.write(`  ✔ ${name} (${Math.round(performance.now() - started)} ms)\n`);
  } catch (error) {
    failed += 1;
    const cause = (error as { cause?: { code?: string } }).cause;
    if (error instanceof TypeError && cause?.code) {
      unreachable = true;
      process.stdout.write(`  ✖ ${name}: cannot reach ${base} (${cause.code})\n`);
    } else {
      process.stdout.write(`  ✖ ${name}: ${(error as Error).message}\n`);
    }
  }
}

async function ledgerGroup(prefix: string): Promise<void> {
  process.stdout.write(`ledger group at ${prefix}\n`);
  const chain = `smoke-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const entity = `smoke-entity-${randomBytes(3).toString('hex')}`;
  let blocks: any[] = [];

  await check('health answers 200 healthy with the edge headers', async () => {
    const res = await request('GET', `${prefix}/health`, undefined, { key: false });
    if (res.status === 503) throw new CheckFailed(`health: degraded, failing checks ${JSON.stringify(res.body?.checks)}`);
    expectStatus(res, 200, 'health');
    expect(res.body?.status === 'healthy', `health: status ${res.body?.status}`);
    expectEdgeHeaders(res, 'health');
  });
  await check(`creates Sub-Chain '${chain}'`, async () => {
    const res = await request('POST', `${prefix}/chains/${chain}/create`);
    expectStatus(res, 201, 'create');
    expect(res.body?.chain_name === chain, 'create: chain_name');
  });
  await check('adds three events, each in its own block', async () => {
    for (let i = 1; i <= 3; i += 1) {
      const res = await request('POST', `${prefix}/chains/${chain}/events`, { entity_id: entity, event_type: `step-${i}`, details: { i } });
      expectStatus(res, 200, `event ${i}`);
      expect(res.body?.event_id === `${chain}_${i}_0`, `event ${i}: event_id ${res.body?.event_id}`);
    }
  });
  await check('adds a batch of two events atomically, one block each', async () => {
    const res = await request('POST', `${prefix}/chains/${chain}/events/batch`, {
      events: [4, 5].map((i) => ({ entity_id: entity, event_type: `step-${i}`, details: { i } })),
    });
    expectStatus(res, 200, 'batch');
    expect(JSON.stringify(res.body?.event_ids) === JSON.stringify([`${chain}_4_0`, `${chain}_5_0`]), `batch: event_ids ${res.text}`);
  });
  await check('lists the chain after the Main Chain', async () => {
    const res = await request('GET', `${prefix}/chains`);
    expectStatus(res, 200, 'chains');
    expect(Array.isArray(res.body) && res.body[0]?.name === 'main', 'chains: the Main Chain comes first');
    const mine = res.body.find((c: any) => c.name === chain);
    expect(mine?.block_count === 6, `chains: block_count ${mine?.block_count}`);
  });
  await check('pages blocks whose hashes recompute and link', async () => {
    const res = await request('GET', `${prefix}/chains/${chain}/blocks?limit=100`);
    expectStatus(res, 200, 'blocks');
    blocks = res.body.blocks;
    expect(blocks.length === 6, `blocks: ${blocks.length}`);
    blocks.forEach((block, i) => {
      expect(block.index === i, `block ${i}: index ${block.index}`);
      expect(hashBlock(block) === block.hash, `block ${i}: hash does not recompute`);
      if (i > 0) expect(block.previous_hash === blocks[i - 1].hash, `block ${i}: previous_hash does not link`);
    });
  });
  await check('reads a block by hash, the same as by index', async () => {
    const res = await request('GET', `${prefix}/chains/${chain}/blocks/${blocks[2].hash}`);
    expectStatus(res, 200, 'block by hash');
    expect(JSON.stringify(res.body) === JSON.stringify(blocks[2]), 'block by hash differs from block 2');
  });
  await check('reports statistics', async () => {
    const res = await request('GET', `${prefix}/chains/${chain}/stats`);
    expectStatus(res, 200, 'stats');
    expect(res.body.total_blocks === 6 && res.body.total_events === 5, `stats: ${res.text}`);
  });
  await check('anchors the chain with the RFC 6962 root of its block hashes', async () => {
    const res = await request('POST', `${prefix}/chains/${chain}/submit-proof`);
    expectStatus(res, 200, 'submit-proof');
    const mainIndex = Number(String(res.body.proof_id).slice(chain.length + 1));
    expect(res.body.proof_id === `${chain}_${mainIndex}` && Number.isInteger(mainIndex), `proof_id ${res.body.proof_id}`);
    const anchor = await request('GET', `${prefix}/chains/main/blocks/${mainIndex}`);
    expectStatus(anchor, 200, 'anchor block');
    expect(hashBlock(anchor.body) === anchor.body.hash, 'anchor: hash does not recompute');
    const details = anchor.body.events[0].details;
    expect(details.merkle_root === blockHashesRoot(blocks.map((b) => b.hash)), 'anchor: merkle_root does not recompute');
    expect(details.head_hash === blocks[5].hash && details.tree_size === 6, 'anchor: head');
  });
  await check('proves its blocks into a signed checkpoint, its history consistent, and its anchor', async () => {
    const checkpoint = await request('GET', `${prefix}/chains/${chain}/checkpoint`);
    expectStatus(checkpoint, 200, 'checkpoint');
    const c = checkpoint.body;
    expect(verifyEd25519(c.public_key, checkpointMessage(c), Buffer.from(c.signature, 'hex')), 'the checkpoint signature does not verify');
    expect(c.tree_size === 6 && c.root === blockHashesRoot(blocks.map((b) => b.hash)), 'the checkpoint root is not the root of the blocks');
    for (let i = 0; i < 6; i += 1) {
      const p = await request('GET', `${prefix}/chains/${chain}/blocks/${i}/proof`);
      expectStatus(p, 200, `proof of block ${i}`);
      verifyInclusion(
        i,
        6,
        leafHash(Buffer.from(blocks[i].hash, 'hex')),
        p.body.proof.map((h: string) => Buffer.from(h, 'hex')),
        Buffer.from(c.root, 'hex'),
      );
    }
    const consistency = await request('GET', `${prefix}/chains/${chain}/consistency?first=2&second=6`);
    expectStatus(consistency, 200, 'consistency');
    verifyConsistency(
      2,
      6,
      consistency.body.proof.map((h: string) => Buffer.from(h, 'hex')),
      Buffer.from(blockHashesRoot(blocks.slice(0, 2).map((b) => b.hash)), 'hex'),
      Buffer.from(c.root, 'hex'),
    );
    const anchor = await request('GET', `${prefix}/chains/${chain}/blocks/2/anchor`);
    expectStatus(anchor, 200, 'anchor');
    verifyInclusion(
      2,
      anchor.body.anchor.tree_size,
      leafHash(Buffer.from(blocks[2].hash, 'hex')),
      anchor.body.proof.map((h: string) => Buffer.from(h, 'hex')),
      Buffer.from(anchor.body.anchor.merkle_root, 'hex'),
    );
    const audit = await request('GET', `${prefix}/chains/${chain}/verify`);
    expectStatus(audit, 200, 'verify');
    expect(audit.body.valid === true && audit.body.anchors_checked === 1, `verify: ${audit.text}`);
  });
  if (prefix === '/api/v1') {
    await check('serves the chain as a C2SP transparency log: the signed checkpoint and tiles of the same tree', async () => {
      const vkey = await request('GET', '/tlog/vkey');
      expectStatus(vkey, 200, 'tlog vkey');
      const note = await request('GET', `/tlog/${chain}/checkpoint`);
      expectStatus(note, 200, 'tlog checkpoint');
      const opened = openNote(note.text, parseVerifierKey(vkey.text));
      expect(opened.ok, `the tlog checkpoint does not open with the served key: ${opened.ok ? '' : opened.reason}`);
      const body = parseCheckpointText(opened.text);
      const json = (await request('GET', `/api/v1/chains/${chain}/checkpoint`)).body;
      expect(body.size === 6 && body.root.toString('hex') === json.root && body.origin.endsWith(`/${chain}`), `tlog checkpoint: ${opened.text}`);
      const tile = await fetch(`${base}/tlog/${chain}/tile/0/000.p/6`, { headers: apiKey ? { [headerName]: apiKey } : {} });
      expect(tile.status === 200, `tlog tile: ${tile.status}`);
      const leaves = Buffer.from(await tile.arrayBuffer());
      expect(leaves.equals(Buffer.concat(blocks.map((b) => leafHash(Buffer.from(b.hash, 'hex'))))), 'tile 0/000.p/6 is not the leaf hashes of the six blocks');
    });
  }
  await check('traces the entity', async () => {
    const res = await request('GET', `${prefix}/entities/${entity}/trace`);
    expectStatus(res, 200, 'trace');
    expect(res.body.events.length === 5 && res.body.chains[0] === chain, `trace: ${res.text.slice(0, 200)}`);
  });
  await check('answers errors in the contract shape', async () => {
    const missing = await request('GET', `${prefix}/chains/${chain}-missing/stats`);
    expectStatus(missing, 404, 'unknown chain');
    expect(typeof missing.body?.detail === 'string' && missing.body.request_id === missing.headers.get('x-request-id'), 'unknown chain: body');
    expectEdgeHeaders(missing, 'unknown chain');
    const bad = await request('POST', `${prefix}/chains/${chain}/events`, undefined, { raw: '{"entity_id":' });
    expectStatus(bad, 400, 'bad JSON');
    const invalid = await request('GET', `${prefix}/chains/${chain}/blocks?limit=0`);
    expectStatus(invalid, 422, 'bad limit');
    expect(Array.isArray(invalid.body?.detail), 'bad limit: FastAPI-style detail');
  });
}

async function offchain(prefix: string): Promise<void> {
  process.stdout.write(`off-chain payloads at ${prefix}\n`);
  const chain = `smoke-oc-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const marker = `smoke-${randomBytes(6).toString('hex')}`;
  const secret = `secret-${randomBytes(6).toString('hex')}`;
  let upload: { cid: string; nonce: string } | undefined;

  await check('offloads a 100 KB event: only the CID and nonce on chain, the original on resolve', async () => {
    expectStatus(await request('POST', `${prefix}/chains/${chain}/create`), 201, 'create');
    const details = { secret, body: 'z'.repeat(100_000) };
    const added = await request('POST', `${prefix}/chains/${chain}/events`, { entity_id: marker, event_type: 'large', details });
    expectStatus(added, 200, 'large event');
    const block = await request('GET', `${prefix}/chains/${chain}/blocks/1`);
    const event = block.body.events[0];
    expect(
      event.is_offchain === true && JSON.stringify(event.details) === '{}' && event.details_cid && /^[0-9a-f]{24}$/.test(event.details_nonce),
      'the block holds more than the CID and nonce',
    );
    expect(!block.text.includes(secret), 'the plaintext is on chain');
    const resolved = await request('GET', `${prefix}/chains/${chain}/blocks/1?resolve_cid=true`);
    expectStatus(resolved, 200, 'resolve');
    expect(JSON.stringify(resolved.body.events[0].details) === JSON.stringify(details), 'resolve does not give back the original');
  });
  await check('stores a payload client-side, then an event that references it', async () => {
    const up = await request('POST', `${prefix}/offchain`, { data: { marker, items: [1, 2, 3] } });
    expectStatus(up, 201, 'offchain upload');
    upload = up.body;
    const added = await request('POST', `${prefix}/chains/${chain}/events`, {
      entity_id: marker,
      event: 'referenced',
      details_cid: up.body.cid,
      details_nonce: up.body.nonce,
    });
    expectStatus(added, 200, 'event with details_cid');
    const trace = await request('GET', `${prefix}/entities/${marker}/trace?resolve_cid=true`);
    expect(trace.body.events.at(-1)?.details?.items?.length === 3, 'the referenced payload does not resolve');
    const bogus = await request('POST', `${prefix}/chains/${chain}/events`, {
      entity_id: marker,
      event_type: 'x',
      details_cid: 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5X',
      details_nonce: '0'.repeat(24),
    });
    expectStatus(bogus, 422, 'made-up CID');
  });
  await check('decodes a payload for an admin (skipped with a lesser key)', async () => {
    if (!upload) throw new CheckFailed('no upload to decode');
    const res = await request('POST', '/api/admin/ipfs/decode', upload);
    if (res.status === 403) return void process.stdout.write('    (the key is not an admin key: decoding not checked)\n');
    expectStatus(res, 200, 'decode');
    expect(res.body.data?.marker === marker, 'decode does not give back the payload');
  });
}

async function businessGroup(prefix: string): Promise<void> {
  process.stdout.write(`business group at ${prefix}\n`);
  const tag = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const [orgA, orgB, channel, contract] = [`smoke-a-${tag}`, `smoke-b-${tag}`, `smoke${tag}`, `smoke-sum-${tag}`];
  const secret = `smoke-secret-${randomBytes(6).toString('hex')}`;

  await check('health answers 200 healthy', async () => {
    const res = await request('GET', `${prefix}/health`, undefined, { key: false });
    if (res.status === 503) throw new CheckFailed(`health: degraded, failing checks ${JSON.stringify(res.body?.checks)}`);
    expectStatus(res, 200, 'health');
    expect(res.body.service === 'business', 'health: service');
  });
  await check('registers two organizations and opens a channel with one member', async () => {
    for (const org of [orgA, orgB]) expectStatus(await request('POST', `${prefix}/organizations`, { org_id: org, name: org }), 201, `organization ${org}`);
    const created = await request('POST', `${prefix}/channels`, { name: channel });
    expectStatus(created, 201, 'channel');
    expect(created.body.chain_name === `channel-${channel}`, 'channel: chain_name');
    expectStatus(await request('POST', `${prefix}/channels/${channel}/organizations`, { org_id: orgA }), 201, 'member');
    expectStatus(await request('POST', `${prefix}/channels/${channel}/private-collections`, { collection: 'smoke' }), 201, 'collection');
    const info = await request('GET', `${prefix}/channels/${channel}`);
    expect(info.body.organizations?.join() === orgA && info.body.collections?.join() === 'smoke', `channel info: ${info.text.slice(0, 200)}`);
  });
  await check('writes private data: the chain holds its hash, the value reads back', async () => {
    const written = await request('POST', `${prefix}/private-data`, { channel, collection: 'smoke', key: 'k1', value: secret });
    expectStatus(written, 201, 'private data');
    const block = await request('GET', `/api/v1/chains/channel-${channel}/blocks/${String(written.body.event_id).split('_').at(-2)}`);
    expect(block.status === 200 && !block.text.includes(secret), 'the value is on the channel chain');
    expect(block.body.events[0].details.value_hash === written.body.value_hash, 'the chain does not hold the value hash');
    const read = await request('GET', `${prefix}/private-data/${channel}/smoke/k1`);
    if (read.status === 403) return void process.stdout.write('    (the key is neither admin nor a member: reading back not checked)\n');
    expectStatus(read, 200, 'private data read');
    expect(read.body.value === secret, 'the value does not read back');
  });
  await check('registers a contract and runs it: its result, and the event it emits on the channel chain', async () => {
    const implementation =
      'function execute(event, context) { const total = event.details.a + event.details.b; ' +
      'return { total, emit: [{ entity_id: event.entity_id, event_type: "summed", details: { total } }] }; }';
    expectStatus(await request('POST', `${prefix}/contracts`, { contract_id: contract, version: '1.0.0', implementation }), 201, 'register');
    const run = await request('POST', `${prefix}/contracts/execute`, {
      contract_id: contract,
      event: { entity_id: `calc-${tag}`, event: 'add', details: { a: 2, b: 40 } },
      context: { chain: `channel-${channel}` },
    });
    expectStatus(run, 200, 'execute');
    expect(run.body.result?.total === 42 && run.body.emitted_event_ids?.length === 1, `execute: ${run.text.slice(0, 200)}`);
    const trace = await request('GET', `/api/v1/entities/calc-${tag}/trace`);
    expect(trace.body.events?.[0]?.details?.total === 42, 'the emitted event is not on the chain');
    const hostile = await request('POST', `${prefix}/contracts`, {
      contract_id: `${contract}-loop`,
      version: '1.0.0',
      implementation: 'function execute() { while (true) {} }',
    });
    expectStatus(hostile, 201, 'register a looping contract');
    const stopped = await request('POST', `${prefix}/contracts/execute`, {
      contract_id: `${contract}-loop`,
      event: { entity_id: 'x', event: 'x', details: {} },
    });
    expectStatus(stopped, 422, 'a looping contract');
  });
}

async function adminGroup(): Promise<void> {
  process.stdout.write('admin group at /api/admin\n');
  let identity: { node_id: string; public_key: string } | undefined;
  const skipped = (res: Answer) => {
    if (res.status !== 403) return false;
    process.stdout.write('    (the key is not an admin key: admin routes not checked)\n');
    return true;
  };

  await check('signs a fresh challenge with the key it publishes', async () => {
    const id = await request('GET', '/api/admin/identity');
    if (skipped(id)) return;
    expectStatus(id, 200, 'identity');
    identity = id.body;
    const challenge = randomBytes(32).toString('hex');
    const signed = await request('POST', '/api/admin/verify-identity', { challenge });
    expectStatus(signed, 200, 'verify-identity');
    expect(signed.body.challenge === challenge, 'verify-identity: another challenge came back');
    expect(verifyEd25519(identity!.public_key, Buffer.from(challenge, 'hex'), Buffer.from(signed.body.signature, 'hex')), 'the signature does not verify');
    if (/-temporary$/.test(identity!.node_id)) process.stdout.write('    (the node signs with TEMPORARY keys: run npm run identity -- init there)\n');
  });
  await check('reports its status', async () => {
    const res = await request('GET', '/api/admin/status');
    if (skipped(res)) return;
    expectStatus(res, 200, 'status');
    expect(res.body.status === 'active' && Number.isInteger(res.body.chains_active) && /\d+s$/.test(res.body.uptime), `status: ${res.text}`);
  });
  await check('appends a signed secure event, and refuses it forged or replayed', async () => {
    const chain = `smoke-sec-${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    const created = await request('POST', `/api/v1/chains/${chain}/create`);
    expectStatus(created, 201, 'chain');
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const org = `smoke-signer-${randomBytes(3).toString('hex')}`;
    const hex = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');
    expectStatus(await request('POST', '/api/business/organizations', { org_id: org, name: org, public_key: hex }), 201, 'organization');
    const event = { entity_id: 'smoke', event_type: 'signed', details: { n: 1 }, nonce: `smoke-${randomBytes(8).toString('hex')}` };
    const signature = sign(null, secureEventMessage({ chain_name: chain, ...event }), privateKey).toString('hex');
    const res = await request('POST', `/api/admin/chains/${chain}/secure-events`, { ...event, org_id: org, signature });
    if (skipped(res)) return;
    expectStatus(res, 200, 'secure event');
    expect(res.body.verified === true && res.body.signer === org, 'secure event: not verified');
    expectStatus(await request('POST', `/api/admin/chains/${chain}/secure-events`, { ...event, org_id: org, signature }), 409, 'replayed nonce');
    const forged = Buffer.from(signature, 'hex');
    forged[0]! ^= 1;
    const bad = { ...event, nonce: `smoke-${randomBytes(8).toString('hex')}`, org_id: org, signature: forged.toString('hex') };
    expectStatus(await request('POST', `/api/admin/chains/${chain}/secure-events`, bad), 422, 'forged signature');
    const stats = await request('GET', `/api/v1/chains/${chain}/stats`);
    expect(stats.body.total_events === 1, 'a forged or replayed event reached the chain');
  });
  await check('pings itself as a peer: reachable and verified', async () => {
    if (!identity) return void process.stdout.write('    (no identity read: ping not checked)\n');
    const peer = `smoke-self-${randomBytes(3).toString('hex')}`;
    const res = await request('POST', '/api/admin/peers', {
      peer_id: peer,
      url: base,
      public_key: identity.public_key,
      ...(apiKey ? { api_key: apiKey } : {}),
    });
    expectStatus(res, 201, 'peer');
    const ping = await request('GET', `/api/ledger/network/ping/${peer}`);
    expectStatus(ping, 200, 'ping');
    expect(ping.body.reachable === true && ping.body.verified === true, `ping: ${ping.text}`);
  });
}

async function realtime(): Promise<void> {
  process.stdout.write(`realtime at ${wsUrl}\n`);
  await check('pushes a new block and its event to a WebSocket subscriber, and answers ping', async () => {
    const chain = `smoke-ws-${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    expectStatus(await request('POST', `/api/v1/chains/${chain}/create`), 201, 'chain');
    const socket = new WebSocket(apiKey ? `${wsUrl}?api_key=${encodeURIComponent(apiKey)}` : wsUrl);
    const received: any[] = [];
    socket.on('message', (data) => received.push(JSON.parse(String(data))));
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve());
        socket.once('error', (error) => reject(new CheckFailed(`cannot open ${wsUrl}: ${error.message}`)));
      });
      const waitFor = async (pick: (m: any) => boolean, what: string, ms = 5_000) => {
        const deadline = Date.now() + ms;
        while (!received.some(pick)) {
          if (Date.now() > deadline) throw new CheckFailed(`no ${what} within ${ms} ms (got: ${received.map((m) => m.type).join(', ') || 'nothing'})`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      socket.send(JSON.stringify({ type: 'subscribe', chain }));
      await waitFor((m) => m.type === 'subscribed' && m.chain === chain, 'subscribed');
      expectStatus(await request('POST', `/api/v1/chains/${chain}/events`, { entity_id: 'ws', event_type: 'pushed' }), 200, 'event');
      await waitFor((m) => m.type === 'block_added' && m.chain === chain && m.block?.index === 1, 'block_added');
      await waitFor((m) => m.type === 'event' && m.event?.event_type === 'pushed', 'event');
      socket.send(JSON.stringify({ type: 'ping' }));
      await waitFor((m) => m.type === 'pong', 'pong');
    } finally {
      socket.terminate();
    }
  });
}

async function graphqlEndpoint(): Promise<void> {
  process.stdout.write('GraphQL at /graphql\n');
  await check("answers the spec's events query, and a mutation", async () => {
    const chain = `smoke-gql-${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    const made = await request('POST', '/graphql', { query: `mutation { createSubChain(name: "${chain}") { success } }` });
    if (made.status === 403) {
      process.stdout.write('    (the key may not mutate: created over REST instead)\n');
      expectStatus(await request('POST', `/api/v1/chains/${chain}/create`), 201, 'chain');
    } else expect(made.body?.data?.createSubChain?.success === true, `createSubChain: ${made.text.slice(0, 200)}`);
    expectStatus(await request('POST', `/api/v1/chains/${chain}/events`, { entity_id: `${chain}-e`, event_type: 'queried', details: { n: 7 } }), 200, 'event');
    const res = await request('POST', '/graphql', {
      query: `{ events(chainName: "${chain}", entityId: "${chain}-e", resolveCid: true) { eventId eventType details timestamp isOffchain } }`,
    });
    expectStatus(res, 200, 'graphql');
    const [event] = res.body?.data?.events ?? [];
    expect(event?.eventId === `${chain}_1_0` && event.details?.n === 7 && event.isOffchain === false, `events: ${res.text.slice(0, 200)}`);
  });
}

async function seeIt(): Promise<void> {
  process.stdout.write('metrics, API docs and explorer\n');
  await check('/metrics parses as Prometheus text and counts requests', async () => {
    const res = await request('GET', '/metrics');
    expectStatus(res, 200, 'metrics');
    expect((res.headers.get('content-type') ?? '').startsWith('text/plain; version=0.0.4'), `metrics content type ${res.headers.get('content-type')}`);
    const success = /^http_requests_success_total (\d+)/m.exec(res.text);
    expect(success && Number(success[1]) > 0, 'no http_requests_success_total');
    expect(/^ledger_events_appended_total \d+/m.test(res.text), 'no ledger_events_appended_total');
  });
  await check('/openapi.json is OpenAPI 3.1 with both prefixes of each group', async () => {
    const res = await request('GET', '/openapi.json', undefined, { key: false });
    expectStatus(res, 200, 'openapi');
    expect(res.body?.openapi === '3.1.0', `openapi: ${res.body?.openapi}`);
    for (const path of ['/api/ledger/chains', '/api/v1/chains', '/api/business/channels', '/api/v2/channels', '/api/admin/status'])
      expect(res.body.paths?.[path], `no ${path}`);
  });
  await check('/docs and /explorer serve their pages and files, without a key', async () => {
    for (const page of ['/docs', '/explorer']) {
      const res = await request('GET', page, undefined, { key: false });
      expectStatus(res, 200, page);
      for (const [, ref] of res.text.matchAll(/(?:src|href)="(\/[^"]+)"/g)) expectStatus(await request('GET', ref!, undefined, { key: false }), 200, ref!);
    }
    const config = await request('GET', '/explorer/config.json', undefined, { key: false });
    expectStatus(config, 200, 'explorer config');
    expect(config.body?.ws_url === null || /^wss?:\/\//.test(config.body?.ws_url), `explorer ws_url: ${config.text}`);
  });
}

async function edge(): Promise<void> {
  process.stdout.write('edge\n');
  await check('answers an unknown route with 404 or, without a key, 401', async () => {
    const res = await request('GET', '/api/v1/no-such-route', undefined, { key: false });
    expect(res.status === 404 || res.status === 401, `unknown route: ${res.status}`);
    if (res.status === 401) expect(res.headers.get('www-authenticate')?.startsWith('ApiKey'), '401 without WWW-Authenticate');
    expectEdgeHeaders(res, 'unknown route');
  });
}

process.stdout.write(`Smoke test of ${base}${apiKey ? ' (with an API key)' : ''}\n`);
for (const prefix of ['/api/ledger', '/api/v1']) await ledgerGroup(prefix);
await offchain('/api/v1');
await businessGroup('/api/business');
await businessGroup('/api/v2');
await adminGroup();
await realtime();
await graphqlEndpoint();
await seeIt();
await edge();
if (unreachable) process.stdout.write(`Stopped: ${base} does not answer. Is the service running there?\n`);
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
