/**
 * Weak Ed25519 public keys (red team, 2026-12-07): a writer registered its organization with the identity point
 * written as `eeff…7f`, and the signature `01` + 63 zero bytes then verified as that organization's for every secure
 * event. A key of small order, or not in its canonical encoding, is refused where keys are taken and where signatures
 * are checked.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { describe, it } from 'node:test';
import { weakKeyReason as clientWeakKeyReason } from '#client/tlog';
import { parsePublicKey, publicKeyToHex, verifyEd25519, weakKeyReason } from '#shared/ed25519';
import { UnprocessableError } from '#shared/errors';

const P = 2n ** 255n - 19n;
const ROOT = new URL('../../', import.meta.url).pathname;
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** 32 little-endian bytes of a y-coordinate, with the sign bit of x. */
function encode(y: bigint, sign: 0 | 1): string {
  const bytes = Buffer.alloc(32);
  let v = y;
  for (let i = 0; i < 32; i += 1) {
    bytes[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  bytes[31] = (bytes[31]! & 0x7f) | (sign << 7);
  return bytes.toString('hex');
}

/** The eight points of small order by their y (the order-8 ones from libsodium's list), and unreduced forms of two. */
const Y8 = BigInt(`0x${Buffer.from('26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', 'hex').reverse().toString('hex')}`);
const SMALL = [1n, P - 1n, 0n, Y8, P - Y8];
const WEAK = [...SMALL.flatMap((y) => [encode(y, 0), encode(y, 1)]), encode(P, 0), encode(P + 1n, 0), encode(P + 1n, 1), encode(P + 18n, 0)];

/** The forged signature: R the identity, S zero. OpenSSL before 3.5 (Node 20 and 22) accepts it under such keys. */
const FORGED = Buffer.concat([Buffer.from([1]), Buffer.alloc(63)]);
const messages = Array.from({ length: 64 }, (_, i) => Buffer.from(`secure event ${i}`));

// Ed25519's curve (-x^2 + y^2 = 1 + d x^2 y^2 over P), affine, enough to check a point's order.
const mod = (a: bigint) => ((a % P) + P) % P;
function pow(b: bigint, e: bigint): bigint {
  let r = 1n;
  let x = mod(b);
  for (let k = e; k > 0n; k >>= 1n) {
    if (k & 1n) r = mod(r * x);
    x = mod(x * x);
  }
  return r;
}
const inv = (a: bigint) => pow(a, P - 2n);
const D = mod(-121665n * inv(121666n));
function pointOf(y: bigint): [bigint, bigint] {
  const u = mod(y * y - 1n);
  const v = mod(D * y * y + 1n);
  let x = mod(u * pow(v, 3n) * pow(u * pow(v, 7n), (P - 5n) / 8n));
  if (mod(v * x * x) !== u) x = mod(x * pow(2n, (P - 1n) / 4n));
  assert.equal(mod(v * x * x), u, `y=${y} is on the curve`);
  return [x, mod(y)];
}
function add([x1, y1]: [bigint, bigint], [x2, y2]: [bigint, bigint]): [bigint, bigint] {
  const t = mod(D * x1 * x2 * y1 * y2);
  return [mod((x1 * y2 + y1 * x2) * inv(1n + t)), mod((y1 * y2 + x1 * x2) * inv(1n - t))];
}
function times(n: number, point: [bigint, bigint]): [bigint, bigint] {
  let sum: [bigint, bigint] = [0n, 1n];
  for (let i = 0; i < n; i += 1) sum = add(sum, point);
  return sum;
}

describe('weak Ed25519 keys', () => {
  it('are the points of small order: eight times each is the identity, as it is for no real key', () => {
    for (const y of SMALL) assert.deepEqual(times(8, pointOf(y)), [0n, 1n], `y=${y}`);
    assert.deepEqual(times(4, pointOf(Y8))[1] === 1n, false, 'the order-8 points are of order 8, not less');
    const real = generateKeyPairSync('ed25519').publicKey;
    const y = BigInt(`0x${Buffer.from(publicKeyToHex(real), 'hex').reverse().toString('hex')}`) & (2n ** 255n - 1n);
    assert.notDeepEqual(times(8, pointOf(y)), [0n, 1n]);
  });

  it('are refused where a key is registered (422, saying why) and where a signature is checked', () => {
    for (const hex of WEAK) {
      assert.ok(weakKeyReason(Buffer.from(hex, 'hex')), hex);
      assert.throws(
        () => parsePublicKey(hex),
        (e: unknown) => e instanceof UnprocessableError && /weak Ed25519 key/.test((e as Error).message),
        hex,
      );
      for (const m of messages) assert.equal(verifyEd25519(hex, m, FORGED), false, `${hex} verified a forgery`);
    }
    // In PEM as well.
    const pem = `-----BEGIN PUBLIC KEY-----\n${Buffer.concat([SPKI_PREFIX, Buffer.from(encode(1n, 0), 'hex')]).toString('base64')}\n-----END PUBLIC KEY-----\n`;
    assert.throws(() => parsePublicKey(pem), /weak Ed25519 key \(a point of small order\)/);
  });

  it('are the same keys for the service and the client package (each holds the list: neither imports the other)', () => {
    const keys = [...WEAK, ...Array.from({ length: 200 }, () => randomBytes(32).toString('hex'))];
    for (let i = 0; i < 20; i += 1) keys.push(publicKeyToHex(generateKeyPairSync('ed25519').publicKey));
    for (const hex of keys) assert.equal(clientWeakKeyReason(Buffer.from(hex, 'hex')), weakKeyReason(Buffer.from(hex, 'hex')), hex);
    assert.equal(keys.filter((hex) => weakKeyReason(Buffer.from(hex, 'hex'))).length >= WEAK.length, true);
  });

  it('refuses them on a Node whose OpenSSL takes the forgery (20 and 22: the local stack and the verifier run there too)', {
    skip: !process.env.LEDGER_TEST_HOST_NODE && "typed on Lambda's Node: no older one to ask",
  }, () => {
    // Lambda's Node 24 (OpenSSL 3.5) refuses these signatures itself, so only an older Node shows that our check does.
    const script = `
      import { createPublicKey, verify } from 'node:crypto';
      import { verifyEd25519 } from '#shared/ed25519';
      const spki = (hex) => createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(hex, 'hex')]), format: 'der', type: 'spki' });
      const forged = Buffer.concat([Buffer.from([1]), Buffer.alloc(63)]);
      const keys = ${JSON.stringify(WEAK)};
      const m = Buffer.from('any secure event');
      console.log(JSON.stringify({ openssl: keys.filter((k) => { try { return verify(null, m, spki(k), forged); } catch { return false; } }).length, ours: keys.filter((k) => verifyEd25519(k, m, forged)).length }));`;
    const out = spawnSync(process.env.LEDGER_TEST_HOST_NODE!, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', cwd: ROOT });
    assert.equal(out.status, 0, out.stderr);
    const { openssl, ours } = JSON.parse(out.stdout.trim().split('\n').at(-1)!);
    if (openssl === 0) return; // that Node refuses them itself
    assert.ok(openssl > 0, 'OpenSSL there takes the forgery under some of these keys');
    assert.equal(ours, 0, 'verifyEd25519 takes none');
  });

  it('leaves real keys as they were: taken, and their signatures verified', () => {
    for (let i = 0; i < 200; i += 1) {
      const { publicKey, privateKey } = generateKeyPairSync('ed25519');
      const hex = publicKeyToHex(publicKey);
      assert.equal(parsePublicKey(hex.toUpperCase()), hex);
      assert.equal(parsePublicKey(publicKey.export({ format: 'pem', type: 'spki' }).toString()), hex);
      const message = Buffer.from(`event ${i}`);
      assert.equal(verifyEd25519(hex, message, sign(null, message, privateKey)), true);
    }
  });
});
