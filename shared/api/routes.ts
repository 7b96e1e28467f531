/**
 * THE route table. Every route is written once, relative to its group; a group is served under each of
 * its prefixes (the ledger group under /api/ledger and /api/v1). The cloud stack and the local gateway
 * read it through infra/routes.ts; it lives in shared because the service also describes itself from it
 * (GET /openapi.json). A function's handlers are keyed by the same relative route keys
 * (test/unit/routes.test.ts checks that they agree both ways).
 */
import { QUICKJS_WASM_FILE, QUICKJS_WASM_MODULE } from '../business/sandbox-wasm.ts';
import type { TableRole } from '../storage/tables.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface GroupSpec {
  /** Every prefix the group is served under; the first is the canonical one. */
  prefixes: readonly string[];
  /** The Lambda entry file, relative to the repository root. */
  entry: string;
  /** The tables its function reads and writes (least privilege: it is granted these and no others). */
  tables: readonly TableRole[];
  /** Whether its function encrypts or decrypts with the service's KMS key itself. */
  usesKmsKey?: boolean;
  /** Whether its function reads or writes off-chain payloads in IPFS. */
  usesIpfs?: boolean;
  /** Files copied beside the function's bundle: an installed module's file, or a repository path (file or folder), under a name. */
  bundleFiles?: readonly ({ module: string; as: string } | { path: string; as: string })[];
}

/** Every group passes the edge: API keys live in the registry, rate-limit windows in their table. */
const EDGE_TABLES = ['registry', 'rateLimits'] as const satisfies readonly TableRole[];

/** The function groups. Adding a group is one entry here (and its handlers): the stacks follow. */
export const GROUPS = {
  ledger: {
    prefixes: ['/api/ledger', '/api/v1'],
    entry: 'functions/ledger/handler.ts',
    tables: ['ledger', ...EDGE_TABLES],
    usesKmsKey: true,
    usesIpfs: true,
  },
  business: {
    prefixes: ['/api/business', '/api/v2'],
    entry: 'functions/business/handler.ts',
    tables: ['ledger', ...EDGE_TABLES],
    usesKmsKey: true,
    usesIpfs: true,
    // The contract sandbox's WebAssembly, as a file rather than 1.1 MB of base64 in the bundle.
    bundleFiles: [{ module: QUICKJS_WASM_MODULE, as: QUICKJS_WASM_FILE }],
  },
  graphql: {
    prefixes: [''],
    entry: 'functions/graphql/handler.ts',
    tables: ['ledger', ...EDGE_TABLES],
    usesKmsKey: true,
    usesIpfs: true,
  },
  metrics: {
    prefixes: [''],
    entry: 'functions/metrics/handler.ts',
    tables: [...EDGE_TABLES],
  },
  docs: {
    prefixes: [''],
    entry: 'functions/docs/handler.ts',
    tables: [...EDGE_TABLES],
    bundleFiles: [
      { path: 'explorer/dist', as: 'static/explorer' },
      { module: 'swagger-ui-dist/swagger-ui-bundle.js', as: 'static/swagger-ui/swagger-ui-bundle.js' },
      { module: 'swagger-ui-dist/swagger-ui.css', as: 'static/swagger-ui/swagger-ui.css' },
    ],
  },
  tlog: {
    prefixes: [''],
    entry: 'functions/tlog/handler.ts',
    // reads blocks' tree nodes, keeps full tiles; the node identity (in the registry in the cloud) signs
    tables: ['ledger', ...EDGE_TABLES],
    usesKmsKey: true,
  },
  admin: {
    prefixes: ['/api/admin'],
    entry: 'functions/admin/handler.ts',
    // secure events append to chains, status counts them; the identity and peers live in the registry
    tables: ['ledger', ...EDGE_TABLES],
    usesKmsKey: true,
    usesIpfs: true,
  },
} as const satisfies Record<string, GroupSpec>;

export type GroupName = keyof typeof GROUPS;

/**
 * Functions that no HTTP route reaches: the WebSocket API's handler ($connect, $default, $disconnect)
 * and the broadcaster fed by the ledger table's stream.
 */
export const EVENT_FUNCTIONS = {
  ws: { entry: 'functions/ws/handler.ts', tables: ['connections', 'registry'] },
  // The registry: pushes of a channel's chain go to its members only, so the broadcaster reads memberships.
  broadcast: { entry: 'functions/broadcast/handler.ts', tables: ['connections', 'registry'] },
} as const satisfies Record<string, Pick<GroupSpec, 'entry' | 'tables'>>;

/** Unmatched requests go to this group, which answers the contract's 404 (API Gateway's `$default`). */
export const DEFAULT_GROUP: GroupName = 'ledger';

export interface RouteSpec {
  group: GroupName;
  method: HttpMethod;
  /** Relative to the group prefix; `{name}` marks a path parameter. */
  path: string;
  summary: string;
  /** Serve under only these of the group's prefixes (default: all). */
  onlyPrefixes?: readonly string[];
}

export const ROUTE_TABLE: readonly RouteSpec[] = [
  { group: 'ledger', method: 'GET', path: '/health', summary: 'Health check' },
  { group: 'ledger', method: 'GET', path: '/chains', summary: 'The Main Chain and all Sub-Chains' },
  { group: 'ledger', method: 'POST', path: '/chains/{chain_name}/create', summary: 'Create a Sub-Chain' },
  { group: 'ledger', method: 'POST', path: '/chains/{chain_name}/events', summary: 'Add an event' },
  {
    group: 'ledger',
    method: 'POST',
    path: '/chains/{chain_name}/events/batch',
    summary: 'Add up to 99 events, one block each, in one atomic commit (extension)',
  },
  { group: 'ledger', method: 'POST', path: '/chains/{chain_name}/submit-proof', summary: 'Anchor a Sub-Chain in the Main Chain' },
  { group: 'ledger', method: 'GET', path: '/chains/{chain_name}/stats', summary: 'Chain statistics' },
  { group: 'ledger', method: 'GET', path: '/chains/{chain_name}/blocks', summary: 'A page of blocks' },
  { group: 'ledger', method: 'GET', path: '/chains/{chain_name}/blocks/{index_or_hash}', summary: 'One block by index or hash' },
  { group: 'ledger', method: 'GET', path: '/entities/{entity_id}/trace', summary: 'Trace an entity across chains' },
  { group: 'ledger', method: 'GET', path: '/chains/{chain_name}/checkpoint', summary: 'A signed checkpoint: tree size and root' },
  { group: 'ledger', method: 'GET', path: '/chains/{chain_name}/blocks/{index_or_hash}/proof', summary: 'Inclusion proof of a block' },
  {
    group: 'ledger',
    method: 'GET',
    path: '/chains/{chain_name}/blocks/{index_or_hash}/anchor',
    summary: 'The Main Chain anchor covering a block, with proofs',
  },
  { group: 'ledger', method: 'GET', path: '/chains/{chain_name}/consistency', summary: 'Consistency proof between two tree sizes' },
  { group: 'ledger', method: 'GET', path: '/chains/{chain_name}/verify', summary: 'Re-check every hash, link and anchor of a chain' },
  { group: 'ledger', method: 'GET', path: '/network/ping/{target_id}', summary: 'Ping a peer and check its identity', onlyPrefixes: ['/api/ledger'] },
  { group: 'ledger', method: 'POST', path: '/offchain', summary: 'Store a payload off chain (encrypted, in IPFS)' },
  { group: 'ledger', method: 'GET', path: '/identity', summary: 'The node id and public key that sign checkpoints (any reader)' },
  { group: 'business', method: 'GET', path: '/health', summary: 'Health check' },
  { group: 'business', method: 'POST', path: '/organizations', summary: 'Register an organization' },
  { group: 'business', method: 'GET', path: '/organizations', summary: 'List organizations' },
  { group: 'business', method: 'GET', path: '/organizations/{org_id}', summary: 'One organization' },
  { group: 'business', method: 'POST', path: '/channels', summary: 'Create a channel (and its Sub-Chain)' },
  { group: 'business', method: 'GET', path: '/channels/{channel_id}', summary: 'Channel information' },
  { group: 'business', method: 'POST', path: '/channels/{channel_id}/organizations', summary: 'Add a member organization' },
  { group: 'business', method: 'POST', path: '/channels/{channel_id}/private-collections', summary: 'Create a private data collection' },
  { group: 'business', method: 'POST', path: '/private-data', summary: 'Write private data (encrypted, off the common ledger)' },
  { group: 'business', method: 'GET', path: '/private-data/{channel}/{collection}/{key}', summary: 'Read private data (members and admins)' },
  { group: 'business', method: 'POST', path: '/contracts', summary: 'Register a contract version' },
  { group: 'business', method: 'GET', path: '/contracts/{contract_id}', summary: "A contract's versions" },
  { group: 'business', method: 'POST', path: '/contracts/execute', summary: 'Execute a contract' },
  { group: 'graphql', method: 'POST', path: '/graphql', summary: 'GraphQL queries and mutations' },
  { group: 'graphql', method: 'GET', path: '/graphql', summary: 'GraphQL queries' },
  { group: 'metrics', method: 'GET', path: '/metrics', summary: 'Prometheus metrics (text 0.0.4)' },
  { group: 'docs', method: 'GET', path: '/openapi.json', summary: 'This API, described in OpenAPI 3.1' },
  { group: 'docs', method: 'GET', path: '/docs', summary: 'Interactive API documentation' },
  { group: 'docs', method: 'GET', path: '/docs/{file}', summary: "The documentation page's files" },
  { group: 'docs', method: 'GET', path: '/explorer', summary: 'The explorer dashboard' },
  { group: 'docs', method: 'GET', path: '/explorer/config.json', summary: 'Where the explorer finds the WebSocket' },
  { group: 'docs', method: 'GET', path: '/explorer/{file}', summary: "The explorer's files" },
  { group: 'docs', method: 'GET', path: '/explorer/assets/{file}', summary: "The explorer's built assets" },
  { group: 'tlog', method: 'GET', path: '/tlog/vkey', summary: 'The C2SP signed-note verifier key of the checkpoints' },
  { group: 'tlog', method: 'GET', path: '/tlog/{chain_name}/checkpoint', summary: "The chain's C2SP tlog checkpoint, a signed note" },
  {
    group: 'tlog',
    method: 'GET',
    path: '/tlog/{chain_name}/tile/{tile_path+}',
    summary: 'C2SP tlog-tiles: hash tiles <L>/<N>[.p/<W>] and entry bundles entries/<N>[.p/<W>]',
  },
  { group: 'admin', method: 'POST', path: '/verify-identity', summary: 'Sign a challenge with the node key' },
  { group: 'admin', method: 'GET', path: '/identity', summary: 'The node id and public key' },
  { group: 'admin', method: 'GET', path: '/status', summary: 'Node status' },
  { group: 'admin', method: 'POST', path: '/chains/{chain_name}/secure-events', summary: 'Append an event signed by an organization' },
  { group: 'admin', method: 'POST', path: '/peers', summary: 'Register a peer' },
  { group: 'admin', method: 'GET', path: '/peers', summary: 'List peers' },
  { group: 'admin', method: 'POST', path: '/ipfs/decode', summary: "Decrypt an off-chain payload (the explorer's CID decoder)" },
];

/** A route as served: one per (route, prefix). */
export interface Route {
  group: GroupName;
  method: HttpMethod;
  /** The full path template, e.g. `/api/v1/chains/{chain_name}/events`. */
  path: string;
  /** API Gateway's route key, e.g. `POST /api/v1/chains/{chain_name}/events`. */
  routeKey: string;
  /** The key of the handler in its group, e.g. `POST /chains/{chain_name}/events`. */
  relativeKey: string;
  prefix: string;
  summary: string;
}

/** Every served route: each route of the table under each prefix of its group. */
export function expandRoutes(table: readonly RouteSpec[] = ROUTE_TABLE): Route[] {
  return table.flatMap((spec) => {
    const prefixes = spec.onlyPrefixes ?? GROUPS[spec.group].prefixes;
    return prefixes.map((prefix) => ({
      group: spec.group,
      method: spec.method,
      path: `${prefix}${spec.path}`,
      routeKey: `${spec.method} ${prefix}${spec.path}`,
      relativeKey: `${spec.method} ${spec.path}`,
      prefix,
      summary: spec.summary,
    }));
  });
}
