/**
 * GraphQL at /graphql (POST with {query, variables, operationName}, or GET with the same in the query
 * string), behind the shared edge: a reader key may query, mutations need a writer.
 */
import { inexactMessage, inexactNumber } from '../../json-numbers.ts';
import * as z from 'zod';
import { hasRole, type Principal } from '../../access/policy.ts';
import { ValidationError } from '../../errors.ts';
import { checkShape } from '../../json-shape.ts';
import { type GraphqlRequest, runGraphql } from '../../graphql/graphql.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import { type RouteReply, routesOf } from '../define.ts';

/** What the GraphQL group's handlers use; functions/graphql/handler.ts wires it. */
export interface GraphqlDeps {
  ledgerFor(principal: Principal): Ledger;
  /** In production, introspection is off. */
  production: boolean;
}

/** What the requests look like (for OpenAPI); GraphQL itself checks them and answers GraphQL errors. */
export const graphqlRequest = z.object({
  query: z.string().min(1),
  variables: z.record(z.string(), z.unknown()).nullish(),
  operationName: z.string().nullish(),
});
export const graphqlQuery = z.object({ query: z.string().min(1), variables: z.string().optional(), operationName: z.string().optional() });

async function answer(
  request: GraphqlRequest,
  { principal, keyStillHeld, chargeRequest }: { principal: Principal; keyStillHeld: () => Promise<void>; chargeRequest: () => Promise<void> },
  method: 'GET' | 'POST',
  deps: GraphqlDeps,
): Promise<RouteReply> {
  // Every resolver reads and writes through the caller's guarded ledger; a reader is refused mutations up front, and
  // each mutation checks the key again (a key revoked meanwhile appends nothing more).
  const result = await runGraphql(request, {
    ledger: deps.ledgerFor(principal),
    production: deps.production,
    mayWrite: hasRole(principal, 'writer'),
    method,
    keyStillHeld,
    chargeRequest,
  });
  return { status: result.status, body: result.body };
}

function variablesFrom(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined || text === '') return undefined;
  let variables: Record<string, unknown>;
  try {
    variables = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw ValidationError.single(['query', 'variables'], 'variables must be a JSON object');
  }
  const inexact = inexactNumber(text);
  if (inexact) throw ValidationError.single(['query', 'variables'], inexactMessage(inexact, 'in the variables'));
  // The shape a POST's body keeps (its depth, no `__proto__` key, well-formed strings): GET's variables had skipped it.
  checkShape(variables, ['query', 'variables'], 'The variables');
  return variables;
}

const route = routesOf<GraphqlDeps>('graphql');

export const GRAPHQL_ROUTES = [
  route({
    method: 'POST',
    path: '/graphql',
    summary: 'GraphQL queries and mutations',
    // Any reader may query; mutations need a writer (checked by runGraphql, per operation).
    access: 'reader',
    describes: { body: graphqlRequest },
    handler: async ({ principal, keyStillHeld, chargeRequest, body }, deps) => {
      const request = (body ?? {}) as Partial<GraphqlRequest>;
      return answer(
        { query: String(request.query ?? ''), variables: request.variables, operationName: request.operationName },
        { principal, keyStillHeld, chargeRequest },
        'POST',
        deps,
      );
    },
  }),

  route({
    method: 'GET',
    path: '/graphql',
    summary: 'GraphQL queries',
    access: 'reader',
    describes: { query: graphqlQuery },
    handler: async ({ principal, keyStillHeld, chargeRequest, query }, deps) =>
      answer(
        { query: query.query ?? '', variables: variablesFrom(query.variables), operationName: query.operationName },
        { principal, keyStillHeld, chargeRequest },
        'GET',
        deps,
      ),
  }),
];
