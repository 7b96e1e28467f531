/**
 * The C2SP formats offline: signed notes against the spec's own example, tile paths and widths against
 * the tlog-tiles spec's worked example, and the tlog service over an in-memory chain (tiles equal the
 * RFC 6962 tree's nodes; a full tile is computed once, then read back without touching blocks).
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { describe, it } from 'node:test';
import { publicKeyToHex } from '#shared/ed25519';
import { merkleRoot, rootFromLeafHashes, leafHash } from '#shared/ledger/merkle';
import type { LedgerRepository } from '#shared/ledger/repository';
import { extendTree } from '#shared/ledger/tree';
import type { ChainHead } from '#shared/ledger/types';
import { checkpointText, looksLikeCheckpoint, openNote, parseCheckpointText, parseVerifierKey, signNote, verifierKey } from '#shared/tlog/note';
import { availableWidth, decodeEntryBundle, formatTileIndex, parseTilePath, splitHashes, tilePath, TilePathError } from '#shared/tlog/tiles';
import { createTlog, type TileStore } from '#shared/tlog/tlog';
import { BadRequestError, InvalidChainNameError, NotFoundError } from '#shared/errors';
import { verifyTlog } from '#shared/verify/tlog';
import type { NodeWait } from '#shared/verify/pages';

// c2sp.org/signed-note's example.
const SPEC_VKEY = 'example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k';
const SPEC_NOTE =
  'This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n';

describe('signed notes (c2sp.org/signed-note)', () => {
  it("opens the spec's example note with the spec's verifier key, and computes the same key id", () => {
    const verifier = parseVerifierKey(SPEC_VKEY);
    assert.equal(verifierKey(verifier.name, verifier.publicKeyHex), SPEC_VKEY);
    assert.deepEqual(openNote(SPEC_NOTE, verifier), { ok: true, text: 'This is an example message.\n' });
  });

  it('rejects the example note with its text changed, and ignores signatures of other keys', () => {
    const verifier = parseVerifierKey(SPEC_VKEY);
    const changed = openNote(SPEC_NOTE.replace('example message', 'example massage'), verifier);
    assert.equal(changed.ok, false);
    const other = openNote(SPEC_NOTE.replace('example.com/foo Uw2Q', 'example.com/bar Uw2Q'), verifier);
    assert.deepEqual(other, { ok: false, reason: `the note is not signed by ${SPEC_VKEY.split('+').slice(0, 2).join('+')}` });
  });

  it('signs what it opens, and refuses malformed verifier keys', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const pub = publicKeyToHex(privateKey);
    const note = signNote('origin/x\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n', 'origin', pub, (b) => sign(null, b, privateKey));
    assert.equal(openNote(note, parseVerifierKey(verifierKey('origin', pub))).ok, true);
    for (const bad of [
      'no-plus',
      'a+530d903a',
      'a b+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k',
      SPEC_VKEY.replace('530d903a', '530d903b'),
      SPEC_VKEY.replace('+Aek', '+Bek'),
    ]) {
      assert.throws(() => parseVerifierKey(bad), TypeError, bad);
    }
  });

  it('writes and reads checkpoint texts, and knows a checkpoint-shaped challenge', () => {
    const root = createHash('sha256').update('x').digest();
    const text = checkpointText({ origin: 'ledger.example/main', size: 42, root });
    assert.equal(text, `ledger.example/main\n42\n${root.toString('base64')}\n`);
    assert.deepEqual(parseCheckpointText(text), { origin: 'ledger.example/main', size: 42, root });
    assert.throws(() => parseCheckpointText('o\n042\nAA==\n'), TypeError);
    assert.equal(looksLikeCheckpoint(Buffer.from(text)), true);
    assert.equal(looksLikeCheckpoint(Buffer.from('hello peer')), false);
  });
});

describe('tile paths and widths (c2sp.org/tlog-tiles)', () => {
  it('spells indices as the spec does, and parses them back', () => {
    assert.equal(formatTileIndex(1234067), 'x001/x234/067');
    assert.equal(formatTileIndex(5), '005');
    assert.equal(tilePath({ level: 0, index: 1234067, width: 7 }), 'tile/0/x001/x234/067.p/7');
    assert.deepEqual(parseTilePath('0/x001/x234/067.p/7'), { level: 0, index: 1234067, width: 7 });
    assert.deepEqual(parseTilePath('entries/x001/000'), { level: 'entries', index: 1000, width: 256 });
  });

  it('refuses malformed paths', () => {
    for (const bad of [
      '0/1234',
      '-1/000',
      '0/000.p/0',
      '0/000.p/256',
      '0/../000',
      '01/000',
      '0/x000/001',
      '0/000.p/07',
      '0',
      '0/000/',
      'entries/12',
      '64/000',
    ]) {
      assert.throws(
        () => parseTilePath(bad),
        (e: unknown) => e instanceof TilePathError && e.kind === 'malformed',
        bad,
      );
    }
  });

  it("gives the spec's worked example: a tree of 70,000", () => {
    const size = 70_000;
    assert.equal(availableWidth({ level: 0, index: 272 }, size), 256, '273 full level-0 tiles');
    assert.equal(availableWidth({ level: 0, index: 273 }, size), 112, 'a partial level-0 tile of width 112');
    assert.equal(availableWidth({ level: 'entries', index: 273 }, size), 112);
    assert.equal(availableWidth({ level: 1, index: 0 }, size), 256, 'one full level-1 tile');
    assert.equal(availableWidth({ level: 1, index: 1 }, size), 17, 'a partial level-1 tile of width 17');
    assert.equal(availableWidth({ level: 2, index: 0 }, size), 1, 'a partial level-2 tile of width 1');
    assert.equal(availableWidth({ level: 3, index: 0 }, size), 0);
    assert.equal(availableWidth({ level: 1, index: 0 }, 256), 1, 'a tree of 256: a partial level-1 tile of width 1');
  });
});

/** A chain of `size` blocks in memory, its tree kept as the appender keeps it; counts block reads. */
type NodeSigner = () => Promise<{ nodeId: string; publicKey: string; sign: (b: Uint8Array) => Buffer }>;

function newSigner(): NodeSigner {
  const { privateKey } = generateKeyPairSync('ed25519');
  return async () => ({ nodeId: 'node-1', publicKey: publicKeyToHex(privateKey), sign: (b: Uint8Array) => sign(null, b, privateKey) });
}

function memoryChain(size: number, { seed = 'block', signer = newSigner() }: { seed?: string; signer?: NodeSigner } = {}) {
  const hashes = Array.from({ length: size }, (_, i) => createHash('sha256').update(`${seed} ${i}`).digest('hex'));
  const { frontier, treeNodes } = extendTree([], 0, hashes);
  const head = { chainName: 'c', headIndex: size - 1, headHash: hashes[size - 1]!, frontier } as ChainHead;
  const reads = { blocks: 0, eventual: 0 };
  const repository = {
    getHead: async (name: string) => (name === 'c' ? head : undefined),
    readTreeData: async (_: string, indices: readonly number[], consistent?: boolean) => {
      reads.blocks += indices.length;
      if (!consistent) reads.eventual += indices.length;
      return new Map(indices.filter((i) => i < size).map((i) => [i, { hash: hashes[i]!, treeNodes: treeNodes[i]! }]));
    },
  } as unknown as LedgerRepository;
  const kept = new Map<string, Buffer>();
  const tiles: TileStore = { get: async (_, path) => kept.get(path), put: async (_, path, bytes) => void kept.set(path, bytes) };
  const tlog = createTlog({ repository, tiles, signer, origin: (id) => `ledger.test/${id}` });
  return { tlog, hashes, reads, kept, signer };
}

/** A fetch answering /tlog/… from a tlog service, optionally rewriting a tile's bytes (a lying server). */
function serve(tlog: ReturnType<typeof memoryChain>['tlog'], tamper?: (path: string, bytes: Buffer) => Buffer): typeof fetch {
  return (async (input: string | URL) => {
    const path = new URL(String(input)).pathname;
    try {
      if (path === '/tlog/vkey') return new Response(`${await tlog.verifierKey()}\n`);
      const m = /^\/tlog\/([^/]+)\/(checkpoint|tile\/(.+))$/.exec(path)!;
      if (m[2] === 'checkpoint') return new Response(await tlog.checkpoint(m[1]!));
      const { bytes } = await tlog.tile(m[1]!, m[3]!);
      return new Response(tamper ? tamper(m[3]!, bytes) : bytes);
    } catch (error) {
      return new Response(JSON.stringify({ detail: (error as Error).message }), { status: 404 });
    }
  }) as typeof fetch;
}

describe('the tlog service', () => {
  it("signs a checkpoint of the chain's RFC 6962 root that opens with its verifier key", async () => {
    const { tlog, hashes } = memoryChain(300);
    const opened = openNote(await tlog.checkpoint('c'), parseVerifierKey(await tlog.verifierKey()));
    assert.equal(opened.ok, true);
    const body = parseCheckpointText((opened as { text: string }).text);
    assert.equal(body.origin, 'ledger.test/node-1/c');
    assert.equal(body.size, 300);
    assert.ok(body.root.equals(merkleRoot(hashes.map((h) => Buffer.from(h, 'hex')))));
  });

  it("serves tiles that are the tree's nodes, and entries that are the block hashes", async () => {
    const { tlog, hashes } = memoryChain(70_000);
    const leaves = hashes.map((h) => leafHash(Buffer.from(h, 'hex')));
    const level0 = splitHashes((await tlog.tile('c', '0/001')).bytes);
    assert.ok(level0.every((h, i) => h.equals(leaves[256 + i]!)));
    const level1 = splitHashes((await tlog.tile('c', '1/001.p/17')).bytes);
    assert.equal(level1.length, 17);
    assert.ok(level1[16]!.equals(rootFromLeafHashes(leaves.slice((256 + 16) * 256, (256 + 17) * 256))));
    const level2 = splitHashes((await tlog.tile('c', '2/000.p/1')).bytes);
    assert.ok(level2[0]!.equals(rootFromLeafHashes(leaves.slice(0, 65_536))));
    const entries = decodeEntryBundle((await tlog.tile('c', 'entries/273.p/112')).bytes);
    assert.equal(entries.length, 112);
    assert.equal(entries[111]!.toString('hex'), hashes[273 * 256 + 111]);
  });

  it('computes a full tile once; later reads, partial views included, touch no block', async () => {
    const { tlog, reads, kept } = memoryChain(600);
    const first = await tlog.tile('c', '0/000');
    assert.equal(first.full, true);
    assert.equal(reads.blocks, 256);
    assert.ok(kept.has('tile/0/000'));
    const again = await tlog.tile('c', '0/000');
    assert.ok(again.bytes.equals(first.bytes));
    const view = await tlog.tile('c', '0/000.p/10');
    assert.ok(view.bytes.equals(first.bytes.subarray(0, 320)));
    assert.equal(view.full, false);
    assert.equal(reads.blocks, 256, 'no block read after the first');
    assert.equal(reads.eventual, 0, 'blocks are read strongly consistent: the newest were committed a moment ago');
  });

  it('answers 404 beyond the tree and typed 400s for bad input', async () => {
    const { tlog } = memoryChain(300);
    await assert.rejects(tlog.tile('c', '0/001'), NotFoundError, 'tile 1 is 44 wide so far');
    await assert.rejects(tlog.tile('c', '0/001.p/45'), NotFoundError);
    await assert.rejects(tlog.tile('c', '1/000'), NotFoundError);
    await assert.rejects(tlog.tile('nope', '0/000.p/1'), NotFoundError);
    await assert.rejects(tlog.tile('c', '0/1234'), BadRequestError);
    await assert.rejects(tlog.checkpoint('bad name'), InvalidChainNameError);
  });
});

describe('ledger-verify --tiles (a monitor)', () => {
  it('verifies a whole log, then only what was appended since its saved state', async () => {
    const signer = newSigner();
    const log = memoryChain(70_000, { signer });
    const first = await verifyTlog({ url: 'http://log', chain: 'c', fetch: serve(log.tlog) });
    assert.equal(first.problem, null);
    assert.equal(first.checked, 70_000);
    assert.equal(first.tilesFetched, 2 * 274 + 2 + 1, 'every bundle and level-0 tile, both level-1 tiles, the level-2 tile');
    assert.equal(first.root, merkleRoot(log.hashes.map((h) => Buffer.from(h, 'hex'))).toString('base64'));
    // The same log grown by 300 entries (the same first 70,000, the same key), audited from the saved state.
    const grown = memoryChain(70_300, { signer });
    const vkey = await log.tlog.verifierKey();
    const next = await verifyTlog({ url: 'http://log', chain: 'c', vkey, state: first.state!, fetch: serve(grown.tlog), blocks: false });
    assert.equal(next.problem, null);
    assert.equal(next.checked, 300, 'only the new entries');
    assert.equal(next.size, 70_300);
  });

  it('waits as a rate-limited node asks (429 with Retry-After), and audits the log all the same', async () => {
    const log = memoryChain(1_000);
    const served = serve(log.tlog);
    // The first three tiles asked for are refused, as a node over its limit refuses the requests in flight.
    let refusals = 3;
    const limited = (async (input: string | URL, init?: RequestInit) =>
      String(input).includes('/tile/') && refusals-- > 0
        ? new Response('{"detail":"Rate limit exceeded"}', { status: 429, headers: { 'Retry-After': '0', 'X-RateLimit-Limit': '100' } })
        : served(input, init)) as typeof fetch;
    const waits: NodeWait[] = [];
    const verdict = await verifyTlog({ url: 'http://log', chain: 'c', fetch: limited, onWait: (wait) => waits.push(wait) });
    assert.equal(verdict.problem, null);
    assert.equal(verdict.checked, 1_000);
    assert.equal(waits.length, 3, 'each refusal waited for, and told');
    assert.ok(waits.every((w) => w.status === 429 && w.seconds === 0 && w.limit === 100));
  });

  it('catches a rewritten history, a lying tile, a forged checkpoint, and a shrunk log', async () => {
    const signer = newSigner();
    const log = memoryChain(1_000, { signer });
    const first = await verifyTlog({ url: 'http://log', chain: 'c', fetch: serve(log.tlog) });
    assert.equal(first.verified, true);
    // The same key signing a different history that is longer: not an extension of the saved state.
    const rewritten = memoryChain(1_200, { signer, seed: 'other' });
    const fork = await verifyTlog({ url: 'http://log', chain: 'c', state: first.state!, fetch: serve(rewritten.tlog) });
    assert.match(fork.problem!, /the log rewrote its history/); // entry 999, the saved state's last, is another one
    // A level-1 tile whose first hash is wrong: every entry checks, the tile does not.
    const lying = await verifyTlog({
      url: 'http://log',
      chain: 'c',
      fetch: serve(log.tlog, (path, bytes) => (path.startsWith('1/') ? Buffer.concat([Buffer.alloc(32), bytes.subarray(32)]) : bytes)),
    });
    assert.match(lying.problem!, /tile 1\/0: hash 0/);
    // An entry that is not what the level-0 tile says.
    const entry = await verifyTlog({
      url: 'http://log',
      chain: 'c',
      fetch: serve(log.tlog, (path, bytes) => (path === 'entries/001' ? Buffer.concat([bytes.subarray(0, 2), Buffer.alloc(32), bytes.subarray(34)]) : bytes)),
    });
    assert.equal(entry.firstBadEntry, 256);
    // Another key's checkpoint, when the user pinned the real key.
    const impostor = memoryChain(1_000);
    const forged = await verifyTlog({ url: 'http://log', chain: 'c', vkey: await log.tlog.verifierKey(), fetch: serve(impostor.tlog) });
    assert.match(forged.problem!, /not signed by/);
    // Resumed inside a bundle (a state at 30): the entry the state ends with, and its leaf, replaced in the bundle
    // served now, so that a block after it could link to something else (red team: it verified).
    const at30 = await verifyTlog({ url: 'http://log', chain: 'c', fetch: serve(memoryChain(30, { signer }).tlog) });
    const grown = memoryChain(60, { signer });
    const other = Buffer.alloc(32, 9);
    const swapped = await verifyTlog({
      url: 'http://log',
      chain: 'c',
      state: at30.state!,
      fetch: serve(grown.tlog, (path, bytes) =>
        path.startsWith('entries/000')
          ? Buffer.concat([bytes.subarray(0, 29 * 34 + 2), other, bytes.subarray(30 * 34)])
          : path.startsWith('0/000')
            ? Buffer.concat([bytes.subarray(0, 29 * 32), leafHash(other), bytes.subarray(30 * 32)])
            : bytes,
      ),
    });
    assert.match(swapped.problem!, /entry 29 is not the one the saved state ends with/);
    assert.equal((await verifyTlog({ url: 'http://log', chain: 'c', state: at30.state!, fetch: serve(grown.tlog) })).verified, true, 'honest');
    // A log that shrank.
    const shorter = memoryChain(900, { signer });
    const shrunk = await verifyTlog({ url: 'http://log', chain: 'c', state: first.state!, fetch: serve(shorter.tlog) });
    assert.match(shrunk.problem!, /shrank/);
    // A state file whose compact range does not fit its size (edited, cut), the root it signs for one (which makes
    // that root, and had ended in a plain error past that check): a verdict, not a crash (red team).
    const signedRoot = Buffer.from(/\n\d+\n(\S+)\n/.exec(first.state!.checkpoint)![1]!, 'base64').toString('hex');
    for (const frontier of [[signedRoot], [...first.state!.frontier, first.state!.frontier[0]!], first.state!.frontier.slice(1), ['zz']]) {
      const damaged = await verifyTlog({ url: 'http://log', chain: 'c', state: { ...first.state!, frontier }, fetch: serve(grown.tlog) });
      assert.equal(damaged.verified, false);
      assert.match(damaged.problem!, /the saved state is damaged/);
    }
  });

  it('answers NOT VERIFIED, never a crash, when the blocks a node gives with --blocks are not blocks', async () => {
    const log = memoryChain(300);
    const deep = `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`;
    const pages: [string, string, RegExp][] = [
      ['not JSON', '<html>hi</html>', /page of 'c' from block 0 is not JSON/],
      ['no list', '{"blocks":5}', /page of 'c' from block 0 holds no list of blocks/],
      ['events of null', '{"blocks":[{"index":0,"events":[null]}]}', /page of 'c' from block 0 holds a malformed block/],
      ['no index', '{"blocks":[{"events":[]}]}', /page of 'c' from block 0 holds a malformed block/],
      [
        'too deep to hash',
        `{"blocks":[{"index":0,"events":[{"details":${deep}}]}]}`,
        /not one a verifier can read \(value has no canonical JSON form: Maximum call stack size exceeded\)/,
      ],
    ];
    for (const [what, page, problem] of pages) {
      const tiles = serve(log.tlog);
      const hostile = (async (input: string | URL) =>
        new URL(String(input)).pathname.endsWith('/blocks') ? new Response(page) : tiles(input)) as typeof fetch;
      const verdict = await verifyTlog({ url: 'http://log', chain: 'c', fetch: hostile, blocks: true });
      assert.equal(verdict.verified, false, what);
      assert.match(verdict.problem!, problem, what);
    }
  });
});
