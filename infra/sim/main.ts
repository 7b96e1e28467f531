/**
 * `npm run sim`: runs what `cdk deploy` uploads, on this machine, the way `sam local` would without
 * Docker. It synthesizes the CDK app (or reuses a cdk.out newer than every source), reads the template
 * and its asset manifest (infra/sim/template.ts), and serves them:
 *
 * - every AWS::Lambda::Function from its own bundled asset in the cloud assembly — never from the
 *   sources — as a pool of single-request instances (processes on the Node major the template's runtime
 *   names, one invocation at a time, as Lambda),
 *   with the handler and the environment the template declares;
 * - every route of the HTTP API to its integration's function, with API Gateway's payload 2.0 events
 *   (unmatched requests to the `$default` route's function), and the WebSocket API's `$connect`,
 *   `$disconnect` and `$default` routes at /ws, its `@connections` management API answered locally;
 * - the template's DynamoDB tables (keys, indexes, TTL, streams) created in DynamoDB Local, and each
 *   stream event source mapping fed from DynamoDB Local's stream;
 * - what the cloud provides and this machine has not, by one mapping (docs/sim.md): the KMS key → the
 *   local master key; DynamoDB → DynamoDB Local; the stack's parameters → local values (IpfsApiUrl → the
 *   embedded IPFS node); the WebSocket stage's URLs → this server's.
 *
 * Settings: SVC_PORT (default 2670), SVC_DYNAMODB_LOCAL_PORT, SVC_IPFS_PORT and SVC_SIM_AWS_PORT (its AWS
 * endpoint; each free when unset), SVC_HOST, SVC_DATA_DIR (default .data/sim), SVC_DYNAMODB_IN_MEMORY,
 * SVC_ADMIN_API_KEY (seeded into the template's registry table: the template turns auth on),
 * SVC_LOCAL_MAX_INSTANCES, SVC_LOG_LEVEL (passed to the functions), SVC_SIM_NODE (as --node). Flags: --out DIR
 * (default cdk.out), --stack NAME (default VerifiableLedger), --no-synth (use --out as it is), --parameter
 * Name=Value (a stack parameter, as `cdk deploy --parameters` takes it; repeatable), --node PATH (the Node
 * binary of the template's runtime major), --allow-runtime-mismatch (run on this Node when none is found).
 */
import { stopWhenOrphaned } from '../local/orphan.ts';
import { join, resolve } from 'node:path';
import { parseArgsOrExit } from '#shared/cli-args';
import { seedAdminKey } from '#shared/admin/api-keys';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createApiKeyRepository } from '#shared/storage/api-key-repository';
import { createDynamoBaseClient, createDynamoClient, localCredentials } from '#shared/storage/client';
import { ROOT } from '../bundling.ts';
import { fail } from '../local/cli.ts';
import { LaunchError, startDynamoDbLocal, type DynamoDbLocal } from '../local/dynamodb-local.ts';
import { makeOwnDir } from '../local/own-dir.ts';
import { instanceWorkerBundle } from '../local/bundles.ts';
import { startGateway, type Gateway, type GatewayRoute } from '../local/gateway.ts';
import { reportIntegrationErrors } from '../local/integration-errors.ts';
import { createMetrics } from '#shared/metrics/metrics';
import { createSharedCounters } from '#shared/storage/metrics-repository';
import { InstancePool } from '../local/instance-pool.ts';
import { startIpfsNode, type IpfsNode } from '../local/ipfs-node.ts';
import { freePort, isPortFree } from '../local/ports.ts';
import { startStreamPoller, type StreamPoller } from '../local/stream-poller.ts';
import { everyOneAtATime } from '../local/schedule.ts';
import { serveWebSocketApi } from '../local/websocket.ts';
import { ensureAssembly } from './assembly.ts';
import { accessKeyOf as awsAccessKeyOf, denialMessage, startAwsEndpoint } from './aws-endpoint.ts';
import { createLocalKms } from './local-kms.ts';
import { createPermissionChecker, sessionOf } from './permissions.ts';
import { type NodeChoice, RuntimeChoiceError, chooseNode, templateNodeMajor } from './runtime.ts';
import {
  SIM_ACCOUNT,
  SimTemplateError,
  checkEnvironment,
  modelFromTemplate,
  readAssembly,
  type SimModel,
  type SimTable,
  withSecretSettings,
} from './template.ts';
import { loadConfig, settingsSchema } from '#shared/config';
import { TABLE_SETTINGS, ensureTables, type TableSpec } from '#shared/storage/tables';

const say = (message: string) => process.stdout.write(`${message}\n`);

const USAGE = `Usage: SVC_ADMIN_API_KEY=<24+ characters> npm run sim [-- options]
  --out DIR               the cloud assembly (default cdk.out; synthesized first unless --no-synth)
  --stack NAME            the stack in it (default VerifiableLedger)
  --no-synth              use --out as it is
  --parameter Name=Value  a stack parameter, as cdk deploy --parameters takes it (repeatable)
  --node PATH             the Node binary of the template's runtime major
  --allow-runtime-mismatch  run on this Node when none of that major is found
Settings: SVC_PORT (default 2670), SVC_DYNAMODB_LOCAL_PORT, SVC_IPFS_PORT, SVC_SIM_AWS_PORT, SVC_HOST, SVC_DATA_DIR
(default .data/sim), SVC_DYNAMODB_IN_MEMORY, SVC_LOCAL_MAX_INSTANCES, SVC_LOG_LEVEL, SVC_SIM_NODE (docs/sim.md).
`;

/** A template table as the service's own table bootstrap takes it (keys, indexes, stream, TTL). */
function tableSpec(table: SimTable): TableSpec {
  return {
    definition: {
      TableName: table.name,
      KeySchema: table.keySchema,
      AttributeDefinitions: table.attributes,
      BillingMode: 'PAY_PER_REQUEST',
      ...(table.indexes.length ? { GlobalSecondaryIndexes: table.indexes.map((index) => ({ ...index, Projection: index.Projection as never })) } : {}),
      ...(table.streamViewType ? { StreamSpecification: { StreamEnabled: true, StreamViewType: table.streamViewType as never } } : {}),
    },
    ttlAttribute: table.ttlAttribute,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgsOrExit(
    {
      options: {
        out: { type: 'string' },
        stack: { type: 'string' },
        'no-synth': { type: 'boolean' },
        parameter: { type: 'string', multiple: true },
        node: { type: 'string' },
        'allow-runtime-mismatch': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    },
    USAGE,
    1,
  );
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  // Stack parameters, as `cdk deploy --parameters Name=Value` takes them (the local ones below win for IpfsApiUrl and CorsOrigins).
  const given: Record<string, string> = {};
  for (const pair of values.parameter ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) fail(`--parameter takes Name=Value, not '${pair}'`);
    given[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const out = resolve(values.out ?? join(ROOT, 'cdk.out'));
  const stackName = values.stack ?? 'VerifiableLedger';
  const env = process.env;
  const host = env.SVC_HOST ?? '127.0.0.1';
  // The ports, each from its setting when given (as `npm start` takes them), else free ones.
  const portSetting = (name: string): number | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1 || value > 65_535) fail(`Cannot start the sim: ${name} must be a port (1-65535), not '${raw}'`);
    return value;
  };
  const port = portSetting('SVC_PORT') ?? 2670;
  const dynamoPort = portSetting('SVC_DYNAMODB_LOCAL_PORT');
  const givenIpfsPort = portSetting('SVC_IPFS_PORT');
  const awsPort = portSetting('SVC_SIM_AWS_PORT');
  const dataDir = resolve(env.SVC_DATA_DIR ?? join(ROOT, '.data', 'sim'));
  const region = 'us-east-1';
  // Its user's alone, as npm start's: DynamoDB Local's files, the KMS root key and the stack's access key are in it.
  const notOwn = makeOwnDir(dataDir);
  if (notOwn && 'refuse' in notOwn) fail(notOwn.refuse);
  if (notOwn) say(notOwn.warn);
  if (!(await isPortFree(port, host))) fail(`Cannot start the sim: port ${port} on ${host} is in use (SVC_PORT=… to choose another)`);

  if (!values['no-synth']) {
    try {
      say(`Cloud assembly: ${ensureAssembly(out)} (${out})`);
    } catch (error) {
      fail(`Cannot start the sim: ${(error as Error).message}`);
    }
  }
  const local = `http://${['0.0.0.0', '::'].includes(host) ? '127.0.0.1' : host}:${port}`;

  // What Lambda itself provides, and the mapping's stand-ins (docs/sim.md). The DynamoDB endpoint is known
  // once DynamoDB Local runs; the check below sees a placeholder of the same form.
  // Every AWS call of a function goes to the sim's AWS endpoint (DynamoDB, Streams, KMS), signed with that
  // function's own access key id, so that each call is checked against that function's role.
  let awsEndpoint = 'http://127.0.0.1:1';
  // Made afresh at every start: a key worked out from the function's name alone was anyone's to sign with, as that
  // function's role, on the sim's AWS endpoint (its DynamoDB and KMS), by any local user who found its port.
  const keySalt = randomBytes(16);
  const accessKeyOf = (fn: { logicalId: string }) =>
    `ASIASIM${createHash('sha256').update(keySalt).update(fn.logicalId).digest('hex').slice(0, 25).toUpperCase()}`;
  const environmentOf = (fn: SimModel['functions'][string]): Record<string, string> => ({
    ...fn.environment,
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: accessKeyOf(fn),
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_SESSION_TOKEN: 'local',
    AWS_LAMBDA_FUNCTION_NAME: fn.logicalId,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMb),
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`,
    SVC_DYNAMODB_ENDPOINT: awsEndpoint,
    // The AWS SDK's endpoint for KMS (service-specific endpoint variable): the sim's KMS, behind the same endpoint.
    AWS_ENDPOINT_URL_KMS: awsEndpoint,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: awsEndpoint,
    ...(env.SVC_LOG_LEVEL ? { SVC_LOG_LEVEL: env.SVC_LOG_LEVEL } : {}),
  });

  // Everything that can be refused is refused before anything starts.
  let model: SimModel;
  let ipfsPort: number;
  let node: NodeChoice;
  let runtimeLine = '';
  try {
    ipfsPort = givenIpfsPort ?? (await freePort([port, ...(dynamoPort ? [dynamoPort] : []), ...(awsPort ? [awsPort] : [])]));
    const { template, assets } = readAssembly(out, stackName);
    model = modelFromTemplate(template, assets, {
      region,
      parameters: { IpfsApiAuth: '', LicenseKey: '', ...given, CorsOrigins: local, IpfsApiUrl: `http://127.0.0.1:${ipfsPort}` },
      webSocketUrl: `${local.replace(/^http/, 'ws')}/ws`,
      managementUrl: local,
    });
    if (!model.http.defaultFunction) throw new SimTemplateError(stackName, 'its HTTP API has no $default route: unmatched requests would reach nothing');
    // The Node the functions run on: the major the template's runtime names (infra/sim/runtime.ts).
    const runtimes = Object.fromEntries(Object.values(model.functions).map((fn) => [fn.logicalId, fn.runtime]));
    const major = templateNodeMajor(runtimes);
    node = chooseNode(major, { given: values.node ?? env.SVC_SIM_NODE, allowMismatch: values['allow-runtime-mismatch'], say });
    runtimeLine =
      node.source === 'mismatch allowed'
        ? `Runtime: the template names nodejs${major}.x, but the functions run on this Node ${node.version} (--allow-runtime-mismatch): what only Node ${major} does is not tested`
        : `Runtime: nodejs${major}.x, the functions on Node ${node.version} (${node.source}: ${node.path})`;
    for (const fn of Object.values(model.functions)) {
      checkEnvironment(
        fn,
        environmentOf(fn),
        model.tables.map((t) => t.name),
        {
          known: Object.keys(settingsSchema.shape),
          tableSettings: Object.values(TABLE_SETTINGS),
          validate: (vars) => loadConfig(withSecretSettings(vars, model.secrets)),
        },
      );
    }
  } catch (error) {
    if (error instanceof SimTemplateError || error instanceof RuntimeChoiceError) fail(`Cannot start the sim: ${error.message}`);
    throw error;
  }

  let dynamo: DynamoDbLocal | undefined;
  let ipfs: IpfsNode | undefined;
  let gateway: Gateway | undefined;
  const pollers: StreamPoller[] = [];
  const pools: Record<string, InstancePool> = {};
  let stopping = false;
  let closeAws: (() => Promise<void>) | undefined;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const poller of pollers) await poller.stop().catch(() => undefined);
    await gateway?.close().catch(() => undefined);
    await Promise.all(Object.values(pools).map((pool) => pool.close().catch(() => undefined)));
    await ipfs?.close().catch(() => undefined);
    await closeAws?.().catch(() => undefined);
    await dynamo?.stop().catch(() => dynamo?.killNow());
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void shutdown(0));
  // `npm run sim` stopped by npm's pid (`kill %1`): its shell does not pass the signal on.
  stopWhenOrphaned(() => void shutdown(0));
  process.on('exit', () => dynamo?.killNow());

  try {
    dynamo = await startDynamoDbLocal({
      dataDir: join(dataDir, 'dynamodb'),
      region,
      onNotice: say,
      inMemory: ['true', '1', 'yes'].includes(env.SVC_DYNAMODB_IN_MEMORY ?? ''),
      port: dynamoPort,
      avoidPorts: [port, ipfsPort, ...(awsPort ? [awsPort] : [])],
    });
  } catch (error) {
    if (error instanceof LaunchError) fail(`Cannot start the sim: ${error.message}`);
    throw error;
  }
  const checker = createPermissionChecker(model);
  /** Each scheduled rule's run: its function invoked with the event EventBridge sends (set once the pools are up). */
  const schedules = new Map<string, () => Promise<unknown>>();
  const principals = new Map(Object.values(model.functions).map((fn) => [accessKeyOf(fn), fn.logicalId]));
  const sessionOfFunction = (id: string) => sessionOf(model.roles[model.functions[id]!.roleId]!.arn, id);
  const aws = await startAwsEndpoint({
    host: '127.0.0.1',
    // Not a port already promised to the gateway, the IPFS node or DynamoDB Local, which may not listen yet.
    port: awsPort ?? (await freePort([port, ipfsPort, Number(new URL(dynamo.endpoint).port)])),
    region,
    dynamoEndpoint: dynamo.endpoint,
    dynamoAccessKeyId: dynamo.accessKeyId,
    kms: createLocalKms({ keyFile: join(dataDir, 'kms-root.key'), keys: model.keys.map((k) => k.arn) }),
    secrets: model.secrets,
    principals,
    authorize: (call) => checker.authorize(call),
    sessionOf: sessionOfFunction,
    schedules,
    // Told at once, as one line: in the cloud this call would have failed with AccessDeniedException.
    onDenied: (call, reason) =>
      process.stderr.write(`${JSON.stringify({ level: 'error', time: new Date().toISOString(), message: 'AWS call denied', ...call, reason })}\n`),
  });
  closeAws = () => aws.close();
  awsEndpoint = aws.url;
  // The stack's own calls (its tables, keys, shared counters) go to DynamoDB Local directly, under its database's key.
  const ownDynamo = { region, endpoint: dynamo.endpoint, accessKeyId: dynamo.accessKeyId };
  const admin = createDynamoBaseClient(ownDynamo);
  const created = await ensureTables(admin, Object.fromEntries(model.tables.map((t) => [t.logicalId, tableSpec(t)])));
  if (created.length) say(`Created the template's tables: ${created.join(', ')}`);
  ipfs = await startIpfsNode({ dir: join(dataDir, 'ipfs'), port: ipfsPort });

  const registry = Object.values(model.functions)
    .map((f) => f.environment.SVC_REGISTRY_TABLE)
    .find(Boolean);
  if (env.SVC_ADMIN_API_KEY && registry) {
    await seedAdminKey(createApiKeyRepository({ client: createDynamoClient(ownDynamo), tableName: registry }), env.SVC_ADMIN_API_KEY);
  }

  const worker = await instanceWorkerBundle();
  const maxInstances = Number(env.SVC_LOCAL_MAX_INSTANCES ?? 10);
  const streamed = new Set(model.streams.map((s) => s.functionId));
  for (const fn of Object.values(model.functions)) {
    pools[fn.logicalId] = new InstancePool({
      functionName: fn.logicalId,
      bundle: fn.file,
      exportName: fn.exportName,
      workerFile: worker,
      // A stream mapping hands one batch at a time to its function, in order.
      maxInstances: streamed.has(fn.logicalId) ? 1 : maxInstances,
      timeoutMs: fn.timeoutSeconds * 1000,
      memoryLimitMb: fn.memoryMb,
      env: environmentOf(fn),
      nodeBinary: node.path,
      // Lambda writes each instance's output to a log stream of the function's log group, as its role.
      onInstanceEvent: ({ type, instance }) => {
        const logStream = `arn:aws:logs:${region}:${SIM_ACCOUNT}:log-group:${fn.logGroup}:log-stream:${new Date().toISOString().slice(0, 10).replaceAll('-', '/')}/[$LATEST]${instance}`;
        void aws.record({ function: fn.logicalId, action: type === 'started' ? 'logs:CreateLogStream' : 'logs:PutLogEvents', resource: logStream });
      },
    });
  }
  const invoke = (id: string) => (event: unknown, context: unknown) => pools[id]!.invoke(event, context as never);

  const routes: GatewayRoute[] = model.http.routes.map((r) => ({
    method: r.method as GatewayRoute['method'],
    path: r.path,
    routeKey: r.routeKey,
    group: r.functionId,
  }));
  gateway = await startGateway({
    host,
    port,
    routes,
    handlers: Object.fromEntries(Object.keys(model.functions).map((id) => [id, invoke(id)])),
    defaultGroup: model.http.defaultFunction!,
    // Logged and counted as the local stack does, in the template's registry table the functions' metrics use.
    onIntegrationError: reportIntegrationErrors(
      registry
        ? createMetrics({
            shared: createSharedCounters({
              client: createDynamoClient(ownDynamo),
              tableName: registry,
            }),
            flushMs: 0,
            coldStart: false,
          })
        : undefined,
    ),
    // A write just answered: the streams' pushes go out now, whatever their idle reading rate.
    onWriteAnswered: () => {
      for (const poller of pollers) poller.nudge();
    },
  });
  if (model.webSocket) {
    const wsRoutes = model.webSocket.routes;
    serveWebSocketApi(gateway, async (event, context) => {
      const routeKey = String((event.requestContext as { routeKey?: string } | undefined)?.routeKey ?? '$default');
      const id = wsRoutes[routeKey] ?? wsRoutes.$default;
      if (!id) return { statusCode: 200 };
      return pools[id]!.invoke(event, context as never) as never;
    });
    // The management API (@connections) is AWS's too: authorized against the caller's role, as execute-api does.
    const manage = gateway.intercept;
    const { stage } = model.webSocket;
    gateway.intercept = (req, res) => {
      const path = new URL(req.url ?? '/', 'http://sim').pathname;
      if (!path.startsWith('/@connections')) return manage?.(req, res) ?? false;
      const fn = principals.get(awsAccessKeyOf(req.headers.authorization) ?? '');
      const resource = `arn:aws:execute-api:${region}:${SIM_ACCOUNT}:${model.webSocketApiId}/${stage}/${req.method}${path}`;
      const refuse = (message: string) => {
        res.writeHead(403, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ Message: message }));
      };
      if (!fn) {
        refuse('Missing Authentication Token');
        return true;
      }
      void aws.record({ function: fn, action: 'execute-api:ManageConnections', resource }).then((decision) => {
        if (decision.allowed) manage?.(req, res);
        else refuse(denialMessage(sessionOfFunction(fn), { action: 'execute-api:ManageConnections', resource }));
      });
      return true;
    };
  }
  for (const stream of model.streams) {
    // Lambda checks, as it creates the mapping, that the function's role may list and read the stream.
    await aws.record({ function: stream.functionId, action: 'dynamodb:ListStreams', resource: '*' });
    pollers.push(
      await startStreamPoller({
        admin,
        region,
        // Lambda's event source mapping reads the stream with the function's role: through the AWS endpoint, as it.
        endpoint: aws.url,
        credentials: localCredentials(accessKeyOf({ logicalId: stream.functionId })),
        tableName: stream.table,
        handler: invoke(stream.functionId) as never,
        onError: (error) => process.stderr.write(`sim: stream ${stream.logicalId}: ${(error as Error).message}\n`),
        onDiscard: (message) => process.stderr.write(`sim: stream ${stream.logicalId}: ${message}\n`),
      }),
    );
  }

  for (const rule of model.schedules) {
    const event = () => ({
      version: '0',
      id: randomUUID(),
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: SIM_ACCOUNT,
      time: new Date().toISOString(),
      region,
      resources: [`arn:aws:events:${region}:${SIM_ACCOUNT}:rule/${rule.logicalId}`],
      detail: {},
    });
    schedules.set(rule.logicalId, () => invoke(rule.functionId)(event(), {}));
    // At the rule's rate, as EventBridge fires it (one run at a time); POST <AWS>/__sim/schedules/<rule> fires it now.
    everyOneAtATime(
      rule.everyMs,
      schedules.get(rule.logicalId)!,
      (error) => process.stderr.write(`sim: schedule ${rule.logicalId}: ${(error as Error).message}\n`),
      () => stopping,
    );
  }

  say(`Functions: ${Object.keys(model.functions).length} from ${out} (each a pool of single-request instances, up to ${maxInstances})`);
  say(runtimeLine);
  say(
    `Routes: ${model.http.routes.length} HTTP (+ $default → ${model.http.defaultFunction})${model.webSocket ? `, WebSocket ${Object.keys(model.webSocket.routes).join(' ')} at /ws` : ''}`,
  );
  say(`Tables: ${model.tables.map((t) => t.name).join(', ')}; streams: ${model.streams.map((s) => `${s.table} → ${s.functionId}`).join(', ') || 'none'}`);
  say(`Schedules: ${model.schedules.map((r) => `${r.logicalId} ${r.expression} → ${r.functionId}`).join(', ') || 'none'}`);
  say(`DynamoDB: ${dynamo.endpoint} (DynamoDB Local, pid ${dynamo.pid})   IPFS: ${ipfs.url}`);
  say(
    `AWS: ${aws.url} (DynamoDB, Streams and KMS as the functions reach them; every call, and each @connections and log write, checked against the caller's role: ${aws.url}/__sim/calls)`,
  );
  say(
    `Auth: on, as the template sets it${env.SVC_ADMIN_API_KEY ? ' (SVC_ADMIN_API_KEY seeded as an admin key)' : ' (set SVC_ADMIN_API_KEY to seed an admin key)'}`,
  );
  say(`Sim ready at ${gateway.url}`);
}

await main();
