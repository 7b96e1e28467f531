/**
 * The client's checks (client/src/tlog.ts, blocks.ts), offline: its Merkle verification agrees with the
 * service's (itself checked against the peer vectors in merkle.test.ts) on every leaf and size pair of
 * small trees and refuses every corruption; it opens the notes the service signs, and C2SP cosignatures
 * (tlog-cosignature: `cosignature/v1`, key id type 0x04, timestamp ‖ signature); and it hashes blocks as
 * the service does, erasable events included. Also: the generated types match the routes.
 */
import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { computeBlockHash } from '#client/blocks';
import { FileStore } from '#client/file-store';
import { LedgerClient } from '#client/client';
import { cosignerVkey } from '#infra/witness/witness';
import { nativeSha256, portableSha256 } from '#client/sha256';
import { VerificationError } from '#client/errors';
import {
  cosignedMessage,
  fromBase64,
  fromHex,
  keyId,
  leafHash as clientLeafHash,
  openNote,
  parseCheckpoint,
  parseVkey,
  toBase64,
  verifiedCosigners,
  verifyConsistency,
  verifyInclusion,
} from '#client/tlog';
import { SCHEMA_FILE, generateSchema } from '../../client/scripts/generate.ts';
import { hashBlock, sealBlock } from '#shared/ledger/hashing';
import {
  consistencyProof,
  inclusionProof,
  leafHash,
  nodesFromLeafHashes,
  rootFromLeafHashes,
  verifyConsistency as serviceVerifyConsistency,
  verifyInclusion as serviceVerifyInclusion,
} from '#shared/ledger/merkle';
import { checkpointText, signNote, verifierKey } from '#shared/tlog/note';

function tree(size: number) {
  const leaves = Array.from({ length: size }, (_, i) => leafHash(Buffer.from(`leaf ${i}`)));
  const node = nodesFromLeafHashes(leaves);
  const root = (n: number) => rootFromLeafHashes(leaves.slice(0, n));
  return { leaves, node, root };
}

const failure = (fn: () => void) => {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof VerificationError, `expected a VerificationError, got ${error}`);
    return error.failure;
  }
  assert.fail('expected the check to fail');
};

function ed25519Key() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return { pub, sign: (bytes: Uint8Array) => sign(null, bytes, privateKey) };
}

describe('client Merkle checks agree with the service', () => {
  it('every inclusion proof of trees of 1 to 40 leaves verifies, and a flipped bit or a wrong index does not', () => {
    const { leaves, node, root } = tree(40);
    for (let size = 1; size <= 40; size += 1) {
      for (let index = 0; index < size; index += 1) {
        const proof = inclusionProof(index, size, node);
        verifyInclusion(index, size, leaves[index]!, proof, root(size));
        if (proof.length > 0) {
          const bad = proof.map((p) => Buffer.from(p));
          bad[0]![0]! ^= 1;
          assert.equal(
            failure(() => verifyInclusion(index, size, leaves[index]!, bad, root(size))),
            'inclusion',
          );
        }
        if (size > 1)
          assert.equal(
            failure(() => verifyInclusion((index + 1) % size, size, leaves[index]!, proof, root(size))),
            'inclusion',
          );
      }
    }
  });

  it('every consistency proof between sizes 1…33 verifies; a proof against another old root does not', () => {
    const { node, root } = tree(33);
    for (let second = 1; second <= 33; second += 1) {
      for (let first = 1; first <= second; first += 1) {
        const proof = consistencyProof(first, second, node);
        verifyConsistency(first, second, proof, root(first), root(second));
        if (first < second) {
          const otherRoot = Buffer.from(root(first));
          otherRoot[5]! ^= 1;
          assert.equal(
            failure(() => verifyConsistency(first, second, proof, otherRoot, root(second))),
            'consistency',
          );
        }
      }
    }
    // Past 32 bits (red team): 3 x 2^31 blocks is no power of two, though its low 32 bits read as one. The proof
    // from it to 2^33 is [A, B, C] (RFC 6962 2.1.2), whatever the subtree roots A, B and C are.
    const [A, B, C] = [randomBytes(32), randomBytes(32), randomBytes(32)];
    const inner = (l: Uint8Array, r: Uint8Array) =>
      createHash('sha256')
        .update(Buffer.from([1]))
        .update(l)
        .update(r)
        .digest();
    verifyConsistency(3 * 2 ** 31, 2 ** 33, [A, B, C], inner(C, A), inner(C, inner(A, B)));
    // A tree that shrank, and one size with two roots.
    assert.equal(
      failure(() => verifyConsistency(5, 4, [], root(5), root(4))),
      'consistency',
    );
    assert.equal(
      failure(() => verifyConsistency(5, 5, [], root(5), root(6))),
      'consistency',
    );
  });

  it('leaf hashes are the same bytes', () => {
    const leaf = Buffer.from('abc');
    assert.deepEqual(Buffer.from(clientLeafHash(leaf)), leafHash(leaf));
  });
});

describe('client note checks (c2sp.org/signed-note, tlog-checkpoint, tlog-cosignature)', () => {
  const log = ed25519Key();
  const name = 'ledger.example/node-1';
  const vkey = verifierKey(name, log.pub.toString('hex'));
  const text = checkpointText({ origin: `${name}/orders`, size: 42, root: Buffer.alloc(32, 7) });
  const note = signNote(text, name, log.pub.toString('hex'), log.sign);

  it('opens a checkpoint the service signs, and parses it', () => {
    const opened = openNote(note, parseVkey(vkey));
    assert.equal(opened.text, text);
    assert.deepEqual(parseCheckpoint(opened.text), { origin: `${name}/orders`, size: 42, root: new Uint8Array(32).fill(7) });
  });

  it('refuses a note signed by another key under the same name, a changed text, and no signature', () => {
    const other = ed25519Key();
    assert.equal(
      failure(() => openNote(signNote(text, name, other.pub.toString('hex'), other.sign), parseVkey(vkey))),
      'signature',
    );
    assert.equal(
      failure(() => openNote(note.replace('\n42\n', '\n43\n'), parseVkey(vkey))),
      'signature',
    );
    assert.equal(
      failure(() => openNote(text, parseVkey(vkey))),
      'signature',
    );
  });

  it('verifies cosignature/v1 lines: the spec example message, key id type 0x04, timestamp then signature', () => {
    // tlog-cosignature, "Ed25519 signed message": the message for the spec's example checkpoint.
    const example = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';
    assert.equal(
      new TextDecoder().decode(cosignedMessage(example, 1679315147n)),
      'cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n',
    );
    const witness = ed25519Key();
    const witnessName = 'witness.example/w1';
    const witnessVkey = `${witnessName}+${Buffer.from(keyId(witnessName, 0x04, witness.pub)).toString('hex')}+${toBase64(Buffer.concat([Buffer.from([0x04]), witness.pub]))}`;
    const time = Buffer.alloc(8);
    time.writeBigUInt64BE(1_790_000_000n);
    const signature = witness.sign(cosignedMessage(text, 1_790_000_000n));
    const line = `\u2014 ${witnessName} ${toBase64(Buffer.concat([Buffer.from(keyId(witnessName, 0x04, witness.pub)), time, signature]))}\n`;
    const cosigned = note + line;
    const opened = openNote(cosigned, parseVkey(vkey));
    assert.deepEqual(
      verifiedCosigners(opened.text, opened.signatures, [parseVkey(witnessVkey)]).map((k) => k.name),
      [witnessName],
    );
    // A cosignature over another time (the signed message commits to it) fails.
    const forged = `\u2014 ${witnessName} ${toBase64(Buffer.concat([Buffer.from(keyId(witnessName, 0x04, witness.pub)), Buffer.alloc(8, 1), signature]))}\n`;
    const openedForged = openNote(note + forged, parseVkey(vkey));
    assert.equal(
      failure(() => verifiedCosigners(openedForged.text, openedForged.signatures, [parseVkey(witnessVkey)])),
      'witnesses',
    );
    // No line by the witness: no cosigner (the policy decides whether that is enough).
    assert.deepEqual(verifiedCosigners(opened.text, openNote(note, parseVkey(vkey)).signatures, [parseVkey(witnessVkey)]), []);
  });
});

describe('client checks against weak keys and loose numbers (red team, 2026-12-07)', () => {
  const P = 2n ** 255n - 19n;
  const encode = (y: bigint, signBit = 0) => {
    const bytes = Buffer.alloc(32);
    for (let i = 0, v = y; i < 32; i += 1, v >>= 8n) bytes[i] = Number(v & 0xffn);
    bytes[31] = (bytes[31]! & 0x7f) | (signBit << 7);
    return bytes;
  };
  const vkeyOf = (name: string, type: number, pub: Uint8Array) =>
    `${name}+${Buffer.from(keyId(name, type, pub)).toString('hex')}+${toBase64(Buffer.concat([Buffer.from([type]), pub]))}`;
  /** R the identity, S zero: under a small-order key @noble/curves' default (ZIP-215) verified it for any message. */
  const forged = Buffer.concat([Buffer.from([1]), Buffer.alloc(63)]);

  it("refuses a weak log or witness key (small order, or unreduced), so that nobody forges a checkpoint or a witness's cosignature", () => {
    const weak = [encode(1n), encode(1n, 1), encode(0n), encode(P - 1n), encode(P + 1n), encode(P)];
    for (const pub of weak) {
      for (const type of [0x01, 0x04])
        assert.throws(() => parseVkey(vkeyOf('weak.example/k', type, pub)), /weak Ed25519 key/, Buffer.from(pub).toString('hex'));
    }
    // Had the log's key been the identity, a checkpoint of any size and root opened under it.
    const name = 'ledger.example/main';
    const text = checkpointText({ origin: `${name}/main`, size: 1_000_000, root: Buffer.alloc(32, 9) });
    const id = keyId(name, 0x01, encode(1n));
    const note = `${text}\n\u2014 ${name} ${toBase64(Buffer.concat([Buffer.from(id), forged]))}\n`;
    const key = { name, id, type: 0x01, publicKey: new Uint8Array(encode(1n)), vkey: '' };
    assert.equal(
      failure(() => openNote(note, key)),
      'signature',
      'strict Ed25519 refuses the forgery even past parseVkey',
    );
    // Three spellings of small-order points were three witnesses of "3 of 3", each cosignature forged.
    const witnesses = [encode(1n), encode(1n, 1), encode(0n)].map((pub, i) => vkeyOf(`w${i}.example/w`, 0x04, pub));
    assert.throws(() => new LedgerClient({ baseUrl: 'http://127.0.0.1:9', witnesses: { keys: witnesses, required: 3 } }), /weak Ed25519 key/);
  });

  it('refuses indices and sizes that are not whole numbers, and a proof from the empty tree', () => {
    const { leaves, node, root: rootOf } = tree(7);
    const root = rootOf(7);
    const proof = inclusionProof(2, 7, node);
    verifyInclusion(2, 7, leaves[2]!, proof, root);
    assert.equal(
      failure(() => verifyInclusion(2.5, 7, leaves[2]!, proof, root)),
      'inclusion',
    );
    assert.equal(
      failure(() => verifyInclusion(2, 7.5, leaves[2]!, proof, root)),
      'inclusion',
    );
    const root3 = rootOf(3);
    const consistency = consistencyProof(3, 7, node);
    verifyConsistency(3, 7, consistency, root3, root);
    assert.equal(
      failure(() => verifyConsistency(3.5, 7, consistency, root3, root)),
      'consistency',
    );
    assert.equal(
      failure(() => verifyConsistency(0, 7, [Buffer.alloc(32, 1)], new Uint8Array(0), root)),
      'consistency',
    );
    // The service's own verifiers hold the same rules.
    assert.throws(() => serviceVerifyInclusion(2.5, 7, leaves[2]!, proof, root), /whole number/);
    assert.throws(() => serviceVerifyConsistency(3.5, 7, consistency, root3, root), /whole number/);
  });
});

describe('client decoding (strict: a proof or root in any other spelling is refused)', () => {
  it('decodes base64 and hex as Node does, every length and byte', () => {
    for (let n = 0; n < 70; n += 1) {
      const bytes = randomBytes(n);
      assert.deepEqual(fromBase64(bytes.toString('base64')), new Uint8Array(bytes));
      assert.deepEqual(fromHex(bytes.toString('hex')), new Uint8Array(bytes));
    }
  });

  it("hashes with Node's native SHA-256 here, as the portable one does (a browser's)", () => {
    assert.ok(nativeSha256, 'Node 20.16+ has process.getBuiltinModule');
    for (let n = 0; n < 130; n += 13) {
      const parts = [randomBytes(n), randomBytes(1), randomBytes(64)].map((b) => new Uint8Array(b));
      const expected = new Uint8Array(createHash('sha256').update(Buffer.concat(parts)).digest());
      assert.deepEqual(nativeSha256(...parts), expected);
      assert.deepEqual(portableSha256(...parts), expected);
      assert.deepEqual(portableSha256(parts[0]!), new Uint8Array(createHash('sha256').update(parts[0]!).digest()));
    }
  });

  it('refuses base64 that is not canonical, and hex that is not lowercase', () => {
    for (const bad of ['A', 'AA=', 'AAA', 'AB==', 'AAB=', 'A===', '====', 'AA==AA==', 'AA AA==', 'AA-_', 'AAé=', 'AAAA\n']) {
      assert.equal(fromBase64(bad), undefined, JSON.stringify(bad));
    }
    for (const bad of ['0', 'AB', '0g', 'zz', '0x00', 'é0']) assert.throws(() => fromHex(bad), TypeError, bad);
  });
});

describe('client block hashing', () => {
  it('hashes blocks as the service does, erasable events by what was stored', () => {
    const event = {
      event_id: 'orders_1_0',
      chain_name: 'orders',
      block_index: 1,
      entity_id: 'pkg-1',
      event_type: 'shipped',
      details: { carrier: 'ups', weights: [1.5, 2], ü: 'ß' },
      details_cid: null,
      details_nonce: null,
      details_metadata: null,
      timestamp: 1795291099.829,
      is_offchain: false,
    };
    const block = sealBlock({ index: 1, chain_name: 'orders', timestamp: 1795291099.829, previous_hash: 'a'.repeat(64), events: [event] });
    assert.equal(computeBlockHash(block), block.hash);
    assert.notEqual(computeBlockHash({ ...block, events: [{ ...event, details: { carrier: 'dhl' } }] }), block.hash);
    // Only an erasable event may be answered erased; no verified read asks for resolved details (red team: a server
    // marked ordinary events erased or unreadable, and they verified).
    assert.notEqual(computeBlockHash({ ...block, events: [{ ...event, erased: true }] }), block.hash);
    assert.notEqual(computeBlockHash({ ...block, events: [{ ...event, resolve_error: 'the payload cannot be read' }] }), block.hash);

    const erasable = { ...event, details: {}, subject_id: 'alice', details_sealed: 'c2VhbGVk' };
    const stored = sealBlock({ index: 1, chain_name: 'orders', timestamp: 1, previous_hash: 'a'.repeat(64), events: [erasable] });
    assert.equal(hashBlock(stored), stored.hash);
    // Answered opened, or erased: the same hash.
    assert.equal(computeBlockHash({ ...stored, events: [{ ...erasable, details: { name: 'Alice' } }] }), stored.hash);
    assert.equal(computeBlockHash({ ...stored, events: [{ ...erasable, details: null, erased: true }] }), stored.hash);
    assert.notEqual(computeBlockHash({ ...stored, events: [{ ...erasable, details_sealed: 'b3RoZXI=' }] }), stored.hash);
  });
});

describe("the client's witness policy", () => {
  it('counts a witness once however often its key is listed (red team: one cosignature met "2 of 2")', () => {
    const pub = createPublicKey(generateKeyPairSync('ed25519').privateKey).export({ format: 'der', type: 'spki' }).subarray(-32);
    const vkey = cosignerVkey({ name: 'witness.test/w1', publicKey: pub });
    const renamed = cosignerVkey({ name: 'witness.test/other', publicKey: pub });
    for (const keys of [
      [vkey, `${vkey} `],
      [vkey, renamed],
    ]) {
      assert.throws(() => new LedgerClient({ baseUrl: 'http://127.0.0.1:9', witnesses: { keys, required: 2 } }), /cannot require 2 of 1 witnesses/);
    }
    assert.ok(new LedgerClient({ baseUrl: 'http://127.0.0.1:9', witnesses: { keys: [vkey, `${vkey} `] } }), 'all of them: the one');
  });
});

describe("the client's state file (FileStore)", () => {
  it('is shared safely: each read sees the file, each change is made on the file as it is, one at a time across stores', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'file-store-'));
    try {
      const path = join(dir, 'state.json');
      const [a, b] = [new FileStore(path), new FileStore(path)];
      await b.set('log:x', '1');
      assert.equal(await a.get('log:x'), '1');
      await a.set('vkey', 'k');
      assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { 'log:x': '1', vkey: 'k' }, "b's value kept");
      // 2 × 40 increments through two stores at once: none lost.
      const bump = (store: FileStore) => store.update('n', (n) => String(Number(n ?? 0) + 1));
      await Promise.all(Array.from({ length: 80 }, (_, i) => bump(i % 2 === 0 ? a : b)));
      assert.equal(await a.get('n'), '80');
      // A lock left by a process that died is taken over once stale; a fresh one is waited for.
      writeFileSync(`${path}.lock`, '');
      const old = new Date(Date.now() - 60_000);
      utimesSync(`${path}.lock`, old, old);
      await a.set('after', 'stale lock');
      assert.equal(await b.get('after'), 'stale lock');
      assert.equal(existsSync(`${path}.lock`), false);
      // One left a moment ago (a client that crashed and is started again at once): waited for until it is stale (2 s),
      // not an error after the wait (red team: 'stayed locked' for 30 s after a crash).
      writeFileSync(`${path}.lock`, 'a crashed client');
      const recent = new Date(Date.now() - 1_500);
      utimesSync(`${path}.lock`, recent, recent);
      await b.set('after', 'crash');
      assert.equal(await a.get('after'), 'crash');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('client types', () => {
  it('client/src/schema.ts is what the routes generate now (npm run client:types rewrites it)', async () => {
    assert.equal(readFileSync(SCHEMA_FILE, 'utf8'), await generateSchema(), 'client/src/schema.ts is out of date: run npm run client:types');
  });
});

describe("the client facing a node that lies about its answers' size, never answers, or redirects (red team)", () => {
  /** A node on this machine: `/endless` never ends its body, `/silent` never answers, `/away` redirects to `host`. */
  async function hostileNode(seen: { host: string | undefined; key: string | undefined; path: string | undefined }[]) {
    const server = createServer((req, res) => {
      seen.push({ host: req.headers.host, key: req.headers['x-api-key'] as string | undefined, path: req.url });
      const port = (server.address() as AddressInfo).port;
      if (req.url === '/api/v1/health' && req.headers.host?.startsWith('127.0.0.1')) {
        res.writeHead(302, { location: `http://localhost:${port}/moved/health` }).end();
      } else if (req.url === '/api/v1/health') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"healthy"}');
      } else if (req.url === '/moved/health') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"moved"}');
      } else if (req.url?.startsWith('/api/v1/chains/endless')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        (function more() {
          if (!res.destroyed && res.write(Buffer.alloc(64 * 1024, 32))) setImmediate(more);
          else if (!res.destroyed) res.once('drain', more);
        })();
      } else if (req.url?.startsWith('/api/v1/chains/silent')) {
        // Holds the request open, answering nothing.
      } else {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not found"}');
      }
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return { server, port: (server.address() as AddressInfo).port };
  }

  it('ends an endless answer at its cap and a silent node at its timeout, with an error', async () => {
    const { server, port } = await hostileNode([]);
    try {
      const client = new LedgerClient({
        baseUrl: `http://127.0.0.1:${port}`,
        verify: false,
        maxAnswerBytes: 1024 * 1024,
        timeoutMs: 500,
        retry: { attempts: 1 },
      });
      await assert.rejects(client.stats('endless'), /larger than 1048576 bytes/);
      const started = Date.now();
      await assert.rejects(client.stats('silent'), (error: Error) => error.name === 'TimeoutError' || /aborted|timeout/i.test(String(error)));
      assert.ok(Date.now() - started < 5_000, `gave up after ${Date.now() - started} ms`);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('sends its API key only to the host it was given: a redirect elsewhere is followed without it, and never off https', async () => {
    const seen: { host: string | undefined; key: string | undefined; path: string | undefined }[] = [];
    const { server, port } = await hostileNode(seen);
    try {
      const client = new LedgerClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'secret-key', verify: false });
      assert.deepEqual(await client.health(), { status: 'moved' });
      assert.deepEqual(
        seen.map(({ key, path }) => ({ key, path })),
        [
          { key: 'secret-key', path: '/api/v1/health' },
          { key: undefined, path: '/moved/health' },
        ],
      );
      const same = new LedgerClient({ baseUrl: `http://localhost:${port}`, apiKey: 'secret-key', verify: false });
      assert.deepEqual(await same.health(), { status: 'healthy' });
      assert.equal(seen.at(-1)!.key, 'secret-key', 'to the host it was given, the key goes');
    } finally {
      server.close();
    }
    const downgrade = (async () => new Response(null, { status: 301, headers: { location: 'http://ledger.example/api/v1/health' } })) as typeof fetch;
    const client = new LedgerClient({ baseUrl: 'https://ledger.example', apiKey: 'k', verify: false, fetch: downgrade, retry: { attempts: 1 } });
    await assert.rejects(client.health(), /ledger\.example redirected to http:\/\/ledger\.example, off https: not followed/);
  });
});
