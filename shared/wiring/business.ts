/**
 * The business group's wiring: its own module, so that only the business function bundles the
 * contract sandbox.
 */
import { type Business, createBusiness } from '../business/business.ts';
import { createContractPool } from '../business/contract-pool.ts';
import { createBusinessRepository } from '../storage/business-repository.ts';
import { type Core, once } from './core.ts';

export function createBusinessWiring(core: Core): { business(): Business } {
  const { settings } = core;
  const business = once(
    (): Business =>
      createBusiness({
        repository: createBusinessRepository({ client: core.documentClient(), tableName: settings.SVC_REGISTRY_TABLE }),
        ledger: core.ledgerRuntime().ledger,
        access: core.access(),
        offchain: core.lazyOffchain,
        personalData: core.personalData,
        sandbox: createContractPool({
          limits: {
            timeoutMs: settings.SVC_CONTRACT_TIMEOUT_MS,
            memoryBytes: settings.SVC_CONTRACT_MEMORY_BYTES,
            stackBytes: settings.SVC_CONTRACT_STACK_BYTES,
            maxResultBytes: 1024 * 1024,
          },
          workers: settings.SVC_CONTRACT_WORKERS,
          queue: settings.SVC_CONTRACT_QUEUE,
        }),
        inlineThresholdBytes: settings.SVC_OFFCHAIN_THRESHOLD_BYTES,
      }),
  );
  return { business };
}
