/**
 * The business group's wiring: its own module, so that only the business function bundles the
 * contract sandbox.
 */
import { getConfig } from './config.ts';
import { documentClient, getAccessControl, getLedgerRuntime, lazyOffchain, once } from './runtime.ts';
import { createBusinessRepository } from './storage/business-repository.ts';
import { createBusiness, type Business } from './business/business.ts';
import { createContractPool } from './business/contract-pool.ts';

export const getBusiness = once((): Business => {
  const config = getConfig();
  return createBusiness({
    repository: createBusinessRepository({ client: documentClient(), tableName: config.SVC_REGISTRY_TABLE }),
    ledger: getLedgerRuntime().ledger,
    access: getAccessControl(),
    offchain: lazyOffchain,
    sandbox: createContractPool({
      limits: {
        timeoutMs: config.SVC_CONTRACT_TIMEOUT_MS,
        memoryBytes: config.SVC_CONTRACT_MEMORY_BYTES,
        stackBytes: config.SVC_CONTRACT_STACK_BYTES,
        maxResultBytes: 1024 * 1024,
      },
      workers: config.SVC_CONTRACT_WORKERS,
      queue: config.SVC_CONTRACT_QUEUE,
    }),
    inlineThresholdBytes: config.SVC_OFFCHAIN_THRESHOLD_BYTES,
  });
});
