/**
 * The node's identity (docs/rules.md, "Admin group"): an Ed25519 key pair. Its document holds the node id, the public
 * key and the private key sealed with the off-chain envelope scheme (the data key wrapped by KMS in the
 * cloud, by the local master key on a laptop) — never the raw private key:
 *
 *   { "format": "verifiable-ledger/node-identity", "version": 1, "algorithm": "ed25519",
 *     "node_id": "node-<16 hex>", "public_key": "<64 hex>", "private_key": "<sealed envelope JSON>",
 *     "created_at": "…" }
 */
import { createHash, createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { publicKeyToHex } from '../ed25519.ts';
import { IDENTITY_OPENER, type PayloadScope, payloadScope, type Sealer } from '../ledger/offchain-port.ts';

export const IDENTITY_FORMAT = 'verifiable-ledger/node-identity';

export interface NodeIdentity {
  nodeId: string;
  /** Ed25519 public key, 64 hex characters. */
  publicKey: string;
  algorithm: 'ed25519';
  /** True for keys made in memory because no identity was found (they vanish with the process). */
  temporary: boolean;
  /** Ed25519 signature over the raw bytes. */
  sign(bytes: Uint8Array): Buffer;
}

interface IdentityDocument {
  format: typeof IDENTITY_FORMAT;
  version: 1;
  algorithm: 'ed25519';
  node_id: string;
  public_key: string;
  private_key: string;
  created_at: string;
  /** Made by the local launcher for one run because no identity exists: every instance of that run shares it. */
  temporary?: true;
}

const rawPublicKey = publicKeyToHex;

function identityFrom(privateKey: KeyObject, nodeId: string, temporary: boolean): NodeIdentity {
  return {
    nodeId,
    publicKey: rawPublicKey(privateKey),
    algorithm: 'ed25519',
    temporary,
    sign: (bytes) => sign(null, bytes, privateKey),
  };
}

function nodeIdOf(publicKeyHex: string): string {
  return `node-${createHash('sha256').update(Buffer.from(publicKeyHex, 'hex')).digest('hex').slice(0, 16)}`;
}

/**
 * A fresh identity and its document, the private key sealed by `sealer`. `temporary`: keys for one run of
 * the local stack, shared by its instances through the document (node id ending in `-temporary`).
 */
export async function createIdentityDocument(
  sealer: Pick<Sealer, 'seal'>,
  options: { temporary?: boolean } = {},
): Promise<{ identity: NodeIdentity; document: string }> {
  const { privateKey } = generateKeyPairSync('ed25519');
  const publicKey = rawPublicKey(privateKey);
  const nodeId = `${nodeIdOf(publicKey)}${options.temporary ? '-temporary' : ''}`;
  const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
  const document: IdentityDocument = {
    format: IDENTITY_FORMAT,
    version: 1,
    algorithm: 'ed25519',
    node_id: nodeId,
    public_key: publicKey,
    // Under a scope of its own: the roles that do not sign are denied unwrapping it (infra/cdk/permissions.ts, SIGNERS).
    private_key: await sealer.seal({ pkcs8 }, payloadScope.identity),
    created_at: new Date().toISOString(),
    ...(options.temporary ? { temporary: true as const } : {}),
  };
  return { identity: identityFrom(privateKey, nodeId, options.temporary === true), document: `${JSON.stringify(document, null, 2)}\n` };
}

/** Opens an identity document; throws when it is malformed or its key does not match its public key. */
export async function openIdentityDocument(text: string, unsealer: Pick<Sealer, 'unseal'>): Promise<NodeIdentity> {
  return (await openIdentityDocumentSealed(text, unsealer)).identity;
}

/**
 * `openIdentityDocument`, and the scope its key was sealed under; given `resealWith`, the document sealed again under
 * `identity` when it was not (a document made before 2026-12-07 sealed it under `service`, which every function may
 * unwrap).
 */
export async function openIdentityDocumentSealed(
  text: string,
  unsealer: Pick<Sealer, 'unseal'>,
  resealWith?: Pick<Sealer, 'seal'>,
): Promise<{ identity: NodeIdentity; sealedAs: PayloadScope | null; resealed?: string }> {
  const document = JSON.parse(text) as IdentityDocument;
  if (document.format !== IDENTITY_FORMAT || document.version !== 1 || document.algorithm !== 'ed25519') {
    throw new Error('not a node identity document of a known version');
  }
  let sealedAs: PayloadScope | null = null;
  const { pkcs8 } = (await unsealer.unseal(document.private_key, async (scope) => {
    sealedAs = scope;
    return IDENTITY_OPENER(scope);
  })) as { pkcs8: string };
  const privateKey = createPrivateKey({ key: Buffer.from(pkcs8, 'base64'), format: 'der', type: 'pkcs8' });
  if (rawPublicKey(privateKey) !== document.public_key) throw new Error('the identity private key does not match its public key');
  const identity = identityFrom(privateKey, document.node_id, document.temporary === true);
  if (sealedAs === payloadScope.identity || !resealWith) return { identity, sealedAs };
  const resealed: IdentityDocument = { ...document, private_key: await resealWith.seal({ pkcs8 }, payloadScope.identity) };
  return { identity, sealedAs, resealed: `${JSON.stringify(resealed, null, 2)}\n` };
}

/** In-memory keys for a node that has no identity yet: they change at every start. */
export function temporaryIdentity(): NodeIdentity {
  const { privateKey } = generateKeyPairSync('ed25519');
  return identityFrom(privateKey, `${nodeIdOf(rawPublicKey(privateKey))}-temporary`, true);
}
