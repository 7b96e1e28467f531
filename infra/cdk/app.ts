/** `cdk synth` / `cdk deploy` entry (see cdk.json). Works offline with no AWS account for synth. */
import { App } from 'aws-cdk-lib';
import { LedgerStack } from './ledger-stack.ts';

const app = new App();
// Browsers may call the API only from these origins: `cdk deploy -c corsOrigins=https://app.example.com,…`
const corsOrigins = String(app.node.tryGetContext('corsOrigins') ?? '')
  .split(',')
  .map((o) => o.trim())
  .filter(Boolean);
if (corsOrigins.length === 0) {
  throw new Error('Set the allowed CORS origins: cdk deploy -c corsOrigins=https://app.example.com (comma-separated)');
}
new LedgerStack(app, app.node.tryGetContext('stackName') ?? 'VerifiableLedger', {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION ?? 'us-east-1' },
  corsOrigins,
});
