/**
 * `npm run smoke -- --url <local gateway>` passes, as it must against any deployment; and it says
 * plainly what is wrong when it cannot pass.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { freePort } from '#infra/local/ports';
import { sharedStack, startStack, stopAndRemove, type Stack } from '#test/support/stack';

const ADMIN_KEY = `smoke-admin-${randomBytes(16).toString('hex')}`;
let open: Stack;
let secured: Stack;

function smoke(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn('npm', ['run', 'smoke', '--silent', '--', ...args], {
    cwd: new URL('../../', import.meta.url).pathname,
    env: { ...process.env, SVC_SMOKE_API_KEY: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  return new Promise((done) => child.once('exit', (code) => done({ code, output })));
}

before(async () => {
  open = await sharedStack();
  secured = await startStack({ env: { SVC_AUTH_ENABLED: 'true', SVC_ADMIN_API_KEY: ADMIN_KEY } });
});

after(async () => {
  await stopAndRemove(open, secured);
});

describe('npm run smoke', () => {
  it('passes against the local gateway', async () => {
    const { code, output } = await smoke(['--url', open.url]);
    assert.equal(code, 0, output);
    assert.match(output, /ledger group at \/api\/ledger/);
    assert.match(output, /ledger group at \/api\/v1/);
    assert.match(output, /^(\d+) passed, 0 failed$/m);
    assert.ok(Number(/^(\d+) passed/m.exec(output)![1]) >= 20);
  });

  it('passes against a gateway with auth on, given a key', async () => {
    const { code, output } = await smoke(['--url', secured.url, '--api-key', ADMIN_KEY]);
    assert.equal(code, 0, output);
    assert.ok(!output.includes(ADMIN_KEY), 'the key is never printed');
  });

  it('fails, saying a key is wanted, when auth is on and none was given', async () => {
    const { code, output } = await smoke(['--url', secured.url]);
    assert.equal(code, 1);
    assert.match(output, /pass --api-key/);
    assert.match(output, /\d+ passed, [1-9]\d* failed/);
  });

  it('fails fast, saying so, when nothing answers at the URL', async () => {
    const { code, output } = await smoke(['--url', `http://127.0.0.1:${await freePort()}`]);
    assert.equal(code, 1);
    assert.match(output, /does not answer/);
  });
});
