/**
 * A transparency-log witness, as C2SP tlog-witness (c2sp.org/tlog-witness) defines one: it keeps, per
 * log origin, the latest checkpoint it cosigned, and cosigns a new one only if it is signed by a key it
 * trusts for that origin and provably extends (RFC 6962 consistency) what it cosigned before. Its
 * cosignatures are C2SP tlog-cosignature `cosignature/v1` (Ed25519, key id type 0x04, timestamped).
 *
 * The section names in the comments are the spec's ("add-checkpoint"). Pure but for the clock and the
 * store; infra/witness/main.ts serves it over HTTP (`npm run witness`).
 */
import { createHash } from 'node:crypto';
import { verifyConsistency, ProofError } from '#shared/ledger/merkle';
import { type Verifier, openNote, parseCheckpointText, parseVerifierKey } from '#shared/tlog/note';

/** A log the witness trusts: its note key, for every origin under `originPrefix` (default `<key name>/`). */
export interface TrustedLog {
  verifier: Verifier;
  originPrefix: string;
}

export interface CosignedState {
  size: number;
  /** base64 */
  root: string;
}

/** Where the witness keeps its state, the latest cosigned checkpoint per origin (createWitness serializes each origin's calls). */
export interface WitnessStore {
  get(origin: string): Promise<CosignedState | undefined>;
  set(origin: string, state: CosignedState): Promise<void>;
  /** How many origins it holds. */
  count(): Promise<number>;
}

/** How many logs (origins) a witness keeps by default: past it, a new origin is refused with 507. */
export const DEFAULT_MAX_ORIGINS = 10_000;
/** New logs admitted a minute by default: any writer of a trusted log makes one per chain, so their rate is bounded. */
export const DEFAULT_NEW_ORIGINS_PER_MINUTE = 60;

export interface WitnessKey {
  name: string;
  /** 32 bytes. */
  publicKey: Buffer;
  sign(message: Uint8Array): Buffer;
}

export interface WitnessAnswer {
  status: number;
  contentType: string;
  body: string;
}

const COSIGNATURE_TYPE = 0x04;
const MAX_PROOF_LINES = 63;

export function cosignerKeyId(name: string, publicKey: Buffer): Buffer {
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`), Buffer.from([COSIGNATURE_TYPE]), publicKey]))
    .digest()
    .subarray(0, 4);
}

/** tlog-cosignature, "Format": vkeys MAY encode Ed25519 cosigner keys with type 0x04. */
export function cosignerVkey(key: Pick<WitnessKey, 'name' | 'publicKey'>): string {
  return `${key.name}+${cosignerKeyId(key.name, key.publicKey).toString('hex')}+${Buffer.concat([Buffer.from([COSIGNATURE_TYPE]), key.publicKey]).toString('base64')}`;
}

/** A log's note vkey (type 0x01), trusted for origins under `<key name>/` unless a prefix is given. */
export function trustedLog(vkey: string, originPrefix?: string): TrustedLog {
  const verifier = parseVerifierKey(vkey);
  return { verifier, originPrefix: originPrefix ?? `${verifier.name}/` };
}

const text = (status: number, body: string, contentType = 'text/plain; charset=utf-8'): WitnessAnswer => ({ status, contentType, body });

export interface Witness {
  addCheckpoint(body: string): Promise<WitnessAnswer>;
}

export function createWitness({
  key,
  logs,
  store,
  maxOrigins = DEFAULT_MAX_ORIGINS,
  newOriginsPerMinute = DEFAULT_NEW_ORIGINS_PER_MINUTE,
  now = () => Date.now(),
}: {
  key: WitnessKey;
  logs: readonly TrustedLog[];
  store: WitnessStore;
  /** The most origins it keeps a checkpoint for. */
  maxOrigins?: number;
  /** New origins admitted a minute; past it, 429 until the minute is over. */
  newOriginsPerMinute?: number;
  now?: () => number;
}): Witness {
  const keyId = cosignerKeyId(key.name, key.publicKey);
  // "add-checkpoint": checking the old size and persisting the new checkpoint MUST be atomic: one at a time per
  // origin (the logs are independent; a flood on one never queues another's checkpoints).
  const queues = new Map<string, Promise<unknown>>();
  function serialized<T>(origin: string, work: () => Promise<T>): Promise<T> {
    const run = (queues.get(origin) ?? Promise.resolve()).then(work, work);
    const settled = run.catch(() => undefined);
    queues.set(origin, settled);
    void settled.then(() => {
      if (queues.get(origin) === settled) queues.delete(origin);
    });
    return run;
  }
  /** The minute's new origins: admitted up to newOriginsPerMinute. */
  let window = { minute: -1, admitted: 0 };

  function cosign(noteText: string): string {
    const timestamp = BigInt(Math.floor(now() / 1000));
    const message = Buffer.from(`cosignature/v1\ntime ${timestamp}\n${noteText}`, 'utf8');
    const stamp = Buffer.alloc(8);
    stamp.writeBigUInt64BE(timestamp);
    return `\u2014 ${key.name} ${Buffer.concat([keyId, stamp, key.sign(message)]).toString('base64')}\n`;
  }

  async function add(body: string): Promise<WitnessAnswer> {
    // "add-checkpoint": an old size line, zero or more consistency proof lines, an empty line, a checkpoint.
    const blank = body.indexOf('\n\n');
    if (blank < 0) return text(400, 'the body is not an old size line, proof lines, an empty line and a checkpoint\n');
    const head = body.slice(0, blank).split('\n');
    const note = body.slice(blank + 2);
    const oldMatch = /^old (0|[1-9][0-9]{0,15})$/.exec(head[0] ?? '');
    if (!oldMatch) return text(400, 'the first line is not "old <size>" (decimal, no leading zeros)\n');
    const oldSize = Number(oldMatch[1]);
    const proofLines = head.slice(1);
    if (proofLines.length > MAX_PROOF_LINES) return text(400, `more than ${MAX_PROOF_LINES} consistency proof lines\n`);
    const proof: Buffer[] = [];
    for (const line of proofLines) {
      const hash = Buffer.from(line, 'base64');
      if (hash.length !== 32 || hash.toString('base64') !== line) return text(400, 'a consistency proof line is not a base64 hash\n');
      proof.push(hash);
    }
    const origin = note.slice(0, note.indexOf('\n'));
    // The witness MUST ignore signatures from unknown keys; an unknown origin is 404.
    const candidates = logs.filter((log) => origin.startsWith(log.originPrefix));
    if (candidates.length === 0) return text(404, `unknown log origin '${origin}'\n`);
    // If none of the signatures verify against a trusted public key: 403.
    const opened = candidates.map((log) => openNote(note, log.verifier)).find((o) => o.ok);
    if (!opened?.ok) return text(403, 'the checkpoint is not signed by a key this witness trusts for its origin\n');
    let checkpoint: ReturnType<typeof parseCheckpointText>;
    try {
      checkpoint = parseCheckpointText(opened.text);
    } catch (error) {
      return text(400, `the checkpoint is malformed: ${(error as Error).message}\n`);
    }
    // The old size MUST be equal to or lower than the checkpoint size: else 400.
    if (oldSize > checkpoint.size) return text(400, `old size ${oldSize} is above the checkpoint size ${checkpoint.size}\n`);
    // Everything above needs no state; what follows reads and writes the origin's, atomically.
    return serialized(origin, () => update(origin, oldSize, proof, checkpoint, opened.text));
  }

  async function update(origin: string, oldSize: number, proof: Buffer[], checkpoint: ReturnType<typeof parseCheckpointText>, noteText: string) {
    // The old size MUST match the latest cosigned size (0 if none): else 409 with that size, text/x.tlog.size.
    const latest = await store.get(origin);
    const latestSize = latest?.size ?? 0;
    if (oldSize !== latestSize) return text(409, `${latestSize}\n`, 'text/x.tlog.size');
    if (latest === undefined) {
      // Any writer of a trusted log can make new origins (a chain each): how fast they come, and how many are kept,
      // is bounded. A full witness forgets nothing to make room: a log it forgot would be new to it again, and any
      // history of it, a fork too, would be cosigned from size 0.
      const minute = Math.floor(now() / 60_000);
      if (window.minute !== minute) window = { minute, admitted: 0 };
      if (window.admitted >= newOriginsPerMinute) return text(429, `this witness admits at most ${newOriginsPerMinute} new logs a minute\n`);
      if ((await store.count()) >= maxOrigins) {
        return text(507, `this witness keeps at most ${maxOrigins} logs (--max-origins) and cosigns no new one\n`);
      }
      window.admitted += 1;
    }
    if (latest !== undefined && oldSize === checkpoint.size) {
      // Same size as the one cosigned, 0 included: the root hashes MUST be identical, else 409.
      if (checkpoint.root.toString('base64') !== latest.root) return text(409, `${latestSize}\n`, 'text/x.tlog.size');
      if (proof.length > 0) return text(422, 'a consistency proof between equal sizes must be empty\n');
      // The checkpoint it holds, again: cosigned from what it holds, with no write (a flood of replays costs no fsync).
      return text(200, cosign(noteText));
    } else if (oldSize === 0) {
      // The proof MUST be empty if the old size is zero.
      if (proof.length > 0) return text(422, 'a consistency proof from size 0 must be empty\n');
    } else {
      // The proof MUST verify (RFC 6962 2.1.2), else 422; nothing is cosigned or stored.
      try {
        verifyConsistency(oldSize, checkpoint.size, proof, Buffer.from(latest!.root, 'base64'), checkpoint.root);
      } catch (error) {
        if (!(error instanceof ProofError)) throw error;
        return text(422, `the consistency proof from ${oldSize} to ${checkpoint.size} does not verify: ${error.message}\n`);
      }
    }
    // The witness MUST persist the new checkpoint before responding.
    await store.set(origin, { size: checkpoint.size, root: checkpoint.root.toString('base64') });
    return text(200, cosign(noteText));
  }

  return { addCheckpoint: add };
}
