/**
 * What the deployer decides at `cdk deploy --parameters …` (docs/deploy.md, "Parameters"), and how the stack applies
 * the choices that are not plain settings: where the logs are kept, whether the API answers beside its CDN, a WAF in
 * front of the CDN, and the ledger function's reserved concurrency.
 */
import { Aws, CfnCondition, CfnParameter, Fn, RemovalPolicy, type Stack, Token } from 'aws-cdk-lib';
import type { CfnFunction, Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import type { LogGroupProps, RetentionDays } from 'aws-cdk-lib/aws-logs';

/** The retention periods CloudWatch Logs accepts, in days. */
export const LOG_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653] as const;

export function stackParameters(scope: Stack) {
  const corsOrigins = new CfnParameter(scope, 'CorsOrigins', {
    type: 'String',
    description: 'Comma-separated origins browsers may call the API from (SVC_CORS_ORIGINS), e.g. https://app.example.com',
    allowedPattern: '^(\\*|https?://[^\\s,/]+)(,(\\*|https?://[^\\s,/]+))*$',
    constraintDescription: 'a comma-separated list of origins such as https://app.example.com',
  });

  const ipfsApiUrl = new CfnParameter(scope, 'IpfsApiUrl', {
    type: 'String',
    description: 'Kubo RPC API the functions store off-chain payloads in (SVC_IPFS_API_URL), e.g. https://ipfs.internal.example.com:5001',
    allowedPattern: '^https?://\\S+$',
  });
  const ipfsApiAuth = new CfnParameter(scope, 'IpfsApiAuth', {
    type: 'String',
    noEcho: true,
    default: '',
    description: "Authorization header for the Kubo RPC API (SVC_IPFS_API_AUTH), e.g. 'Bearer …' (Kubo's API.Authorizations)",
  });

  const licenseKey = new CfnParameter(scope, 'LicenseKey', {
    type: 'String',
    noEcho: true,
    default: '',
    description: 'SVC_LICENSE_KEY: when set, the admin status reports license_active: true',
  });

  const witnesses = new CfnParameter(scope, 'Witnesses', {
    type: 'String',
    default: '',
    description: 'SVC_WITNESSES: the witnesses of the checkpoints, <cosigner vkey>=<url> entries separated by spaces (none by default)',
  });

  const publicTlog = new CfnParameter(scope, 'PublicTlog', {
    type: 'String',
    default: 'false',
    allowedValues: ['false', 'true'],
    description:
      "SVC_TLOG_PUBLIC: true answers the chains' C2SP logs (/tlog: checkpoints, hash tiles, block hashes) to anyone without a key, so that the CDN keeps them",
  });

  const rateLimit = new CfnParameter(scope, 'RateLimitPerMinute', {
    type: 'Number',
    default: 100,
    minValue: 0,
    maxValue: 1_000_000,
    description: 'Requests per minute per API key, or per source IP without one (SVC_RATE_LIMIT_RPM); 0 turns the limit off',
  });

  // Red team (2026-12-07, the deployed template): the API's own URL answered beside the CDN, around anything the edge
  // enforces, and nothing limited a client before its requests reached a function.
  const cdnOnly = new CfnParameter(scope, 'CdnOnly', {
    type: 'String',
    default: 'false',
    allowedValues: ['false', 'true'],
    description:
      "SVC_EDGE_ONLY: true refuses (403) every HTTP request that did not come through the stack's CloudFront distribution (CdnUrl), so that " +
      'nothing is served around what the edge enforces (a WebAclArn; the refusal still costs an invocation). The WebSocket API is not behind the CDN and is unaffected',
  });
  const webAclArn = new CfnParameter(scope, 'WebAclArn', {
    type: 'String',
    default: '',
    allowedPattern: '^(|arn:aws[a-z-]*:wafv2:us-east-1:[0-9]{12}:global/webacl/[^\\s]+)$',
    constraintDescription: 'empty, or the ARN of a WAF web ACL of scope CLOUDFRONT (made in us-east-1)',
    description:
      'A WAF web ACL (scope CLOUDFRONT, in us-east-1) for the CDN: per-client limits (rate-based rules) before a request reaches a function; ' +
      'with CdnOnly=true nothing goes around it. None by default',
  });
  const logRetentionDays = new CfnParameter(scope, 'LogRetentionDays', {
    type: 'Number',
    default: 30,
    allowedValues: LOG_RETENTION_DAYS.map(String),
    description: "Days the functions' logs and the API's access log are kept; they outlive the stack (a ledger's audit trail)",
  });
  const ledgerReservedConcurrency = new CfnParameter(scope, 'LedgerReservedConcurrency', {
    type: 'Number',
    default: 0,
    minValue: 0,
    maxValue: 10_000,
    description:
      "Concurrent executions reserved for the ledger function (appends and reads), so that a flood on the other routes cannot take the account's " +
      'concurrency from it; also its cap (past it, API Gateway answers a 5xx). 0 (the default): none reserved. Lambda keeps 100 of the account unreserved: a new account (a limit of 10) can reserve none',
  });
  const secretsRevision = new CfnParameter(scope, 'SecretsRevision', {
    type: 'Number',
    default: 1,
    minValue: 1,
    description:
      'Raise it to make the CDN and every function read their secrets again: after a new value of the EdgeSecret secret, IpfsApiAuth or LicenseKey ' +
      '(a deploy reads a secret only into what it updates; the functions read theirs at a cold start)',
  });
  return {
    corsOrigins,
    secretsRevision,
    ipfsApiUrl,
    ipfsApiAuth,
    licenseKey,
    witnesses,
    publicTlog,
    rateLimit,
    cdnOnly,
    webAclArn,
    logRetentionDays,
    ledgerReservedConcurrency,
  };
}

export type StackParameters = ReturnType<typeof stackParameters>;

/** A log group kept as long as the deployer says, and left behind by a `cdk destroy` (the record of what the ledger did). */
export function keptLogs(parameters: StackParameters): LogGroupProps {
  return { retention: parameters.logRetentionDays.valueAsNumber as RetentionDays, removalPolicy: RemovalPolicy.RETAIN };
}

/** The parameter's value where it is not `off`; elsewhere no property at all (AWS::NoValue), by a condition named `id`. */
function unless(scope: Stack, id: string, parameter: CfnParameter, off: string): ReturnType<typeof Fn.conditionIf> {
  const condition = new CfnCondition(scope, id, { expression: Fn.conditionNot(Fn.conditionEquals(parameter.valueAsString, off)) });
  return Fn.conditionIf(condition.logicalId, parameter.value, Aws.NO_VALUE);
}

/** The web ACL's ARN for the distribution, or no property at all when none is given. */
export function webAclOf(scope: Stack, parameters: StackParameters): string {
  return Token.asString(unless(scope, 'HasWebAcl', parameters.webAclArn, ''));
}

/** The ledger function's reserved concurrency, or none when the parameter is 0. */
export function reserveConcurrency(scope: Stack, fn: LambdaFunction, parameters: StackParameters): void {
  (fn.node.defaultChild as CfnFunction).reservedConcurrentExecutions = Token.asNumber(
    unless(scope, 'ReservesLedgerConcurrency', parameters.ledgerReservedConcurrency, '0'),
  );
}
