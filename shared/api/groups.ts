/**
 * The function groups: one Lambda function each, serving its routes under each of its prefixes (the
 * ledger group under /api/ledger and /api/v1). Adding a group is one entry here (its routes in
 * shared/api/routes/<group>.ts, its function in functions/<group>/handler.ts): the stacks follow.
 */
import { QUICKJS_WASM_FILE, QUICKJS_WASM_MODULE } from '../business/sandbox-wasm.ts';
import type { TableRole } from '../storage/tables.ts';

/** The files of swagger-ui-dist the documentation page loads: carried beside the docs function, and all /docs serves of it. */
export const SWAGGER_UI_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css'] as const;

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
  },
  // Publishing and running contracts, under the business prefixes in a function of its own: runs take its
  // instances, never the business reads' (shared/api/routes/contracts.ts).
  contracts: {
    prefixes: ['/api/business', '/api/v2'],
    entry: 'functions/contracts/handler.ts',
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
    // with witnesses (SVC_WITNESSES), their last cosigned sizes and failures are read from the ledger table
    tables: ['ledger', ...EDGE_TABLES],
  },
  docs: {
    prefixes: [''],
    entry: 'functions/docs/handler.ts',
    tables: [...EDGE_TABLES],
    bundleFiles: [
      { path: 'explorer/dist', as: 'static/explorer' },
      ...SWAGGER_UI_FILES.map((name) => ({ module: `swagger-ui-dist/${name}`, as: `static/swagger-ui/${name}` })),
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
 * Functions that no HTTP route reaches: the WebSocket API's handler ($connect, $default, $disconnect),
 * the broadcaster fed by the ledger table's stream, and the scheduled sweep of unwritten rounds.
 */
export const EVENT_FUNCTIONS = {
  // The rate-limit table: a connecting client's unknown keys are counted per source address, as at the HTTP edge.
  ws: { entry: 'functions/ws/handler.ts', tables: ['connections', ...EDGE_TABLES] },
  // The registry: pushes of a channel's chain go to its members only, so the broadcaster reads memberships.
  // The ledger table and the key: it also sends new checkpoints to the witnesses (SVC_WITNESSES), which
  // reads the chains' trees, keeps the cosignatures, and signs with the node identity (wrapped by the key). The
  // rate-limit table: each key's pushes a minute (SVC_WS_PUSHES_PER_MINUTE), shared by its instances.
  broadcast: { entry: 'functions/broadcast/handler.ts', tables: ['connections', 'registry', 'ledger', 'rateLimits'], usesKmsKey: true },
  // Run on a schedule: finishes rounds whose leaders left their records unwritten (shared/ledger/sweep.ts).
  sweep: { entry: 'functions/sweep/handler.ts', tables: ['ledger'] },
} as const satisfies Record<string, Pick<GroupSpec, 'entry' | 'tables' | 'usesKmsKey'>>;

/**
 * Unmatched requests go to this group, which answers the contract's 404 after auth (API Gateway's `$default`): the least
 * privileged function that can check a key (the registry read, the rate limit), with no writes to the ledger and no use
 * of the KMS key. It was the ledger function, the most privileged, for any path anyone sends (2026-12-07 red team).
 */
export const DEFAULT_GROUP: GroupName = 'metrics';
