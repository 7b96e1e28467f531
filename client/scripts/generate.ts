/**
 * Regenerates the client's types (client/src/schema.ts) from the service's OpenAPI document, the one
 * GET /openapi.json serves, built from the route declarations. `npm run client:types` writes it;
 * test/unit/client-schema.test.ts fails when the checked-in file differs from a fresh one, so the client
 * never drifts from the routes.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { buildOpenApi } from '../../shared/api/openapi.ts';
import { SERVICE_VERSION } from '../../shared/version.ts';

export const SCHEMA_FILE = fileURLToPath(new URL('../src/schema.ts', import.meta.url));

const HEADER = `/**
 * The service's routes as types, generated from its OpenAPI document by openapi-typescript.
 * Do not edit: \`npm run client:types\` rewrites it, and the unit tests fail when it is out of date.
 */

`;

export async function generateSchema(): Promise<string> {
  const document = buildOpenApi({ version: SERVICE_VERSION, apiKeyHeader: 'X-API-Key' });
  const ast = await openapiTS(document as unknown as Parameters<typeof openapiTS>[0], { alphabetize: true });
  // A JSON value is recursive; TypeScript cannot follow that through the components interface, so it is
  // one named alias instead.
  const recursive =
    /(Def\d+): string \| number \| boolean \| null \| components\["schemas"\]\["\1"\]\[\] \| \{\s*\[key: string\]: components\["schemas"\]\["\1"\];\s*\};/g;
  const text = astToString(ast).replace(recursive, '$1: JsonValue;');
  return `${HEADER}export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };\n\n${text}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SCHEMA_FILE, await generateSchema());
  console.log(`wrote ${SCHEMA_FILE}`);
}
