/**
 * The tlog group's function (/tlog): its composition root. The routes are declared in
 * shared/api/routes/tlog.ts; docs/transparency-log.md is the manual.
 */
import { TLOG_ROUTES } from '#shared/api/routes/tlog';
import { createHttpHandler } from '#shared/http/chain';
import type { Core } from '#shared/wiring/core';
import { createNodeWiring } from '#shared/wiring/node';
import { lambdaHandler } from '#shared/wiring/process';

export function createHandler(core: Core) {
  const { tlogFor, openLogs } = createNodeWiring(core);
  return createHttpHandler({ group: 'tlog', routes: TLOG_ROUTES, edge: core.edge, deps: { tlogFor, openLogs } });
}

export const handler = lambdaHandler(createHandler);
