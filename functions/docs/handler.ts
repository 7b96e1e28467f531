/**
 * The docs function (/openapi.json, /docs, /explorer): its composition root. The routes are declared in
 * shared/api/routes/docs.ts. In a bundle the static files sit in `static/` beside it (the stack copies
 * them there); in the repository they come from explorer/dist and node_modules.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApi } from '#shared/api/openapi';
import { DOCS_ROUTES } from '#shared/api/routes/docs';
import { createHttpHandler } from '#shared/http/chain';
import { type Core, once } from '#shared/wiring/core';
import { lambdaHandler } from '#shared/wiring/process';
import { SERVICE_VERSION } from '#shared/version';
import { parseWitnesses } from '#shared/tlog/witness-config';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');

/** A folder of static files, looked up once: beside the bundle when deployed, else in the repository. */
const root = (bundled: string, fallback: () => string) =>
  once(() => {
    const beside = join(here, 'static', bundled);
    return existsSync(beside) ? beside : fallback();
  });

const explorerDir = root('explorer', () => join(repo, 'explorer', 'dist'));
const swaggerDir = root('swagger-ui', () => dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')));

export function createHandler(core: Core) {
  const config = core.settings;
  return createHttpHandler({
    group: 'docs',
    routes: DOCS_ROUTES,
    edge: core.edge,
    deps: {
      openapi: once(() => JSON.stringify(buildOpenApi({ version: SERVICE_VERSION, apiKeyHeader: config.API_KEY_NAME }))),
      explorerDir,
      swaggerDir,
      explorerConfig: {
        ws_url: config.SVC_WS_PUBLIC_URL ?? null,
        api_key_header: config.API_KEY_NAME,
        witnesses: parseWitnesses(config.SVC_WITNESSES).map((witness) => witness.vkey),
      },
    },
  });
}

export const handler = lambdaHandler(createHandler);
