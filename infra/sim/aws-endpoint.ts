/**
 * "AWS" as the sim's functions see it: one local endpoint for DynamoDB, DynamoDB Streams (both passed on
 * to DynamoDB Local), KMS (the sim's own, infra/sim/local-kms.ts) and Secrets Manager's GetSecretValue (the template's
 * secrets). Every request is signed with the
 * calling function's own access key id (the sim gives each function one, as Lambda gives each its role's
 * session), so the endpoint knows who calls; it turns the request into the IAM actions and resources AWS
 * authorizes it by (a TransactWriteItems is a PutItem, UpdateItem, DeleteItem or ConditionCheckItem per
 * item, a Query on an index is authorized on the index's ARN, …), asks the permission checker about each,
 * and answers AccessDeniedException, as AWS does, when one is denied. Every call is recorded.
 *
 * The WebSocket management API and CloudWatch Logs are recorded through `record` by the sim itself.
 * `GET /__sim/calls` answers the record (for `npm run check:cloud`). `POST /__sim/schedules/<rule>` fires a
 * scheduled rule now, as EventBridge would at its next period, and answers what its function returned.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type LocalKms, KmsError } from './local-kms.ts';
import type { AwsCall, Decision } from './permissions.ts';
import { SIM_ACCOUNT } from './template.ts';

export interface RecordedCall extends AwsCall {
  allowed: boolean;
  reason?: string;
  /** How many requests made this call. */
  count: number;
}

export interface AwsEndpoint {
  url: string;
  /** Authorizes and records a call made elsewhere (the management API, Lambda's own log writes). */
  record(call: AwsCall): Promise<Decision>;
  close(): Promise<void>;
}

/** AccessDeniedException's message, as AWS words it. */
export function denialMessage(session: string, call: { action: string; resource: string }): string {
  return `User: ${session} is not authorized to perform: ${call.action} on resource: ${call.resource} because no identity-based policy allows the ${call.action} action`;
}

/** The access key id in a SigV4 Authorization header (`Credential=<id>/<date>/<region>/<service>/aws4_request`). */
export function accessKeyOf(authorization: string | undefined): string | undefined {
  return /Credential=([^/,\s]+)\//.exec(authorization ?? '')?.[1];
}

class UnknownOperation extends Error {}

/**
 * An item's partition key as IAM's `dynamodb:LeadingKeys` names it, kept to its kind: the text up to its first `#`
 * (`APIKEY#…`, `METRICS#…`; `APIKEYS` whole). The template's conditions match kinds (`APIKEY*`), and one decision per
 * kind, not one per item, keeps the check's IAM simulations few. The tables' partition keys are `pk` (rate limits: `key`).
 */
function leadingKey(item: Record<string, { S?: string }> | undefined): string | undefined {
  const value = item?.pk?.S ?? item?.key?.S;
  if (value === undefined) return undefined;
  const cut = value.indexOf('#');
  return cut < 0 ? value : `${value.slice(0, cut + 1)}…`;
}

/** The condition context of a request on these items: their leading keys, as AWS sets `dynamodb:LeadingKeys`. */
function keysContext(items: (Record<string, { S?: string }> | undefined)[]): { context?: Record<string, string[]> } {
  const keys = [...new Set(items.map(leadingKey).filter((k): k is string => k !== undefined))].sort();
  return keys.length ? { context: { 'dynamodb:LeadingKeys': keys } } : {};
}

/** The IAM actions and resources of one DynamoDB or DynamoDB Streams request, as AWS authorizes it. */
export function dynamoCalls(
  operation: string,
  body: Record<string, any>,
  arns: { table(name: string): string; stream(arn: string): string; iterator(iterator: string): string | undefined },
): { action: string; resource: string; context?: Record<string, string[]> }[] {
  const on = (action: string, resource: string, items: (Record<string, any> | undefined)[] = []) => ({
    action: `dynamodb:${action}`,
    resource,
    ...keysContext(items),
  });
  switch (operation) {
    case 'GetItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return [on(operation, arns.table(body.TableName), [body.Key])];
    case 'PutItem':
      return [on(operation, arns.table(body.TableName), [body.Item])];
    case 'DescribeTable':
    case 'DescribeTimeToLive':
      return [on(operation, arns.table(body.TableName))];
    case 'Query':
    case 'Scan':
      return [on(operation, body.IndexName ? `${arns.table(body.TableName)}/index/${body.IndexName}` : arns.table(body.TableName))];
    case 'BatchGetItem':
      return Object.entries(body.RequestItems ?? {}).map(([table, read]) => on(operation, arns.table(table), (read as { Keys?: any[] }).Keys ?? []));
    case 'BatchWriteItem':
      return Object.entries(body.RequestItems ?? {}).map(([table, writes]) =>
        on(
          operation,
          arns.table(table),
          (writes as { PutRequest?: { Item: any }; DeleteRequest?: { Key: any } }[]).map((w) => w.PutRequest?.Item ?? w.DeleteRequest?.Key),
        ),
      );
    case 'TransactWriteItems':
      return (body.TransactItems ?? []).map((item: Record<string, { TableName: string; Item?: any; Key?: any }>) => {
        const [kind, detail] = Object.entries(item)[0] ?? [];
        const action = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem' }[kind ?? ''];
        if (!action || !detail) throw new UnknownOperation(`a TransactWriteItems item of kind ${kind}`);
        return on(action, arns.table(detail.TableName), [detail.Item ?? detail.Key]);
      });
    case 'TransactGetItems':
      return (body.TransactItems ?? []).map((item: { Get: { TableName: string; Key: any } }) => on('GetItem', arns.table(item.Get.TableName), [item.Get.Key]));
    case 'ListTables':
    case 'ListStreams':
      return [on(operation, '*')];
    case 'DescribeStream':
    case 'GetShardIterator':
      return [on(operation, arns.stream(body.StreamArn))];
    case 'GetRecords': {
      const stream = arns.iterator(body.ShardIterator);
      if (!stream) throw new UnknownOperation('GetRecords with a shard iterator no GetShardIterator through this endpoint gave');
      return [on(operation, stream)];
    }
    default:
      throw new UnknownOperation(`DynamoDB ${operation}`);
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startAwsEndpoint(options: {
  host: string;
  /** Its port: one the caller has promised to nothing else (0, the OS's choice, could be a port promised elsewhere). */
  port: number;
  region: string;
  /** DynamoDB Local, where DynamoDB and Streams requests go on to. */
  dynamoEndpoint: string;
  /** The access key DynamoDB Local keeps the stack's database under: every function's request is passed on under it. */
  dynamoAccessKeyId: string;
  kms: LocalKms;
  /** The stack's Secrets Manager secrets, by ARN: what GetSecretValue answers. */
  secrets: Readonly<Record<string, string>>;
  /** Access key id → the function's logical id. */
  principals: ReadonlyMap<string, string>;
  authorize(call: AwsCall): Promise<Decision>;
  /** The session ARN the function's calls are made as (for AccessDeniedException's message). */
  sessionOf(functionId: string): string;
  onDenied?(call: AwsCall, reason: string): void;
  /** The scheduled rules, by logical id: each invokes its function (filled once the functions are up). */
  schedules?: ReadonlyMap<string, () => Promise<unknown>>;
}): Promise<AwsEndpoint> {
  const recorded = new Map<string, RecordedCall>();
  const iterators = new Map<string, string>();
  const table = (name: string) => (String(name).startsWith('arn:') ? String(name) : `arn:aws:dynamodb:${options.region}:${SIM_ACCOUNT}:table/${name}`);
  // A table's stream, as the sim's mapping names it (template.ts: GetAtt StreamArn): DynamoDB Local's own ARN has
  // its region ("ddblocal") and a label the template cannot know.
  const stream = (arn: string) =>
    String(arn).replace(/^arn:aws:dynamodb:[^:]*:\d+:table\/([^/]+)\/stream\/.*$/, `arn:aws:dynamodb:${options.region}:${SIM_ACCOUNT}:table/$1/stream/local`);

  async function record(call: AwsCall): Promise<Decision> {
    const decision = await options.authorize(call);
    // Each condition context apart (a leading key, an encryption context): one call may be allowed where another is denied.
    const id = JSON.stringify([call.function, call.action, call.resource, call.context ?? {}]);
    const seen = recorded.get(id);
    if (seen) seen.count += 1;
    else recorded.set(id, { ...call, allowed: decision.allowed, ...(decision.reason ? { reason: decision.reason } : {}), count: 1 });
    if (!decision.allowed) options.onDenied?.(call, decision.reason ?? 'denied');
    return decision;
  }

  const json = (res: ServerResponse, status: number, body: unknown, type = 'application/x-amz-json-1.0') => {
    res.writeHead(status, { 'content-type': type });
    res.end(JSON.stringify(body));
  };
  const denied = (fn: string, call: { action: string; resource: string }) => denialMessage(options.sessionOf(fn), call);

  /** Passes a DynamoDB request on to DynamoDB Local; `input` is its body, parsed. */
  function forward(req: IncomingMessage, res: ServerResponse, body: Buffer, input: { StreamArn?: string; ShardIterator?: string }, operation: string): void {
    const target = new URL(options.dynamoEndpoint);
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        // Each function signs with its own access key (its role, as AWS tells them apart); DynamoDB Local keeps a database
        // per access key, and the stack's is under the data dir's (DynamoDB Local checks no signature).
        headers: {
          ...req.headers,
          host: target.host,
          authorization: String(req.headers.authorization ?? '').replace(/Credential=[^/]*\//, `Credential=${options.dynamoAccessKeyId}/`),
        },
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () => {
          const out = Buffer.concat(chunks);
          // A shard iterator names no stream: remember which stream each one came from, for GetRecords' ARN.
          if ((operation === 'GetShardIterator' || operation === 'GetRecords') && answer.statusCode === 200) {
            try {
              const parsed = JSON.parse(out.toString('utf8')) as { ShardIterator?: string; NextShardIterator?: string };
              const from = input.StreamArn ? stream(input.StreamArn) : iterators.get(input.ShardIterator ?? '');
              const next = parsed.ShardIterator ?? parsed.NextShardIterator;
              if (from && next) iterators.set(next, from);
              if (input.ShardIterator) iterators.delete(input.ShardIterator);
            } catch {
              // not JSON: passed on as it is
            }
          }
          res.writeHead(answer.statusCode ?? 500, answer.headers);
          res.end(out);
        });
      },
    );
    upstream.on('error', (error) => {
      if (!res.headersSent) json(res, 503, { __type: 'com.amazonaws.dynamodb#ServiceUnavailable', Message: error.message });
      else res.destroy();
    });
    upstream.end(body);
  }

  const server = createServer(async (req, res) => {
    try {
      if (req.method === 'GET' && req.url === '/__sim/calls') return json(res, 200, [...recorded.values()], 'application/json');
      const fire = req.method === 'POST' ? /^\/__sim\/schedules\/([^/?]+)$/.exec(req.url ?? '') : null;
      if (fire) {
        const run = options.schedules?.get(decodeURIComponent(fire[1]!));
        if (!run) return json(res, 404, { message: `no scheduled rule ${fire[1]}` }, 'application/json');
        try {
          return json(res, 200, { result: (await run()) ?? null }, 'application/json');
        } catch (error) {
          return json(res, 500, { error: (error as Error).message }, 'application/json');
        }
      }
      const body = await readBody(req);
      const accessKey = accessKeyOf(req.headers.authorization);
      const fn = accessKey ? options.principals.get(accessKey) : undefined;
      if (!fn)
        return json(res, 400, {
          __type: 'com.amazon.coral.service#UnrecognizedClientException',
          Message: 'The security token included in the request is invalid.',
        });
      const [service, operation = ''] = String(req.headers['x-amz-target'] ?? '').split('.');
      const input = body.length ? (JSON.parse(body.toString('utf8')) as Record<string, any>) : {};

      if (service === 'TrentService') {
        const kmsJson = 'application/x-amz-json-1.1';
        try {
          const call = { function: fn, action: `kms:${operation}`, resource: options.kms.keyOf(operation, input) };
          if (!(await record(call)).allowed) return json(res, 400, { __type: 'AccessDeniedException', message: denied(fn, call) }, kmsJson);
          return json(res, 200, options.kms.answer(operation, input), kmsJson);
        } catch (error) {
          if (error instanceof KmsError) return json(res, 400, { __type: error.type, message: error.message }, kmsJson);
          throw error;
        }
      }

      if (service === 'secretsmanager') {
        const smJson = 'application/x-amz-json-1.1';
        if (operation !== 'GetSecretValue') {
          await record({ function: fn, action: `secretsmanager:${operation}`, resource: '?' });
          return json(
            res,
            400,
            { __type: 'UnknownOperationException', Message: `the sim's Secrets Manager serves GetSecretValue only, not ${operation}` },
            smJson,
          );
        }
        // Secrets Manager authorizes the call on the secret's ARN, whatever the caller named it by.
        const id = String(input.SecretId ?? '');
        const arn = Object.keys(options.secrets).find((a) => a === id || a.endsWith(`:secret:${id}`)) ?? id;
        const call = { function: fn, action: 'secretsmanager:GetSecretValue', resource: arn };
        if (!(await record(call)).allowed) return json(res, 400, { __type: 'AccessDeniedException', Message: denied(fn, call) }, smJson);
        const value = options.secrets[arn];
        if (value === undefined)
          return json(res, 400, { __type: 'ResourceNotFoundException', Message: "Secrets Manager can't find the specified secret." }, smJson);
        return json(res, 200, { ARN: arn, Name: arn.split(':secret:')[1], SecretString: value, VersionId: 'sim', VersionStages: ['AWSCURRENT'] }, smJson);
      }

      if (service === 'DynamoDB_20120810' || service === 'DynamoDBStreams_20120810') {
        let calls: { action: string; resource: string }[];
        try {
          calls = dynamoCalls(operation, input, { table, stream, iterator: (it) => iterators.get(it) });
        } catch (error) {
          if (!(error instanceof UnknownOperation)) throw error;
          const call = { function: fn, action: `dynamodb:${operation}`, resource: '?' };
          await record(call);
          return json(res, 400, {
            __type: 'com.amazon.coral.validate#ValidationException',
            Message: `the sim does not know how IAM authorizes ${error.message}`,
          });
        }
        // Every item of a transaction or batch must be allowed, as AWS checks each.
        const decisions = await Promise.all(calls.map((call) => record({ function: fn, ...call })));
        const refused = calls.find((_, i) => !decisions[i]!.allowed);
        if (refused) return json(res, 400, { __type: 'com.amazon.coral.service#AccessDeniedException', Message: denied(fn, refused) });
        return forward(req, res, body, input, operation);
      }
      return json(res, 400, {
        __type: 'UnknownOperationException',
        Message: `the sim's AWS endpoint does not serve ${req.headers['x-amz-target'] ?? req.url}`,
      });
    } catch (error) {
      if (!res.headersSent) json(res, 500, { __type: 'InternalFailure', Message: (error as Error).message });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}`,
    record,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
