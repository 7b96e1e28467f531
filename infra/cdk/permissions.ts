/**
 * What each function may do in AWS, and why: the cloud stack grants exactly this (ledger-stack.ts), and
 * `npm run check:cloud` holds it to what the functions do. There the deployed bundles run in the sim
 * (npm run sim), every AWS call they make is evaluated against their role in the synthesized template
 * with an IAM policy simulator (a denied call fails the check), and every grant no call used must be
 * listed in KEPT_WITHOUT_USE below with the reason it stays (an unlisted one fails the check: trim it).
 */
import { CONNECTIONS_INDEXES, LEDGER_INDEXES } from '../../shared/storage/keys.ts';
import type { TableRole } from '../../shared/storage/tables.ts';
import type { EVENT_FUNCTIONS, GroupName } from '../routes.ts';

export type FunctionName = GroupName | keyof typeof EVENT_FUNCTIONS;

/** A DynamoDB action on a table; `Query:<index>` is a Query on one of its indexes (`<table ARN>/index/<index>`). */
export type TableAction = 'GetItem' | 'BatchGetItem' | 'Query' | `Query:${string}` | 'PutItem' | 'BatchWriteItem' | 'UpdateItem' | 'DeleteItem';

/** Every HTTP function passes the edge: an API key read, the shared request counters added to, rate-limit windows. */
const EDGE = {
  // API keys (GetItem), and /metrics' shared counters, added to at the end of a request (UpdateItem ADD).
  registry: ['GetItem', 'UpdateItem'],
  // rate-limiter-flexible's DynamoDB store: a window read (GetItem) and consumed (UpdateItem).
  rateLimits: ['GetItem', 'UpdateItem'],
} as const satisfies Partial<Record<TableRole, readonly TableAction[]>>;

/**
 * Each chain writer appends through the same appender: heads (the lease, the commit), pending appends (put,
 * read, and read back by key when a round is finished for a leader that died), records and seals
 * (BatchWriteItem), segments, round items, refusals, Idempotency-Key records (claimed, bound, answered and let
 * go with UpdateItem: nothing on the ledger table is ever deleted but by TTL).
 */
const APPENDS = ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'BatchWriteItem', 'UpdateItem'] as const satisfies readonly TableAction[];

export const ALL_FUNCTIONS: readonly FunctionName[] = [
  'ledger',
  'business',
  'contracts',
  'graphql',
  'metrics',
  'docs',
  'tlog',
  'admin',
  'ws',
  'broadcast',
  'sweep',
];

/** DynamoDB access per function and table. */
export const TABLE_ACCESS: Record<FunctionName, Partial<Record<TableRole, readonly TableAction[]>>> = {
  // Appends; reads of blocks, pages, proofs and checkpoints (BatchGetItem: chain heads, tree nodes); traces
  // (by-entity) and, on chains written before records, blocks by hash (by-hash). The registry: keys and counters, the node identity (made on
  // first use), data subjects' keys; a channel's members (Query: a check of its chain) and the channels a trace reads;
  // an erasure deletes its subject's private values' records (DeleteItem, conditional on the subject).
  ledger: {
    ledger: [...APPENDS, `Query:${LEDGER_INDEXES.byEntity}`, `Query:${LEDGER_INDEXES.byHash}`],
    registry: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
    rateLimits: EDGE.rateLimits,
  },
  // Channel chains' appends; organizations, channels, memberships (an admin's removal leaves a mark, deleted by an admin's add), contracts, private data in the registry.
  business: { ledger: APPENDS, registry: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'], rateLimits: EDGE.rateLimits },
  // Contracts' emits append (to channel chains too); contract versions and owners (a publish), memberships, and the
  // run slots' record (GetItem, a conditional PutItem, UpdateItem to let go) in the registry.
  contracts: { ledger: APPENDS, registry: ['GetItem', 'Query', 'PutItem', 'UpdateItem'], rateLimits: EDGE.rateLimits },
  // Queries of chains (BatchGetItem: heads), blocks and traces (by-entity); addEvent and submitProof append. The
  // registry: keys and counters, a channel's members and the channels a trace reads (Query).
  graphql: {
    ledger: [...APPENDS, `Query:${LEDGER_INDEXES.byEntity}`],
    registry: ['GetItem', 'Query', 'PutItem', 'UpdateItem'],
    rateLimits: EDGE.rateLimits,
  },
  // Secure events append; the identity, nonces (released when an append fails) and peers in the registry.
  admin: { ledger: APPENDS, registry: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'], rateLimits: EDGE.rateLimits },
  // Reads blocks' tree nodes and keeps full tiles (PutItem); serves witnessed checkpoints; signs with the node identity.
  tlog: { ledger: ['GetItem', 'BatchGetItem', 'Query', 'PutItem'], registry: ['GetItem', 'PutItem', 'UpdateItem'], rateLimits: EDGE.rateLimits },
  // Sums the counters' shards; with witnesses, queries their state in the ledger table.
  metrics: { registry: ['GetItem', 'BatchGetItem', 'Query', 'UpdateItem'], ledger: ['Query'], rateLimits: EDGE.rateLimits },
  // Public routes only: no key is looked up, and no failed attempt counted; requests counted and limited.
  docs: { registry: ['UpdateItem'], rateLimits: ['UpdateItem'] },
  // Connections and their subscriptions; the API key of a connecting client, and its failed attempts' window.
  // A subscription to a channel's chain reads its members (Query).
  ws: { connections: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'], registry: ['GetItem', 'Query'], rateLimits: EDGE.rateLimits },
  // Subscribers by filter, gone connections removed; channel memberships; with witnesses, the chains' trees
  // read and the cosignatures and each chain's turn kept in the ledger table; each key's pushes counted.
  broadcast: {
    connections: [`Query:${CONNECTIONS_INDEXES.byFilter}`, 'DeleteItem'],
    registry: ['GetItem', 'Query'],
    ledger: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem'],
    // Each key's pushes a minute (rate-limiter-flexible's counter: one UpdateItem a key a batch).
    rateLimits: ['UpdateItem'],
  },
  // The scheduled sweep: the chain list and segments (Query), heads, records and pending appends (BatchGetItem),
  // a head, a round item and its place in the list (GetItem), the lease, the finish and its place (UpdateItem),
  // records and segments (BatchWriteItem).
  sweep: { ledger: ['GetItem', 'BatchGetItem', 'Query', 'UpdateItem', 'BatchWriteItem'] },
};

/**
 * Partition keys of the registry no deployed function writes, whatever its grants: API keys (`APIKEY#<hash>`, the
 * `APIKEYS` listing). They are made and revoked by `npm run keys -- --aws` with an operator's credentials. Every
 * role is denied writing them (`dynamodb:LeadingKeys`), so that a function's grant to write the registry (counters,
 * memberships, contracts) is not a way to mint an admin key: the docs function is public and the contracts function
 * runs callers' code (2026-12-07 red team). The sim's IAM check sees each write's leading keys (infra/sim/aws-endpoint.ts).
 */
export const REGISTRY_KEYS_NO_FUNCTION_WRITES = ['APIKEY*'] as const;

/**
 * The functions that sign as the node (their handlers wire shared/wiring/node.ts, which opens the node identity): only
 * they may unwrap a data key under the `identity` KMS scope. Every other role that may use the key is denied it, so that
 * a function that reads the registry (contracts runs callers' code) cannot take the node's signing key (2026-12-07 red
 * team). `test/infra/cdk.test.ts` holds this list to the handlers' imports (only shared/wiring/node.ts creates the
 * admin domain that opens the identity) and each other role to its deny. check:cloud cannot hold it: its IAM simulator
 * does not evaluate `kms:EncryptionContext:<key>` conditions (it resolves variable condition keys after a `/` only).
 */
export const SIGNERS: readonly FunctionName[] = ['ledger', 'tlog', 'admin', 'broadcast'];

/** The write actions that deny covers (a TransactWriteItems is authorized as one of these per item). */
export const WRITE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'] as const;

/**
 * What a function may do with the key through DynamoDB (`kms:ViaService`): the tables and the stream are
 * encrypted with it, and DynamoDB uses it on the caller's behalf. The actions the AWS managed key
 * `aws/dynamodb` grants principals that use DynamoDB, its wildcards spelled out.
 */
export const DYNAMODB_KEY_USE = [
  'kms:Decrypt',
  'kms:DescribeKey',
  'kms:Encrypt',
  'kms:GenerateDataKey',
  'kms:GenerateDataKeyWithoutPlaintext',
  'kms:ReEncryptFrom',
  'kms:ReEncryptTo',
];

/**
 * Grants that the check's run does not use, and why each stays. Matched by function (logical id prefix,
 * as the template names it), action and resource (a pattern over the template's ARNs).
 */
export const KEPT_WITHOUT_USE: readonly {
  functions: readonly FunctionName[];
  action: string;
  resource: RegExp;
  why: string;
  /** The check's run uses it on some runs only (timing): not reported as stale when it does. */
  sometimes?: boolean;
}[] = [
  ...DYNAMODB_KEY_USE.map((action) => ({
    functions: ALL_FUNCTIONS,
    action,
    resource: /:key\//,
    why: "DynamoDB uses the tables' key on the caller's behalf (kms:ViaService), which no request of the function shows; the sim has no server-side encryption",
  })),
  {
    functions: ['admin'],
    action: 'dynamodb:DeleteItem',
    resource: /:table\/[^/]*-registry$/,
    why: "a secure event's nonce is released when its append fails, so that it can be sent again (a failure path: admin-repository's releaseNonce)",
  },
  {
    functions: ['broadcast'],
    action: 'dynamodb:DeleteItem',
    resource: /:table\/[^/]*-connections$/,
    why: 'a connection that vanished without $disconnect (the management API answers 410 Gone) is removed by the broadcaster; locally every closed connection sends $disconnect',
  },
  {
    functions: ['broadcast'],
    action: 'dynamodb:Query',
    resource: /:table\/[^/]*-registry$/,
    why: "a channel chain's blocks reach its members only: the broadcaster reads the channel's memberships when one has a subscriber",
  },
  {
    functions: ['business', 'graphql'],
    action: 'kms:Decrypt',
    resource: /:key\//,
    why: 'unwraps the data key of a payload another instance wrapped (an instance keeps its own for 5 minutes); the check reads back on the instance that wrote',
  },
  {
    functions: ['broadcast'],
    action: 'kms:GenerateDataKey',
    resource: /:key\//,
    why: 'the node identity is made, and wrapped with a new data key, by whichever function needs it first; here the ledger group always comes first',
  },
  {
    functions: ['broadcast'],
    action: 'sqs:SendMessage',
    resource: /:sqs:/,
    why: "Lambda sends a stream batch that failed every retry to the dead-letter queue, as the function's role; the sim has no queue",
  },
  {
    functions: ['ledger'],
    action: 'dynamodb:Query',
    resource: /:table\/[^/]*-ledger\/index\/by-hash$/,
    why: 'a block found by its hash among the block items of a chain written before records (a table upgraded from an earlier version); the sim makes new chains only, whose records are keyed by hash',
  },
  {
    functions: ['tlog', 'broadcast'],
    action: 'dynamodb:BatchGetItem',
    resource: /:table\/[^/]*-ledger$/,
    why: "the tree nodes of a chain written before records are read from its block items by key (an upgraded table); a new chain's come from its segments, so the sim's run never reads them",
  },
  {
    functions: ['business', 'contracts', 'admin'],
    action: 'dynamodb:BatchGetItem',
    resource: /:table\/[^/]*-ledger$/,
    why: "a round whose leader died between its commit and its records is finished by the next lease holder from the round's pending appends, read back by key (a failure path: the appender's flushRecent)",
  },
  {
    functions: ['contracts'],
    action: 'dynamodb:GetItem',
    resource: /:table\/[^/]*-ledger$/,
    why: "a contract's emits append as any writer's events do, and an append reads a head or a round item by key only on some paths (a lease another instance holds, a round to finish); the check's few emits commit directly",
    sometimes: true,
  },
];
