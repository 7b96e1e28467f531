/** `cdk synth` / `cdk deploy` entry (see cdk.json). Works offline with no AWS account for synth. */
import { App } from 'aws-cdk-lib';
import { LedgerStack } from './ledger-stack.ts';

const app = new App();
new LedgerStack(app, app.node.tryGetContext('stackName') ?? 'VerifiableLedger', {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION ?? 'us-east-1' },
});
