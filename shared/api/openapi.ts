/**
 * GET /openapi.json: an OpenAPI 3.1 document built from the route declarations, with the zod schemas the
 * requests are parsed with, so it lists exactly what is served and accepted.
 */
import * as z from 'zod';
import { expandRoutes, GROUPS, type Route } from './routes.ts';

type JsonSchema = Record<string, unknown>;

/**
 * A zod schema as JSON Schema (what clients send: before transforms and defaults). Its `$defs` (recursive
 * types such as JSON values) move into components.schemas, and their `$ref`s follow them there.
 */
function jsonSchema(schema: z.ZodType, components: Record<string, JsonSchema>, io: 'input' | 'output' = 'input'): JsonSchema {
  const { $schema: _ignored, $defs, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema & { $defs?: Record<string, JsonSchema> };
  if (!$defs) return rest;
  const renamed = new Map<string, string>();
  // Named schemas (`.meta({ id: 'Block' })`) keep their names; anonymous ones (recursive JSON values) are numbered.
  for (const name of Object.keys($defs)) {
    renamed.set(name, name.startsWith('__') ? `Def${Object.keys(components).length + renamed.size + 1}` : name);
  }
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [
          k,
          k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/') ? `#/components/schemas/${renamed.get(v.slice(8))}` : rewrite(v),
        ]),
      );
    }
    return value;
  };
  for (const [name, def] of Object.entries($defs)) components[renamed.get(name)!] = rewrite(def) as JsonSchema;
  return rewrite(rest) as JsonSchema;
}

/** An answer's schema: what the service sends (after transforms). */
function responseSchema(schema: z.ZodType, components: Record<string, JsonSchema>): JsonSchema {
  return jsonSchema(schema, components, 'output');
}

const ERROR: JsonSchema = {
  type: 'object',
  required: ['detail', 'request_id'],
  properties: {
    detail: {
      description: 'A message, or for 422 a list of {loc, msg, type}',
      oneOf: [
        { type: 'string' },
        {
          type: 'array',
          items: {
            type: 'object',
            properties: { loc: { type: 'array', items: { type: ['string', 'number'] } }, msg: { type: 'string' }, type: { type: 'string' } },
          },
        },
      ],
    },
    request_id: { type: 'string', format: 'uuid' },
  },
};

/** What /graphql answers when it refuses a query: the GraphQL spec's errors list, with a machine-readable code. */
const GRAPHQL_ERRORS: JsonSchema = {
  type: 'object',
  required: ['errors'],
  properties: {
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['message'],
        properties: {
          message: { type: 'string' },
          locations: { type: 'array', items: { type: 'object', properties: { line: { type: 'integer' }, column: { type: 'integer' } } } },
          extensions: { type: 'object', properties: { code: { type: 'string' }, status: { type: 'integer' } } },
        },
      },
    },
  },
};

function operation(route: Route, components: Record<string, JsonSchema>): Record<string, unknown> {
  const declared = route.definition;
  const schemas = { query: declared.query ?? declared.describes?.query, body: declared.body ?? declared.describes?.body };
  // `{name+}` (API Gateway's greedy parameter) is OpenAPI's `{name}` whose value may hold slashes.
  const parameters: Record<string, unknown>[] = [...route.path.matchAll(/\{([a-z_]+)(\+?)\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
    ...(m[2] ? { description: 'The rest of the path: it may contain slashes' } : {}),
  }));
  if (schemas.query) {
    const query = jsonSchema(schemas.query, components) as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {})) {
      parameters.push({ name, in: 'query', required: (query.required ?? []).includes(name), schema });
    }
  }
  if (declared.idempotent) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Makes retries safe: the same key with the same body answers the first result (header Idempotent-Replayed: true) and appends nothing; with another body 422; while the first is in progress 409. 1-255 printable ASCII characters; kept 24 h.',
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
    });
  }
  const success = String(declared.status ?? 200);
  return {
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: route.summary,
    tags: [route.group],
    ...(parameters.length ? { parameters } : {}),
    ...(schemas.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(schemas.body, components) } } } } : {}),
    responses: {
      [success]: declared.response
        ? { description: 'Success', content: { 'application/json': { schema: responseSchema(declared.response, components) } } }
        : { description: 'Success' },
      '4XX':
        route.group === 'graphql'
          ? {
              description: 'The query was refused (parse, validation, depth, cost, method or role): GraphQL errors',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/GraphqlErrors' } } },
            }
          : {
              description: 'The request was refused (docs/rules.md, "Errors")',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
            },
      '5XX': {
        description: 'The service or a dependency failed; 503 carries Retry-After',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    },
    // Public routes need no key; a route a setting opens (the logs, SVC_TLOG_PUBLIC) takes a key or none.
    ...(declared.access === 'public' ? { security: [] } : declared.publicWith ? { security: [{ ApiKey: [] }, {}] } : {}),
  };
}

export function buildOpenApi(options: { version: string; apiKeyHeader: string }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const components: Record<string, JsonSchema> = { Error: ERROR, GraphqlErrors: GRAPHQL_ERRORS };
  const openApiPath = (path: string) => path.replace(/\{([a-z_]+)\+\}/g, '{$1}');
  for (const route of expandRoutes()) {
    // A group served under two prefixes (/api/ledger and /api/v1) has each route twice: the first prefix's names the
    // others (x-aliases), each other names it (x-alias-of), so that a reader (the /docs page) can show each route once.
    const prefixes = route.definition.onlyPrefixes ?? GROUPS[route.group].prefixes;
    const [first, ...others] = prefixes.map((prefix) => openApiPath(`${prefix}${route.definition.path}`));
    const path = openApiPath(route.path);
    const aliases = others.length === 0 ? {} : path === first ? { 'x-aliases': others } : { 'x-alias-of': first };
    (paths[path] ??= {})[route.method.toLowerCase()] = { ...operation(route, components), ...aliases };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Verifiable Ledger',
      version: options.version,
      description:
        'A hash-chained, Merkle-verifiable ledger. The ledger group is served under /api/ledger and /api/v1, the business group under /api/business and /api/v2.',
    },
    paths,
    components: {
      schemas: components,
      securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: options.apiKeyHeader } },
    },
    security: [{ ApiKey: [] }],
  };
}
