/**
 * GraphQL at /graphql (docs/rules.md, "GraphQL"), without AppSync: the spec's `events` query exactly, plus chains,
 * blocks, traces and the ledger mutations, resolved through the same domain code as REST. Queries deeper
 * than 10 levels (16 inside introspection, which the standard introspection query needs), with more than
 * 1000 fields, or costlier than 1000 points are refused before execution. An object field costs 1 point
 * plus its selections, a scalar nothing, and a list field with a `limit` limit × what each item costs
 * (the way Shopify and GitHub price connections), so 490 aliases of `blocks(limit: 100)` cost 49,000
 * points, not 980. Introspection is refused under SVC_ENV=production.
 * Fields are camelCase, as the spec shows.
 */
import { type DocumentNode, execute, GraphQLError, Kind, NoSchemaIntrospectionCustomRule, parse, specifiedRules, validate } from 'graphql';
import { getComplexity, simpleEstimator } from 'graphql-query-complexity';
import { DomainError, ReadLimitExceededError, ResolvedPayloadsTooLargeError, shortened, shownIssues, ValidationError } from '../errors.ts';
import type { Ledger } from '../ledger/ledger.ts';
import { logger } from '../log.ts';
import { costEstimator, depthLimitRule, expandedFieldCount, MAX_COMPLEXITY, MAX_DEPTH, MAX_FIELDS, MAX_TOKENS } from './limits.ts';
import { schema } from './schema.ts';

export * from './limits.ts';

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
  /** Run before each mutation: a key revoked while a request's mutations run writes nothing more (401 each). */
  keyStillHeld?: () => Promise<void>;
  /** Counts one more request against the caller's rate budget (429 once spent): paid by each mutation after the first. */
  chargeRequest?: () => Promise<void>;
  /** GET requests may not run mutations. */
  method: 'GET' | 'POST';
}

export interface GraphqlAnswer {
  status: number;
  body: { data?: unknown; errors?: unknown[] };
}

/** A domain error as GraphQL shows it: its message when it may be shown, always its status. */
function formatError(error: GraphQLError): Record<string, unknown> {
  const original = error.originalError;
  if (!original || original instanceof GraphQLError) return error.toJSON() as unknown as Record<string, unknown>;
  if (original instanceof ValidationError) {
    return {
      message: shortened(original.message),
      path: error.path,
      extensions: { code: 'BAD_USER_INPUT', status: 422, detail: shownIssues(original.issues) },
    };
  }
  if (original instanceof DomainError) {
    return {
      message: original.expose ? shortened(original.message) : 'Internal server error',
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
  // The body's other members as GraphQL over HTTP has them: an operationName of another type had reached the executor
  // and ended in a 500 (red team, 2026-12-06).
  if (request.operationName !== undefined && request.operationName !== null && typeof request.operationName !== 'string')
    return refuse(400, 'operationName must be a string', 'BAD_REQUEST');
  if (request.variables !== undefined && request.variables !== null && (typeof request.variables !== 'object' || Array.isArray(request.variables)))
    return refuse(400, 'variables must be an object', 'BAD_REQUEST');
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
    contextValue: {
      ledger: options.ledger,
      keyStillHeld: options.keyStillHeld ?? (async () => {}),
      chargeRequest: options.chargeRequest ?? (async () => {}),
      mutationsRun: 0,
    },
  });
  // A query past its reads (shared/read-allowance.ts) is refused whole, as REST refuses it: not answered in part, with
  // whichever fields happened to read first. A mutation is not: its fields run one after another, each committed as
  // it ends, and refused whole it would tell the caller nothing was done (a retry would append again). Its answer
  // keeps what was done, the field that went past the cap in its errors (422), as any failed field.
  const overRead = result.errors?.find((e) => e.originalError instanceof ReadLimitExceededError);
  const mutation = operation?.kind === Kind.OPERATION_DEFINITION && operation.operation === 'mutation';
  if (overRead && !mutation) return refuse(422, overRead.originalError!.message, 'READ_LIMIT_EXCEEDED');
  // Likewise a query whose off-chain payloads come to more than one answer can carry.
  const overResolved = result.errors?.find((e) => e.originalError instanceof ResolvedPayloadsTooLargeError);
  if (overResolved && !mutation) return refuse(422, overResolved.originalError!.message, 'ANSWER_TOO_LARGE');
  return {
    status: 200,
    body: { ...(result.data !== undefined ? { data: result.data } : {}), ...(result.errors?.length ? { errors: result.errors.map(formatError) } : {}) },
  };
}
