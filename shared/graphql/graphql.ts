/**
 * GraphQL at /graphql (docs/rules.md, "GraphQL"), without AppSync: the spec's `events` query exactly, plus chains,
 * blocks, traces and the ledger mutations, resolved through the same domain code as REST. Queries deeper
 * than 10 levels (16 inside introspection, which the standard introspection query needs), with more than
 * 1000 fields, or costlier than 1000 points are refused before execution. An object field costs 1 point
 * plus its selections, a scalar nothing, and a list field with a `limit` 1 + limit × what each item costs
 * (the way Shopify and GitHub price connections), so 490 aliases of `blocks(limit: 100)` cost 49,490
 * points, not 980. Introspection is refused under SVC_ENV=production.
 * Fields are camelCase, as the spec shows.
 */
import {
  GraphQLError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  buildSchema,
  execute,
  getNamedType,
  isLeafType,
  parse,
  specifiedRules,
  validate,
  type ASTVisitor,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLFieldResolver,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import { getComplexity, simpleEstimator, type ComplexityEstimator } from 'graphql-query-complexity';
import { DomainError, ValidationError } from '../errors.ts';
import { parseEventRequest } from '../ledger/events.ts';
import { parseBlockAddress, type Ledger } from '../ledger/ledger.ts';
import type { Block, LedgerEvent } from '../ledger/types.ts';
import { logger } from '../log.ts';

export const MAX_DEPTH = 10;
/** Depth allowed inside `__schema` / `__type`: the standard introspection query (GraphiQL, codegen) is 13 deep. */
export const MAX_INTROSPECTION_DEPTH = 16;
export const MAX_COMPLEXITY = 1000;
/** Fields a query may resolve, every fragment spread in place. */
export const MAX_FIELDS = 1000;
/** Lexical tokens a document may have (names, punctuation, values): ten per field of a maximal query. */
export const MAX_TOKENS = 10_000;

const SDL = /* GraphQL */ `
  scalar JSON

  type Event {
    eventId: String!
    chainName: String!
    blockIndex: Int!
    entityId: String!
    eventType: String!
    details: JSON
    detailsCid: String
    detailsNonce: String
    detailsMetadata: JSON
    timestamp: Float!
    isOffchain: Boolean!
    resolveError: String
  }

  type Block {
    index: Int!
    chainName: String!
    timestamp: Float!
    previousHash: String!
    hash: String!
    events: [Event!]!
  }

  type Chain {
    name: String!
    type: String!
    blockCount: Int!
    latestBlockHash: String
    totalEvents: Int!
    proofCount: Int
    registeredSubChains: Int
  }

  type Trace {
    entityId: String!
    chains: [String!]!
    events: [Event!]!
  }

  type SubChainResult {
    success: Boolean!
    message: String!
    chainName: String!
  }

  type EventResult {
    success: Boolean!
    message: String!
    eventId: String
  }

  type ProofResult {
    success: Boolean!
    message: String!
    proofId: String
  }

  input EventInput {
    entityId: String!
    eventType: String!
    details: JSON
    detailsCid: String
    detailsNonce: String
    detailsMetadata: JSON
  }

  type Query {
    "Events of an entity (optionally in one chain) or of a chain; resolveCid decrypts off-chain details."
    events(chainName: String, entityId: String, resolveCid: Boolean = false, limit: Int = 100): [Event!]!
    chains: [Chain!]!
    chain(name: String!): Chain
    blocks(chainName: String!, limit: Int = 10, offset: Int = 0): [Block!]!
    block(chainName: String!, index: Int, hash: String): Block
    trace(entityId: String!, chainName: String): Trace!
  }

  type Mutation {
    createSubChain(name: String!): SubChainResult!
    addEvent(chainName: String!, input: EventInput!): EventResult!
    submitProof(chainName: String!): ProofResult!
  }
`;

const event = (e: LedgerEvent & { resolve_error?: string }) => ({
  eventId: e.event_id,
  chainName: e.chain_name,
  blockIndex: e.block_index,
  entityId: e.entity_id,
  eventType: e.event_type,
  details: e.details,
  detailsCid: e.details_cid,
  detailsNonce: e.details_nonce,
  detailsMetadata: e.details_metadata,
  timestamp: e.timestamp,
  isOffchain: e.is_offchain,
  resolveError: e.resolve_error ?? null,
});

const block = (b: Block) => ({
  index: b.index,
  chainName: b.chain_name,
  timestamp: b.timestamp,
  previousHash: b.previous_hash,
  hash: b.hash,
  events: b.events.map(event),
});

function userError(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', status: 422 } });
}

/**
 * A measure of a document with every fragment spread in place: each field is `1 + measure(its selections)`,
 * siblings are `combine`d. A fragment's measure does not depend on where it is spread, so it is computed
 * once per fragment: walking each spread instead lets a fragment spread twice in one spread twice in one…
 * (2^n walks) stall the process. A cycle counts as 0 here; the standard NoFragmentCycles rule refuses it.
 */
function fragmentMeasure(
  document: DocumentNode,
  combine: (a: number, b: number) => number,
  /** Fields whose selections are not measured (they count as one level, one field). */
  leaf: (name: string) => boolean = () => false,
): (set: SelectionSetNode | undefined) => number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const perFragment = new Map<string, number>();
  const visiting = new Set<string>();
  const measure = (set: SelectionSetNode | undefined): number => {
    if (!set) return 0;
    let total = 0;
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) total = combine(total, 1 + (leaf(selection.name.value) ? 0 : measure(selection.selectionSet)));
      else if (selection.kind === Kind.INLINE_FRAGMENT) total = combine(total, measure(selection.selectionSet));
      else {
        const name = selection.name.value;
        if (!perFragment.has(name) && !visiting.has(name)) {
          visiting.add(name);
          perFragment.set(name, measure(fragments.get(name)?.selectionSet));
          visiting.delete(name);
        }
        total = combine(total, perFragment.get(name) ?? 0);
      }
    }
    return total;
  };
  return measure;
}

const isIntrospection = (name: string) => name === '__schema' || name === '__type';

/**
 * Queries nested deeper than `max` levels of fields (fragments followed) are invalid; inside
 * introspection (`__schema`, `__type`) the limit is `introspectionMax`.
 */
export function depthLimitRule(max: number, introspectionMax = MAX_INTROSPECTION_DEPTH): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const depth = fragmentMeasure(context.getDocument(), Math.max, isIntrospection);
    const fullDepth = fragmentMeasure(context.getDocument(), Math.max);
    return {
      OperationDefinition(node) {
        const found = depth(node.selectionSet);
        const full = fullDepth(node.selectionSet);
        if (found > max) context.reportError(new GraphQLError(`The query is ${found} levels deep; the limit is ${max}`, { nodes: [node] }));
        else if (full > introspectionMax) {
          context.reportError(new GraphQLError(`The query is ${full} levels deep; the limit is ${introspectionMax} inside introspection`, { nodes: [node] }));
        }
      },
    };
  };
}

/**
 * The cost of a query, as Shopify prices its GraphQL API: a scalar field costs nothing, an object costs
 * 1 plus its selections, and a list field with a `limit` costs 1 + limit × what one item costs (at
 * least 1). The number of fields is capped separately (expandedFieldCount), so scalars are not free in bulk.
 */
const costEstimator: ComplexityEstimator = ({ field, args, childComplexity }) => {
  const limit = args.limit;
  if (typeof limit === 'number' && Number.isFinite(limit) && limit > 0) return 1 + limit * Math.max(1, childComplexity);
  return isLeafType(getNamedType(field.type)) ? 0 : 1 + childComplexity;
};

/**
 * The number of fields a query would resolve with every fragment spread in place. It is what the
 * complexity limit counts; checking it first keeps the complexity library, which expands fragments one
 * spread at a time, away from documents that expand exponentially.
 */
export function expandedFieldCount(document: DocumentNode): number {
  const count = fragmentMeasure(document, (a, b) => a + b);
  let total = 0;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION) total += count(definition.selectionSet);
  }
  return total;
}

export interface GraphqlRequest {
  query: string;
  variables?: Record<string, unknown> | null | undefined;
  operationName?: string | null | undefined;
}

export interface GraphqlOptions {
  ledger: Ledger;
  production: boolean;
  /** Whether the caller may run mutations (writer or admin, or auth off). */
  mayWrite: boolean;
  /** GET requests may not run mutations. */
  method: 'GET' | 'POST';
}

export interface GraphqlAnswer {
  status: number;
  body: { data?: unknown; errors?: unknown[] };
}

/** The schema, built once; its resolvers get the ledger through the execution context. */
const schema = buildSchema(SDL);

type Resolver = GraphQLFieldResolver<unknown, { ledger: Ledger }, Record<string, unknown>>;

function resolvers(): { Query: Record<string, Resolver>; Mutation: Record<string, Resolver>; Chain: Record<string, Resolver> } {
  return {
    Query: {
      async events(_root, args, { ledger }) {
        const limit = Number(args.limit ?? 100);
        if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw userError('limit must be 1 to 1000');
        const chainName = (args.chainName as string | null | undefined) ?? undefined;
        const entityId = (args.entityId as string | null | undefined) ?? undefined;
        const resolveCid = Boolean(args.resolveCid);
        if (entityId !== undefined) {
          const trace = await ledger.traceEntity(entityId, chainName, { resolveCid });
          return trace.events.slice(0, limit).map(event);
        }
        if (chainName === undefined) throw userError('Give chainName, entityId, or both');
        // The chain's latest events, oldest first: its last `limit` event blocks.
        const total = (await ledger.getStats(chainName)).total_blocks;
        const events: ReturnType<typeof event>[] = [];
        for (let offset = Math.max(0, total - limit); offset < total; offset += 100) {
          const page = await ledger.listBlocks(chainName, { limit: 100, offset, descending: false, resolveCid });
          for (const b of page.blocks) events.push(...b.events.map(event));
        }
        return events.slice(-limit);
      },
      chains: async (_root, _args, { ledger }) =>
        (await ledger.listChains()).map((c) => ({ name: c.name, type: c.type, blockCount: c.block_count, latestBlockHash: c.latest_block_hash })),
      async chain(_root, args, { ledger }) {
        const chains = await ledger.listChains();
        const found = chains.find((c) => c.name === args.name);
        return found ? { name: found.name, type: found.type, blockCount: found.block_count, latestBlockHash: found.latest_block_hash } : null;
      },
      async blocks(_root, args, { ledger }) {
        const limit = Number(args.limit);
        const offset = Number(args.offset);
        if (!(limit >= 1 && limit <= 100) || !(offset >= 0)) throw userError('limit must be 1 to 100 and offset at least 0');
        return (await ledger.listBlocks(String(args.chainName), { limit, offset, descending: false })).blocks.map(block);
      },
      async block(_root, args, { ledger }) {
        if ((args.index === null || args.index === undefined) === (args.hash === null || args.hash === undefined))
          throw userError('Give exactly one of index and hash');
        const address =
          args.index !== null && args.index !== undefined ? { kind: 'index' as const, index: Number(args.index) } : parseBlockAddress(String(args.hash));
        return block(await ledger.getBlock(String(args.chainName), address));
      },
      async trace(_root, args, { ledger }) {
        const trace = await ledger.traceEntity(String(args.entityId), (args.chainName as string | null) ?? undefined);
        return { entityId: trace.entity_id, chains: trace.chains, events: trace.events.map(event) };
      },
    },
    Mutation: {
      async createSubChain(_root, args, { ledger }) {
        const { chain_name } = await ledger.createSubChain(String(args.name));
        return { success: true, message: `Sub-Chain '${chain_name}' created`, chainName: chain_name };
      },
      async addEvent(_root, args, { ledger }) {
        const input = args.input as Record<string, unknown>;
        const draft = parseEventRequest({
          entity_id: input.entityId,
          event_type: input.eventType,
          details: input.details ?? undefined,
          details_cid: input.detailsCid ?? undefined,
          details_nonce: input.detailsNonce ?? undefined,
          details_metadata: input.detailsMetadata ?? undefined,
        });
        const { event_id, block: b } = await ledger.appendEvent(String(args.chainName), draft);
        return { success: true, message: `Event added to block ${b.index} of '${b.chain_name}'`, eventId: event_id };
      },
      async submitProof(_root, args, { ledger }) {
        const proof = await ledger.submitProof(String(args.chainName));
        return {
          success: true,
          message: proof.created ? `Proof of '${args.chainName}' anchored in the Main Chain` : `Nothing added to '${args.chainName}' since the last proof`,
          proofId: proof.proof_id,
        };
      },
    },
    Chain: {
      totalEvents: async (chain, _args, { ledger }) => (await ledger.getStats((chain as { name: string }).name)).total_events,
      proofCount: async (chain, _args, { ledger }) => (await ledger.getStats((chain as { name: string }).name)).proof_count,
      registeredSubChains: async (chain, _args, { ledger }) => (await ledger.getStats((chain as { name: string }).name)).registered_sub_chains,
    },
  };
}

// Bind the resolvers onto the schema's fields once.
for (const [typeName, fields] of Object.entries(resolvers())) {
  const type = schema.getType(typeName) as { getFields(): Record<string, { resolve?: Resolver }> };
  for (const [field, resolve] of Object.entries(fields)) type.getFields()[field]!.resolve = resolve;
}

/** A domain error as GraphQL shows it: its message when it may be shown, always its status. */
function formatError(error: GraphQLError): Record<string, unknown> {
  const original = error.originalError;
  if (!original || original instanceof GraphQLError) return error.toJSON() as unknown as Record<string, unknown>;
  if (original instanceof ValidationError) {
    return { message: original.message, path: error.path, extensions: { code: 'BAD_USER_INPUT', status: 422, detail: original.issues } };
  }
  if (original instanceof DomainError) {
    return {
      message: original.expose ? original.message : 'Internal server error',
      path: error.path,
      extensions: { code: original.name, status: original.statusCode },
    };
  }
  logger.error('graphql resolver failed', { path: error.path, error: original });
  return { message: 'Internal server error', path: error.path, extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } };
}

/** Parses, validates (depth, complexity, introspection), and executes one request. */
export async function runGraphql(request: GraphqlRequest, options: GraphqlOptions): Promise<GraphqlAnswer> {
  const refuse = (status: number, message: string, code: string): GraphqlAnswer => ({ status, body: { errors: [{ message, extensions: { code } }] } });
  if (typeof request.query !== 'string' || request.query.trim() === '') return refuse(400, 'Send a query', 'BAD_REQUEST');
  let document: DocumentNode;
  try {
    // Beyond MAX_TOKENS the parser stops: no document that large fits the depth and complexity limits anyway.
    document = parse(request.query, { maxTokens: MAX_TOKENS });
  } catch (error) {
    return { status: 400, body: { errors: [{ ...(error as GraphQLError).toJSON(), extensions: { code: 'GRAPHQL_PARSE_FAILED' } }] } };
  }
  const rules = [...specifiedRules, depthLimitRule(MAX_DEPTH), ...(options.production ? [NoSchemaIntrospectionCustomRule] : [])];
  const invalid = validate(schema, document, rules);
  if (invalid.length) return { status: 400, body: { errors: invalid.map((e) => ({ ...e.toJSON(), extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } })) } };
  const expanded = expandedFieldCount(document);
  if (expanded > MAX_FIELDS) return refuse(400, `The query has ${expanded} fields; the limit is ${MAX_FIELDS}`, 'QUERY_TOO_COMPLEX');
  let complexity: number;
  try {
    complexity = getComplexity({
      schema,
      query: document,
      variables: request.variables ?? {},
      estimators: [costEstimator, simpleEstimator({ defaultComplexity: 1 })],
    });
  } catch (error) {
    return refuse(400, (error as Error).message, 'GRAPHQL_VALIDATION_FAILED');
  }
  if (complexity > MAX_COMPLEXITY) return refuse(400, `The query costs ${complexity} points; the limit is ${MAX_COMPLEXITY}`, 'QUERY_TOO_COMPLEX');

  const operation = document.definitions.find(
    (d) => d.kind === Kind.OPERATION_DEFINITION && (!request.operationName || d.name?.value === request.operationName),
  );
  if (operation?.kind === Kind.OPERATION_DEFINITION && operation.operation === 'mutation') {
    if (options.method === 'GET') return refuse(405, 'Mutations are sent with POST', 'METHOD_NOT_ALLOWED');
    if (!options.mayWrite) return refuse(403, "Missing permission: mutations need the 'writer' role", 'FORBIDDEN');
  }
  const result = await execute({
    schema,
    document,
    variableValues: request.variables ?? undefined,
    operationName: request.operationName ?? undefined,
    contextValue: { ledger: options.ledger },
  });
  return {
    status: 200,
    body: { ...(result.data !== undefined ? { data: result.data } : {}), ...(result.errors?.length ? { errors: result.errors.map(formatError) } : {}) },
  };
}
