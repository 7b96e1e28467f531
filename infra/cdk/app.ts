/**
 * `cdk synth` / `cdk deploy` entry (cdk.json). Synth works offline with no AWS account or credentials;
 * the CORS origins are a deploy-time parameter: `npm run deploy -- --parameters CorsOrigins=https://…`.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { LedgerStack } from './ledger-stack.ts';

const app = new App();
// Best practices on every synth (and so on every deploy): cdk-nag's AwsSolutions and Serverless packs. A finding
// stops the synth unless the stack acknowledges it with its reason (ledger-stack.ts).
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
new LedgerStack(app, app.node.tryGetContext('stackName') ?? 'VerifiableLedger', {
  // A customer-managed key on TableV2 needs an explicit region (architecture.md, traps).
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION ?? process.env.AWS_REGION ?? 'us-east-1' },
});
