/**
 * What the service says about itself, public (docs/rules.md, "Keys and limits"): GET /openapi.json (built
 * from the route declarations), GET /docs (Swagger UI, served from the npm package, no CDN), and the
 * explorer's static files at /explorer. The data they show is not public: the API asks for keys.
 */
import { readFileSync, statSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { NotFoundError } from '../../errors.ts';
import { type RouteReply, routesOf } from '../define.ts';
import { SWAGGER_UI_FILES } from '../groups.ts';

/** What the docs group's handlers use; functions/docs/handler.ts wires it. */
export interface DocsDeps {
  /** The OpenAPI document, as JSON text. */
  openapi(): string;
  /** Folders of static files: the explorer's build, and swagger-ui-dist. */
  explorerDir(): string;
  swaggerDir(): string;
  /** What the explorer is told: where the WebSocket is (null: same origin), and the API key header. */
  /** `witnesses`: the cosigner vkeys of SVC_WITNESSES (public keys), which the explorer pins at first use. */
  explorerConfig: { ws_url: string | null; api_key_header: string; witnesses: string[] };
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** Pages may run their own scripts and styles, talk to this origin (and its WebSocket), nothing else. */
const PAGE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

function file(dir: string, name: string, maxAge = 3600): RouteReply {
  // Only plain names inside the folder: no way out of it.
  const path = normalize(join(dir, name));
  // A file, not a folder: `/explorer/assets` (the build's folder) had read a directory, a 500 anyone could ask for (red team).
  const isFile = () => statSync(path, { throwIfNoEntry: false })?.isFile() === true;
  if (!path.startsWith(normalize(dir)) || !/^[A-Za-z0-9._-]+$/.test(name) || !isFile()) throw new NotFoundError(`No file '${name}'`);
  const type = TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream';
  const bytes = readFileSync(path);
  const text = type.startsWith('text/') || type.includes('json') || type.includes('svg');
  return {
    contentType: type,
    body: text ? bytes.toString('utf8') : bytes.toString('base64'),
    ...(text ? {} : { base64: true as const }),
    headers: {
      'Cache-Control': `public, max-age=${maxAge}`,
      ...(type.startsWith('text/html') ? { 'Content-Security-Policy': PAGE_POLICY } : {}),
    },
  };
}

/** What /docs/{file} serves of swagger-ui-dist: the files the deployed function carries beside it. */
const SWAGGER_FILES = new Set<string>(SWAGGER_UI_FILES);

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Verifiable Ledger API</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="ui"></div><script src="/docs/swagger-ui-bundle.js"></script><script src="/docs/init.js"></script></body>
</html>`;

/**
 * The page shows each route once, under its group's first prefix (/api/ledger, /api/business), and names where else it
 * is served: /openapi.json marks the twins (x-aliases, x-alias-of) and keeps them all, for clients and generators.
 */
const DOCS_INIT = `fetch('/openapi.json').then((res) => res.json()).then((doc) => {
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op['x-alias-of']) delete item[method];
      else if (op['x-aliases']) op.description = [op.description, 'Also served at ' + op['x-aliases'].join(', ') + '.'].filter(Boolean).join(' ');
    }
    if (Object.keys(item).length === 0) delete doc.paths[path];
  }
  window.ui = SwaggerUIBundle({ spec: doc, dom_id: '#ui', deepLinking: true });
});`;

const route = routesOf<DocsDeps>('docs');

export const DOCS_ROUTES = [
  route({
    method: 'GET',
    path: '/openapi.json',
    summary: 'This API, described in OpenAPI 3.1',
    access: 'public',
    handler: async (_, { openapi }) => ({ contentType: 'application/json', body: openapi() }),
  }),

  route({
    method: 'GET',
    path: '/docs',
    summary: 'Interactive API documentation',
    access: 'public',
    handler: async () => ({ contentType: 'text/html; charset=utf-8', body: DOCS_PAGE, headers: { 'Content-Security-Policy': PAGE_POLICY } }),
  }),

  route({
    method: 'GET',
    path: '/docs/{file}',
    summary: "The documentation page's files",
    access: 'public',
    handler: async ({ params }, { swaggerDir }) => {
      if (params.file === 'init.js') return { contentType: 'text/javascript; charset=utf-8', body: DOCS_INIT };
      // The two files the page loads, as the deployed function carries them: not the rest of swagger-ui-dist (its stock
      // page, its petstore initializer, its package.json and source maps, served locally before: red team).
      if (!SWAGGER_FILES.has(params.file)) throw new NotFoundError(`No file '${params.file}'`);
      return file(swaggerDir(), params.file, 86_400);
    },
  }),

  // The page names hashed asset files: it must never be cached past a deploy; the assets may be, for a year.
  route({
    method: 'GET',
    path: '/explorer',
    summary: 'The explorer dashboard',
    access: 'public',
    handler: async (_, { explorerDir }) => {
      const page = file(explorerDir(), 'index.html', 0);
      return { ...page, headers: { ...page.headers, 'Cache-Control': 'no-cache' } };
    },
  }),

  // Where the explorer's WebSocket is: same origin locally, the WebSocket API's stage in the cloud.
  route({
    method: 'GET',
    path: '/explorer/config.json',
    summary: "Where the explorer finds the WebSocket, and the witnesses' public keys it pins",
    access: 'public',
    handler: async (_, { explorerConfig }) => ({
      contentType: 'application/json',
      body: JSON.stringify(explorerConfig),
      headers: { 'Cache-Control': 'no-cache' },
    }),
  }),

  route({
    method: 'GET',
    path: '/explorer/{file}',
    summary: "The explorer's files",
    access: 'public',
    handler: async ({ params }, { explorerDir }) => file(explorerDir(), params.file, 0),
  }),

  route({
    method: 'GET',
    path: '/explorer/assets/{file}',
    summary: "The explorer's built assets",
    access: 'public',
    handler: async ({ params }, { explorerDir }) => file(join(explorerDir(), 'assets'), params.file, 31_536_000),
  }),
];
