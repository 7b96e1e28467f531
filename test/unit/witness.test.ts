/**
 * The witness (infra/witness/witness.ts) against C2SP tlog-witness, "add-checkpoint", one rule per test,
 * quoted; the spec's example request body is the parsing vector. Cosignatures are checked the way a log
 * and a client check them: C2SP tlog-cosignature `cosignature/v1` (the client's own verifier).
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openNote as clientOpenNote, parseVkey, verifiedCosigners } from '#client/tlog';
import { consistencyProof, leafHash, nodesFromLeafHashes, rootFromLeafHashes } from '#shared/ledger/merkle';
import { checkpointText, signNote, verifierKey } from '#shared/tlog/note';
import { fileWitnessStore } from '#infra/witness/store';
import { type CosignedState, type WitnessStore, cosignerVkey, createWitness, trustedLog } from '#infra/witness/witness';

function ed25519() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { pub: publicKey.export({ format: 'der', type: 'spki' }).subarray(-32), sign: (m: Uint8Array) => sign(null, m, privateKey) };
}

const LOG = ed25519();
const LOG_NAME = 'ledger.test/node-1';
const LOG_VKEY = verifierKey(LOG_NAME, LOG.pub.toString('hex'));
const leaves = Array.from({ length: 40 }, (_, i) => leafHash(Buffer.from(`block ${i}`)));
const node = nodesFromLeafHashes(leaves);

function checkpoint(size: number, { origin = `${LOG_NAME}/orders`, signer = LOG, root = rootFromLeafHashes(leaves.slice(0, size)) } = {}) {
  const text = checkpointText({ origin, size, root });
  return { text, note: signNote(text, LOG_NAME, signer.pub.toString('hex'), signer.sign) };
}

function request(oldSize: number, note: string, proof: Buffer[] = []): string {
  return `old ${oldSize}\n${proof.map((p) => `${p.toString('base64')}\n`).join('')}\n${note}`;
}

function witness({
  store,
  maxOrigins,
  newOriginsPerMinute,
  now = () => 1_790_000_000_000,
}: {
  store?: WitnessStore;
  maxOrigins?: number;
  newOriginsPerMinute?: number;
  now?: () => number;
} = {}) {
  const key = ed25519();
  const states = new Map<string, CosignedState>();
  const w = createWitness({
    key: { name: 'witness.test/w1', publicKey: key.pub, sign: key.sign },
    logs: [trustedLog(LOG_VKEY)],
    store: store ?? {
      get: async (o) => states.get(o),
      set: async (o, s) => void states.set(o, s),
      count: async () => states.size,
    },
    now,
    ...(maxOrigins === undefined ? {} : { maxOrigins }),
    ...(newOriginsPerMinute === undefined ? {} : { newOriginsPerMinute }),
  });
  return { w, states, vkey: cosignerVkey({ name: 'witness.test/w1', publicKey: key.pub }) };
}

describe('C2SP tlog-witness, add-checkpoint', () => {
  it('"If all the checks above pass, the witness MUST update its record … and respond with 200": a cosignature/v1 line that verifies', async () => {
    const { w, states, vkey } = witness();
    const first = checkpoint(10);
    const answer = await w.addCheckpoint(request(0, first.note));
    assert.equal(answer.status, 200, answer.body);
    assert.match(answer.body, /^\u2014 witness\.test\/w1 [A-Za-z0-9+/=]+\n$/);
    assert.deepEqual(states.get(`${LOG_NAME}/orders`), { size: 10, root: rootFromLeafHashes(leaves.slice(0, 10)).toString('base64') });
    // "the client MAY concatenate it to the checkpoint, and use a note verification function configured with the witness keys"
    const opened = clientOpenNote(first.note + answer.body, parseVkey(LOG_VKEY));
    assert.deepEqual(
      verifiedCosigners(opened.text, opened.signatures, [parseVkey(vkey)]).map((k) => k.name),
      ['witness.test/w1'],
    );
    // Then a consistent extension, with the proof from the cosigned size.
    const second = await w.addCheckpoint(request(10, checkpoint(25).note, consistencyProof(10, 25, node)));
    assert.equal(second.status, 200, second.body);
    assert.equal(states.get(`${LOG_NAME}/orders`)?.size, 25);
  });

  it('"If the checkpoint origin is unknown, the witness MUST respond with 404" (the spec\'s example body)', async () => {
    const { w } = witness();
    const example =
      'old 20852014\nPlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\njrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=\n5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=\n/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=\n\n' +
      'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n' +
      '\u2014 example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n' +
      '\u2014 example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=\n';
    assert.equal((await w.addCheckpoint(example)).status, 404);
  });

  it('"If none of the signatures verify against a trusted public key, the witness MUST respond with 403"', async () => {
    const { w } = witness();
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10, { signer: ed25519() }).note))).status, 403);
  });

  it('"The old size MUST be equal to or lower than the checkpoint size. Otherwise … 400"', async () => {
    const { w } = witness();
    assert.equal((await w.addCheckpoint(request(11, checkpoint(10).note))).status, 400);
    assert.equal((await w.addCheckpoint(`old 01\n\n${checkpoint(10).note}`)).status, 400, 'no leading zeros');
    assert.equal((await w.addCheckpoint(`old 0\n${'AAAA\n'}\n${checkpoint(10).note}`)).status, 400, 'a proof line is a base64 hash');
  });

  it('"The client MUST NOT send more than 63 consistency proof lines": more is refused', async () => {
    const { w } = witness();
    const proof = Array.from({ length: 64 }, () => Buffer.alloc(32));
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note, proof))).status, 400);
  });

  it('"If it doesn\'t match [the latest cosigned size] … 409 Conflict … the tree size of the latest cosigned checkpoint … text/x.tlog.size"', async () => {
    const { w } = witness();
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note))).status, 200);
    const answer = await w.addCheckpoint(request(5, checkpoint(20).note, consistencyProof(5, 20, node)));
    assert.deepEqual(answer, { status: 409, contentType: 'text/x.tlog.size', body: '10\n' });
    // A rollback: an old size of 0 again.
    assert.equal((await w.addCheckpoint(request(0, checkpoint(5).note))).status, 409);
  });

  it('"If the old size matches the checkpoint size, … the root hashes … If they don\'t match … 409"', async () => {
    const { w } = witness();
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note))).status, 200);
    assert.equal((await w.addCheckpoint(request(10, checkpoint(10).note))).status, 200, 'the same tree again is cosigned');
    const other = checkpoint(10, { root: Buffer.alloc(32, 9) });
    assert.equal((await w.addCheckpoint(request(10, other.note))).status, 409);
  });

  it('the same rule holds at size 0: two roots for an empty tree are never both cosigned (409 with the size it holds)', async () => {
    // The red-team request: "old 0" and a size-0 checkpoint, twice, with two roots.
    const { w, states } = witness();
    const first = await w.addCheckpoint(request(0, checkpoint(0, { root: Buffer.alloc(32, 1) }).note));
    assert.equal(first.status, 200, first.body);
    const second = await w.addCheckpoint(request(0, checkpoint(0, { root: Buffer.alloc(32, 2) }).note));
    assert.deepEqual(second, { status: 409, contentType: 'text/x.tlog.size', body: '0\n' });
    assert.equal(states.get(`${LOG_NAME}/orders`)?.root, Buffer.alloc(32, 1).toString('base64'), 'the first root is kept');
    assert.equal((await w.addCheckpoint(request(0, checkpoint(0, { root: Buffer.alloc(32, 1) }).note))).status, 200, 'the same one again is fine');
    // From size 0 the tree grows with an empty proof, as from no state at all.
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note))).status, 200);
  });

  it('"If the Merkle Consistency Proof doesn\'t verify, the witness MUST respond with 422" and cosigns nothing', async () => {
    const { w, states } = witness();
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note))).status, 200);
    // A forked tree of 20: block 3 rewritten. Its proof from 10 cannot match the cosigned root.
    const forked = leaves.map((l, i) => (i === 3 ? leafHash(Buffer.from('forged')) : l));
    const forkedNode = nodesFromLeafHashes(forked);
    const fork = checkpoint(20, { root: rootFromLeafHashes(forked.slice(0, 20)) });
    assert.equal((await w.addCheckpoint(request(10, fork.note, consistencyProof(10, 20, forkedNode)))).status, 422);
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note, [Buffer.alloc(32)]))).status, 409);
    assert.equal(states.get(`${LOG_NAME}/orders`)?.size, 10);
  });

  it('"checking the old size … and persisting the new checkpoint must be performed atomically": of two racing extensions from one size, one wins', async () => {
    const { w, states } = witness();
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note))).status, 200);
    const [a, b] = await Promise.all([
      w.addCheckpoint(request(10, checkpoint(30).note, consistencyProof(10, 30, node))),
      w.addCheckpoint(request(10, checkpoint(20).note, consistencyProof(10, 20, node))),
    ]);
    assert.deepEqual([a.status, b.status], [200, 409]);
    assert.equal(states.get(`${LOG_NAME}/orders`)?.size, 30, 'no rollback to 20');
  });

  it('keeps each origin apart: the chains of one log are separate logs', async () => {
    const { w, states } = witness();
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note))).status, 200);
    assert.equal((await w.addCheckpoint(request(0, checkpoint(4, { origin: `${LOG_NAME}/invoices` }).note))).status, 200);
    assert.deepEqual([...states.keys()].sort(), [`${LOG_NAME}/invoices`, `${LOG_NAME}/orders`]);
    assert.equal((await w.addCheckpoint(request(0, checkpoint(4, { origin: 'other.test/orders' }).note))).status, 404);
  });

  it('keeps at most maxOrigins logs: a new origin past it is refused with 507, the ones it holds go on', async () => {
    const { w, states } = witness({ maxOrigins: 2 });
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note))).status, 200);
    assert.equal((await w.addCheckpoint(request(0, checkpoint(4, { origin: `${LOG_NAME}/a` }).note))).status, 200);
    const refused = await w.addCheckpoint(request(0, checkpoint(4, { origin: `${LOG_NAME}/b` }).note));
    assert.equal(refused.status, 507, refused.body);
    assert.match(refused.body, /at most 2 logs/);
    assert.equal(states.size, 2);
    assert.equal((await w.addCheckpoint(request(10, checkpoint(25).note, consistencyProof(10, 25, node)))).status, 200, 'a held origin still grows');
  });

  it('on disk, one file per origin, rewritten alone; a restart keeps every cosigned size and the count toward the cap', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'witness-store-'));
    try {
      // An earlier version's single state.json is moved into the per-origin files.
      writeFileSync(
        join(dir, 'state.json'),
        JSON.stringify({ [`${LOG_NAME}/old`]: { size: 3, root: rootFromLeafHashes(leaves.slice(0, 3)).toString('base64') } }),
      );
      const { w } = witness({ store: fileWitnessStore(dir), maxOrigins: 3 });
      assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note))).status, 200);
      assert.equal((await w.addCheckpoint(request(0, checkpoint(4, { origin: `${LOG_NAME}/a` }).note))).status, 200);
      assert.deepEqual(readdirSync(dir).sort(), ['origins']);
      assert.equal(readdirSync(join(dir, 'origins')).length, 3);
      // A new process over the same directory.
      const again = witness({ store: fileWitnessStore(dir), maxOrigins: 3 }).w;
      assert.deepEqual(await again.addCheckpoint(request(0, checkpoint(10).note)), { status: 409, contentType: 'text/x.tlog.size', body: '10\n' });
      assert.deepEqual(await again.addCheckpoint(request(0, checkpoint(3, { origin: `${LOG_NAME}/old` }).note)), {
        status: 409,
        contentType: 'text/x.tlog.size',
        body: '3\n',
      });
      assert.equal((await again.addCheckpoint(request(0, checkpoint(4, { origin: `${LOG_NAME}/b` }).note))).status, 507);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('cosigns a replay of the checkpoint it holds from what it holds, with no write: a flood of replays costs no fsync (red team)', async () => {
    // 2,000 replays of the current checkpoint, each an fsync'd write, had pushed a real submission to 3.2 s.
    const states = new Map<string, CosignedState>();
    let writes = 0;
    const { w } = witness({
      store: {
        get: async (o) => states.get(o),
        set: async (o, st) => {
          writes += 1;
          states.set(o, st);
        },
        count: async () => states.size,
      },
    });
    const held = checkpoint(10).note;
    assert.equal((await w.addCheckpoint(request(0, held))).status, 200);
    const replays = await Promise.all(Array.from({ length: 200 }, () => w.addCheckpoint(request(10, held))));
    assert.ok(replays.every((a) => a.status === 200 && a.body.startsWith('\u2014 witness.test/w1 ')));
    assert.equal(writes, 1, 'only the first checkpoint was written');
    assert.equal((await w.addCheckpoint(request(10, checkpoint(25).note, consistencyProof(10, 25, node)))).status, 200, 'the log goes on');
    assert.equal(writes, 2);
  });

  it("keeps each origin's checks and writes atomic, and no origin waiting on another's (a slow write holds its own log only)", async () => {
    const states = new Map<string, CosignedState>();
    let release: () => void = () => {};
    const slow = new Promise<void>((done) => (release = done));
    const { w } = witness({
      store: {
        get: async (o) => states.get(o),
        set: async (o, st) => {
          if (o.endsWith('/slow')) await slow;
          states.set(o, st);
        },
        count: async () => states.size,
      },
    });
    const held = w.addCheckpoint(request(0, checkpoint(4, { origin: `${LOG_NAME}/slow` }).note));
    const queued = w.addCheckpoint(request(0, checkpoint(5, { origin: `${LOG_NAME}/slow` }).note));
    assert.equal((await w.addCheckpoint(request(0, checkpoint(10).note))).status, 200, 'another log is cosigned meanwhile');
    release();
    assert.equal((await held).status, 200);
    assert.deepEqual(await queued, { status: 409, contentType: 'text/x.tlog.size', body: '4\n' }, 'the second, from the same old size, lost');
  });

  it('admits new logs at a bounded rate (429 past newOriginsPerMinute), while the logs it holds go on; the next minute, more (red team)', async () => {
    // Any writer of a trusted log can create chains without limit, each an origin: it had filled --max-origins.
    let t = 1_790_000_000_000;
    const { w } = witness({ newOriginsPerMinute: 2, now: () => t });
    const add = (origin: string) => w.addCheckpoint(request(0, checkpoint(4, { origin: `${LOG_NAME}/${origin}` }).note));
    assert.equal((await add('a')).status, 200);
    assert.equal((await add('b')).status, 200);
    const refused = await add('c');
    assert.equal(refused.status, 429, refused.body);
    assert.match(refused.body, /at most 2 new logs a minute/);
    assert.equal((await w.addCheckpoint(request(4, checkpoint(4, { origin: `${LOG_NAME}/a` }).note))).status, 200, 'a held log is answered');
    t += 60_000;
    assert.equal((await add('c')).status, 200);
  });

  it('when full, refuses a new log (507) and forgets none to make room: a log idle for a year still refuses a fork of itself (red team)', async () => {
    // A full witness had forgotten the log idle longest for a new one: the forgotten log was then new to it, and a
    // fork of it was cosigned from size 0 once a log operator's new chains had filled the witness.
    const dir = mkdtempSync(join(tmpdir(), 'witness-full-'));
    try {
      const t = Date.now();
      const { w } = witness({ store: fileWitnessStore(dir), maxOrigins: 2, now: () => t });
      const add = (origin: string, opts: { root?: Buffer } = {}) =>
        w.addCheckpoint(request(0, checkpoint(4, { origin: `${LOG_NAME}/${origin}`, ...opts }).note));
      assert.equal((await add('quiet')).status, 200);
      assert.equal((await add('busy')).status, 200);
      for (const name of readdirSync(join(dir, 'origins'))) {
        const longAgo = new Date(t - 365 * 24 * 3_600_000);
        utimesSync(join(dir, 'origins', name), longAgo, longAgo);
      }
      const refused = await add('new');
      assert.equal(refused.status, 507, refused.body);
      assert.match(refused.body, /at most 2 logs \(--max-origins\)/);
      assert.deepEqual(await add('quiet', { root: Buffer.alloc(32, 7) }), { status: 409, contentType: 'text/x.tlog.size', body: '4\n' }, 'the fork is refused');
      assert.equal(readdirSync(join(dir, 'origins')).length, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('its vkey is a cosigner key (type 0x04) whose id is SHA-256(name ‖ "\\n" ‖ 0x04 ‖ key)[:4]', () => {
    const key = ed25519();
    const vkey = cosignerVkey({ name: 'w.test/a', publicKey: key.pub });
    const id = createHash('sha256')
      .update(Buffer.concat([Buffer.from('w.test/a\n'), Buffer.from([4]), key.pub]))
      .digest()
      .subarray(0, 4);
    assert.equal(vkey, `w.test/a+${id.toString('hex')}+${Buffer.concat([Buffer.from([4]), key.pub]).toString('base64')}`);
    assert.equal(parseVkey(vkey).type, 4);
  });
});
