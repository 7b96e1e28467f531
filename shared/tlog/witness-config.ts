/**
 * The witnesses a service is given (SVC_WITNESSES): `<cosigner vkey>=<url>` entries, parsed and checked
 * (C2SP tlog-cosignature keys, type 0x04). Apart from the witnessing itself, so that the settings can check
 * the value without loading what sends checkpoints.
 */
import { createHash } from 'node:crypto';

export interface WitnessConfig {
  /** The witness's cosigner key name (from its vkey). */
  name: string;
  /** Its Ed25519 public key, 64 hex. */
  publicKeyHex: string;
  vkey: string;
  /** The submission prefix: `<url>/add-checkpoint` is posted to. */
  url: string;
}

const COSIGNATURE_TYPE = 0x04;

/** Parses `<vkey>=<url>` entries (commas or spaces between them): a cosigner vkey (type 0x04) and its URL. */
export function parseWitnesses(setting: string | undefined): WitnessConfig[] {
  if (!setting?.trim()) return [];
  return setting
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((entry) => {
      const at = entry.indexOf('=');
      if (at < 0) throw new TypeError(`'${entry}' is not <witness vkey>=<url>`);
      const vkey = entry.slice(0, at);
      const url = entry.slice(at + 1).replace(/\/+$/, '');
      const parts = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/]{44})$/.exec(vkey);
      const key = parts ? Buffer.from(parts[3]!, 'base64') : undefined;
      if (!parts || !key || key.length !== 33 || key[0] !== COSIGNATURE_TYPE) {
        throw new TypeError(`'${vkey}' is not a witness's cosigner vkey (<name>+<id>+base64(0x04 ‖ Ed25519 key))`);
      }
      const name = parts[1]!;
      const publicKey = key.subarray(1);
      if (cosignerKeyId(name, publicKey).toString('hex') !== parts[2]) throw new TypeError(`the key id of witness '${name}' does not match its key`);
      if (!/^https?:\/\/[^\s]+$/.test(url)) throw new TypeError(`'${url}' is not the http(s) URL of witness '${name}'`);
      return { name, publicKeyHex: publicKey.toString('hex'), vkey, url };
    });
}

export function cosignerKeyId(name: string, publicKey: Uint8Array): Buffer {
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`), Buffer.from([COSIGNATURE_TYPE]), publicKey]))
    .digest()
    .subarray(0, 4);
}
