/**
 * The service's own `/health` probes, as every function builds them (the core): a flood of health checks reaches
 * IPFS once a second from an instance, not once a request.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '#shared/config';
import { healthReport } from '#shared/health';
import { createCore } from '#shared/wiring/core';
import { startTestDynamo, type TestDynamo } from '#test/support/dynamo';

let dynamo: TestDynamo;
let ipfs: Server;
let ipfsCalls = 0;
const dir = mkdtempSync(join(tmpdir(), 'health-'));
before(async () => {
  writeFileSync(join(dir, 'master.key'), `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  dynamo = await startTestDynamo('health');
  // An IPFS RPC API that answers its version and counts the calls.
  ipfs = createServer((req, res) => {
    if (req.url?.startsWith('/api/v0/version')) ipfsCalls += 1;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ Version: '0.39.0', Commit: '', Repo: '16', System: 'amd64/linux', Golang: 'go1.25' }));
  });
  await new Promise<void>((resolve) => ipfs.listen(0, '127.0.0.1', resolve));
});
after(async () => {
  ipfs?.close();
  await dynamo?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('/health on an instance', () => {
  it('checks IPFS once for 40 answers in a second, healthy each time', async () => {
    const settings = loadConfig({
      ...dynamo.tableEnv,
      SVC_DYNAMODB_ENDPOINT: dynamo.endpoint,
      SVC_DATA_DIR: dir,
      SVC_IPFS_API_URL: `http://127.0.0.1:${(ipfs.address() as AddressInfo).port}`,
    });
    const core = createCore(settings);
    const started = performance.now();
    const answers = [...(await Promise.all(Array.from({ length: 20 }, () => healthReport(core.health))))];
    for (let i = 0; i < 20; i += 1) answers.push(await healthReport(core.health));
    assert.ok(performance.now() - started < 1_000, 'the 40 answers took under a second (else this test proves nothing)');
    assert.deepEqual(new Set(answers.map((a) => `${a.status} ${JSON.stringify(a.body.checks)}`)), new Set(['200 {"dynamodb":"ok","ipfs":"ok"}']));
    assert.equal(ipfsCalls, 1);
  });
});
