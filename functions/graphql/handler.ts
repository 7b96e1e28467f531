/**
 * GraphQL at /graphql (POST with {query, variables, operationName}, or GET with the same in the query
 * string), behind the shared edge: a reader key may query, mutations need a writer.
 */
import { hasRole } from '#shared/access/policy';
import { getConfig } from '#shared/config';
import { runGraphql, type GraphqlRequest } from '#shared/graphql/graphql';
import { createHttpHandler } from '#shared/http/chain';
import type { RouteHandlers, RouteRequest } from '#shared/http/types';
import { ledgerFor } from '#shared/runtime';
import { ValidationError } from '#shared/errors';

async function answer(request: GraphqlRequest, { principal }: RouteRequest, method: 'GET' | 'POST') {
  const config = getConfig();
  // Every resolver reads and writes through the caller's guarded ledger; a reader is refused mutations up front.
  const result = await runGraphql(request, {
    ledger: ledgerFor(principal),
    production: config.SVC_ENV === 'production',
    mayWrite: hasRole(principal, 'writer'),
    method,
  });
  return { statusCode: result.status, body: result.body };
}

function variablesFrom(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined || text === '') return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw ValidationError.single(['query', 'variables'], 'variables must be a JSON object');
  }
}

export const routes: RouteHandlers = {
  'POST /graphql': async (request) => {
    const body = (request.body ?? {}) as Partial<GraphqlRequest>;
    return answer({ query: String(body.query ?? ''), variables: body.variables, operationName: body.operationName }, request, 'POST');
  },
  'GET /graphql': async (request) =>
    answer({ query: request.query.query ?? '', variables: variablesFrom(request.query.variables), operationName: request.query.operationName }, request, 'GET'),
};

export const handler = createHttpHandler(routes, { group: 'graphql' });
