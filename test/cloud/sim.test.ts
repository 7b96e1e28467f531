/**
 * `npm run check:cloud`: `npm run sim` on the real artefact, the CDK app synthesized once into a temporary
 * cloud assembly, then served from it — never from the sources — with the functions on the Node major the
 * template's runtime names. The smoke test (every group, WebSocket pushes through the stream mapping,
 * GraphQL, off-chain, the tlog view) and a slice of the integration suites must pass against it; altered
 * copies of the assembly must fail where they are altered.
 *
 * IAM: every AWS call the functions make in these runs (DynamoDB, Streams, KMS, the WebSocket management
 * API, their log writes) is evaluated against their roles in the template with an IAM policy simulator;
 * one denied fails the check, naming the function, action and resource. Every grant no call used must be
 * listed with its reason in infra/cdk/permissions.ts (KEPT_WITHOUT_USE), and every listed one still unused.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ensureAssembly } from '#infra/sim/assembly';
import type { RecordedCall } from '#infra/sim/aws-endpoint';
import { createPermissionChecker } from '#infra/sim/permissions';
import { modelFromTemplate, readAssembly } from '#infra/sim/template';
import { KEPT_WITHOUT_USE } from '#infra/cdk/permissions';
import { freePort } from '#infra/local/ports';
import {
  call,
  expectStartFailure,
  integrationFailureLine,
  isAlive,
  keysCli,
  removeDir,
  startStack,
  stopAndRemove,
  tempDataDir,
  type Stack,
  dynamoConfigOf,
} from '#test/support/stack';
import { buildTlogCheck, runTlogCheck } from '#test/support/go-tlog';
import { startNpmCommand } from '#test/support/npm-command';
import { appendWithRecordsRefused } from '#test/support/refused-round';
import { type WitnessProcess, startWitness, witnessVkey } from '#test/support/witness';
import WebSocket from 'ws';

const run = promisify(execFile);
const ROOT_DIR = new URL('../../', import.meta.url).pathname;
const ADMIN = 'sim-admin-key-for-tests-0123456789';
const STACK = 'VerifiableLedger';
const assembly = mkdtempSync(join(tmpdir(), 'sim-assembly-'));
const copies: string[] = [];
const dataDir = (label: string) => {
  const dir = tempDataDir(label);
  copies.push(dir);
  return dir;
};
let sim: Stack | undefined;
let altered: Stack | undefined;
/** Every AWS call the functions made, from each run on the unaltered assembly. */
const recorded: RecordedCall[] = [];

/** The record of a sim's AWS endpoint (the `AWS: <url>` line it prints). */
async function awsCalls(stack: Stack): Promise<RecordedCall[]> {
  const url = /^AWS: (http:\/\/\S+)/m.exec(stack.output())?.[1];
  assert.ok(url, 'the sim names its AWS endpoint');
  return (await (await fetch(`${url}/__sim/calls`)).json()) as RecordedCall[];
}

const templateOf = (dir: string) => JSON.parse(readFileSync(join(dir, `${STACK}.template.json`), 'utf8'));

/** A copy of the assembly with its template changed. */
function alteredAssembly(change: (template: any, dir: string) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'sim-altered-'));
  copies.push(dir);
  cpSync(assembly, dir, { recursive: true });
  const template = templateOf(dir);
  change(template, dir);
  writeFileSync(join(dir, `${STACK}.template.json`), JSON.stringify(template));
  return dir;
}

const simOptions = (out: string) => ({
  script: 'infra/sim/main.ts',
  args: ['--out', out, '--no-synth', '--parameter', 'RateLimitPerMinute=0'],
  env: { SVC_DYNAMODB_IN_MEMORY: 'true', SVC_ADMIN_API_KEY: ADMIN, SVC_LOG_LEVEL: 'warn' },
  timeoutMs: 120_000,
});

const functionId = (template: any, prefix: string) =>
  Object.keys(template.Resources).find((id) => id.startsWith(prefix) && template.Resources[id].Type === 'AWS::Lambda::Function')!;

before(async () => {
  ensureAssembly(assembly);
  sim = await startStack(simOptions(assembly));
});

after(async () => {
  await stopAndRemove(sim, altered);
  for (const dir of [assembly, ...copies]) rmSync(dir, { recursive: true, force: true });
});

describe('npm run sim: the synthesized template, served', () => {
  it('passes the smoke test: every group, WebSocket pushes from the stream mapping, GraphQL, off-chain, tlog', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'test/smoke/run.ts', '--url', sim!.url, '--api-key', ADMIN], { timeout: 300_000 }).catch(
      (error) => {
        throw new Error(`smoke failed against the sim:\n${error.stdout}\n${error.stderr}`);
      },
    );
    assert.match(stdout, /\d+ passed, 0 failed/);
  });

  it('runs the bundles of the assembly with its environment: data lands in the tables the template names', async () => {
    const created = await call(sim!.url, 'POST', '/api/v1/chains/sim-check/create', undefined, { 'X-API-Key': ADMIN });
    assert.equal(created.status, 201, created.text);
    const client = DynamoDBDocumentClient.from(new DynamoDBClient(dynamoConfigOf(sim!)));
    const head = await client.send(new GetCommand({ TableName: `${STACK}-ledger`, Key: { pk: 'CHAIN#sim-check', sk: 'HEAD' } }));
    client.destroy();
    assert.ok(head.Item, "the chain head is in the template's table, not in a table of the local defaults");
    assert.match(sim!.output(), /Functions: 11 from .*sim-assembly-/);
    // The documented mapping: the WebSocket stage's URL the template gives the docs function is this server's /ws.
    const config = await call(sim!.url, 'GET', '/explorer/config.json');
    assert.equal(config.body.ws_url, `${sim!.url.replace(/^http/, 'ws')}/ws`);
    // Auth is on because the template says so: no key, no data.
    assert.equal((await call(sim!.url, 'GET', '/api/v1/chains')).status, 401);
  });

  it("writes each request's CloudWatch metrics as EMF lines, under the namespace, names and dimensions the stack's alarm reads", async () => {
    const template = templateOf(assembly);
    const alarm = Object.values(template.Resources).find((r: any) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties.MetricName === 'AppendLatency') as any;
    assert.ok(alarm, 'the stack alarms on the append latency');
    const { Namespace, MetricName, Dimensions, ExtendedStatistic } = alarm.Properties;
    assert.equal(ExtendedStatistic, 'p99');
    // An append through the deployed ledger function writes one EMF line among its logs.
    assert.equal((await call(sim!.url, 'POST', '/api/v1/chains/sim-emf/create', undefined, { 'X-API-Key': ADMIN })).status, 201);
    const appended = await call(sim!.url, 'POST', '/api/v1/chains/sim-emf/events', { entity_id: 'e', event_type: 't' }, { 'X-API-Key': ADMIN });
    assert.equal(appended.status, 200, appended.text);
    await new Promise((r) => setTimeout(r, 200));
    const lines = sim!
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{') && l.includes('"_aws"'))
      .map((l) => JSON.parse(l));
    const match = lines.find((l) => {
      const directive = l._aws.CloudWatchMetrics[0];
      return (
        directive.Namespace === Namespace &&
        directive.Metrics.some((m: { Name: string }) => m.Name === MetricName) &&
        Dimensions.every((d: { Name: string; Value: string }) => l[d.Name] === d.Value) &&
        directive.Dimensions.some((set: string[]) => set.length === Dimensions.length && Dimensions.every((d: { Name: string }) => set.includes(d.Name)))
      );
    });
    assert.ok(
      match,
      `an EMF line the alarm reads (${Namespace} ${MetricName} ${JSON.stringify(Dimensions)}):\n${lines
        .slice(-3)
        .map((l) => JSON.stringify(l))
        .join('\n')}`,
    );
    assert.equal(typeof match[MetricName], 'number');
    assert.ok(
      lines.some((l) => 'ColdStart' in l),
      'cold starts too (Lambda sets AWS_LAMBDA_INITIALIZATION_TYPE=on-demand, and so does the sim)',
    );
  });

  it("runs the functions on the Node major the template's runtime names, whatever Node runs the sim", async () => {
    const runtime = templateOf(assembly).Resources[functionId(templateOf(assembly), 'MetricsFunction')].Properties.Runtime as string;
    const major = /^nodejs(\d+)\.x$/.exec(runtime)?.[1];
    assert.ok(major, runtime);
    assert.match(sim!.output(), new RegExp(`Runtime: nodejs${major}\\.x, the functions on Node v${major}\\.`));
    // The metrics function reports the Node it runs on (prom-client's nodejs_version_info): the runtime's, not the sim's.
    const metrics = await call(sim!.url, 'GET', '/metrics', undefined, { 'X-API-Key': ADMIN });
    assert.match(metrics.text, new RegExp(`^nodejs_version_info\\{version="v${major}\\.\\d+\\.\\d+",major="${major}"`, 'm'));
  });
});

describe('npm run sim: a slice of the integration suites, against the deployed artefact', () => {
  const admin = { 'X-API-Key': ADMIN };

  it('ledger: a 98-event batch in one commit, an Idempotency-Key replay, and a chain that verifies', async () => {
    assert.equal((await call(sim!.url, 'POST', '/api/v1/chains/sim-batch/create', undefined, admin)).status, 201);
    const events = Array.from({ length: 98 }, (_, i) => ({ entity_id: `lot-${i % 3}`, event_type: 'weighed', details: { i } }));
    const headers = { ...admin, 'Idempotency-Key': 'sim-batch-1' };
    const first = await call(sim!.url, 'POST', '/api/v1/chains/sim-batch/events/batch', { events }, headers);
    assert.equal(first.status, 200, first.text);
    const again = await call(sim!.url, 'POST', '/api/v1/chains/sim-batch/events/batch', { events }, headers);
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const verdict = await call(sim!.url, 'GET', '/api/v1/chains/sim-batch/verify', undefined, admin);
    assert.equal(verdict.body.valid, true, verdict.text);
    assert.equal(verdict.body.checked_blocks, 99);
  });

  it('keys and roles: a reader key made with npm run keys reads but may not write, on REST and GraphQL', async () => {
    const made = await keysCli(sim!.dataDir, ['create', '--role', 'reader'], {
      SVC_DYNAMODB_ENDPOINT: sim!.dynamoEndpoint,
      SVC_DYNAMODB_ACCESS_KEY_ID: sim!.dynamoAccessKeyId,
      SVC_REGISTRY_TABLE: `${STACK}-registry`,
    });
    const key = /Key \(shown once, store it now\): (\S+)/.exec(made)?.[1];
    assert.ok(key, made);
    const reader = { 'X-API-Key': key };
    assert.equal((await call(sim!.url, 'GET', '/api/v1/chains', undefined, reader)).status, 200);
    assert.equal((await call(sim!.url, 'POST', '/api/v1/chains/sim-batch/events', { entity_id: 'x', event_type: 'y' }, reader)).status, 403);
    const query = await call(sim!.url, 'POST', '/graphql', { query: '{ chains { name blockCount } }' }, reader);
    assert.equal(query.status, 200, query.text);
    assert.ok(query.body.data.chains.some((c: { name: string }) => c.name === 'sim-batch'));
    const mutation = await call(sim!.url, 'POST', '/graphql', { query: 'mutation { createSubChain(name: "sim-nope") { chainName } }' }, reader);
    assert.equal(mutation.body.errors?.[0]?.extensions?.code, 'FORBIDDEN', mutation.text);
  });

  it("channels: a member organization's key appends to, reads and traces its channel's chain, on REST, GraphQL and WebSocket (each reads the channel's members)", async () => {
    // Every call before this one was an admin's, which reads no membership: the ledger and WebSocket roles had no
    // Query on the registry, and a member's read of its channel would have been denied on AWS.
    const business = `${sim!.url}/api/business`;
    assert.equal((await call(business, 'POST', '/organizations', { org_id: 'simco', name: 'Sim Co' }, admin)).status, 201);
    assert.equal((await call(business, 'POST', '/channels', { name: 'simdeals' }, admin)).status, 201);
    assert.equal((await call(business, 'POST', '/channels/simdeals/organizations', { org_id: 'simco' }, admin)).status, 201);
    const made = await keysCli(sim!.dataDir, ['create', '--role', 'writer', '--org', 'simco'], {
      SVC_DYNAMODB_ENDPOINT: sim!.dynamoEndpoint,
      SVC_DYNAMODB_ACCESS_KEY_ID: sim!.dynamoAccessKeyId,
      SVC_REGISTRY_TABLE: `${STACK}-registry`,
    });
    const member = { 'X-API-Key': /Key \(shown once, store it now\): (\S+)/.exec(made)![1]! };
    const appended = await call(sim!.url, 'POST', '/api/v1/chains/channel-simdeals/events', { entity_id: 'sim-deal', event_type: 'signed' }, member);
    assert.equal(appended.status, 200, appended.text);
    const index = String(appended.body.event_id).split('_').at(-2);
    const block = await call(sim!.url, 'GET', `/api/v1/chains/channel-simdeals/blocks/${index}`, undefined, member);
    assert.equal(block.status, 200, block.text);
    assert.equal(block.body.events[0].entity_id, 'sim-deal');
    const trace = await call(sim!.url, 'GET', '/api/v1/entities/sim-deal/trace', undefined, member);
    assert.deepEqual(trace.body.chains, ['channel-simdeals'], trace.text);
    const graphql = await call(sim!.url, 'POST', '/graphql', { query: '{ trace(entityId: "sim-deal") { chains } }' }, member);
    assert.deepEqual(graphql.body.data?.trace?.chains, ['channel-simdeals'], graphql.text);
    const subscribed = await new Promise<unknown>((resolve, reject) => {
      const ws = new WebSocket(`${sim!.url.replace(/^http/, 'ws')}/ws`, { headers: member });
      const timer = setTimeout(() => reject(new Error('no answer to the subscription in 15 s')), 15_000);
      ws.once('open', () => ws.send(JSON.stringify({ type: 'subscribe', chain: 'channel-simdeals' })));
      ws.on('message', (data) => {
        clearTimeout(timer);
        ws.close();
        resolve(JSON.parse(String(data)));
      });
      ws.once('error', reject);
    });
    assert.equal((subscribed as { type?: string }).type, 'subscribed', JSON.stringify(subscribed));
  });

  it('WebSocket: a key whose every connection slot is held by sockets gone without $disconnect connects, the ws function asking the management API about them (GET)', async () => {
    // $disconnect is best-effort on AWS: slots of connections that never had one would hold a key out until they expire.
    const made = await keysCli(sim!.dataDir, ['create', '--role', 'reader'], {
      SVC_DYNAMODB_ENDPOINT: sim!.dynamoEndpoint,
      SVC_DYNAMODB_ACCESS_KEY_ID: sim!.dynamoAccessKeyId,
      SVC_REGISTRY_TABLE: `${STACK}-registry`,
    });
    const keyId = /Created \w+ key (\S+?)\./.exec(made)![1]!;
    const key = /Key \(shown once, store it now\): (\S+)/.exec(made)![1]!;
    const client = DynamoDBDocumentClient.from(new DynamoDBClient(dynamoConfigOf(sim!)));
    const now = Math.floor(Date.now() / 1000);
    // The template's SVC_WS_CONNECTIONS_PER_KEY (100) slots, each held by a connection API Gateway no longer has.
    for (let n = 0; n < 100; n += 1) {
      await client.send(
        new PutCommand({
          TableName: `${STACK}-connections`,
          Item: { pk: `KEYCONN#${keyId}`, sk: `SLOT#${String(n).padStart(4, '0')}`, connection_id: `gone-${n}`, taken_at: now - 3_600, ttl: now + 3_600 },
        }),
      );
    }
    client.destroy();
    const answer = await new Promise<unknown>((resolve, reject) => {
      const ws = new WebSocket(`${sim!.url.replace(/^http/, 'ws')}/ws`, { headers: { 'X-API-Key': key } });
      const timer = setTimeout(() => reject(new Error('no answer in 15 s')), 15_000);
      ws.once('open', () => ws.send(JSON.stringify({ type: 'ping' })));
      ws.on('message', (data) => {
        clearTimeout(timer);
        ws.close();
        resolve(JSON.parse(String(data)));
      });
      ws.once('unexpected-response', (_req, res) => reject(new Error(`refused: ${res.statusCode}`)));
      ws.once('error', reject);
    });
    assert.equal((answer as { type?: string }).type, 'pong', JSON.stringify(answer));
  });

  it("tlog: Go's x/mod/sumdb audits a chain the deployed tlog function serves, a full tile among them", async () => {
    // Past 256 entries, so that a full tile is kept by the tlog function on its first read.
    for (let batch = 0; batch < 2; batch += 1) {
      const events = Array.from({ length: 98 }, (_, i) => ({ entity_id: `lot-${i % 3}`, event_type: 'sorted', details: { batch, i } }));
      assert.equal((await call(sim!.url, 'POST', '/api/v1/chains/sim-batch/events/batch', { events }, admin)).status, 200);
    }
    const checker = await buildTlogCheck();
    const { code, result, stderr } = await runTlogCheck(checker, ['-url', sim!.url, '-chain', 'sim-batch', '-api-key', ADMIN]);
    assert.equal(code, 0, stderr);
    assert.equal(result!.records_proven, 295);
  });

  it('appends from eight clients at once on one chain: every event once, in one linear chain', async () => {
    assert.equal((await call(sim!.url, 'POST', '/api/v1/chains/sim-burst/create', undefined, admin)).status, 201);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, c) =>
        Promise.all(
          Array.from({ length: 5 }, (_, i) => call(sim!.url, 'POST', '/api/v1/chains/sim-burst/events', { entity_id: `c${c}`, event_type: `e${i}` }, admin)),
        ),
      ),
    );
    assert.ok(answers.flat().every((a) => a.status === 200));
    const verdict = await call(sim!.url, 'GET', '/api/v1/chains/sim-burst/verify', undefined, admin);
    assert.equal(verdict.body.valid, true, verdict.text);
    assert.equal(verdict.body.checked_blocks, 41);
  });

  it("erasure: a data subject's event and private value, its key destroyed, its details gone, its value's record deleted, the chain still valid", async () => {
    assert.equal((await call(sim!.url, 'POST', '/api/v1/chains/sim-people/create', undefined, admin)).status, 201);
    const event = { entity_id: 'patient-1', event_type: 'admitted', subject_id: 'subj-sim', details: { name: 'Alice' } };
    const added = await call(sim!.url, 'POST', '/api/v1/chains/sim-people/events', event, admin);
    assert.equal(added.status, 200, added.text);
    // A private value of the subject's too: the business function lists it on the subject's item, and the erasure (the
    // ledger function) deletes its record.
    const business = `${sim!.url}/api/business`;
    assert.equal((await call(business, 'POST', '/channels', { name: 'simcare' }, admin)).status, 201);
    assert.equal((await call(business, 'POST', '/channels/simcare/private-collections', { collection: 'notes' }, admin)).status, 201);
    const value = { channel: 'simcare', collection: 'notes', key: 'alice@example.com', value: 'Alice', subject_id: 'subj-sim' };
    const written = await call(business, 'POST', '/private-data', value, admin);
    assert.equal(written.status, 201, written.text);
    const erased = await call(sim!.url, 'POST', '/api/ledger/subjects/subj-sim/erase', { reason: 'check:cloud' }, admin);
    assert.equal(erased.status, 200, erased.text);
    assert.equal(erased.body.status, 'erased');
    assert.equal((await call(business, 'GET', '/private-data/simcare/notes/alice@example.com', undefined, admin)).status, 404);
    const block = await call(sim!.url, 'GET', '/api/v1/chains/sim-people/blocks/1', undefined, admin);
    assert.equal(block.body.events?.[0]?.details ?? null, null, block.text);
    assert.equal((await call(sim!.url, 'GET', '/api/v1/chains/sim-people/verify', undefined, admin)).body.valid, true);
  });

  it('GraphQL: lists the chains and appends an event', async () => {
    const listed = await call(sim!.url, 'POST', '/graphql', { query: '{ chains { name blockCount } }' }, admin);
    assert.ok(
      listed.body.data.chains.some((c: { name: string }) => c.name === 'sim-burst'),
      listed.text,
    );
    const query = 'mutation($i: EventInput!) { addEvent(chainName: "sim-burst", input: $i) { success eventId } }';
    const added = await call(sim!.url, 'POST', '/graphql', { query, variables: { i: { entityId: 'g', eventType: 'graphql' } } }, admin);
    assert.equal(added.body.data?.addEvent?.success, true, added.text);
    // A data subject's event: its key is made, and kept in the registry, by the GraphQL function.
    const personal = { i: { entityId: 'g', eventType: 'graphql', subjectId: 'subj-graphql', details: { name: 'Bob' } } };
    const sealed = await call(sim!.url, 'POST', '/graphql', { query, variables: personal }, admin);
    assert.equal(sealed.body.data?.addEvent?.success, true, sealed.text);
  });

  it('the hourly sweep finishes a round whose records DynamoDB refused, so its body does not expire with its pending append', async () => {
    assert.equal((await call(sim!.url, 'POST', '/api/v1/chains/sim-sweep/create', undefined, admin)).status, 201);
    assert.equal((await call(sim!.url, 'POST', '/api/v1/chains/sim-sweep/events', { entity_id: 's', event_type: 'first' }, admin)).status, 200);
    // Another writer, outside the sim, whose round's records DynamoDB refuses: its commit lands, its caller
    // is told it failed, and the block's body is left in its pending append (which expires in 7 days).
    const { repository, index, close } = await appendWithRecordsRefused(
      { endpoint: sim!.dynamoEndpoint, accessKeyId: sim!.dynamoAccessKeyId, tableName: `${STACK}-ledger` },
      'sim-sweep',
      'refused',
    );
    assert.equal(index, 2);
    // EventBridge fires the rule (here at once rather than within the hour): the sweep function, as its role.
    const rule = Object.keys(templateOf(assembly).Resources).find((id) => id.startsWith('SweepSchedule'))!;
    const awsUrl = /^AWS: (http:\/\/\S+)/m.exec(sim!.output())![1];
    const fired = await fetch(`${awsUrl}/__sim/schedules/${rule}`, { method: 'POST' });
    const result = (await fired.json()) as { result: { finished: number; failed: number } };
    assert.equal(fired.status, 200, JSON.stringify(result));
    assert.ok(result.result.finished >= 1 && result.result.failed === 0, JSON.stringify(result));
    const after = (await repository.getHead('sim-sweep'))!;
    assert.equal(after.recentFlushed, true, 'the head says the round is written');
    assert.equal((await repository.getRecords('sim-sweep', [{ index: 2, hash: after.headHash }], true)).size, 1, 'the record is there');
    close();
    const block = await call(sim!.url, 'GET', '/api/v1/chains/sim-sweep/blocks/2', undefined, admin);
    assert.equal(block.body.events?.[0]?.event_type, 'refused', block.text);
    assert.equal((await call(sim!.url, 'GET', '/api/v1/chains/sim-sweep/verify', undefined, admin)).body.valid, true);
  });

  after(async () => {
    if (sim) recorded.push(...(await awsCalls(sim)));
  });
});

describe('npm run sim: a template altered', () => {
  it("starts as docs/sim.md says, with the template's parameter defaults: the rate limit in force, and a witness given as the stack's parameter", async () => {
    // `SVC_ADMIN_API_KEY=<key> npm run sim` and no other flag but the witness: RateLimitPerMinute keeps its Default,
    // 100 (a JSON number in the template), which reaches the functions as a string.
    const witnessDir = tempDataDir('sim-witness');
    const witnessPort = await freePort();
    const vkey = witnessVkey(witnessDir);
    let witness: WitnessProcess | undefined;
    altered = await startStack({
      ...simOptions(assembly),
      args: ['--out', assembly, '--no-synth', '--parameter', `Witnesses=${vkey}=http://127.0.0.1:${witnessPort}`],
      dataDir: tempDataDir('sim-defaults'),
    });
    try {
      const admin = { 'X-API-Key': ADMIN };
      const health = await call(altered.url, 'GET', '/api/v1/health', undefined, admin);
      assert.equal(health.status, 200, health.text);
      const chains = await call(altered.url, 'GET', '/api/v1/chains', undefined, admin);
      assert.equal(chains.status, 200, chains.text);
      assert.equal(chains.headers.get('x-ratelimit-limit'), '100', 'the default rate limit is in force');
      const logVkey = (await call(altered.url, 'GET', '/tlog/vkey', undefined, admin)).text.trim();
      witness = await startWitness({ dir: witnessDir, logs: [logVkey], port: witnessPort });
      assert.equal((await call(altered.url, 'POST', '/api/v1/chains/sim-witnessed/create', undefined, admin)).status, 201);
      // The broadcaster sends new checkpoints to the witness after commits (at most once a second per chain), and
      // the tlog function serves the newest one it cosigned. Until it has cosigned twice: the second time with a
      // consistency proof from the size it cosigned first.
      const cosignedSize = async () => {
        const text = (await call(altered!.url, 'GET', '/tlog/sim-witnessed/checkpoint', undefined, admin)).text;
        return /\n— witness\.local\/w1 /.test(text) ? Number(text.split('\n')[1]) : 0;
      };
      let first = 0;
      let later = 0;
      for (let i = 0, end = Date.now() + 25_000; Date.now() < end && !later; i += 1) {
        await call(altered.url, 'POST', '/api/v1/chains/sim-witnessed/events', { entity_id: `w${i}`, event_type: 'seen' }, admin);
        const size = await cosignedSize();
        if (!first) first = size;
        else if (size > first) later = size;
        if (!later) await new Promise((r) => setTimeout(r, 800));
      }
      assert.ok(first > 0 && later > first, `the witness cosigned at ${first}, then at ${later}:\n${witness.output().slice(-1_000)}`);
      const metrics = await call(altered.url, 'GET', '/metrics', undefined, admin);
      assert.ok(
        Number(/^witness_cosignatures_total\{[^}]*\} (\d+)$/m.exec(metrics.text)?.[1]) >= 2,
        `/metrics reads the witnesses' state:\n${metrics.text.slice(-800)}`,
      );
      // Every group once with the rate limit on (each counts the key's requests), and a WebSocket client with an
      // unknown key, whose failed attempts are counted per address too.
      for (const path of ['/api/v2/organizations', '/api/admin/identity', '/api/admin/peers', '/openapi.json', '/docs']) {
        assert.ok((await call(altered.url, 'GET', path, undefined, admin)).status < 400, path);
      }
      assert.equal((await call(altered.url, 'POST', '/graphql', { query: '{ chains { name } }' }, admin)).status, 200);
      const noContract = { contract_id: 'no-such-contract', event: { entity_id: 'e', event: 'x', details: {} } };
      assert.equal((await call(altered.url, 'POST', '/api/v2/contracts/execute', noContract, admin)).status, 404, 'the contracts group');
      const refused = await new Promise<number>((resolve) => {
        const ws = new WebSocket(`${altered!.url.replace(/^http/, 'ws')}/ws`, { headers: { 'X-API-Key': 'not-a-key-of-this-service-0000' } });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('open', () => resolve(101));
        ws.once('error', () => resolve(-1));
      });
      assert.equal(refused, 401, 'an unknown key is refused at $connect');
      recorded.push(...(await awsCalls(altered)));
    } finally {
      await witness?.stop();
      await stopAndRemove(altered);
      removeDir(witnessDir);
      altered = undefined;
    }
  });

  it('does not serve a route the template no longer has (it reaches $default, the 404)', async () => {
    const out = alteredAssembly((template) => {
      const id = Object.keys(template.Resources).find((k) => template.Resources[k].Properties?.RouteKey === 'GET /api/v1/identity')!;
      delete template.Resources[id];
    });
    altered = await startStack({ ...simOptions(out), dataDir: tempDataDir('sim-altered') });
    const gone = await call(altered.url, 'GET', '/api/v1/identity', undefined, { 'X-API-Key': ADMIN });
    assert.equal(gone.status, 404, gone.text);
    const twin = await call(altered.url, 'GET', '/api/ledger/identity', undefined, { 'X-API-Key': ADMIN });
    assert.equal(twin.status, 200, twin.text);
  });

  it("reads each function's secret settings from Secrets Manager at its cold start, never from its environment; 503 where its role may not read one", async () => {
    // The deployer's choices that need secrets: CdnOnly (the edge secret, generated at deploy) and a license key (its own
    // secret, made because it is given). Neither value is in any function's environment (test/infra/cdk.test.ts).
    await altered?.stop();
    altered = await startStack({
      ...simOptions(assembly),
      args: [...simOptions(assembly).args, '--parameter', 'CdnOnly=true', '--parameter', 'LicenseKey=sim-license-key-0123456789'],
      dataDir: tempDataDir('sim-secrets'),
    });
    const admin = { 'X-API-Key': ADMIN };
    // Straight to the API, not through the CDN: refused by a function that read the edge secret (without it, CdnOnly is a
    // settings error and every request a 500).
    const around = await call(altered.url, 'GET', '/api/v1/chains', undefined, admin);
    assert.equal(around.status, 403, around.text);
    assert.match(around.body.detail, /served through its CDN/);
    const calls = await awsCalls(altered);
    const reads = calls.filter((c) => c.action === 'secretsmanager:GetSecretValue');
    assert.ok(reads.length > 0 && reads.every((c) => c.allowed), JSON.stringify(reads));
    const read = new Set(reads.map((c) => `${c.function.replace(/Function.*$/, '')} ${c.resource.split(':secret:')[1]!.replace(/[A-F0-9]{8}$/, '')}`));
    assert.ok(read.has('Ledger EdgeSecret'), [...read].join(', '));
    assert.ok(![...read].some((r) => r.endsWith('LicenseKeySecret')), 'the license key only for the admin function, which served nothing here');
    recorded.push(...calls);
    await altered.stop();

    // The same template with the ledger role's grant on its secrets removed: its cold start cannot read them, and every
    // request it gets is answered 503 with Retry-After in the contract's shape, the cause logged, never answered.
    const out = alteredAssembly((template) => {
      for (const r of Object.values(template.Resources) as any[]) {
        if (r.Type !== 'AWS::IAM::Policy' || !r.Properties.Roles.some((x: any) => String(x.Ref).startsWith('LedgerRole'))) continue;
        r.Properties.PolicyDocument.Statement = r.Properties.PolicyDocument.Statement.filter((st: any) => st.Action !== 'secretsmanager:GetSecretValue');
      }
    });
    altered = await startStack({
      ...simOptions(out),
      args: [...simOptions(out).args, '--parameter', 'LicenseKey=sim-license-key-0123456789'],
      dataDir: tempDataDir('sim-secrets-denied'),
    });
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const res = await call(altered.url, 'GET', '/api/v1/chains', undefined, admin);
      assert.equal(res.status, 503, res.text);
      assert.deepEqual(Object.keys(res.body).sort(), ['detail', 'request_id']);
      assert.equal(res.body.detail, 'Secrets Manager is unavailable; retry later');
      assert.equal(res.headers.get('retry-after'), '2');
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.equal(res.headers.get('x-request-id'), res.body.request_id);
    }
    const denied = (await awsCalls(altered)).filter((c) => c.action === 'secretsmanager:GetSecretValue');
    assert.ok(denied.length > 0 && denied.every((c) => !c.allowed && c.function.startsWith('Ledger')), JSON.stringify(denied));
    assert.ok(denied.reduce((n, c) => n + c.count, 0) >= 2, 'the second request tried again, and was denied again');
    assert.match(altered.output(), /could not read the secret settings from Secrets Manager/);
    // The other functions read theirs: their requests are served, the admin function's with the license key it read.
    assert.equal((await call(altered.url, 'GET', '/api/v2/organizations', undefined, admin)).status, 200);
    const status = await call(altered.url, 'GET', '/api/admin/status', undefined, admin);
    assert.equal(status.status, 200, status.text);
    assert.equal(status.body.license_active, true, 'the license key reached the settings from its secret');
  });

  it('tells and counts an integration that fails: a function whose bundle throws as it loads', async () => {
    let tlog = '';
    const out = alteredAssembly((template, dir) => {
      tlog = functionId(template, 'TlogFunction');
      const key = template.Resources[tlog].Properties.Code.S3Key as string;
      const file = join(dir, `asset.${key.replace(/\.zip$/, '')}`, 'index.mjs');
      writeFileSync(file, `throw new Error('this bundle is broken');\n${readFileSync(file, 'utf8')}`);
    });
    await altered?.stop();
    altered = await startStack({ ...simOptions(out), dataDir: tempDataDir('sim-broken') });
    const res = await fetch(`${altered.url}/tlog/vkey`, { headers: { 'X-API-Key': ADMIN } });
    assert.equal(res.status, 500);
    assert.deepEqual(await res.json(), { message: 'Internal Server Error' }, "API Gateway's bare answer");
    const requestId = res.headers.get('apigw-requestid');
    await new Promise((r) => setTimeout(r, 200));
    const line = integrationFailureLine(altered, requestId);
    assert.ok(line, `one structured error line names the request:\n${altered.output().slice(-2_000)}`);
    assert.equal(line.function, tlog);
    assert.equal(line.route, 'GET /tlog/vkey');
    assert.equal(line.status, 500);
    assert.equal(line.cause.name, 'InstanceFailure');
    assert.match(line.cause.message, /failed to start: .*this bundle is broken/s);
    const metrics = await call(altered.url, 'GET', '/metrics', undefined, { 'X-API-Key': ADMIN });
    assert.match(metrics.text, new RegExp(`^gateway_integration_errors_total\\{function="${tlog}"\\} 1$`, 'm'));
  });

  it('stops with everything it started when `npm run sim` itself is sent SIGTERM (as `kill %1` does)', async () => {
    // npm runs it under `sh -c`, and the shell does not pass the signal on: the sim, its JVM and its function
    // workers had kept running on their ports.
    const started = startNpmCommand(['run', '--silent', 'sim'], { ...process.env, SVC_ADMIN_API_KEY: ADMIN, SVC_DATA_DIR: dataDir('sim-npm') });
    try {
      const output = await started.waitFor(/Sim ready at/, 120_000);
      const url = /Sim ready at (http:\/\/\S+)/.exec(output)?.[1];
      const jvm = Number(/DynamoDB Local, pid (\d+)/.exec(output)?.[1]);
      assert.ok(url && jvm, output);
      started.npm.kill('SIGTERM');
      const gone = Date.now() + 15_000;
      while (isAlive(jvm) && Date.now() < gone) await new Promise((r) => setTimeout(r, 200));
      assert.ok(!isAlive(jvm), 'DynamoDB Local outlived npm run sim');
      const refused = await fetch(`${url}/api/ledger/health`).then(
        () => false,
        () => true,
      );
      assert.ok(refused, 'the sim still serves after npm run sim was stopped');
    } finally {
      started.stopGroup();
    }
  });

  it('prints its usage on --help, and says an unknown option with the usage, never a stack trace', async () => {
    const help = await expectStartFailure({ SVC_DATA_DIR: dataDir('sim-help') }, 60_000, { script: 'infra/sim/main.ts', args: ['--help'] });
    assert.equal(help.code, 0, help.output);
    assert.match(help.output, /^Usage: SVC_ADMIN_API_KEY=<24\+ characters> npm run sim/);
    assert.match(help.output, /--parameter Name=Value/);
    const wrong = await expectStartFailure({ SVC_DATA_DIR: dataDir('sim-bogus') }, 60_000, { script: 'infra/sim/main.ts', args: ['--bogus'] });
    assert.equal(wrong.code, 1, wrong.output);
    assert.match(wrong.output, /^Unknown option '--bogus'\n\nUsage:/);
    assert.doesNotMatch(wrong.output, /\n\s+at /, 'no stack trace');
  });

  it('refuses to start when an environment variable was renamed, naming the function and the variable', async () => {
    let ledger = '';
    const out = alteredAssembly((template) => {
      ledger = functionId(template, 'LedgerFunction');
      const vars = template.Resources[ledger].Properties.Environment.Variables;
      vars.SVC_LEDGER_TABLE_NAME = vars.SVC_LEDGER_TABLE;
      delete vars.SVC_LEDGER_TABLE;
    });
    const { code, output } = await expectStartFailure({ SVC_DATA_DIR: dataDir('sim-env'), SVC_DYNAMODB_IN_MEMORY: 'true' }, 60_000, {
      script: 'infra/sim/main.ts',
      args: ['--out', out, '--no-synth'],
    });
    assert.equal(code, 1, output);
    assert.match(output, new RegExp(`Cannot start the sim: ${ledger}: environment: SVC_LEDGER_TABLE_NAME is not a setting of the service`));
  });

  it("refuses to start when a function's bundle was deleted, naming the function and the file", async () => {
    let tlog = '';
    const out = alteredAssembly((template, dir) => {
      tlog = functionId(template, 'TlogFunction');
      const key = template.Resources[tlog].Properties.Code.S3Key as string;
      rmSync(join(dir, `asset.${key.replace(/\.zip$/, '')}`, 'index.mjs'));
    });
    const { code, output } = await expectStartFailure({ SVC_DATA_DIR: dataDir('sim-bundle'), SVC_DYNAMODB_IN_MEMORY: 'true' }, 60_000, {
      script: 'infra/sim/main.ts',
      args: ['--out', out, '--no-synth'],
    });
    assert.equal(code, 1, output);
    assert.match(output, new RegExp(`Cannot start the sim: ${tlog}: its bundle is missing: no index.mjs or index.js`));
  });

  it('refuses a runtime whose Node it has no binary for, and runs anyway only when told, saying so', async () => {
    const out = alteredAssembly((template) => {
      for (const resource of Object.values(template.Resources) as any[]) {
        if (resource.Type === 'AWS::Lambda::Function' && resource.Properties.Runtime?.startsWith('nodejs')) resource.Properties.Runtime = 'nodejs99.x';
      }
    });
    const { code, output } = await expectStartFailure({ SVC_DATA_DIR: dataDir('sim-runtime'), SVC_DYNAMODB_IN_MEMORY: 'true' }, 60_000, {
      script: 'infra/sim/main.ts',
      args: ['--out', out, '--no-synth'],
    });
    assert.equal(code, 1, output);
    assert.match(output, /Cannot start the sim: the template's runtime is nodejs99\.x, but this is Node v\d+.*--allow-runtime-mismatch/);
    await altered?.stop();
    altered = await startStack({ ...simOptions(out), args: [...simOptions(out).args, '--allow-runtime-mismatch'], dataDir: tempDataDir('sim-mismatch') });
    assert.match(altered.output(), new RegExp(`Runtime: the template names nodejs99\\.x, but the functions run on this Node ${process.version}`));
    assert.equal((await call(altered.url, 'GET', '/api/v1/health', undefined, { 'X-API-Key': ADMIN })).status, 200);
    await stopAndRemove(altered);
    altered = undefined;
  });

  it('refuses a route whose integration is not a Lambda function, naming it', async () => {
    let integration = '';
    const out = alteredAssembly((template) => {
      integration = Object.keys(template.Resources).find((k) => template.Resources[k].Type === 'AWS::ApiGatewayV2::Integration' && k.includes('Tlog'))!;
      template.Resources[integration].Properties.IntegrationType = 'HTTP_PROXY';
    });
    const { code, output } = await expectStartFailure({ SVC_DATA_DIR: dataDir('sim-route'), SVC_DYNAMODB_IN_MEMORY: 'true' }, 60_000, {
      script: 'infra/sim/main.ts',
      args: ['--out', out, '--no-synth'],
    });
    assert.equal(code, 1, output);
    assert.match(output, new RegExp(`${integration}: is a HTTP_PROXY integration`));
  });
});

describe("IAM: the functions' AWS calls against their roles in the template", () => {
  /** The synthesized template's functions, roles and key, as the sim serves them. */
  const deployedModel = () => {
    const { template, assets } = readAssembly(assembly, STACK);
    return modelFromTemplate(template, assets, {
      region: 'us-east-1',
      parameters: { IpfsApiUrl: 'http://127.0.0.1:1', CorsOrigins: 'http://127.0.0.1:1', IpfsApiAuth: '', LicenseKey: '' },
      webSocketUrl: 'ws://127.0.0.1:1/ws',
      managementUrl: 'http://127.0.0.1:1',
    });
  };
  const shortArn = (arn: string) => arn.replace(/^arn:aws:[a-z-]+:[a-z0-9-]*:\d*:/, '');

  it('denies none of the calls the runs made (each evaluated by an IAM policy simulator)', () => {
    assert.ok(recorded.length > 50, `the runs recorded their calls (${recorded.length})`);
    const denied = recorded.filter((c) => !c.allowed);
    assert.deepEqual(
      denied.map((c) => `${c.function} ${c.action} ${c.resource}: ${c.reason}`),
      [],
      'a call AWS would deny with AccessDeniedException',
    );
    // Each kind of call the service makes is among them.
    for (const action of [
      'dynamodb:PutItem',
      'dynamodb:Query',
      'kms:GenerateDataKey',
      'kms:Decrypt',
      'execute-api:ManageConnections',
      'dynamodb:GetRecords',
      'logs:PutLogEvents',
    ]) {
      assert.ok(
        recorded.some((c) => c.action === action),
        `${action} was made`,
      );
    }
  });

  it('lets no function write an API key into the registry, not even those that write the registry (red team: docs and contracts could mint an admin key)', async () => {
    const model = deployedModel();
    const checker = createPermissionChecker(model);
    const registry = `arn:aws:dynamodb:us-east-1:000000000000:table/${STACK}-registry`;
    const writes = (fn: string, action: string, keys: string[]) =>
      checker.authorize({ function: fn, action, resource: registry, context: { 'dynamodb:LeadingKeys': keys } });
    const writers = Object.keys(model.functions).filter((fn) => /^(Docs|Contracts|Ledger|Business|Admin|Graphql|Tlog|Metrics)/.test(fn));
    assert.equal(writers.length, 8, Object.keys(model.functions).join(', '));
    for (const fn of writers) {
      // What each does write there (request counters): allowed, so the deny is on the key, not the table.
      assert.equal((await writes(fn, 'dynamodb:UpdateItem', ['METRICS#…'])).allowed, true, `${fn} adds to the counters`);
      for (const action of ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:BatchWriteItem'])
        for (const keys of [['APIKEY#…'], ['APIKEYS'], ['METRICS#…', 'APIKEY#…']])
          assert.equal((await writes(fn, action, keys)).allowed, false, `${fn} ${action} ${keys.join(',')}`);
    }
  });

  it('uses every grant, or keeps it with a reason in infra/cdk/permissions.ts', async () => {
    const model = deployedModel();
    const unused = await createPermissionChecker(model).unusedGrants(recorded.filter((c) => c.allowed));
    // Kept for reading (test-output/ is not committed): every call, and every grant no call used.
    mkdirSync(join(ROOT_DIR, 'test-output', 'cloud'), { recursive: true });
    writeFileSync(join(ROOT_DIR, 'test-output', 'cloud', 'aws-calls.json'), JSON.stringify({ calls: recorded, unused }, null, 1));
    const keptBy = (u: { function: string; action: string; resource: string }) =>
      KEPT_WITHOUT_USE.find(
        (k) => k.functions.some((f) => u.function.toLowerCase().startsWith(f.toLowerCase())) && k.action === u.action && k.resource.test(u.resource),
      );
    const unexplained = unused.filter((u) => !keptBy(u)).map((u) => `${u.function} ${u.action} ${shortArn(u.resource)}`);
    assert.deepEqual(unexplained, [], 'granted, never used, and no reason kept: trim it from infra/cdk/permissions.ts, or say why it stays');
    // A reason for a grant that is used now, or no longer granted, is stale.
    const stale = KEPT_WITHOUT_USE.filter((k) => !k.sometimes).flatMap((k) =>
      k.functions
        .filter((f) => !unused.some((u) => u.function.toLowerCase().startsWith(f.toLowerCase()) && u.action === k.action && k.resource.test(u.resource)))
        .map((f) => `${f} ${k.action} ${k.resource}`),
    );
    assert.deepEqual(stale, [], 'a kept grant that the runs used, or that is no longer granted: remove its entry');
    const byFunction = new Map<string, Set<string>>();
    for (const c of recorded) byFunction.set(c.function, (byFunction.get(c.function) ?? new Set()).add(c.action));
    process.stdout.write(
      `IAM: ${recorded.length} distinct calls, 0 denied; ${unused.length} grants kept unused, each with its reason\n${[...byFunction]
        .map(([fn, actions]) => `  ${fn}: ${[...actions].sort().join(' ')}`)
        .join('\n')}\n`,
    );
  });
});
