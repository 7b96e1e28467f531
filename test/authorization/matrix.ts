/**
 * THE authorization matrix: what every route (and every GraphQL operation, WebSocket message and push)
 * answers to every kind of caller, on a channel of acme's, a channel of globex's, and a plain chain.
 * Written out by hand, from the model in docs/authorization.md, never computed by the code under test:
 * test/integration/authorization.test.ts sends each cell to the running service and compares, and
 * docs/authorization.md shows this same table (`npm run docs:authorization` rewrites it; a test checks
 * it is current).
 *
 * Columns (callers): no key; an org-less reader and writer; acme's reader and writer; globex's reader
 * and writer; an admin. Fixtures: organizations acme and globex; channel `m-acme` (member: acme) and
 * `m-globex` (member: globex), each with collection `prices`; plain chain `m-plain`; contracts owned by
 * acme, by globex and by the admins.
 *
 * For GraphQL operations the status is the HTTP status, or, when that is 200, the `status` of the
 * first error. For WebSocket subscriptions 200 is `subscribed` and 403 an `error` reply; for pushes 200
 * is "received" and 403 "not received"; 401 is a refused connection.
 */
export const CALLERS = ['none', 'reader', 'writer', 'acme-reader', 'acme-writer', 'globex-reader', 'globex-writer', 'admin'] as const;
export type Caller = (typeof CALLERS)[number];

/** What a row is about: a resource label the test knows how to address. */
export type On =
  | '—'
  | 'acme channel'
  | 'globex channel'
  | 'plain chain'
  | 'no such channel'
  | 'acme'
  | 'globex'
  | 'new organization'
  | "acme's contract"
  | "globex's contract"
  | "admins' contract"
  | 'new contract';

export interface Row {
  /** `METHOD /path` as served under the group's first prefix, or `GraphQL …` / `WebSocket …`. */
  surface: string;
  on: On;
  expect: readonly number[];
  /** What the row asks beyond the route, shown beside it (the request the test sends). */
  asked?: string;
}

function row(surface: string, on: On, codes: string): Row {
  const expect = codes.trim().split(/\s+/).map(Number);
  if (expect.length !== CALLERS.length || expect.some((c) => !Number.isInteger(c))) throw new Error(`matrix row '${surface}' on '${on}': ${codes}`);
  return { surface, on, expect };
}

const CHAINS: readonly On[] = ['acme channel', 'globex channel', 'plain chain'];

/** The same codes for each of the three chains. */
function onChains(surface: string, codes: string): Row[] {
  return CHAINS.map((on) => row(surface, on, codes));
}

//                           none rdr wrt  a-r  a-w  g-r  g-w  adm
const PUBLIC /*          */ = '200 200 200 200 200 200 200 200';
const ANY_KEY /*         */ = '401 200 200 200 200 200 200 200';
const ADMIN_ONLY /*      */ = '401 403 403 403 403 403 403 200';
const ADMIN_CREATES /*   */ = '401 403 403 403 403 403 403 201';
const WRITERS_CREATE /*  */ = '401 403 201 403 201 403 201 201';

/** Reads of a chain's contents: its members' keys (and admins); everyone on a plain chain. */
function contents(surface: string): Row[] {
  return [
    row(surface, 'acme channel', /*   */ '401 403 403 200 200 403 403 200'),
    row(surface, 'globex channel', /* */ '401 403 403 403 403 200 200 200'),
    row(surface, 'plain chain', ANY_KEY),
  ];
}

/** Writes to a chain (`ok` is the success status): its members' writers (and admins); any writer on a plain chain. */
function writes(surface: string, ok = 200): Row[] {
  return [
    row(surface, 'acme channel', /*   */ `401 403 403 403 ${ok} 403 403 ${ok}`),
    row(surface, 'globex channel', /* */ `401 403 403 403 403 403 ${ok} ${ok}`),
    row(surface, 'plain chain', /*    */ `401 403 ${ok} 403 ${ok} 403 ${ok} ${ok}`),
  ];
}

/** Acts inside a channel (`ok` on success): its members' writers (and admins); 404 for a channel that does not exist. */
function channelWrites(surface: string): Row[] {
  return [
    row(surface, 'acme channel', /*    */ '401 403 403 403 201 403 403 201'),
    row(surface, 'globex channel', /*  */ '401 403 403 403 403 403 201 201'),
    row(surface, 'no such channel', /* */ '401 403 404 403 404 403 404 404'),
  ];
}

/** Reads inside a channel: its members' keys (and admins); 404 for a channel that does not exist. */
function channelReads(surface: string): Row[] {
  return [
    row(surface, 'acme channel', /*    */ '401 403 403 200 200 403 403 200'),
    row(surface, 'globex channel', /*  */ '401 403 403 403 403 200 200 200'),
    row(surface, 'no such channel', /* */ '401 404 404 404 404 404 404 404'),
  ];
}

export const MATRIX: readonly Row[] = [
  // ledger group (and /api/v1)
  row('GET /api/ledger/health', '—', PUBLIC),
  row('GET /api/ledger/chains', '—', ANY_KEY),
  row('POST /api/ledger/chains/{chain_name}/create', 'acme channel', /*  */ '401 403 400 403 400 403 400 400'),
  row('POST /api/ledger/chains/{chain_name}/create', 'globex channel', /**/ '401 403 400 403 400 403 400 400'),
  row('POST /api/ledger/chains/{chain_name}/create', 'plain chain', WRITERS_CREATE),
  ...writes('POST /api/ledger/chains/{chain_name}/events'),
  ...writes('POST /api/ledger/chains/{chain_name}/events/batch'),
  ...writes('POST /api/ledger/chains/{chain_name}/submit-proof'),
  ...onChains('GET /api/ledger/chains/{chain_name}/stats', ANY_KEY),
  ...contents('GET /api/ledger/chains/{chain_name}/blocks'),
  ...contents('GET /api/ledger/chains/{chain_name}/blocks/{index_or_hash}'),
  ...contents('GET /api/ledger/entities/{entity_id}/trace'),
  ...onChains('GET /api/ledger/chains/{chain_name}/checkpoint', ANY_KEY),
  ...onChains('GET /api/ledger/chains/{chain_name}/blocks/{index_or_hash}/proof', ANY_KEY),
  ...onChains('GET /api/ledger/chains/{chain_name}/blocks/{index_or_hash}/anchor', ANY_KEY),
  ...onChains('GET /api/ledger/chains/{chain_name}/consistency', ANY_KEY),
  // asked with blocks=true: the blocks are contents (without it, hash-level facts like the proofs, for any key)
  ...contents('GET /api/ledger/chains/{chain_name}/evidence').map((r) => ({
    ...r,
    asked: 'with `blocks=true`; without it, any key gets the proofs: hash-level facts',
  })),
  ...onChains('GET /api/ledger/chains/{chain_name}/verify', ANY_KEY),
  row('GET /api/ledger/network/ping/{target_id}', '—', ANY_KEY),
  row('POST /api/ledger/offchain', '—', WRITERS_CREATE),
  row('POST /api/ledger/subjects/{subject_id}/erase', '—', ADMIN_ONLY),
  row('GET /api/ledger/identity', '—', ANY_KEY),

  // the chains as C2SP transparency logs: hash-level facts, like the JSON checkpoint
  row('GET /tlog/vkey', '—', ANY_KEY),
  ...onChains('GET /tlog/{chain_name}/checkpoint', ANY_KEY),
  ...onChains('GET /tlog/{chain_name}/tile/{tile_path+}', ANY_KEY),

  // business group (and /api/v2)
  row('GET /api/business/health', '—', PUBLIC),
  row('POST /api/business/organizations', 'acme', /*            */ '401 403 403 403 409 403 403 409'),
  row('POST /api/business/organizations', 'globex', /*          */ '401 403 403 403 403 403 409 409'),
  row('POST /api/business/organizations', 'new organization', ADMIN_CREATES),
  row('GET /api/business/organizations', '—', ANY_KEY),
  row('GET /api/business/organizations/{org_id}', '—', ANY_KEY),
  row('POST /api/business/channels', '—', /*                    */ '401 403 403 403 201 403 201 201'),
  ...channelReads('GET /api/business/channels/{channel_id}'),
  ...channelWrites('POST /api/business/channels/{channel_id}/organizations'),
  row('DELETE /api/business/channels/{channel_id}/organizations/{org_id}', 'acme channel', /*    */ '401 403 403 403 403 403 403 200'),
  row('DELETE /api/business/channels/{channel_id}/organizations/{org_id}', 'globex channel', /*  */ '401 403 403 403 403 403 403 200'),
  row('DELETE /api/business/channels/{channel_id}/organizations/{org_id}', 'no such channel', /* */ '401 403 403 403 403 403 403 404'),
  ...channelWrites('POST /api/business/channels/{channel_id}/private-collections'),
  ...channelWrites('POST /api/business/private-data'),
  ...channelReads('GET /api/business/private-data/{channel}/{collection}/{key}'),
  row('POST /api/business/contracts', "acme's contract", /*     */ '401 403 403 403 201 403 403 201'),
  row('POST /api/business/contracts', "globex's contract", /*   */ '401 403 403 403 403 403 201 201'),
  row('POST /api/business/contracts', "admins' contract", ADMIN_CREATES),
  row('POST /api/business/contracts', 'new contract', /*        */ '401 403 403 403 201 403 201 201'),
  row('GET /api/business/contracts/{contract_id}', '—', ANY_KEY),
  ...writes('POST /api/business/contracts/execute'),

  // GraphQL: the routes, then each operation that touches a chain
  row('POST /graphql', '—', ANY_KEY),
  row('GET /graphql', '—', ANY_KEY),
  ...contents('GraphQL events(chainName)'),
  ...contents('GraphQL blocks(chainName)'),
  ...contents('GraphQL block(chainName, index)'),
  ...contents('GraphQL trace(entityId, chainName)'),
  ...onChains('GraphQL chain(name) { totalEvents }', ANY_KEY),
  row('GraphQL createSubChain(name)', 'acme channel', /*        */ '401 403 400 403 400 403 400 400'),
  row('GraphQL createSubChain(name)', 'plain chain', /*         */ '401 403 200 403 200 403 200 200'),
  ...writes('GraphQL addEvent(chainName)'),
  ...writes('GraphQL submitProof(chainName)'),

  // WebSocket
  row('WebSocket connect', '—', ANY_KEY),
  ...contents('WebSocket subscribe {"chain"}'),
  ...contents('WebSocket pushes to a "*" subscriber'),
  ...contents('WebSocket pushes to an "event_type" subscriber'),

  // metrics, docs
  row('GET /metrics', '—', ANY_KEY),
  row('GET /openapi.json', '—', PUBLIC),
  row('GET /docs', '—', PUBLIC),
  row('GET /docs/{file}', '—', PUBLIC),
  row('GET /explorer', '—', PUBLIC),
  row('GET /explorer/config.json', '—', PUBLIC),
  row('GET /explorer/{file}', '—', PUBLIC),
  row('GET /explorer/assets/{file}', '—', PUBLIC),

  // admin group: admins only; a secure event lands where its signing organization (acme) may append
  row('POST /api/admin/verify-identity', '—', ADMIN_ONLY),
  row('GET /api/admin/identity', '—', ADMIN_ONLY),
  row('GET /api/admin/status', '—', ADMIN_ONLY),
  row('POST /api/admin/chains/{chain_name}/secure-events', 'acme channel', /*   */ ADMIN_ONLY),
  row('POST /api/admin/chains/{chain_name}/secure-events', 'globex channel', /* */ '401 403 403 403 403 403 403 403'),
  row('POST /api/admin/chains/{chain_name}/secure-events', 'plain chain', /*    */ ADMIN_ONLY),
  row('POST /api/admin/peers', '—', ADMIN_CREATES),
  row('GET /api/admin/peers', '—', ADMIN_ONLY),
  row('POST /api/admin/ipfs/decode', '—', ADMIN_ONLY),
];

const HEADERS = ['no key', 'reader', 'writer', 'acme reader', 'acme writer', 'globex reader', 'globex writer', 'admin'];

/** The matrix as the Markdown table docs/authorization.md shows. */
export function renderMatrix(): string {
  const lines = [
    `| Route or operation | On | ${HEADERS.join(' | ')} |`,
    `|---|---|${HEADERS.map(() => '---').join('|')}|`,
    ...MATRIX.map((r) => `| \`${r.surface.replace(/\|/g, '\\|')}\`${r.asked ? ` (${r.asked})` : ''} | ${r.on} | ${r.expect.join(' | ')} |`),
  ];
  return `${lines.join('\n')}\n`;
}

export const MATRIX_START = '<!-- authorization-matrix:start (generated by npm run docs:authorization from test/authorization/matrix.ts) -->';
export const MATRIX_END = '<!-- authorization-matrix:end -->';
