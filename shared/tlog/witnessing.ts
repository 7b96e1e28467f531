/**
 * Getting the chains' checkpoints cosigned by witnesses (C2SP tlog-witness), so that a client can refuse a
 * split view: a log that showed two histories would need a witness to cosign both, and a witness cosigns
 * only trees that extend the one it cosigned before.
 *
 * For each chain, at most once per interval (a conditional write claims the turn, so N instances at once
 * make one attempt), the current checkpoint goes to every witness at once: `add-checkpoint` with the
 * consistency proof from the size that witness last cosigned (its 409 names that size, and the request is
 * made again from it once). Each cosignature is checked (cosignature/v1 by that witness's key, on this
 * checkpoint) and kept per chain and witness. A witness that is down, slow or refuses costs its own
 * request only: every request ends at its timeout and at the invocation's deadline, and is counted.
 *
 * Attempts are made when blocks commit (the stream consumer) and when a client asks for a witnessed
 * checkpoint that does not cover what it needs yet (GET …/evidence?witnessed=true): no timer.
 */
import { timeoutSignal } from '../deadline.ts';
import { verifyEd25519 } from '../ed25519.ts';
import { logger } from '../log.ts';
import { type WitnessConfig, cosignerKeyId } from './witness-config.ts';

export { type WitnessConfig, cosignerKeyId, parseWitnesses } from './witness-config.ts';

/** What one witness cosigned for one chain. */
export interface Cosigned {
  witness: string;
  size: number;
  /** base64 */
  root: string;
  /** The note signature line (`— <name> <base64>\n`). */
  line: string;
  at: number;
}

export interface WitnessStateStore {
  /** Every witness's latest cosignature of one chain. */
  cosigned(chainName: string): Promise<Cosigned[]>;
  /** Keeps a cosignature unless one of a bigger size is kept already. */
  keep(chainName: string, cosigned: Cosigned): Promise<void>;
  /** Claims the chain's attempt turn until `untilMs`, if the last claim has expired; false otherwise. */
  claim(chainName: string, nowMs: number, untilMs: number): Promise<boolean>;
  /** Counts an attempt's outcome for /metrics. */
  count(witness: string, outcome: 'cosigned' | 'failed', size: number): Promise<void>;
  /** Per witness: the last size it cosigned (any chain) and its failures, for /metrics. */
  summary(): Promise<{ witness: string; lastSize: number; cosigned: number; failures: number }[]>;
}

/** A checkpoint to send: its note (signed by the log) and what the witness needs to check it. */
export interface CheckpointToWitness {
  note: string;
  /** The note's text (origin, size, root lines). */
  text: string;
  size: number;
  /** base64 */
  root: string;
  /** The RFC 6962 consistency proof from `from` to `size`, base64 hashes. */
  consistency(from: number): Promise<string[]>;
}

/** The line of `witness` among a witness's answer, if it is a cosignature/v1 of `text` by its key. */
function verifiedLine(witness: WitnessConfig, text: string, answer: string): { line: string; at: number } | undefined {
  const id = cosignerKeyId(witness.name, Buffer.from(witness.publicKeyHex, 'hex'));
  for (const line of answer.split('\n')) {
    const match = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/.exec(line);
    if (!match || match[1] !== witness.name) continue;
    const bytes = Buffer.from(match[2]!, 'base64');
    if (bytes.length !== 76 || !bytes.subarray(0, 4).equals(id)) continue;
    const time = bytes.readBigUInt64BE(4);
    const message = Buffer.from(`cosignature/v1\ntime ${time}\n${text}`, 'utf8');
    if (verifyEd25519(witness.publicKeyHex, message, bytes.subarray(12))) return { line: `${line}\n`, at: Number(time) };
  }
  return undefined;
}

export interface WitnessingOptions {
  witnesses: readonly WitnessConfig[];
  store: WitnessStateStore;
  intervalMs: number;
  timeoutMs: number;
  fetch?: typeof fetch;
  now?: () => number;
}

export function createWitnessing({ witnesses, store, intervalMs, timeoutMs, fetch: send = fetch, now = Date.now }: WitnessingOptions) {
  async function post(witness: WitnessConfig, body: string): Promise<{ status: number; text: string; type: string }> {
    const response = await send(`${witness.url}/add-checkpoint`, { method: 'POST', body, signal: timeoutSignal(timeoutMs) });
    return { status: response.status, text: await response.text(), type: response.headers.get('content-type') ?? '' };
  }

  async function toOne(witness: WitnessConfig, chainName: string, checkpoint: CheckpointToWitness, known: Cosigned | undefined): Promise<void> {
    if (known && known.size === checkpoint.size && known.root === checkpoint.root) return;
    try {
      let from = known && known.size <= checkpoint.size ? known.size : 0;
      for (let round = 0; round < 2; round += 1) {
        const proof = from > 0 && from < checkpoint.size ? await checkpoint.consistency(from) : [];
        const answer = await post(witness, `old ${from}\n${proof.map((p) => `${p}\n`).join('')}\n${checkpoint.note}`);
        if (answer.status === 409 && answer.type.startsWith('text/x.tlog.size') && round === 0) {
          // Its last cosigned size is not the one we kept: start from its own, once.
          const size = Number(answer.text.trim());
          if (Number.isSafeInteger(size) && size >= 0 && size !== from && size <= checkpoint.size) {
            from = size;
            continue;
          }
        }
        if (answer.status !== 200) throw new Error(`add-checkpoint answered ${answer.status}: ${answer.text.trim().slice(0, 200)}`);
        const cosignature = verifiedLine(witness, checkpoint.text, answer.text);
        if (!cosignature) throw new Error('its answer holds no cosignature of this checkpoint by its key');
        await store.keep(chainName, { witness: witness.name, size: checkpoint.size, root: checkpoint.root, line: cosignature.line, at: cosignature.at });
        await store.count(witness.name, 'cosigned', checkpoint.size);
        return;
      }
    } catch (error) {
      logger.warn('witness refused or failed', { witness: witness.name, url: witness.url, chain: chainName, size: checkpoint.size, error: String(error) });
      await store.count(witness.name, 'failed', checkpoint.size).catch(() => undefined);
    }
  }

  return {
    enabled: witnesses.length > 0,

    /**
     * Sends the chain's checkpoint (from `current`, read only if the turn is won) to every witness, if the
     * chain's turn is free (at most one attempt per interval). True when an attempt was made.
     */
    async witness(chainName: string, current: () => Promise<CheckpointToWitness>): Promise<boolean> {
      if (witnesses.length === 0) return false;
      const at = now();
      if (!(await store.claim(chainName, at, at + intervalMs))) return false;
      const [checkpoint, kept] = await Promise.all([current(), store.cosigned(chainName)]);
      await Promise.all(
        witnesses.map((w) =>
          toOne(
            w,
            chainName,
            checkpoint,
            kept.find((k) => k.witness === w.name),
          ),
        ),
      );
      return true;
    },

    /**
     * The newest checkpoint witnesses cosigned for the chain: its size, root and the cosignature lines of
     * every witness that cosigned that same tree. Undefined if none has yet.
     */
    async latestCosigned(chainName: string): Promise<{ size: number; root: string; lines: string[] } | undefined> {
      if (witnesses.length === 0) return undefined;
      const kept = (await store.cosigned(chainName)).filter((k) => witnesses.some((w) => w.name === k.witness));
      if (kept.length === 0) return undefined;
      const best = kept.reduce((a, b) => (b.size > a.size ? b : a));
      const same = kept.filter((k) => k.size === best.size && k.root === best.root);
      return { size: best.size, root: best.root, lines: same.map((k) => k.line) };
    },

    summary: () => store.summary(),
  };
}

export type Witnessing = ReturnType<typeof createWitnessing>;
