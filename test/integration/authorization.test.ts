/**
 * The authorization matrix, sent to the running service: every row of test/authorization/matrix.ts
 * (every route of the route table under each of its prefixes, every GraphQL operation on a chain, the
 * WebSocket) for every kind of caller, compared cell by cell with the hand-written expectation. Then:
 * every 403 names the missing permission, no refused request left anything on any chain, every allowed
 * write is there, and docs/authorization.md shows this same matrix.
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createApiKey, revokeApiKey, type Role } from '#shared/admin/api-keys';
import { secureEventMessage } from '#shared/admin/admin';
import { expandRoutes, GROUPS, ROUTE_TABLE } from '#shared/api/routes';
import { createApiKeyRepository } from '#shared/storage/api-key-repository';
import { createDynamoClient } from '#shared/storage/client';
import { privateDataPk } from '#shared/storage/keys';
import { CALLERS, MATRIX, type Caller, type On, type Row } from '#test/authorization/matrix';
import { DOC_PATH, withCurrentMatrix } from '#test/authorization/render';
import { call, removeDir, startStack, type Stack } from '#test/support/stack';

const ROOT = new URL('../../', import.meta.url).pathname;
const ADMIN_KEY = `admin-${randomBytes(24).toString('hex')}`;
const CHANNEL = { 'acme channel': 'm-acme', 'globex channel': 'm-globex' } as const;
const CHAIN: Record<string, string> = { 'acme channel': 'channel-m-acme', 'globex channel': 'channel-m-globex', 'plain chain': 'm-plain' };
const CONTRACT: Record<string, string> = { "acme's contract": 'm-acme-c', "globex's contract": 'm-globex-c', "admins' contract": 'm-admin-c' };
/** Emits one event, whose entity is the run's, to context.chain. */
const EMITTER = 'function execute(event, context) { return { ok: true, emit: [{ entity_id: event.entity_id, event_type: "emitted", details: {} }] }; }';

let stack: Stack;
const keys = {} as Record<Caller, string | undefined>;
const acmeSigner = generateKeyPairSync('ed25519');
let offchainRef: { cid: string; nonce: string };
let explorerAsset: string;

/** Markers: each cell that may write puts `mk<n>` into what it writes, to find it (or not) on the chains afterwards. */
let counter = 0;
const cells = new Map<string, { caller: Caller; surface: string; on: On; status: number; chain: string | null }>();
/** A marker where it stands as a word: neither letters, digits nor base64's `+/=` on either side. */
const MARKER_WORD = /(?<![A-Za-z0-9+/=])mk\d+(?![A-Za-z0-9+/=])/g;
function marker(): string {
  counter += 1;
  return `mk${counter}`;
}

const headers = (caller: Caller): Record<string, string> => (keys[caller] ? { 'X-API-Key': keys[caller]! } : {});
const admin = (method: string, path: string, body?: unknown) => call(stack.url, method, path, body, headers('admin'));

async function must(method: string, path: string, body: unknown, caller: Caller = 'admin') {
  const res = await call(stack.url, method, path, body, headers(caller));
  assert.ok(res.status < 300, `${method} ${path} as ${caller}: ${res.status} ${res.text}`);
  return res.body;
}

before(async () => {
  stack = await startStack({ env: { SVC_AUTH_ENABLED: 'true', SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_AUTH_CACHE_SECONDS: '0' } });
  const repository = createApiKeyRepository({
    client: createDynamoClient({ region: 'us-east-1', endpoint: stack.dynamoEndpoint, accessKeyId: stack.dynamoAccessKeyId }),
    tableName: stack.tables.registry,
  });
  const make = async (role: Role, org: string | null) => (await createApiKey(repository, role, org)).key;
  keys.none = undefined;
  keys.reader = await make('reader', null);
  keys.writer = await make('writer', null);
  keys['acme-reader'] = await make('reader', 'acme');
  keys['acme-writer'] = await make('writer', 'acme');
  keys['globex-reader'] = await make('reader', 'globex');
  keys['globex-writer'] = await make('writer', 'globex');
  keys.admin = ADMIN_KEY;

  const acmeKey = acmeSigner.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');
  await must('POST', '/api/business/organizations', { org_id: 'acme', name: 'Acme', public_key: acmeKey }, 'acme-writer');
  await must('POST', '/api/business/organizations', { org_id: 'globex', name: 'Globex' }, 'globex-writer');
  // Each organization founds its channel and so is its first member.
  await must('POST', '/api/business/channels', { name: CHANNEL['acme channel'] }, 'acme-writer');
  await must('POST', '/api/business/channels', { name: CHANNEL['globex channel'] }, 'globex-writer');
  await must('POST', `/api/ledger/chains/${CHAIN['plain chain']}/create`, undefined);
  for (const [label, owner] of [
    ['acme channel', 'acme-writer'],
    ['globex channel', 'globex-writer'],
  ] as const) {
    await must('POST', `/api/business/channels/${CHANNEL[label]}/private-collections`, { collection: 'prices' }, owner);
    await must('POST', '/api/business/private-data', { channel: CHANNEL[label], collection: 'prices', key: 'k0', value: 'secret' }, owner);
  }
  for (const chain of Object.values(CHAIN)) {
    await must('POST', `/api/ledger/chains/${chain}/events`, { entity_id: 'm-ent', event_type: 'seeded' });
    await must('POST', `/api/ledger/chains/${chain}/submit-proof`, undefined);
  }
  await must('POST', '/api/business/contracts', { contract_id: CONTRACT["acme's contract"], version: '1.0.0', implementation: EMITTER }, 'acme-writer');
  await must('POST', '/api/business/contracts', { contract_id: CONTRACT["globex's contract"], version: '1.0.0', implementation: EMITTER }, 'globex-writer');
  await must('POST', '/api/business/contracts', { contract_id: CONTRACT["admins' contract"], version: '1.0.0', implementation: EMITTER });
  await must('POST', '/api/admin/peers', { peer_id: 'm-peer', url: 'http://127.0.0.1:9', public_key: acmeKey });
  offchainRef = await must('POST', '/api/ledger/offchain', { data: { note: 'decode me' } });
  // A data subject for the erase row (a second erasure answers 200 too).
  await must('POST', `/api/ledger/chains/${CHAIN['plain chain']}/events`, {
    entity_id: 'm-person',
    event_type: 'registered',
    details: { name: 'M' },
    subject_id: 'm-subject',
  });
  explorerAsset = readdirSync(`${ROOT}explorer/dist/assets`)[0]!;
});

after(async () => {
  await stack?.stop();
  if (stack) removeDir(stack.dataDir);
});

/** A request for one cell: the row's surface with concrete values, under a prefix. */
interface Cell {
  method: string;
  path: string;
  body?: unknown;
  /** The chain this cell writes to (for the left-nothing check), if it writes one. */
  writes?: string;
}

const chainOf = (on: On) => CHAIN[on] ?? 'm-none';
const channelOf = (on: On) => (on === 'acme channel' || on === 'globex channel' ? CHANNEL[on] : 'm-none');

/** Swaps the canonical prefix of a path for another of its group's. */
function underPrefix(path: string, prefix: string): string {
  for (const group of Object.values(GROUPS)) {
    const canonical = group.prefixes[0]!;
    if (canonical && path.startsWith(`${canonical}/`) && (group.prefixes as readonly string[]).includes(prefix))
      return `${prefix}${path.slice(canonical.length)}`;
  }
  return path;
}

async function httpCell(row: Row, mk: string): Promise<Cell> {
  const [method, template] = row.surface.split(' ') as [string, string];
  const chain = chainOf(row.on);
  const fill = (p: string) =>
    p
      .replace('{chain_name}', chain)
      .replace('{index_or_hash}', '1')
      .replace('{entity_id}', 'm-ent')
      .replace('{target_id}', 'm-peer')
      .replace('{org_id}', 'acme')
      .replace('{contract_id}', CONTRACT["acme's contract"]!)
      .replace('{channel_id}', channelOf(row.on))
      .replace('{channel}', channelOf(row.on))
      .replace('{collection}', 'prices')
      .replace('{key}', 'k0')
      .replace('{tile_path+}', '0/000.p/1')
      .replace('{subject_id}', 'm-subject');
  const path = fill(template);
  switch (`${method} ${template}`) {
    case 'POST /api/ledger/chains/{chain_name}/create':
      return { method, path: row.on === 'plain chain' ? `/api/ledger/chains/${mk}/create` : path };
    case 'POST /api/ledger/chains/{chain_name}/events':
      return { method, path, body: { entity_id: mk, event_type: 'cell' }, writes: chain };
    case 'POST /api/ledger/chains/{chain_name}/events/batch':
      return {
        method,
        path,
        body: {
          events: [
            { entity_id: mk, event_type: 'cell' },
            { entity_id: mk, event_type: 'cell' },
          ],
        },
        writes: chain,
      };
    case 'GET /api/ledger/entities/{entity_id}/trace':
      return { method, path: `${path}?chain_name=${chain}` };
    case 'GET /api/ledger/chains/{chain_name}/consistency':
      return { method, path: `${path}?first=1&second=2` };
    case 'GET /api/ledger/chains/{chain_name}/evidence':
      return { method, path: `${path}?leaves=0-1&known_size=1&blocks=true` };
    case 'POST /api/ledger/offchain':
      return { method, path, body: { data: { mk } } };
    case 'POST /api/ledger/subjects/{subject_id}/erase':
      return { method, path, body: { reason: `matrix ${mk}` } };
    case 'POST /api/business/organizations': {
      const org = row.on === 'acme' ? 'acme' : row.on === 'globex' ? 'globex' : mk;
      return { method, path, body: { org_id: org, name: org } };
    }
    case 'POST /api/business/channels':
      return { method, path, body: { name: mk } };
    case 'POST /api/business/channels/{channel_id}/organizations':
      await must('POST', '/api/business/organizations', { org_id: mk, name: mk });
      return { method, path, body: { org_id: mk }, writes: CHAIN[row.on] };
    case 'DELETE /api/business/channels/{channel_id}/organizations/{org_id}': {
      // A member of its own for each cell, added by an admin where the channel exists, so that each removal has one.
      // Its id carries no marker: its joining is on the chain whatever the removal does (the removal's own record
      // is checked in test/integration/business.test.ts).
      const org = `member-${mk.slice(2)}`;
      await must('POST', '/api/business/organizations', { org_id: org, name: org });
      if (CHAIN[row.on]) await must('POST', `/api/business/channels/${channelOf(row.on)}/organizations`, { org_id: org });
      return { method, path: `/api/business/channels/${channelOf(row.on)}/organizations/${org}` };
    }
    case 'POST /api/business/channels/{channel_id}/private-collections':
      return { method, path, body: { collection: mk }, writes: CHAIN[row.on] };
    case 'POST /api/business/private-data':
      return {
        method,
        path,
        body: { channel: channelOf(row.on), collection: 'prices', key: mk, value: 'overwritten?', event_metadata: { entity_id: mk } },
        writes: CHAIN[row.on],
      };
    case 'POST /api/business/contracts': {
      const id = CONTRACT[row.on] ?? mk;
      return { method, path, body: { contract_id: id, version: `1.0.${counter}`, implementation: EMITTER } };
    }
    case 'POST /api/business/contracts/execute':
      return {
        method,
        path,
        body: { contract_id: CONTRACT["admins' contract"], event: { entity_id: mk, event: 'run', details: {} }, context: { chain } },
        writes: chain,
      };
    case 'POST /graphql':
      return { method, path, body: { query: '{ chains { name } }' } };
    case 'GET /graphql':
      return { method, path: `${path}?query=${encodeURIComponent('{ chains { name } }')}` };
    case 'GET /docs/{file}':
      return { method, path: '/docs/swagger-ui.css' };
    case 'GET /explorer/{file}':
      return { method, path: '/explorer/index.html' };
    case 'GET /explorer/assets/{file}':
      return { method, path: `/explorer/assets/${explorerAsset}` };
    case 'POST /api/admin/verify-identity':
      return { method, path, body: { challenge: 'abcd' } };
    case 'POST /api/admin/chains/{chain_name}/secure-events': {
      const event = { entity_id: mk, event_type: 'signed', details: {}, nonce: `nonce-${mk}` };
      const signature = sign(null, secureEventMessage({ chain_name: chain, ...event }), acmeSigner.privateKey).toString('hex');
      return { method, path, body: { ...event, org_id: 'acme', signature }, writes: chain };
    }
    case 'POST /api/admin/peers':
      return { method, path, body: { peer_id: mk, url: 'http://127.0.0.1:9', public_key: '11'.repeat(32) } };
    case 'POST /api/admin/ipfs/decode':
      return { method, path, body: offchainRef };
    default:
      return { method, path };
  }
}

/** GraphQL operations as cells: the query, and where it writes. */
function graphqlCell(row: Row, mk: string): Cell {
  const chain = chainOf(row.on);
  const q = (query: string): Cell => ({ method: 'POST', path: '/graphql', body: { query } });
  switch (row.surface) {
    case 'GraphQL events(chainName)':
      return q(`{ events(chainName: "${chain}") { eventId } }`);
    case 'GraphQL blocks(chainName)':
      return q(`{ blocks(chainName: "${chain}") { index } }`);
    case 'GraphQL block(chainName, index)':
      return q(`{ block(chainName: "${chain}", index: 1) { hash } }`);
    case 'GraphQL trace(entityId, chainName)':
      return q(`{ trace(entityId: "m-ent", chainName: "${chain}") { chains } }`);
    case 'GraphQL chain(name) { totalEvents }':
      return q(`{ chain(name: "${chain}") { totalEvents } }`);
    case 'GraphQL createSubChain(name)':
      return q(`mutation { createSubChain(name: "${row.on === 'plain chain' ? mk : chain}") { success } }`);
    case 'GraphQL addEvent(chainName)':
      return { ...q(`mutation { addEvent(chainName: "${chain}", input: { entityId: "${mk}", eventType: "cell" }) { eventId } }`), writes: chain };
    case 'GraphQL submitProof(chainName)':
      return q(`mutation { submitProof(chainName: "${chain}") { proofId } }`);
    default:
      throw new Error(`no GraphQL cell for ${row.surface}`);
  }
}

/** The status a cell answered: HTTP, or for GraphQL with 200, the first error's status. */
function effective(res: { status: number; body: any }, graphql: boolean): number {
  if (!graphql || res.status !== 200) return res.status;
  const first = res.body?.errors?.[0];
  return first ? Number(first.extensions?.status ?? 500) : 200;
}

/** Every 403 says which permission is missing (GraphQL in its error message). */
function assertNamesPermission(res: { status: number; body: any }, where: string) {
  const detail = typeof res.body?.detail === 'string' ? res.body.detail : res.body?.errors?.[0]?.message;
  assert.match(String(detail), /^Missing permission/, `${where}: 403 without the missing permission: ${JSON.stringify(res.body)}`);
}

async function runHttpRow(row: Row, prefix: string | null): Promise<number[]> {
  const graphql = row.surface.startsWith('GraphQL ');
  return Promise.all(
    CALLERS.map(async (caller) => {
      const mk = marker();
      const cell = graphql ? graphqlCell(row, mk) : await httpCell(row, mk);
      const path = prefix ? underPrefix(cell.path, prefix) : cell.path;
      const res = await call(stack.url, cell.method, path, cell.body, headers(caller));
      const status = effective(res, graphql);
      if (status === 403) assertNamesPermission(res, `${row.surface} on ${row.on} as ${caller}`);
      cells.set(mk, { caller, surface: row.surface, on: row.on, status, chain: cell.writes ?? null });
      return status;
    }),
  );
}

/** A WebSocket for a caller: its messages, or the status its connection was refused with. */
interface Socket {
  status: number;
  socket?: WebSocket;
  messages: any[];
  next(pick: (m: any) => boolean, ms?: number): Promise<any>;
}

const openSockets: WebSocket[] = [];
async function connect(caller: Caller): Promise<Socket> {
  const url = `${stack.url.replace(/^http/, 'ws')}/ws${keys[caller] ? `?api_key=${encodeURIComponent(keys[caller]!)}` : ''}`;
  const socket = new WebSocket(url);
  const messages: any[] = [];
  const waiters: (() => void)[] = [];
  socket.on('message', (data) => {
    messages.push(JSON.parse(String(data)));
    for (const wake of waiters.splice(0)) wake();
  });
  const status = await new Promise<number>((resolve) => {
    socket.once('open', () => resolve(200));
    socket.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 500));
    socket.once('error', () => resolve(500));
  });
  if (status !== 200) return { status, messages, next: () => Promise.reject(new Error('not connected')) };
  openSockets.push(socket);
  let seen = 0;
  return {
    status,
    socket,
    messages,
    /** The next message (after those already taken) that matches. */
    async next(pick, ms = 10_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        while (seen < messages.length) {
          const m = messages[seen++];
          if (pick(m)) return m;
        }
        if (Date.now() > deadline) throw new Error('no such message in time');
        await new Promise<void>((wake) => {
          waiters.push(wake);
          setTimeout(wake, 200);
        });
      }
    },
  };
}

async function runWebSocketRows(rows: Row[]): Promise<Map<Row, number[]>> {
  const results = new Map<Row, number[]>(rows.map((r) => [r, []]));
  const connectRow = rows.find((r) => r.surface === 'WebSocket connect')!;
  const sockets = Object.fromEntries(await Promise.all(CALLERS.map(async (c) => [c, await connect(c)] as const))) as Record<Caller, Socket>;
  results.set(
    connectRow,
    CALLERS.map((c) => sockets[c].status),
  );

  // Subscriptions to one chain: `subscribed` or an `error` naming the permission.
  for (const row of rows.filter((r) => r.surface === 'WebSocket subscribe {"chain"}')) {
    const statuses = await Promise.all(
      CALLERS.map(async (caller) => {
        const s = sockets[caller];
        if (s.status !== 200) return s.status;
        s.socket!.send(JSON.stringify({ type: 'subscribe', chain: chainOf(row.on) }));
        const reply = await s.next((m) => m.type === 'subscribed' || m.type === 'error');
        if (reply.type === 'error') {
          assert.match(reply.detail, /^Missing permission 'chain\.read'/, `${caller}: ${reply.detail}`);
          return 403;
        }
        return 200;
      }),
    );
    results.set(row, statuses);
  }

  // Pushes to `*` and to an event type: fresh connections subscribe, an admin appends one event to each
  // chain; members must receive their channel's, others must not (given time to arrive, they did not).
  const eventType = `pushed-${randomBytes(4).toString('hex')}`;
  const listeners: Record<string, Record<Caller, Socket>> = {};
  for (const [surface, filter] of [
    ['WebSocket pushes to a "*" subscriber', { chain: '*' }],
    ['WebSocket pushes to an "event_type" subscriber', { event_type: eventType }],
  ] as const) {
    listeners[surface] = Object.fromEntries(
      await Promise.all(
        CALLERS.map(async (caller) => {
          const s = await connect(caller);
          if (s.status === 200) {
            s.socket!.send(JSON.stringify({ type: 'subscribe', ...filter }));
            await s.next((m) => m.type === 'subscribed');
          }
          return [caller, s] as const;
        }),
      ),
    ) as Record<Caller, Socket>;
  }
  for (const chain of Object.values(CHAIN)) await must('POST', `/api/ledger/chains/${chain}/events`, { entity_id: 'm-pushed', event_type: eventType });
  const arrived = (s: Socket, chain: string) => s.messages.some((m) => m.type === 'event' && m.chain === chain && m.event?.event_type === eventType);
  // The admin hears everything: once it has all three, the broadcaster has handled them; then a grace period.
  for (const surface of Object.keys(listeners)) {
    const hears = listeners[surface]!.admin;
    for (const chain of Object.values(CHAIN)) await hears.next((m) => m.type === 'event' && m.chain === chain && m.event?.event_type === eventType);
  }
  await new Promise((r) => setTimeout(r, 1500));
  for (const row of rows.filter((r) => r.surface in listeners)) {
    results.set(
      row,
      CALLERS.map((caller) => {
        const s = listeners[row.surface]![caller];
        return s.status !== 200 ? s.status : arrived(s, chainOf(row.on)) ? 200 : 403;
      }),
    );
  }
  return results;
}

function mismatches(row: Row, got: number[], where: string): string[] {
  return CALLERS.flatMap((caller, i) => (got[i] === row.expect[i] ? [] : [`${where} as ${caller}: expected ${row.expect[i]}, got ${got[i]}`]));
}

describe('Authorization matrix (auth on, every route × every caller × acme channel, globex channel, plain chain)', () => {
  it('covers every route of the route table', () => {
    const surfaces = new Set(MATRIX.map((r) => r.surface));
    const missing = ROUTE_TABLE.map((r) => `${r.method} ${(r.onlyPrefixes ?? GROUPS[r.group].prefixes)[0]}${r.path}`).filter((s) => !surfaces.has(s));
    assert.deepEqual(missing, [], 'routes without a row in test/authorization/matrix.ts');
  });

  it('docs/authorization.md shows this matrix (npm run docs:authorization rewrites it)', () => {
    const document = readFileSync(DOC_PATH, 'utf8');
    assert.equal(document, withCurrentMatrix(document), 'docs/authorization.md is out of date: run npm run docs:authorization');
  });

  it('answers every HTTP and GraphQL cell as the matrix says, under every prefix', async () => {
    const problems: string[] = [];
    const served = expandRoutes();
    for (const row of MATRIX.filter((r) => !r.surface.startsWith('WebSocket '))) {
      const [method, path] = row.surface.split(' ');
      const twins = row.surface.startsWith('GraphQL ')
        ? [null]
        : served
            .filter((r) => r.method === method && `${(GROUPS[r.group].prefixes as readonly string[])[0]}${r.path.slice(r.prefix.length)}` === path)
            .map((r) => r.prefix);
      assert.ok(twins.length > 0, `no served route for ${row.surface}`);
      for (const prefix of twins)
        problems.push(...mismatches(row, await runHttpRow(row, prefix), `${method} ${underPrefix(path!, prefix ?? '')} on ${row.on}`));
    }
    assert.deepEqual(problems, []);
  });

  it('answers every WebSocket cell as the matrix says', async () => {
    const rows = MATRIX.filter((r) => r.surface.startsWith('WebSocket '));
    const results = await runWebSocketRows(rows);
    const problems = rows.flatMap((row) => mismatches(row, results.get(row)!, `${row.surface} on ${row.on}`));
    for (const s of openSockets) s.close();
    assert.deepEqual(problems, []);
  });

  it('left nothing of a refused request on any chain, and every allowed write is there', async () => {
    const found = new Map<string, Set<string>>();
    const chains = ['main', ...Object.values(CHAIN)];
    for (const chain of chains) {
      const markers = new Set<string>();
      for (let offset = 0; ; offset += 100) {
        const page = (await admin('GET', `/api/v1/chains/${chain}/blocks?limit=100&offset=${offset}`)).body;
        // A marker is a word of its own: a sealed payload's base64 (a personal event's `details_sealed`) can hold
        // `mk49` by chance, which a CI check took for a refused cell's marker (about one run in a hundred).
        for (const block of page.blocks) for (const e of block.events) for (const m of JSON.stringify(e).match(MARKER_WORD) ?? []) markers.add(m);
        if (offset + 100 >= page.total) break;
      }
      found.set(chain, markers);
    }
    const problems: string[] = [];
    for (const [mk, cell] of cells) {
      const where = [...found].filter(([, markers]) => markers.has(mk)).map(([chain]) => chain);
      const allowed = cell.status < 300;
      if (!allowed && where.length > 0)
        problems.push(`refused ${cell.surface} on ${cell.on} as ${cell.caller} (${cell.status}) left ${mk} on ${where.join(', ')}`);
      if (allowed && cell.chain && !where.includes(cell.chain))
        problems.push(`allowed ${cell.surface} on ${cell.on} as ${cell.caller} is not on ${cell.chain}`);
    }
    assert.deepEqual(problems, []);
    assert.ok([...cells.values()].some((c) => c.chain && c.status < 300) && [...cells.values()].some((c) => c.chain && c.status === 403));
  });

  it("keeps acme's private value acme's: globex can neither read nor overwrite it (the reported attack)", async () => {
    const as = (caller: Caller, method: string, path: string, body?: unknown) => call(stack.url, method, path, body, headers(caller));
    assert.equal((await as('globex-writer', 'POST', '/api/business/channels/m-acme/organizations', { org_id: 'globex' })).status, 403);
    assert.equal((await as('globex-reader', 'GET', '/api/business/private-data/m-acme/prices/k0')).status, 403);
    assert.equal(
      (await as('globex-writer', 'POST', '/api/business/private-data', { channel: 'm-acme', collection: 'prices', key: 'k0', value: 'globex was here' }))
        .status,
      403,
    );
    const read = await as('acme-reader', 'GET', '/api/business/private-data/m-acme/prices/k0');
    assert.equal(read.body.value, 'secret');
    assert.deepEqual((await as('acme-reader', 'GET', '/api/business/channels/m-acme')).body.organizations.includes('globex'), false);
  });

  it('refuses a private key, value or event metadata that is not well-formed Unicode: 422, nothing on the channel (red team)', async () => {
    // A lone surrogate was stored as U+FFFD: 201 and an event on the channel's chain, for a key no URL could read back.
    const as = (caller: Caller, method: string, path: string, body?: unknown) => call(stack.url, method, path, body, headers(caller));
    const total = async () => (await admin('GET', `/api/v1/chains/${CHAIN['acme channel']}/blocks?limit=1`)).body.total as number;
    const before = await total();
    for (const [field, body] of [
      ['key', { channel: 'm-acme', collection: 'prices', key: 'k\ud800', value: 'x' }],
      ['value', { channel: 'm-acme', collection: 'prices', key: 'k-lone', value: 'x\udfff' }],
      // Put in the channel event's details, it failed the event's hashing after the value was sealed: a 500.
      ['event_metadata', { channel: 'm-acme', collection: 'prices', key: 'k-lone', value: 'x', event_metadata: { 'n\ud800': 1 } }],
      ['event_metadata', { channel: 'm-acme', collection: 'prices', key: 'k-lone', value: 'x', event_metadata: { note: ['n\udc00'] } }],
    ] as const) {
      const refused = await as('acme-writer', 'POST', '/api/business/private-data', body);
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.match(JSON.stringify(refused.body), new RegExp(`${field}[^}]*well-formed Unicode`));
    }
    assert.equal(await total(), before, 'no event on the channel');
    assert.equal((await as('acme-reader', 'GET', '/api/business/private-data/m-acme/prices/k-lone')).status, 404);
  });

  it('refuses a body with a content coding (415), appending nothing, whatever the coding says (red team)', async () => {
    // Plain JSON labelled `br` was appended as it was; a gzipped one was refused as not UTF-8: a proxy that decodes
    // codings and this service read two different bodies.
    const total = async () => (await admin('GET', '/api/v1/chains/m-plain/blocks?limit=1')).body.total as number;
    const before = await total();
    for (const coding of ['br', 'gzip', 'deflate, identity']) {
      const res = await fetch(`${stack.url}/api/v1/chains/m-plain/events`, {
        method: 'POST',
        headers: { ...headers('acme-writer'), 'Content-Type': 'application/json', 'Content-Encoding': coding },
        body: JSON.stringify({ entity_id: 'coded', event_type: 'coded' }),
      });
      assert.equal(res.status, 415, coding);
      assert.match(((await res.json()) as { detail: string }).detail, /Content-Encoding .* is not supported/);
    }
    const plain = await call(
      stack.url,
      'POST',
      '/api/v1/chains/m-plain/events',
      { entity_id: 'plain', event_type: 'plain' },
      {
        ...headers('acme-writer'),
        'Content-Encoding': 'identity',
      },
    );
    assert.equal(plain.status, 200, plain.text);
    assert.equal(await total(), before + 1, 'only the uncoded one appended');
  });

  it('gives a contract id to its first publisher: globex cannot replace what acme’s runs execute', async () => {
    const as = (caller: Caller, method: string, path: string, body?: unknown) => call(stack.url, method, path, body, headers(caller));
    const hijack = await as('globex-writer', 'POST', '/api/business/contracts', {
      contract_id: 'm-acme-c',
      version: '9.9.9',
      implementation: 'function execute() { return { pwned: true }; }',
    });
    assert.equal(hijack.status, 403);
    assert.match(hijack.body.detail, /contract 'm-acme-c' belongs to organization 'acme'/);
    const info = await as('reader', 'GET', '/api/business/contracts/m-acme-c');
    assert.equal(info.body.owner, 'acme');
    assert.ok(!info.body.versions.some((v: { version: string }) => v.version === '9.9.9'));
    const run = await as('acme-writer', 'POST', '/api/business/contracts/execute', {
      contract_id: 'm-acme-c',
      event: { entity_id: 'x', event: 'run', details: {} },
      context: { chain: 'm-plain' },
    });
    assert.equal(run.status, 200);
    assert.deepEqual(run.body.result.ok, true);
  });

  it('refuses a lone surrogate in a contract run or a GraphQL string (422 or 400, never a 500), wherever it is written (red team)', async () => {
    // A writer's contract run with one in its event, and a reader's trace with one as its entity id (a variable, a
    // literal, or a GET's variables) each ended in a 500 and an error log: canonical JSON cannot carry it.
    const as = (caller: Caller, method: string, path: string, body?: unknown) => call(stack.url, method, path, body, headers(caller));
    for (const event of [
      { entity_id: 'x', event: 'run', details: { a: '\ud800' } },
      { entity_id: 'x', event: 'run', details: { 'k\udfff': 1 } },
      { entity_id: 'x\ud800', event: 'run', details: {} },
    ]) {
      const run = await as('acme-writer', 'POST', '/api/business/contracts/execute', { contract_id: 'm-acme-c', event, context: { chain: 'm-plain' } });
      assert.equal(run.status, 422, JSON.stringify(run.body));
      assert.match(JSON.stringify(run.body.detail), /well-formed Unicode/);
    }
    const run = await as('acme-writer', 'POST', '/api/business/contracts/execute', {
      contract_id: 'm-acme-c',
      event: { entity_id: 'x', event: 'run', details: {} },
      context: { note: ['\udc00'] },
    });
    assert.equal(run.status, 422, 'in the context too');
    const trace = 'query($n: String!) { trace(entityId: $n, after: "AAAAAAAAAAAAAAAAAAAA") { events { eventId } } }';
    const byVariable = await as('reader', 'POST', '/graphql', { query: trace, variables: { n: '\ud800' } });
    assert.equal(byVariable.status, 422, JSON.stringify(byVariable.body));
    const literal = await as('reader', 'POST', '/graphql', { query: '{ trace(entityId: "\\ud800") { events { eventId } } }' });
    assert.equal(literal.status, 400, JSON.stringify(literal.body));
    assert.match(literal.body.errors[0].message, /Invalid Unicode escape/, "GraphQL's parser refuses it written as an escape");
    const raw = await as('reader', 'POST', '/graphql', { query: '{ trace(entityId: "\ud800") { events { eventId } } }' });
    assert.equal(raw.status, 422, `written as itself, the body's rule: ${JSON.stringify(raw.body)}`);
    const get = await as('reader', 'GET', `/graphql?query=${encodeURIComponent(trace)}&variables=${encodeURIComponent('{"n":"\\ud800"}')}`);
    assert.equal(get.status, 422, JSON.stringify(get.body));
  });

  it('leaves channel events out of a trace across chains for non-members, and keeps them for members', async () => {
    const trace = async (caller: Caller) => (await call(stack.url, 'GET', '/api/v1/entities/m-ent/trace', undefined, headers(caller))).body;
    assert.deepEqual((await trace('globex-reader')).chains.sort(), ['channel-m-globex', 'm-plain']);
    assert.deepEqual((await trace('acme-reader')).chains.sort(), ['channel-m-acme', 'm-plain']);
    assert.deepEqual((await trace('reader')).chains, ['m-plain']);
    assert.deepEqual((await trace('admin')).chains.sort(), ['channel-m-acme', 'channel-m-globex', 'm-plain']);
    const gql = await call(stack.url, 'POST', '/graphql', { query: '{ events(entityId: "m-ent") { chainName } }' }, headers('globex-reader'));
    assert.ok(gql.body.data.events.length > 0);
    assert.ok(gql.body.data.events.every((e: { chainName: string }) => e.chainName !== 'channel-m-acme'));
  });

  it("erases a subject's private values with their keys: absent after (404 as if never written, also off chain), no entity id a guess at the key can check, no record, no log line naming it (red team)", async () => {
    const as = (caller: Caller, method: string, path: string, body?: unknown) => call(stack.url, method, path, body, headers(caller));
    const key = 'frank.miller@example.com';
    const large = 'frank.large@example.com';
    const write = async (k: string, value: string) => {
      const res = await as('acme-writer', 'POST', '/api/business/private-data', {
        channel: 'm-acme',
        collection: 'prices',
        key: k,
        value,
        subject_id: 'm-frank',
      });
      assert.equal(res.status, 201, res.text);
      return res.body.event_id as string;
    };
    const eventId = await write(key, 'diagnosis=SECRETDIAG');
    // Past the service's inline threshold (64 KiB): sealed for the subject, then put in IPFS.
    await write(large, 'SECRETBIG'.repeat(8_000));
    assert.equal((await as('acme-reader', 'GET', `/api/business/private-data/m-acme/prices/${key}`)).body.value, 'diagnosis=SECRETDIAG');
    assert.equal((await as('acme-reader', 'GET', `/api/business/private-data/m-acme/prices/${large}`)).status, 200);

    // The event's entity id is not the plain hash of the key (any member could have checked a guess against it).
    const index = Number(eventId.split('_').at(-2));
    const block = await as('acme-reader', 'GET', `/api/v1/chains/channel-m-acme/blocks/${index}`);
    const entity = block.body.events[0].entity_id as string;
    const plain = `prices:${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
    assert.match(entity, /^prices:[0-9a-f]{16}$/);
    assert.notEqual(entity, plain);
    assert.deepEqual((await as('acme-reader', 'GET', `/api/v1/entities/${plain}/trace`)).body.events ?? [], []);

    assert.equal((await as('admin', 'POST', '/api/v1/subjects/m-frank/erase', { reason: 'art. 17' })).status, 200);
    const never = await as('acme-reader', 'GET', '/api/business/private-data/m-acme/prices/nobody@example.com');
    assert.equal(never.status, 404);
    for (const k of [key, large]) {
      const read = await as('acme-reader', 'GET', `/api/business/private-data/m-acme/prices/${k}`);
      assert.equal(read.status, 404, `${k}: ${read.text}`);
      assert.equal(read.body.detail, never.body.detail.replace('nobody@example.com', k), 'the same answer as a key never written');
      assert.equal((await as('acme-reader', 'GET', `/api/v2/private-data/m-acme/prices/${k}`)).status, 404);
    }
    // Its records are deleted (their keys were the sort keys), and no log line names the key.
    const documents = createDynamoClient({ region: 'us-east-1', endpoint: stack.dynamoEndpoint, accessKeyId: stack.dynamoAccessKeyId });
    for (const k of [key, large]) {
      const item = await documents.send(new GetCommand({ TableName: stack.tables.registry, Key: { pk: privateDataPk('m-acme', 'prices'), sk: k } }));
      assert.equal(item.Item, undefined, `the record of ${k}`);
    }
    assert.ok(!stack.output().includes(key) && !stack.output().includes(large), 'no log line names the keys');
    // The subject takes no new value; another subject's value under the same key is its own, and stays.
    const again = await as('acme-writer', 'POST', '/api/business/private-data', {
      channel: 'm-acme',
      collection: 'prices',
      key,
      value: 'x',
      subject_id: 'm-frank',
    });
    assert.equal(again.status, 410);
    await as('acme-writer', 'POST', '/api/business/private-data', { channel: 'm-acme', collection: 'prices', key, value: 'new', subject_id: 'm-gina' });
    assert.equal((await as('acme-reader', 'GET', `/api/business/private-data/m-acme/prices/${key}`)).body.value, 'new');
  });

  it("stops a GraphQL request's mutations at its key's revocation: none appends after it (red team)", async () => {
    await must('POST', '/api/ledger/chains/m-revoke/create', undefined);
    const repository = createApiKeyRepository({
      client: createDynamoClient({ region: 'us-east-1', endpoint: stack.dynamoEndpoint, accessKeyId: stack.dynamoAccessKeyId }),
      tableName: stack.tables.registry,
    });
    const { key, record } = await createApiKey(repository, 'writer', null);
    const count = async () => (await admin('GET', '/api/v1/chains/m-revoke/stats')).body.total_events as number;
    const fields = Array.from({ length: 80 }, (_, i) => `e${i}: addEvent(chainName: "m-revoke", input: {entityId: "r", eventType: "n${i}"}) { eventId }`);
    const sent = call(stack.url, 'POST', '/graphql', { query: `mutation { ${fields.join(' ')} }` }, { 'X-API-Key': key });
    // Revoked once the first of its events has landed (auth's cache is off here: each mutation looks the key up).
    const deadline = Date.now() + 20_000;
    while ((await count()) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await revokeApiKey(repository, record.key_id);
    const atRevocation = await count();
    const answer = await sent;
    assert.equal(answer.status, 200);
    const refused = (answer.body.errors ?? []).filter((e: { extensions: { status: number } }) => e.extensions.status === 401);
    assert.ok(refused.length > 0 && atRevocation < 80, `${atRevocation} events when revoked, ${refused.length} mutations refused`);
    assert.match(refused[0].message, /revoked/);
    assert.ok((await count()) <= atRevocation + 1, `${(await count()) - atRevocation} events appended after the revocation (one may have been past its check)`);
  });

  it("keeps a signed event's signature the relay's to record: a member's copy of it, by REST, batch or GraphQL, carries none, whatever `signed` it sends (red team)", async () => {
    const chain = CHAIN['acme channel']!;
    const event = { entity_id: 'm-signed', event_type: 'approved', details: { amount: 10 }, nonce: 'nonce-m-signed' };
    const signature = sign(null, secureEventMessage({ chain_name: chain, ...event }), acmeSigner.privateKey).toString('hex');
    const relayed = await must('POST', `/api/admin/chains/${chain}/secure-events`, { ...event, org_id: 'acme', signature });
    const blockOf = async (eventId: string) =>
      (await call(stack.url, 'GET', `/api/ledger/chains/${chain}/blocks/${eventId.split('_').at(-2)}`, undefined, headers('acme-reader'))).body.events[0];
    const signed = (await blockOf(relayed.event_id)).signed;
    assert.equal(signed.org_id, 'acme');
    assert.equal(signed.signature, signature);
    const copy = { entity_id: event.entity_id, event_type: event.event_type, details: event.details, signed };
    const rest = await must('POST', `/api/ledger/chains/${chain}/events`, copy, 'acme-writer');
    const batch = await must('POST', `/api/ledger/chains/${chain}/events/batch`, { events: [copy] }, 'acme-writer');
    const gql = await call(
      stack.url,
      'POST',
      '/graphql',
      { query: `mutation { addEvent(chainName: "${chain}", input: { entityId: "m-signed", eventType: "approved", details: { amount: 10 } }) { eventId } }` },
      headers('acme-writer'),
    );
    assert.equal(gql.status, 200, gql.text);
    for (const eventId of [rest.event_id, batch.event_ids?.[0] ?? batch.results?.[0]?.event_id, gql.body.data.addEvent.eventId]) {
      assert.ok(eventId, JSON.stringify(batch));
      assert.equal((await blockOf(eventId)).signed, undefined, `${eventId} carries no signature`);
    }
  });

  it('lets ledger-verify check a chain with a reader key (the node key is published to readers)', async () => {
    const { spawnSync } = await import('node:child_process');
    const out = spawnSync(process.execPath, ['bin/ledger-verify.mjs', '--url', stack.url, '--chain', 'm-plain', '--api-key', keys.reader!], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(out.status, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /verified: 'm-plain'/);
    // Without a key (or with one the node does not take) nothing was checked: not "NOT VERIFIED", which reads as
    // tampering, but that it could not verify, exit 2, and how to give a key (a newcomer's pass, 2026-12-07).
    for (const args of [[], ['--api-key', 'lk_not-a-key-of-this-node']]) {
      for (const mode of [[], ['--tiles', '--vkey', (await call(stack.url, 'GET', '/tlog/vkey', undefined, headers('reader'))).text.trim()]]) {
        const refused = spawnSync(process.execPath, ['bin/ledger-verify.mjs', '--url', stack.url, '--chain', 'm-plain', ...mode, ...args], {
          cwd: ROOT,
          encoding: 'utf8',
          timeout: 60_000,
          env: { ...process.env, LEDGER_API_KEY: '' },
        });
        assert.equal(refused.status, 2, `${args} ${mode[0] ?? ''}: ${refused.stdout}${refused.stderr}`);
        assert.match(
          refused.stdout,
          /^COULD NOT VERIFY: .* answered 401: .*\n {2}the node refused the request: give an API key it takes with --api-key KEY or LEDGER_API_KEY/m,
        );
        assert.doesNotMatch(refused.stdout, /NOT VERIFIED/);
      }
    }
    const identity = await call(stack.url, 'GET', '/api/ledger/identity', undefined, headers('reader'));
    assert.equal(identity.status, 200);
    assert.match(identity.body.public_key, /^[0-9a-f]{64}$/);
  });
});
