/**
 * The GraphQL schema (camelCase fields, as the spec shows) and its resolvers: the spec's `events` query,
 * plus chains, blocks, traces and the ledger mutations, resolved through the same domain code as REST.
 * Resolvers get the caller's (guarded) ledger through the execution context.
 */
import {
  buildSchema,
  GraphQLError,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLScalarType,
  Kind,
  type SelectionSetNode,
  type ValueNode,
  valueFromASTUntyped,
} from 'graphql';
import { inexactMessage, keptExactly } from '../json-numbers.ts';
import { checkShape } from '../json-shape.ts';
import { parseEventRequest } from '../ledger/events.ts';
import { CHAIN_PAGE_MAX, type Ledger, parseBlockAddress, TRACE_LIMIT_DEFAULT, TRACE_LIMIT_MAX } from '../ledger/ledger.ts';
import { isWellFormedChainName } from '../ledger/names.ts';
import type { Block, LedgerEvent } from '../ledger/types.ts';

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
    "The data subject whose personal data the details are (erasable events only)."
    subjectId: String
    "True once the data subject was erased: details are null, the block still verifies."
    erased: Boolean!
    "Secure events only: who signed the event, and the signature (the REST answer's signed)."
    signed: EventSignature
  }

  type EventSignature {
    orgId: String!
    publicKey: String!
    nonce: String!
    nodeId: String
    signature: String!
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

  "A page of an entity's events; nextCursor (null on the last page) is the after of the next."
  type Trace {
    entityId: String!
    chains: [String!]!
    events: [Event!]!
    nextCursor: String
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
    "Marks the details as personal data of this data subject: sealed under its key, erasable."
    subjectId: String
  }

  type Query {
    "Events of an entity (optionally in one chain) or of a chain; resolveCid decrypts off-chain details."
    events(chainName: String, entityId: String, resolveCid: Boolean = false, limit: Int = 100): [Event!]!
    "The Main Chain, then Sub-Chains by name: up to limit (at most 1000) after the chain named after."
    chains(limit: Int = 100, after: String): [Chain!]!
    chain(name: String!): Chain
    blocks(chainName: String!, limit: Int = 10, offset: Int = 0): [Block!]!
    block(chainName: String!, index: Int, hash: String): Block
    trace(entityId: String!, chainName: String, limit: Int = 100, after: String): Trace!
  }

  "Each field may be null with its error beside it: a mutation's fields run one after another, each kept once it ends, so a field that fails leaves the ones before it done and said."
  type Mutation {
    createSubChain(name: String!): SubChainResult
    addEvent(chainName: String!, input: EventInput!): EventResult
    submitProof(chainName: String!): ProofResult
  }
`;

const event = (e: LedgerEvent & { resolve_error?: string; erased?: true }) => ({
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
  subjectId: e.subject_id ?? null,
  erased: e.erased === true,
  signed: e.signed
    ? { orgId: e.signed.org_id, publicKey: e.signed.public_key, nonce: e.signed.nonce, nodeId: e.signed.node_id ?? null, signature: e.signed.signature }
    : null,
});

const block = (b: Block) => ({
  index: b.index,
  chainName: b.chain_name,
  timestamp: b.timestamp,
  previousHash: b.previous_hash,
  hash: b.hash,
  events: b.events.map(event),
});

/**
 * Whether the field's selection (its fragments included) names one of `fields`: `events(resolveCid: true)` fetches and
 * decrypts off-chain payloads only when its answer shows them (`details`, `resolveError`); it had opened every
 * cited payload for a query that selected `eventId` alone (red team, 2026-12-06).
 */
function selects(info: GraphQLResolveInfo, fields: readonly string[]): boolean {
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode | undefined): boolean =>
    (set?.selections ?? []).some((selection) => {
      if (selection.kind === Kind.FIELD) return fields.includes(selection.name.value);
      if (selection.kind === Kind.INLINE_FRAGMENT) return walk(selection.selectionSet);
      if (seen.has(selection.name.value)) return false;
      seen.add(selection.name.value);
      return walk(info.fragments[selection.name.value]?.selectionSet);
    });
  return info.fieldNodes.some((node) => walk(node.selectionSet));
}

function userError(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', status: 422 } });
}

/** The schema, built once; its resolvers get the ledger through the execution context. */
export const schema = buildSchema(SDL);

/**
 * JSON written inline in a query (`details: {a: 9007199254740993}`) is read as a request's body is: a number a double
 * would not keep as written is refused (shared/json-numbers.ts), not stored as another one. Variables come as JSON
 * text and are checked there.
 */
const jsonScalar = schema.getType('JSON') as GraphQLScalarType;
jsonScalar.parseLiteral = (ast, variables) => {
  const check = (node: ValueNode): void => {
    if ((node.kind === Kind.INT || node.kind === Kind.FLOAT) && !keptExactly(Number(node.value), node.value)) {
      throw userError(inexactMessage({ key: undefined, source: node.value }, 'in the query'));
    }
    if (node.kind === Kind.LIST) node.values.forEach(check);
    if (node.kind === Kind.OBJECT) for (const field of node.fields) check(field.value);
  };
  check(ast);
  return valueFromASTUntyped(ast, variables);
};

type Resolver = GraphQLFieldResolver<
  unknown,
  { ledger: Ledger; keyStillHeld: () => Promise<void>; chargeRequest: () => Promise<void>; mutationsRun: number },
  Record<string, unknown>
>;

export function resolvers(): { Query: Record<string, Resolver>; Mutation: Record<string, Resolver>; Chain: Record<string, Resolver> } {
  return {
    Query: {
      async events(_root, args, { ledger }, info) {
        const limit = Number(args.limit ?? 100);
        if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw userError('limit must be 1 to 1000');
        const chainName = (args.chainName as string | null | undefined) ?? undefined;
        const entityId = (args.entityId as string | null | undefined) ?? undefined;
        const resolveCid = Boolean(args.resolveCid) && selects(info, ['details', 'resolveError']);
        if (entityId !== undefined) {
          const trace = await ledger.traceEntity(entityId, chainName, { resolveCid, limit });
          return trace.events.map(event);
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
      async chains(_root, args, { ledger }) {
        const limit = Number(args.limit ?? 100);
        if (!Number.isInteger(limit) || limit < 1 || limit > CHAIN_PAGE_MAX) throw userError(`limit must be 1 to ${CHAIN_PAGE_MAX}`);
        const after = (args.after as string | null | undefined) ?? undefined;
        if (after !== undefined && !isWellFormedChainName(after)) throw userError('after must be a chain name (the last of the page before)');
        const { chains } = await ledger.listChains({ limit, after });
        return chains.map((c) => ({ name: c.name, type: c.type, blockCount: c.block_count, latestBlockHash: c.latest_block_hash }));
      },
      async chain(_root, args, { ledger }) {
        // One head read: the list of every chain (any writer can make thousands) is not read for one name.
        const found = await ledger.getChain(String(args.name));
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
        // A negative index had reached the storage's keys and answered 500 (red team, 2026-12-06).
        if (args.index !== null && args.index !== undefined && !(Number.isInteger(args.index) && Number(args.index) >= 0))
          throw userError('index must be a whole number, 0 or more');
        const address =
          args.index !== null && args.index !== undefined ? { kind: 'index' as const, index: Number(args.index) } : parseBlockAddress(String(args.hash));
        return block(await ledger.getBlock(String(args.chainName), address));
      },
      async trace(_root, args, { ledger }) {
        const limit = Number(args.limit ?? TRACE_LIMIT_DEFAULT);
        if (!Number.isInteger(limit) || limit < 1 || limit > TRACE_LIMIT_MAX) throw userError(`limit must be 1 to ${TRACE_LIMIT_MAX}`);
        const trace = await ledger.traceEntity(String(args.entityId), (args.chainName as string | null) ?? undefined, {
          limit,
          cursor: (args.after as string | null) ?? undefined,
        });
        return { entityId: trace.entity_id, chains: trace.chains, events: trace.events.map(event), nextCursor: trace.next_cursor };
      },
    },
    Mutation: {
      async createSubChain(_root, args, { ledger }) {
        const { chain_name } = await ledger.createSubChain(String(args.name));
        return { success: true, message: `Sub-Chain '${chain_name}' created`, chainName: chain_name };
      },
      async addEvent(_root, args, { ledger }) {
        const input = args.input as Record<string, unknown>;
        // The body's shape rule (no `__proto__`-like keys, 64 levels at most), for values written in the query itself as
        // for variables and REST bodies: literals had been stored as sent, 1,500 levels deep (red team, 2026-12-06).
        checkShape(input, ['input'], 'The input');
        const draft = parseEventRequest({
          entity_id: input.entityId,
          event_type: input.eventType,
          details: input.details ?? undefined,
          details_cid: input.detailsCid ?? undefined,
          details_nonce: input.detailsNonce ?? undefined,
          details_metadata: input.detailsMetadata ?? undefined,
          subject_id: input.subjectId ?? undefined,
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

// Bind the resolvers onto the schema's fields once. Each mutation first checks that the caller's key is still held: a
// request's mutations run one after another, and 99 of them had gone on appending for seconds after their key was
// revoked (red team, 2026-12-06). And each after the first pays one request of the caller's rate budget, as the REST
// request doing it would: 100 `createSubChain` in one request had made 100 chains for one request's price (red team,
// 2026-12-07).
for (const [typeName, fields] of Object.entries(resolvers())) {
  const type = schema.getType(typeName) as { getFields(): Record<string, { resolve?: Resolver }> };
  for (const [field, resolve] of Object.entries(fields)) {
    type.getFields()[field]!.resolve =
      typeName === 'Mutation'
        ? async (root, args, context, info) => {
            await context.keyStillHeld();
            if (context.mutationsRun++ > 0) await context.chargeRequest();
            return resolve(root, args, context, info);
          }
        : resolve;
  }
}
