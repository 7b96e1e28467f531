/**
 * Best practices on the template: cdk-nag's AwsSolutions and Serverless packs run on synth, as infra/cdk/app.ts
 * runs them for every `cdk synth` and `cdk deploy`. Synth fails on any finding the stack has not acknowledged,
 * and every acknowledgment states its reason.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { App, Validations } from 'aws-cdk-lib';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { LedgerStack } from '#infra/cdk/ledger-stack';

function synthWithPacks(change?: (stack: LedgerStack) => void) {
  const app = new App({ builtinCloudFormationValidation: false });
  const stack = new LedgerStack(app, 'Nag', { env: { region: 'us-east-1' }, tablePrefix: 'nag-' });
  change?.(stack);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  return { app, stack, synth: () => app.synth() };
}

/** Every acknowledgment recorded on the stack's constructs: rule id and reason. */
function acknowledgments(stack: LedgerStack): { path: string; id: string; reason: string }[] {
  return stack.node.findAll().flatMap((c) =>
    c.node.metadata
      .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      // Recorded as { [rule id]: reason }.
      .flatMap((m) => Object.entries(m.data as Record<string, string>))
      .map(([id, reason]) => ({ path: c.node.path, id, reason })),
  );
}

describe('cdk-nag on the template (AwsSolutions and Serverless packs)', () => {
  // The stack as deployed, synthesized once with both packs for the first two tests.
  let stack: LedgerStack;
  let failure: unknown;
  before(() => {
    const packed = synthWithPacks();
    stack = packed.stack;
    try {
      packed.synth();
    } catch (error) {
      failure = error;
    }
  });

  it('synthesizes with no finding left unacknowledged', () => {
    if (failure) throw failure;
  });

  it('states a reason for every acknowledgment', () => {
    if (failure) throw failure;
    const all = acknowledgments(stack);
    assert.ok(all.length >= 8, `acknowledgments: ${all.length}`);
    for (const a of all) {
      assert.match(a.id, /^(AwsSolutions|Serverless|CloudFormation-Validate)::/, `${a.path}: ${a.id}`);
      assert.ok(a.reason.length >= 60 && /\s/.test(a.reason), `${a.path} ${a.id}: a reason, not a label (${a.reason})`);
    }
  });

  it('fails the synth when a finding is not acknowledged (a function on an older runtime)', () => {
    const { synth } = synthWithPacks((stack) => {
      new LambdaFunction(stack, 'Old', { runtime: Runtime.NODEJS_20_X, handler: 'index.handler', code: Code.fromInline('exports.handler=async()=>1') });
    });
    assert.throws(synth, /Validation failed/);
  });
});
