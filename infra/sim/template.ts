/**
 * Reads what `cdk deploy` would upload — the synthesized CloudFormation template and its asset manifest —
 * into what the simulator serves: functions (their bundled code directory, handler and environment),
 * tables (keys, indexes, TTL, streams), the HTTP API's routes, the WebSocket API's routes and the stream
 * mappings. Pure: no I/O but reading the asset directory listing.
 *
 * Intrinsic functions are evaluated against one mapping of cloud names to local ones (LocalMapping, see
 * docs/sim.md): a Ref or GetAtt the simulator cannot resolve, a route whose integration is not a Lambda
 * function it knows, or a function whose code asset is missing stops the start with a SimTemplateError
 * naming the resource's logical id and what is missing — never a half-served API.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { secretSources } from '#shared/wiring/secrets';

export class SimTemplateError extends Error {
  readonly logicalId: string;
  constructor(logicalId: string, message: string) {
    super(`${logicalId}: ${message}`);
    this.logicalId = logicalId;
  }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
interface Resource {
  Type: string;
  Properties?: Record<string, Json>;
  /** The name of a condition of the template: the resource exists only where it holds. */
  Condition?: string;
}
export interface Template {
  Parameters?: Record<string, { Type: string; Default?: string | number }>;
  Conditions?: Record<string, Json>;
  Resources: Record<string, Resource>;
}

/** Values the local stack puts where the cloud has its own (the documented mapping). */
export interface LocalMapping {
  region: string;
  /** The values of the template's parameters (its Defaults otherwise). */
  parameters: Record<string, string>;
  /** Where the WebSocket API's stage is reachable (`wss://…/<stage>` in the cloud). */
  webSocketUrl: string;
  /** Where its management API (@connections) is (`https://…/<stage>` in the cloud). */
  managementUrl: string;
}

/** The account every ARN of the sim names. */
export const SIM_ACCOUNT = '000000000000';

/** A KMS key's id in the sim: a UUID derived from its logical id, so its ARN is the same at every start. */
export function simKeyId(logicalId: string): string {
  const hex = createHash('sha256').update(logicalId).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** An IAM policy document as the template gives it, intrinsics resolved. */
export interface PolicyDocument {
  Version?: string;
  Statement: PolicyStatement[] | PolicyStatement;
}
export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Principal?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

/** A function's execution role: its ARN and every policy attached to it (inline and AWS::IAM::Policy). */
export interface SimRole {
  logicalId: string;
  arn: string;
  policies: { name: string; document: PolicyDocument }[];
  /** Managed policy ARNs, which the sim cannot read (the permission check refuses them). */
  managedPolicyArns: string[];
}

export interface SimFunction {
  logicalId: string;
  /** The bundled code's directory in the cloud assembly. */
  codeDir: string;
  /** The file holding the handler (`index.mjs` for `index.handler`). */
  file: string;
  /** The handler's export name. */
  exportName: string;
  /** The environment the template declares, resolved. */
  environment: Record<string, string>;
  /** Its execution role's logical id. */
  roleId: string;
  /** The log group Lambda writes its logs to (its LoggingConfig, else /aws/lambda/<name>). */
  logGroup: string;
  timeoutSeconds: number;
  memoryMb: number;
  /** Its Lambda runtime identifier (`nodejs24.x`). */
  runtime: string;
}

export interface SimTable {
  logicalId: string;
  name: string;
  keySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
  attributes: { AttributeName: string; AttributeType: 'S' | 'N' | 'B' }[];
  indexes: {
    IndexName: string;
    KeySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
    Projection: { ProjectionType: string; NonKeyAttributes?: string[] };
  }[];
  ttlAttribute: string | undefined;
  streamViewType: string | undefined;
}

export interface SimRoute {
  logicalId: string;
  method: string;
  /** The path template, `{name}` and `{name+}` parameters as API Gateway writes them. */
  path: string;
  routeKey: string;
  /** The function's logical id. */
  functionId: string;
}

export interface SimModel {
  functions: Record<string, SimFunction>;
  tables: SimTable[];
  http: { routes: SimRoute[]; defaultFunction: string | undefined };
  webSocket: { routes: Record<string, string>; stage: string } | undefined;
  streams: { logicalId: string; table: string; functionId: string; batchSize: number }[];
  /** EventBridge rules on a schedule that invoke a function: `rate(…)` ones, as their period in ms. */
  schedules: { logicalId: string; expression: string; everyMs: number; functionId: string }[];
  /** The execution roles, by logical id. */
  roles: Record<string, SimRole>;
  /** The KMS keys: ARN, and key policy. */
  keys: { logicalId: string; arn: string; policy: PolicyDocument }[];
  /** The WebSocket API's id and stage, as the @connections ARN names them. */
  webSocketApiId: string | undefined;
  /** The Secrets Manager secrets the stack makes, by ARN: each one's value (the deployer's, or one generated as at deploy). */
  secrets: Record<string, string>;
}

const TABLE_TYPES = new Set(['AWS::DynamoDB::Table', 'AWS::DynamoDB::GlobalTable']);

/** Reads `<dir>/<stack>.template.json` and `<dir>/<stack>.assets.json`. */
export function readAssembly(dir: string, stack: string): { template: Template; assets: Record<string, string> } {
  const templateFile = join(dir, `${stack}.template.json`);
  if (!existsSync(templateFile)) throw new SimTemplateError(stack, `no template at ${templateFile}: synthesize first (npm run synth)`);
  const template = JSON.parse(readFileSync(templateFile, 'utf8')) as Template;
  const assets: Record<string, string> = {};
  const manifestFile = join(dir, `${stack}.assets.json`);
  if (existsSync(manifestFile)) {
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as {
      files?: Record<string, { source: { path: string }; destinations: Record<string, { objectKey: string }> }>;
    };
    for (const file of Object.values(manifest.files ?? {})) {
      for (const destination of Object.values(file.destinations)) assets[destination.objectKey] = join(dir, file.source.path);
    }
  }
  return { template, assets };
}

export function modelFromTemplate(template: Template, assets: Record<string, string>, mapping: LocalMapping): SimModel {
  const declared = template.Resources ?? {};
  const conditions = new Map<string, boolean>();
  /** Whether a condition of the template holds for these parameters (Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition). */
  function holds(name: string, where: string): boolean {
    const known = conditions.get(name);
    if (known !== undefined) return known;
    const expression = template.Conditions?.[name];
    if (expression === undefined) throw new SimTemplateError(where, `names the condition '${name}', which the template does not define`);
    const value = evaluate(expression, `condition ${name}`);
    conditions.set(name, value);
    return value;
  }
  function evaluate(expression: Json, where: string): boolean {
    const [fn, arg] = expression && typeof expression === 'object' && !Array.isArray(expression) ? (Object.entries(expression)[0] ?? []) : [];
    const args = Array.isArray(arg) ? arg : [];
    if (fn === 'Fn::Equals') return resolve(args[0]!, where) === resolve(args[1]!, where);
    if (fn === 'Fn::Not') return !evaluate(args[0]!, where);
    if (fn === 'Fn::And') return args.every((a) => evaluate(a, where));
    if (fn === 'Fn::Or') return args.some((a) => evaluate(a, where));
    if (fn === 'Condition') return holds(String(arg), where);
    throw new SimTemplateError(where, `uses ${fn ?? JSON.stringify(expression)} in a condition, which the simulator does not evaluate`);
  }
  // The resources that exist for these parameters: one whose Condition does not hold is not made, as at deploy.
  const resources = Object.fromEntries(Object.entries(declared).filter(([id, r]) => r.Condition === undefined || holds(r.Condition, id))) as Record<
    string,
    Resource
  >;
  const of = (id: string, where: string): Resource => {
    const resource = resources[id];
    if (!resource) {
      throw new SimTemplateError(
        where,
        declared[id] ? `refers to '${id}', which its condition leaves out` : `refers to '${id}', which the template does not define`,
      );
    }
    return resource;
  };
  const apis = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::ApiGatewayV2::Api');
  const generatedSecrets = new Map<string, string>();
  const wsApiIds = new Set(apis.filter(([, r]) => r.Properties?.ProtocolType === 'WEBSOCKET').map(([id]) => id));
  const stages = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::ApiGatewayV2::Stage');
  const wsStage = stages.find(([, r]) => wsApiIds.has(refOf(r.Properties?.ApiId) ?? ''));
  const wsStageName = wsStage ? String(wsStage[1].Properties?.StageName ?? '$default') : undefined;

  /** Evaluates an intrinsic-bearing value; `where` names the resource for errors. */
  function resolve(value: Json, where: string): string {
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    if (value === null || Array.isArray(value)) throw new SimTemplateError(where, `cannot use ${JSON.stringify(value)} as a value`);
    const [fn, arg] = Object.entries(value)[0] ?? [];
    if (fn === 'Ref') return ref(String(arg), where);
    if (fn === 'Fn::GetAtt') {
      const [id, attribute] = Array.isArray(arg) ? (arg as string[]) : String(arg).split('.');
      return getAtt(id!, attribute!, where);
    }
    if (fn === 'Fn::Join') {
      const [separator, parts] = arg as [string, Json[]];
      return parts.map((p) => resolve(p, where)).join(separator);
    }
    if (fn === 'Fn::Select') {
      const [index, list] = arg as [number, Json];
      if (!Array.isArray(list)) throw new SimTemplateError(where, 'uses Fn::Select over a computed list, which the simulator does not evaluate');
      const item = list.map((entry) => resolve(entry, where))[Number(index)];
      if (item === undefined) throw new SimTemplateError(where, `Fn::Select index ${index} is out of range`);
      return item;
    }
    // A property left out (Fn::If's AWS::NoValue branch) reads as empty: every value the sim evaluates is a string.
    if (fn === 'Fn::If') {
      const [condition, yes, no] = arg as [string, Json, Json];
      return resolve(holds(condition, where) ? yes : no, where);
    }
    if (fn === 'Fn::Sub' && typeof arg === 'string') {
      return arg.replace(/\$\{([^}]+)\}/g, (_, name: string) => {
        return name.includes('.') ? getAtt(name.split('.')[0]!, name.split('.').slice(1).join('.'), where) : ref(name, where);
      });
    }
    throw new SimTemplateError(where, `uses ${fn ?? 'an empty object'}, which the simulator does not evaluate`);
  }

  function ref(name: string, where: string): string {
    switch (name) {
      case 'AWS::Region':
        return mapping.region;
      case 'AWS::AccountId':
        return '000000000000';
      case 'AWS::URLSuffix':
        return 'amazonaws.com';
      case 'AWS::Partition':
        return 'aws';
      case 'AWS::NoValue':
        return '';
      case 'AWS::StackName':
        return 'local';
    }
    if (template.Parameters?.[name]) {
      const parameter = template.Parameters[name]!;
      const value = mapping.parameters[name] ?? parameter.Default;
      if (value === undefined) throw new SimTemplateError(where, `needs the parameter '${name}', which has no default and no local value`);
      // As CloudFormation resolves a parameter: a string (a Number parameter's `Default: 100`, as CDK writes it,
      // is "100" wherever it is referenced). A list parameter would be a list, which nothing here evaluates.
      if (parameter.Type === 'CommaDelimitedList' || parameter.Type.startsWith('List<')) {
        throw new SimTemplateError(where, `refers to the list parameter '${name}', which the simulator does not evaluate`);
      }
      return String(value);
    }
    const resource = of(name, where);
    if (TABLE_TYPES.has(resource.Type)) {
      const tableName = resource.Properties?.TableName;
      if (typeof tableName !== 'string') throw new SimTemplateError(name, 'a table without a literal TableName cannot be simulated');
      return tableName;
    }
    if (resource.Type === 'AWS::Lambda::Function') return name;
    if (resource.Type === 'AWS::KMS::Key') return simKeyId(name);
    if (resource.Type === 'AWS::IAM::Role') return String(resource.Properties?.RoleName ?? name);
    if (resource.Type === 'AWS::Logs::LogGroup') return logGroupName(name);
    if (resource.Type === 'AWS::SQS::Queue') return `https://sqs.${mapping.region}.amazonaws.com/${SIM_ACCOUNT}/${queueName(name)}`;
    if (resource.Type === 'AWS::ApiGatewayV2::Api') return `${name.toLowerCase()}`;
    if (resource.Type === 'AWS::ApiGatewayV2::Stage') return String(resource.Properties?.StageName ?? '$default');
    if (resource.Type === 'AWS::ApiGatewayV2::Integration') return name;
    if (resource.Type === 'AWS::SecretsManager::Secret') return `arn:aws:secretsmanager:${mapping.region}:${SIM_ACCOUNT}:secret:${name}`;
    throw new SimTemplateError(where, `refers to ${name} (${resource.Type}), whose Ref the simulator does not resolve`);
  }

  function getAtt(id: string, attribute: string, where: string): string {
    const resource = of(id, where);
    if (TABLE_TYPES.has(resource.Type) && (attribute === 'Arn' || attribute === 'StreamArn')) {
      const table = ref(id, where) as string;
      return `arn:aws:dynamodb:${mapping.region}:000000000000:table/${table}${attribute === 'StreamArn' ? '/stream/local' : ''}`;
    }
    if (resource.Type === 'AWS::Lambda::Function' && attribute === 'Arn') return `arn:aws:lambda:${mapping.region}:000000000000:function:${id}`;
    if (resource.Type === 'AWS::KMS::Key' && attribute === 'Arn') return `arn:aws:kms:${mapping.region}:${SIM_ACCOUNT}:key/${simKeyId(id)}`;
    if (resource.Type === 'AWS::IAM::Role' && attribute === 'Arn') return `arn:aws:iam::${SIM_ACCOUNT}:role/${ref(id, where)}`;
    if (resource.Type === 'AWS::Logs::LogGroup' && attribute === 'Arn') return `arn:aws:logs:${mapping.region}:${SIM_ACCOUNT}:log-group:${logGroupName(id)}:*`;
    if (resource.Type === 'AWS::SQS::Queue' && attribute === 'Arn') return `arn:aws:sqs:${mapping.region}:${SIM_ACCOUNT}:${queueName(id)}`;
    if (resource.Type === 'AWS::SQS::Queue' && attribute === 'QueueName') return queueName(id);
    throw new SimTemplateError(where, `uses Fn::GetAtt ${id}.${attribute} (${resource.Type}), which the simulator does not resolve`);
  }

  /**
   * CloudFormation's dynamic references to a secret of the template (`{{resolve:secretsmanager:<arn>:SecretString:::}}`),
   * resolved at deploy as CloudFormation does: to the value Secrets Manager generated, here one random value per secret.
   */
  function resolveSecrets(value: string): string {
    return value.replace(/\{\{resolve:secretsmanager:([^:}]+(?::[^:}]+){6}):SecretString:::\}\}/g, (_, arn: string) => generatedSecret(arn));
  }
  /** A generated secret's value: one random value per secret, made at its first use. */
  function generatedSecret(arn: string): string {
    let secret = generatedSecrets.get(arn);
    if (!secret) generatedSecrets.set(arn, (secret = randomBytes(24).toString('hex')));
    return secret;
  }

  /** A log group's name: its LogGroupName, else the name CloudFormation would make up (here: the logical id). */
  function logGroupName(id: string): string {
    const name = resources[id]?.Properties?.LogGroupName;
    return typeof name === 'string' ? name : `local-${id}`;
  }
  function queueName(id: string): string {
    const name = resources[id]?.Properties?.QueueName;
    return typeof name === 'string' ? name : `local-${id}`;
  }

  /** A JSON document with intrinsics anywhere in it (a policy), every intrinsic evaluated. */
  function resolveDeep(value: Json, where: string): unknown {
    if (Array.isArray(value)) return value.map((v) => resolveDeep(v, where));
    if (value && typeof value === 'object') {
      const keys = Object.keys(value);
      if (keys.length === 1 && (keys[0] === 'Ref' || keys[0]!.startsWith('Fn::'))) return resolve(value, where);
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveDeep(v, where)]));
    }
    return value;
  }

  /** The documented mapping of the WebSocket API's cloud URLs to this stack's. */
  function localUrl(value: string): string {
    for (const id of wsApiIds) {
      const host = `${id.toLowerCase()}.execute-api.${mapping.region}.amazonaws.com`;
      if (value === `wss://${host}/${wsStageName}`) return mapping.webSocketUrl;
      if (value === `https://${host}/${wsStageName}`) return mapping.managementUrl;
    }
    return value;
  }

  const functionIdOfArn = (arn: string, where: string): string => {
    const match = /^arn:aws:lambda:[^:]+:\d+:function:([^/:]+)$/.exec(arn) ?? /functions\/arn:aws:lambda:[^:]+:\d+:function:([^/:]+)\/invocations$/.exec(arn);
    if (!match || resources[match[1]!]?.Type !== 'AWS::Lambda::Function')
      throw new SimTemplateError(where, `targets ${arn}, which is not a Lambda function of this template`);
    return match[1]!;
  };

  // -- functions
  const functions: Record<string, SimFunction> = {};
  for (const [id, resource] of Object.entries(resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue;
    const p = resource.Properties ?? {};
    const code = p.Code as { S3Key?: Json; ZipFile?: string } | undefined;
    // CDK's own helper functions (custom resources with inline code) are not the service's.
    if (code?.ZipFile !== undefined) continue;
    const key = code?.S3Key === undefined ? undefined : resolve(code.S3Key, id);
    const codeDir = key === undefined ? undefined : assets[key];
    if (!codeDir) throw new SimTemplateError(id, `its code (${String(key)}) is not an asset of the assembly`);
    const handler = String(p.Handler ?? '');
    const dot = handler.lastIndexOf('.');
    if (dot <= 0) throw new SimTemplateError(id, `handler '${handler}' is not <file>.<export>`);
    const base = handler.slice(0, dot);
    const file = ['.mjs', '.js', '.cjs'].map((ext) => join(codeDir, `${base}${ext}`)).find((f) => existsSync(f));
    if (!file) throw new SimTemplateError(id, `its bundle is missing: no ${base}.mjs or ${base}.js in ${codeDir}`);
    const environment: Record<string, string> = {};
    const variables = ((p.Environment as { Variables?: Record<string, Json> } | undefined)?.Variables ?? {}) as Record<string, Json>;
    for (const [name, raw] of Object.entries(variables)) {
      // A Lambda's environment holds strings only: CloudFormation writes a literal number or boolean as its text.
      environment[name] = localUrl(resolveSecrets(resolve(raw, `${id} (environment ${name})`)));
    }
    const roleArn = p.Role === undefined ? undefined : resolve(p.Role, `${id} (Role)`);
    const roleId = roleArn ? Object.keys(resources).find((r) => resources[r]!.Type === 'AWS::IAM::Role' && getAtt(r, 'Arn', id) === roleArn) : undefined;
    if (!roleId) throw new SimTemplateError(id, `its role (${String(roleArn)}) is not a role of this template: its permissions could not be checked`);
    const loggingGroup = (p.LoggingConfig as { LogGroup?: Json } | undefined)?.LogGroup;
    functions[id] = {
      logicalId: id,
      codeDir,
      file,
      exportName: handler.slice(dot + 1),
      environment,
      roleId,
      logGroup: loggingGroup === undefined ? `/aws/lambda/${id}` : resolve(loggingGroup, `${id} (LoggingConfig)`),
      timeoutSeconds: Number(p.Timeout ?? 3),
      memoryMb: Number(p.MemorySize ?? 128),
      runtime: String(p.Runtime ?? ''),
    };
  }

  // -- tables
  const tables: SimTable[] = [];
  for (const [id, resource] of Object.entries(resources)) {
    if (!TABLE_TYPES.has(resource.Type)) continue;
    const p = resource.Properties as Record<string, any>;
    tables.push({
      logicalId: id,
      name: ref(id, id) as string,
      keySchema: p.KeySchema,
      attributes: p.AttributeDefinitions,
      indexes: (p.GlobalSecondaryIndexes ?? []).map((index: any) => ({ IndexName: index.IndexName, KeySchema: index.KeySchema, Projection: index.Projection })),
      ttlAttribute: p.TimeToLiveSpecification?.Enabled ? p.TimeToLiveSpecification.AttributeName : undefined,
      streamViewType: p.StreamSpecification?.StreamViewType ?? undefined,
    });
  }

  // -- API routes
  const integrationFunction = (target: Json | undefined, routeId: string): string => {
    const resolved = target === undefined ? undefined : resolve(target, routeId);
    const integrationId = resolved === undefined ? undefined : /^integrations\/(.+)$/.exec(resolved)?.[1];
    if (!integrationId) throw new SimTemplateError(routeId, `has no integrations/<id> target (${String(resolved)})`);
    const integration = of(integrationId, routeId);
    if (integration.Type !== 'AWS::ApiGatewayV2::Integration')
      throw new SimTemplateError(routeId, `targets ${integrationId}, a ${integration.Type}, not an integration`);
    if (integration.Properties?.IntegrationType !== 'AWS_PROXY') {
      throw new SimTemplateError(
        integrationId,
        `is a ${String(integration.Properties?.IntegrationType)} integration; the simulator serves Lambda proxy integrations only`,
      );
    }
    return functionIdOfArn(resolve(integration.Properties.IntegrationUri!, integrationId), integrationId);
  };
  const httpRoutes: SimRoute[] = [];
  let defaultFunction: string | undefined;
  const wsRoutes: Record<string, string> = {};
  for (const [id, resource] of Object.entries(resources)) {
    if (resource.Type !== 'AWS::ApiGatewayV2::Route') continue;
    const p = resource.Properties ?? {};
    const apiId = refOf(p.ApiId);
    if (!apiId || !apis.some(([a]) => a === apiId)) throw new SimTemplateError(id, 'belongs to no API of this template');
    const routeKey = String(p.RouteKey);
    const functionId = integrationFunction(p.Target, id);
    if (!functions[functionId]) throw new SimTemplateError(id, `reaches ${functionId}, which has no code the simulator can run`);
    if (wsApiIds.has(apiId)) {
      wsRoutes[routeKey] = functionId;
    } else if (routeKey === '$default') {
      defaultFunction = functionId;
    } else {
      const [method, path] = routeKey.split(' ');
      if (!method || !path?.startsWith('/')) throw new SimTemplateError(id, `route key '${routeKey}' is not '<METHOD> /<path>'`);
      httpRoutes.push({ logicalId: id, method, path, routeKey, functionId });
    }
  }
  // An HTTP API's defaultIntegration is written as a $default route too; keep whichever the template says.

  // -- stream mappings
  const streams: SimModel['streams'] = [];
  for (const [id, resource] of Object.entries(resources)) {
    if (resource.Type !== 'AWS::Lambda::EventSourceMapping') continue;
    const p = resource.Properties ?? {};
    const source = resolve(p.EventSourceArn!, id);
    const table = /^arn:aws:dynamodb:[^:]+:\d+:table\/([^/]+)\/stream\//.exec(source)?.[1];
    if (!table) throw new SimTemplateError(id, `reads ${source}; the simulator feeds DynamoDB streams only`);
    const functionId = functionIdOfArn(`arn:aws:lambda:${mapping.region}:000000000000:function:${resolve(p.FunctionName!, id) as string}`, id);
    streams.push({ logicalId: id, table, functionId, batchSize: Number(p.BatchSize ?? 100) });
  }

  // -- scheduled rules: each target a function of the template that lets EventBridge invoke it from this rule
  const schedules: SimModel['schedules'] = [];
  for (const [id, resource] of Object.entries(resources)) {
    if (resource.Type !== 'AWS::Events::Rule') continue;
    const p = resource.Properties ?? {};
    if (p.State !== undefined && p.State !== 'ENABLED') continue;
    const expression = String(p.ScheduleExpression ?? '');
    const rate = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
    if (!rate) throw new SimTemplateError(id, `schedule '${expression}': the simulator runs rate(…) schedules only`);
    const everyMs = Number(rate[1]) * { minute: 60_000, hour: 3_600_000, day: 86_400_000 }[rate[2]!.replace(/s$/, '') as 'minute' | 'hour' | 'day'];
    for (const target of (p.Targets ?? []) as Json[]) {
      const functionId = functionIdOfArn(resolve((target as Record<string, Json>).Arn!, id), id);
      // EventBridge invokes a function only if the function's resource policy lets this rule do it.
      const permitted = Object.values(resources).some(
        (r) =>
          r.Type === 'AWS::Lambda::Permission' &&
          r.Properties?.Principal === 'events.amazonaws.com' &&
          r.Properties?.Action === 'lambda:InvokeFunction' &&
          JSON.stringify(r.Properties?.FunctionName) === JSON.stringify((target as Record<string, Json>).Arn) &&
          JSON.stringify(r.Properties?.SourceArn) === JSON.stringify({ 'Fn::GetAtt': [id, 'Arn'] }),
      );
      if (!permitted) throw new SimTemplateError(id, `targets ${functionId}, whose resource policy does not let this rule invoke it`);
      schedules.push({ logicalId: id, expression, everyMs, functionId });
    }
  }

  // -- execution roles and their policies, keys and their key policies
  const roles: Record<string, SimRole> = {};
  for (const fn of Object.values(functions)) {
    if (roles[fn.roleId]) continue;
    const role = of(fn.roleId, fn.logicalId);
    const inline = ((role.Properties?.Policies ?? []) as { PolicyName: string; PolicyDocument: Json }[]).map((policy) => ({
      name: policy.PolicyName,
      document: resolveDeep(policy.PolicyDocument, fn.roleId) as PolicyDocument,
    }));
    const attached = Object.entries(resources)
      .filter(([, r]) => r.Type === 'AWS::IAM::Policy' && ((r.Properties?.Roles ?? []) as Json[]).some((x) => refOf(x) === fn.roleId))
      .map(([policyId, r]) => ({ name: policyId, document: resolveDeep(r.Properties!.PolicyDocument!, policyId) as PolicyDocument }));
    roles[fn.roleId] = {
      logicalId: fn.roleId,
      arn: getAtt(fn.roleId, 'Arn', fn.logicalId),
      policies: [...inline, ...attached],
      managedPolicyArns: ((role.Properties?.ManagedPolicyArns ?? []) as Json[]).map((arn) => resolve(arn, fn.roleId)),
    };
  }
  const keys = Object.entries(resources)
    .filter(([, r]) => r.Type === 'AWS::KMS::Key')
    .map(([id, r]) => ({ logicalId: id, arn: getAtt(id, 'Arn', id), policy: resolveDeep(r.Properties?.KeyPolicy ?? { Statement: [] }, id) as PolicyDocument }));

  // -- secrets: the deployer's value, or the one generated at deploy (the same one a dynamic reference reads)
  const secrets: Record<string, string> = {};
  for (const [id, r] of Object.entries(resources)) {
    if (r.Type !== 'AWS::SecretsManager::Secret') continue;
    const arn = ref(id, id);
    const given = r.Properties?.SecretString;
    secrets[arn] = given === undefined ? generatedSecret(arn) : resolve(given, id);
  }

  return {
    secrets,
    functions,
    tables,
    roles,
    keys,
    webSocketApiId: [...wsApiIds][0] ? ref([...wsApiIds][0]!, 'WebSocket API') : undefined,
    http: { routes: httpRoutes, defaultFunction },
    webSocket: Object.keys(wsRoutes).length ? { routes: wsRoutes, stage: wsStageName ?? '$default' } : undefined,
    streams,
    schedules,
  };
}

function refOf(value: Json | undefined): string | undefined {
  return value && typeof value === 'object' && !Array.isArray(value) && typeof value.Ref === 'string' ? value.Ref : undefined;
}

/**
 * A function's environment as its code reads it after a cold start: with each setting SVC_SECRETS names read from the
 * template's secret (shared/wiring/secrets.ts). Throws when SVC_SECRETS is malformed or names a secret the template does not make.
 */
export function withSecretSettings(env: Record<string, string>, secrets: Readonly<Record<string, string>>): Record<string, string> {
  const out = { ...env };
  for (const [name, arn] of secretSources(env)) {
    const value = secrets[arn];
    if (value === undefined) throw new Error(`SVC_SECRETS: ${name} names ${arn}, which is not a secret the template makes`);
    out[name] = value;
  }
  return out;
}

/**
 * What a function's environment must be for its code to run: every `SVC_` variable a setting of the
 * service (a renamed one is caught here, not as a default silently used), every table setting naming a
 * table of the template, and the whole passing the service's own settings validation.
 */
export function checkEnvironment(
  fn: Pick<SimFunction, 'logicalId'>,
  env: Record<string, string>,
  tables: readonly string[],
  settings: { known: readonly string[]; tableSettings: readonly string[]; validate(env: Record<string, string>): void },
): void {
  for (const name of Object.keys(env)) {
    if (name.startsWith('SVC_') && !settings.known.includes(name))
      throw new SimTemplateError(fn.logicalId, `environment: ${name} is not a setting of the service`);
  }
  for (const name of settings.tableSettings) {
    if (env[name] !== undefined && !tables.includes(env[name]!)) {
      throw new SimTemplateError(
        fn.logicalId,
        `environment: ${name} names table '${env[name]}', which the template does not define (it defines ${tables.join(', ')})`,
      );
    }
  }
  try {
    settings.validate(env);
  } catch (error) {
    throw new SimTemplateError(fn.logicalId, `environment: ${(error as Error).message.replace(/\s*\n\s*/g, ' ')}`);
  }
}
