/**
 * The business group's function (/api/business and /api/v2): its composition root. The routes are
 * declared in shared/api/routes/business.ts.
 */
import { BUSINESS_ROUTES } from '#shared/api/routes/business';
import { getBusiness } from '#shared/business-runtime';
import { createHttpHandler } from '#shared/http/chain';
import { getLedgerRuntime, getOffchainStore } from '#shared/runtime';

export const handler = createHttpHandler({
  group: 'business',
  routes: BUSINESS_ROUTES,
  deps: {
    business: getBusiness,
    health: { dynamodb: () => getLedgerRuntime().repository.ping(), ipfs: () => getOffchainStore().ping() },
  },
});
