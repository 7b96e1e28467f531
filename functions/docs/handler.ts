/**
 * What the service says about itself, public (docs/rules.md, "Keys and limits"): GET /openapi.json (built from the route
 * table and the handlers' schemas), GET /docs (Swagger UI, served from the npm package, no CDN), and the
 * explorer's static files at /explorer. In a bundle the files sit in `static/` beside it (the stack copies
 * them there); in the repository they come from explorer/dist and node_modules.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApi } from '#shared/api/openapi';
import { getConfig } from '#shared/config';
import { NotFoundError } from '#shared/errors';
import { createHttpHandler } from '#shared/http/chain';
import type { RouteHandlers, RouteResponse } from '#shared/http/types';
import { SERVICE_VERSION } from '#shared/version';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');

/** A folder of static files, looked up once: beside the bundle when deployed, else in the repository. */
function root(bundled: string, fallback: () => string): () => string {
  let found: string | undefined;
  return () => {
    if (found === undefined) {
      const beside = join(here, 'static', bundled);
      found = existsSync(beside) ? beside : fallback();
    }
    return found;
  };
}

const EXPLORER = root('explorer', () => join(repo, 'explorer', 'dist'));
const SWAGGER = root('swagger-ui', () => dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')));

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

function file(dir: string, name: string, maxAge = 3600): RouteResponse {
  // Only plain names inside the folder: no way out of it.
  const path = normalize(join(dir, name));
  if (!path.startsWith(normalize(dir)) || !/^[A-Za-z0-9._-]+$/.test(name) || !existsSync(path)) throw new NotFoundError(`No file '${name}'`);
  const type = TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream';
  const bytes = readFileSync(path);
  const text = type.startsWith('text/') || type.includes('json') || type.includes('svg');
  return {
    statusCode: 200,
    contentType: type,
    body: text ? bytes.toString('utf8') : bytes.toString('base64'),
    headers: {
      'Cache-Control': `public, max-age=${maxAge}`,
      ...(type.startsWith('text/html') ? { 'Content-Security-Policy': PAGE_POLICY } : {}),
      ...(text ? {} : { 'X-Body-Encoding': 'base64' }),
    },
  };
}

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Verifiable Ledger API</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="ui"></div><script src="/docs/swagger-ui-bundle.js"></script><script src="/docs/init.js"></script></body>
</html>`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#ui', deepLinking: true, persistAuthorization: true });`;

let openapi: string | undefined;

export const routes: RouteHandlers = {
  'GET /openapi.json': async () => {
    openapi ??= JSON.stringify(buildOpenApi({ version: SERVICE_VERSION, apiKeyHeader: getConfig().API_KEY_NAME }));
    return { statusCode: 200, contentType: 'application/json', body: openapi };
  },
  'GET /docs': async () => ({ statusCode: 200, contentType: 'text/html; charset=utf-8', body: DOCS_PAGE, headers: { 'Content-Security-Policy': PAGE_POLICY } }),
  'GET /docs/{file}': async ({ params }) =>
    params.file === 'init.js' ? { statusCode: 200, contentType: 'text/javascript; charset=utf-8', body: DOCS_INIT } : file(SWAGGER(), params.file!, 86_400),
  // The page names hashed asset files: it must never be cached past a deploy; the assets may be, for a year.
  'GET /explorer': async () => {
    const page = file(EXPLORER(), 'index.html', 0);
    return { ...page, headers: { ...page.headers, 'Cache-Control': 'no-cache' } };
  },
  // Where the explorer's WebSocket is: same origin locally, the WebSocket API's stage in the cloud.
  'GET /explorer/config.json': async () => ({
    statusCode: 200,
    contentType: 'application/json',
    body: JSON.stringify({ ws_url: getConfig().SVC_WS_PUBLIC_URL ?? null, api_key_header: getConfig().API_KEY_NAME }),
    headers: { 'Cache-Control': 'no-cache' },
  }),
  'GET /explorer/{file}': async ({ params }) => file(EXPLORER(), params.file!, 0),
  'GET /explorer/assets/{file}': async ({ params }) => file(join(EXPLORER(), 'assets'), params.file!, 31_536_000),
};

export const handler = createHttpHandler(routes, { group: 'docs' });
