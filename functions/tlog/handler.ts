/**
 * The tlog group's function (/tlog): its composition root. The routes are declared in
 * shared/api/routes/tlog.ts; docs/transparency-log.md is the manual.
 */
import { tlogFor } from '#shared/admin-runtime';
import { TLOG_ROUTES } from '#shared/api/routes/tlog';
import { createHttpHandler } from '#shared/http/chain';

export const handler = createHttpHandler({ group: 'tlog', routes: TLOG_ROUTES, deps: { tlogFor } });
