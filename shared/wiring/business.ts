/**
 * The business and contracts groups' wiring: its own module, so that only those functions bundle the business
 * domain. Only the contracts function runs the sandbox (and bundles its WebAssembly); the business function's
 * domain has none, and says so if a contract route ever reached it.
 */
import { type Business, createBusiness } from '../business/business.ts';
import { createContractAdmission } from '../business/contract-admission.ts';
import { type ContractSandbox, createContractPool, SANDBOX_GRACE_MS, SANDBOX_START_TIMEOUT_MS, wallBoundMs } from '../business/contract-pool.ts';
import { createBusinessRepository } from '../storage/business-repository.ts';
import { createRunSlotStore } from '../storage/contract-slots.ts';
import { type Core, once } from './core.ts';

/** The longest a run waits for a slot, within its invocation's deadline. */
const MAX_SLOT_WAIT_MS = 10_000;

/** The business function's stand-in: contract routes are the contracts function's (shared/api/routes/contracts.ts). */
const elsewhere = () => Promise.reject(new Error('contracts are published and run by the contracts function, not this one'));
const NO_SANDBOX: ContractSandbox = { check: elsewhere, run: elsewhere, close: async () => {} };

export function createBusinessWiring(core: Core, { runsContracts = false }: { runsContracts?: boolean } = {}): { business(): Business } {
  const { settings } = core;
  const sandbox = (): ContractSandbox => {
    if (!runsContracts) return NO_SANDBOX;
    const pool = createContractPool({
      limits: {
        timeoutMs: settings.SVC_CONTRACT_TIMEOUT_MS,
        memoryBytes: settings.SVC_CONTRACT_MEMORY_BYTES,
        stackBytes: settings.SVC_CONTRACT_STACK_BYTES,
        maxResultBytes: 1024 * 1024,
      },
      workers: settings.SVC_CONTRACT_WORKERS,
      queue: settings.SVC_CONTRACT_QUEUE,
    });
    // Runs at once and waiting, across every instance: one record in the registry table admits each.
    const admission = createContractAdmission(createRunSlotStore({ client: core.documentClient(), tableName: settings.SVC_REGISTRY_TABLE }), {
      runsAtOnce: settings.SVC_CONTRACT_WORKERS,
      waiting: settings.SVC_CONTRACT_QUEUE,
      // The wall-clock bound a run is stopped at (three times its CPU limit, and a grace), and what a sandbox's start
      // may add (a fresh worker compiles QuickJS before the limit starts; workers run at nice 19, and under a flood a
      // slot held 5 s expired under a run still going, and a ninth began: red team).
      holdMs: wallBoundMs(settings.SVC_CONTRACT_TIMEOUT_MS) + SANDBOX_START_TIMEOUT_MS,
      maxWaitMs: MAX_SLOT_WAIT_MS,
      retryAfterSeconds: (settings.SVC_CONTRACT_TIMEOUT_MS + SANDBOX_GRACE_MS) / 1000,
    });
    return {
      check: (source, caller) => admission.admit(() => pool.check(source), caller),
      run: (source, event, context, caller) => admission.admit(() => pool.run(source, event, context), caller),
      close: () => pool.close(),
    };
  };
  const business = once(
    (): Business =>
      createBusiness({
        repository: createBusinessRepository({ client: core.documentClient(), tableName: settings.SVC_REGISTRY_TABLE }),
        ledger: core.ledgerRuntime().ledger,
        access: core.access(),
        offchain: core.lazyOffchain,
        personalData: core.personalData,
        sandbox: sandbox(),
        inlineThresholdBytes: settings.SVC_OFFCHAIN_THRESHOLD_BYTES,
      }),
  );
  return { business };
}
