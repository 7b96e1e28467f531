/**
 * Witnessed checkpoints end to end: the local stack given a witness (SVC_WITNESSES) and `npm run witness`
 * as its own process. The stream sends new checkpoints to it, a client that requires its cosignature gets
 * appends and reads proven in cosigned checkpoints, /tlog serves them (and Go's note.Open still verifies
 * the log's signature among the cosignatures), /metrics counts per witness, and a witness that is down
 * delays nothing but the clients that require it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { LedgerClient } from '#client/client';
import { ApiError, VerificationError } from '#client/errors';
import { MemoryStore } from '#client/state';
import { freePort } from '#infra/local/ports';
import { buildTlogCheck, runTlogCheck } from '#test/support/go-tlog';
import { startNpmCommand } from '#test/support/npm-command';
import { call, removeDir, startStack, stopAndRemove, tempDataDir, type Stack } from '#test/support/stack';
import { type WitnessProcess, startWitness, witnessVkey } from '#test/support/witness';
import { checkpointText, signNote, verifierKey } from '#shared/tlog/note';
import { consistencyProof, leafHash, nodesFromLeafHashes, rootFromLeafHashes } from '#shared/ledger/merkle';

let stack: Stack;
let witness: WitnessProcess;
let witnessPort: number;
let logVkey: string;
const witnessDir = tempDataDir('witness');
const CHAIN = 'witnessed';

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const served = async () => (await fetch(`${stack.url}/tlog/${CHAIN}/checkpoint`)).text();

before(async () => {
  const vkey = witnessVkey(witnessDir);
  witnessPort = await freePort();
  stack = await startStack({
    env: { SVC_WITNESSES: `${vkey}=http://127.0.0.1:${witnessPort}`, SVC_WITNESS_INTERVAL_MS: '300', SVC_WITNESS_TIMEOUT_MS: '1000' },
  });
  logVkey = (await (await fetch(`${stack.url}/tlog/vkey`)).text()).trim();
  witness = await startWitness({ dir: witnessDir, logs: [logVkey], port: witnessPort });
  assert.equal(witness.vkey, vkey);
  assert.equal((await call(stack.url, 'POST', `/api/v1/chains/${CHAIN}/create`)).status, 201);
  const events = Array.from({ length: 20 }, (_, i) => ({ entity_id: `w-${i}`, event_type: 'seen' }));
  assert.equal((await call(stack.url, 'POST', `/api/v1/chains/${CHAIN}/events/batch`, { events })).status, 200);
});

after(async () => {
  await witness?.stop();
  await stopAndRemove(stack);
  removeDir(witnessDir);
});

describe('witnessed checkpoints', () => {
  it('the stream sends new checkpoints to the witness, and /tlog serves them cosigned', async () => {
    const note = await until('a cosigned checkpoint of 21 blocks', async () => {
      const text = await served();
      return text.includes('\n21\n') && text.includes('\u2014 witness.local/w1 ') ? text : undefined;
    });
    const lines = note.split('\n\n')[1]!.trim().split('\n');
    assert.equal(lines.length, 2, 'the log signature and the witness cosignature');
    // The witness persisted what it cosigned.
    const origin = note.split('\n')[0]!;
    const state = JSON.parse(readFileSync(`${witnessDir}/origins/${createHash('sha256').update(origin).digest('hex')}.json`, 'utf8'));
    assert.deepEqual([state.origin, state.size], [origin, 21]);
  });

  it("Go's x/mod note.Open verifies the log's signature on a cosigned checkpoint, and the tiles audit", async () => {
    const checker = await buildTlogCheck();
    const { code, result, stderr } = await runTlogCheck(checker, ['-url', stack.url, '-chain', CHAIN]);
    assert.equal(code, 0, stderr);
    assert.ok(Number(result?.tree_size) >= 21);
  });

  it('a client that requires the witness gets appends and reads proven in cosigned checkpoints', async () => {
    const client = new LedgerClient({ baseUrl: stack.url, witnesses: { keys: [witness.vkey], required: 1 } });
    const receipt = await client.append(CHAIN, { entity_id: 'w-new', event_type: 'witnessed' });
    assert.equal(receipt.verified, true);
    assert.ok(receipt.checkpoint!.size > receipt.block!.index);
    assert.match(receipt.checkpoint!.note, /\u2014 witness\.local\/w1 /);
    assert.equal((await client.block(CHAIN, 3)).index, 3);
    const page = await client.blocks(CHAIN, { limit: 5, order: 'desc' });
    assert.equal(page.blocks.length, 5);
  });

  it('a known_size past the chain is answered at once (no consistency proof), and a client that trusted it sees the rollback, not endless 503s', async () => {
    // The red-team request: witnessed=true with a trusted size the log never reached answered 503 "retry later".
    await until('a cosigned checkpoint', async () => ((await served()).includes('\u2014 witness.local/w1 ') ? true : undefined));
    const res = await call(stack.url, 'GET', `/api/v1/chains/${CHAIN}/evidence?witnessed=true&known_size=100000`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.consistency, null);
    assert.ok(res.body.tree_size >= 21 && res.body.tree_size < 100000);
    assert.match(res.body.checkpoint, /\u2014 witness\.local\/w1 /);
    // A client whose saved state claims that size (a rolled-back log, to it) is told so, not 503 after 503.
    const store = new MemoryStore();
    const origin = `${logVkey.split('+')[0]}/${CHAIN}`;
    await store.set(`log:${origin}`, JSON.stringify({ origin, size: 100000, root: Buffer.alloc(32, 7).toString('base64'), checkpoint: '' }));
    const client = new LedgerClient({ baseUrl: stack.url, vkey: logVkey, store, witnesses: { keys: [witness.vkey], required: 1 } });
    await assert.rejects(client.append(CHAIN, { entity_id: 'w-rollback', event_type: 'witnessed' }), (error: unknown) => {
      assert.ok(error instanceof VerificationError, String(error));
      assert.equal(error.failure, 'rollback');
      assert.match(error.appended!.event_ids[0]!, new RegExp(`^${CHAIN}_\\d+_0$`), 'the append landed: the error says where');
      return true;
    });
  });

  it('/metrics shows per witness the last size cosigned and the failures', async () => {
    const text = (await call(stack.url, 'GET', '/metrics')).text;
    const size = Number(/^witness_last_cosigned_size\{witness="witness\.local\/w1"\} (\d+)$/m.exec(text)?.[1]);
    assert.ok(
      size >= 21,
      text
        .split('\n')
        .filter((l) => l.startsWith('witness'))
        .join('\n'),
    );
    assert.match(text, /^witness_cosignatures_total\{witness="witness\.local\/w1"\} [1-9]\d*$/m);
    assert.match(text, /^witness_failures_total\{witness="witness\.local\/w1"\} \d+$/m);
  });

  it('a witness that is down delays nothing else; clients that require it are told, and it catches up when back', async () => {
    await witness.stop();
    const failuresBefore = Number(
      /^witness_failures_total\{witness="witness\.local\/w1"\} (\d+)$/m.exec((await call(stack.url, 'GET', '/metrics')).text)?.[1] ?? 0,
    );
    const started = Date.now();
    for (let i = 0; i < 5; i += 1) {
      assert.equal((await call(stack.url, 'POST', `/api/v1/chains/${CHAIN}/events`, { entity_id: 'down', event_type: 'still' })).status, 200);
    }
    const plainMs = Date.now() - started;
    assert.ok(plainMs < 5_000, `5 appends took ${plainMs} ms with the witness down`);
    const strict = new LedgerClient({ baseUrl: stack.url, witnesses: { keys: [witness.vkey] }, retry: { attempts: 2 } });
    let unproven: ApiError | undefined;
    await assert.rejects(strict.append(CHAIN, { entity_id: 'down', event_type: 'strict' }), (error: unknown) => {
      assert.ok(error instanceof ApiError, String(error));
      assert.equal(error.status, 503);
      assert.match(String(error.detail), /witnesses cosigned/);
      unproven = error;
      return true;
    });
    // The append itself landed; only its proof is missing: the error says so, with what to retry with.
    const appended = unproven!.appended!;
    assert.equal(appended.chain, CHAIN);
    assert.equal(appended.event_ids.length, 1);
    const index = Number(/_(\d+)_0$/.exec(appended.event_ids[0]!)![1]);
    const landed = await call(stack.url, 'GET', `/api/v1/chains/${CHAIN}/blocks/${index}`);
    assert.equal(landed.status, 200, landed.text);
    assert.equal(landed.body.events[0].event_type, 'strict');
    // An expected, retried 503 is not logged as a failure with a stack trace (it is an info line).
    assert.doesNotMatch(stack.output(), /NotWitnessedYetError|"message":"request failed"/);
    await until('the failures counted', async () => {
      const failures = Number(
        /^witness_failures_total\{witness="witness\.local\/w1"\} (\d+)$/m.exec((await call(stack.url, 'GET', '/metrics')).text)?.[1] ?? 0,
      );
      return failures > failuresBefore ? failures : undefined;
    });

    witness = await startWitness({ dir: witnessDir, logs: [logVkey], port: witnessPort });
    const receipt = await strict.append(CHAIN, { entity_id: 'back', event_type: 'witnessed' });
    assert.match(receipt.checkpoint!.note, /\u2014 witness\.local\/w1 /);
    // The unproven append, sent again with its key: nothing more is appended, and now it is proven.
    const again = await strict.append(CHAIN, { entity_id: 'down', event_type: 'strict' }, { idempotencyKey: appended.idempotency_key });
    assert.equal(again.event_id, appended.event_ids[0]);
    assert.equal(again.verified, true);
  });
});

describe('npm run witness on its own', () => {
  it('answers --help with its usage, and an unknown option with the usage too, never a stack trace', () => {
    const run = (...args: string[]) => spawnSync(process.execPath, ['bin/run.mjs', 'infra/witness/main.ts', ...args], { encoding: 'utf8', timeout: 60_000 });
    const help = run('--help');
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage: npm run witness -- --log <log vkey>/);
    assert.match(help.stdout, /--print-vkey/);
    const wrong = run('--nope');
    assert.equal(wrong.status, 2);
    assert.match(wrong.stderr, /Unknown option '--nope'[\s\S]*Usage: npm run witness/);
    assert.doesNotMatch(wrong.stderr, /\n\s+at /, 'no stack trace');
  });

  it('stops when `npm run witness` itself is sent SIGTERM (as `kill %1` does), its kept-alive connections and all', async () => {
    // npm runs it under `sh -c`, and the shell does not pass the signal on: the witness had kept serving on its port.
    const dir = tempDataDir('witness-npm');
    const port = await freePort();
    const started = startNpmCommand([
      'run',
      '--silent',
      'witness',
      '--',
      '--dir',
      dir,
      '--port',
      String(port),
      '--log',
      verifierKey('npm.test/log', '00'.repeat(32)),
    ]);
    try {
      assert.match(await started.waitFor(/witness ready at/, 30_000), /witness ready at http:\/\/127\.0\.0\.1:\d+/);
      // A client holding a kept-alive connection open, as the service's submissions do.
      const agent = new Agent({ keepAlive: true });
      await new Promise<void>((resolve, reject) =>
        request({ host: '127.0.0.1', port, path: '/', agent }, (res) => res.resume().on('end', resolve))
          .on('error', reject)
          .end(),
      );
      started.npm.kill('SIGTERM');
      const refused = async () =>
        fetch(`http://127.0.0.1:${port}/`).then(
          () => false,
          () => true,
        );
      const gone = Date.now() + 5_000;
      while (!(await refused()) && Date.now() < gone) await new Promise((r) => setTimeout(r, 100));
      agent.destroy();
      assert.ok(await refused(), `the witness still serves on ${port} after npm was stopped`);
    } finally {
      started.stopGroup();
      removeDir(dir);
    }
  });

  it('refuses a second root for the size it holds, 0 included (409 with that size), and a log past --max-origins (507)', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');
    const name = 'attacker.test/log';
    const note = (origin: string, size: number, root: Buffer) => signNote(checkpointText({ origin, size, root }), name, pub, (m) => sign(null, m, privateKey));
    const dir = tempDataDir('witness-alone');
    const alone = await startWitness({ dir, logs: [verifierKey(name, pub)], args: ['--max-origins', '1'] });
    try {
      const add = async (body: string) => {
        const res = await fetch(`${alone.url}/add-checkpoint`, { method: 'POST', body });
        return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
      };
      // The red-team requests: "old 0" and a size-0 checkpoint with root 0x01…, then 0x02….
      const first = await add(`old 0\n\n${note(`${name}/x`, 0, Buffer.alloc(32, 1))}`);
      assert.equal(first.status, 200, first.body);
      assert.deepEqual(await add(`old 0\n\n${note(`${name}/x`, 0, Buffer.alloc(32, 2))}`), { status: 409, type: 'text/x.tlog.size', body: '0\n' });
      const other = await add(`old 0\n\n${note(`${name}/y`, 3, Buffer.alloc(32, 3))}`);
      assert.equal(other.status, 507, other.body);
    } finally {
      await alone.stop();
      removeDir(dir);
    }
  });

  it("serves its logs first: a flood of replays from another address costs no write and leaves a log's own submission its 3 s; that address is limited; new logs come at a bounded rate (red team)", async () => {
    // 2,000 replays of the current checkpoint (each an fsync'd write) had pushed a real submission to 3.2 s, past
    // the service's 3 s witness timeout; and any writer could fill --max-origins with new chains.
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');
    const name = 'flooded.test/log';
    const leaves = Array.from({ length: 12 }, (_, i) => leafHash(Buffer.from(`leaf ${i}`)));
    const tree = nodesFromLeafHashes(leaves);
    const note = (origin: string, size: number) =>
      signNote(checkpointText({ origin, size, root: rootFromLeafHashes(leaves.slice(0, size)) }), name, pub, (m) => sign(null, m, privateKey));
    const dir = tempDataDir('witness-flood');
    const alone = await startWitness({ dir, logs: [verifierKey(name, pub)], args: ['--requests-per-minute', '500', '--new-origins-per-minute', '2'] });
    const { port } = new URL(alone.url);
    // One request, from a chosen loopback address (the flood's is 127.0.0.2, the log's own 127.0.0.1).
    const agent = new Agent({ keepAlive: true, maxSockets: 50 });
    const post = (body: string, from: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/add-checkpoint', method: 'POST', localAddress: from, agent }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    try {
      const origin = `${name}/main`;
      const firstNewAt = Date.now();
      assert.equal((await post(`old 0\n\n${note(origin, 4)}`, '127.0.0.1')).status, 200);
      const replay = `old 4\n\n${note(origin, 4)}`;
      const statuses: Record<number, number> = {};
      // The limit is a fixed window a minute: a flood that crosses a minute's end is allowed a window's worth more.
      const floodFrom = Date.now();
      let floodTo = floodFrom;
      const flood = (async () => {
        for (let i = 0; i < 2_000; i += 50) {
          for (const res of await Promise.all(Array.from({ length: 50 }, () => post(replay, '127.0.0.2'))))
            statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        }
        floodTo = Date.now();
      })();
      await new Promise((r) => setTimeout(r, 100));
      const started = performance.now();
      const proof = consistencyProof(4, 10, tree).map((h) => h.toString('base64'));
      const grown = await post(`old 4\n${proof.join('\n')}\n\n${note(origin, 10)}`, '127.0.0.1');
      const tookMs = performance.now() - started;
      await flood;
      assert.equal(grown.status, 200, grown.body);
      assert.ok(tookMs < 3_000, `the log's own submission took ${Math.round(tookMs)} ms under the flood`);
      assert.equal((statuses[200] ?? 0) + (statuses[409] ?? 0) + (statuses[429] ?? 0), 2_000, JSON.stringify(statuses));
      const windows = Math.floor(floodTo / 60_000) - Math.floor(floodFrom / 60_000) + 1;
      assert.ok((statuses[429] ?? 0) >= 2_000 - 500 * windows, `the flooding address was limited (${windows} minute windows): ${JSON.stringify(statuses)}`);
      assert.equal((await post(`old 10\n\n${note(origin, 10)}`, '127.0.0.1')).status, 200, 'the log itself is still served');
      // New logs: two a minute here (`main` was the first), then 429. The limit is a fixed window a minute: a minute's
      // end since `main` allows two more (a CI run crossed one and had its second new log answered 200).
      let admitted = 1;
      let refusedNew: { status: number; body: string } | undefined;
      for (let n = 1; n <= 6 && !refusedNew; n += 1) {
        const res = await post(`old 0\n\n${note(`${name}/n${n}`, 1)}`, '127.0.0.1');
        if (res.status === 200) admitted += 1;
        else refusedNew = res;
      }
      const newWindows = Math.floor(Date.now() / 60_000) - Math.floor(firstNewAt / 60_000) + 1;
      assert.equal(refusedNew?.status, 429, refusedNew?.body);
      assert.match(refusedNew!.body, /at most 2 new logs a minute/);
      assert.ok(admitted <= 2 * newWindows, `${admitted} new logs admitted in ${newWindows} minute windows`);
    } finally {
      agent.destroy();
      await alone.stop();
      removeDir(dir);
    }
  });
});
