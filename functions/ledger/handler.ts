/**
 * The ledger group's function (/api/ledger and /api/v1): its composition root. The routes are declared
 * in shared/api/routes/ledger.ts; this wires what their handlers use.
 */
import { getAdmin, proofsFor } from '#shared/admin-runtime';
import { LEDGER_ROUTES } from '#shared/api/routes/ledger';
import { createHttpHandler } from '#shared/http/chain';
import { getLedgerRuntime, getOffchainStore, ledgerFor } from '#shared/runtime';

export const handler = createHttpHandler({
  group: 'ledger',
  routes: LEDGER_ROUTES,
  deps: {
    ledgerFor,
    proofsFor,
    offchain: getOffchainStore,
    node: getAdmin,
    health: { dynamodb: () => getLedgerRuntime().repository.ping(), ipfs: () => getOffchainStore().ping() },
  },
});
