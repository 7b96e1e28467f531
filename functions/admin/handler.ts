/**
 * The admin group's function (/api/admin): its composition root. The routes are declared in
 * shared/api/routes/admin.ts.
 */
import { getAdmin } from '#shared/admin-runtime';
import { ADMIN_ROUTES } from '#shared/api/routes/admin';
import { createHttpHandler } from '#shared/http/chain';
import { getOffchainStore } from '#shared/runtime';

export const handler = createHttpHandler({ group: 'admin', routes: ADMIN_ROUTES, deps: { admin: getAdmin, offchain: getOffchainStore } });
