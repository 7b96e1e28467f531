/**
 * The contracts group: the business routes that run contract code in the sandbox (publishing a version, which
 * evaluates it, and running one), under the business group's prefixes (/api/business and /api/v2) but in a
 * function of their own. So a burst of runs, each up to its CPU limit, takes instances of this function and its
 * admission's slots (shared/business/contract-admission.ts), never those that serve business reads.
 */
import { type Business, contractInput, executeInput } from '../../business/business.ts';
import { routesOf } from '../define.ts';
import { contractExecutedSchema, contractRegisteredSchema } from '../responses.ts';

/** What the contracts group's handlers use; functions/contracts/handler.ts wires it. */
export interface ContractsDeps {
  business(): Business;
}

const route = routesOf<ContractsDeps>('contracts');

export const CONTRACTS_ROUTES = [
  route({
    method: 'POST',
    path: '/contracts',
    response: contractRegisteredSchema,
    summary: 'Register a contract version',
    access: 'writer',
    status: 201,
    body: contractInput,
    handler: async ({ principal, body }, { business }) => ({ body: { success: true, ...(await business().registerContract(principal, body)) } }),
  }),

  route({
    method: 'POST',
    path: '/contracts/execute',
    response: contractExecutedSchema,
    summary: 'Execute a contract',
    access: 'writer',
    body: executeInput,
    handler: async ({ principal, keyStillHeld, body }, { business }) => ({
      body: { success: true, ...(await business().executeContract(principal, body, keyStillHeld)) },
    }),
  }),
];
