/**
 * The admin group's domain (docs/rules.md, "Admin group"): the node proves who it is,
 * reports its state, accepts secure events whose signatures it checks before they touch a chain, and
 * pings its peers.
 */
import { timeoutSignal } from '../deadline.ts';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import * as z from 'zod';
import type { AccessControl } from '../access/access.ts';
import type { Principal } from '../access/policy.ts';
import type { OrganizationRecord } from '../business/repository.ts';
import { parsePublicKey, verifyEd25519 } from '../ed25519.ts';
import { ConflictError, DomainError, NotFoundError, OutcomeUnknownError, UnprocessableError, ValidationError } from '../errors.ts';
import { secureEventMessage } from '../ledger/signed-events.ts';
import type { Ledger } from '../ledger/ledger.ts';
import { payloadScope, SERVICE_OPENER, type Sealer } from '../ledger/offchain-port.ts';
import { NODE_STATEMENT_PREFIX } from '../ledger/checkpoint.ts';
import { looksLikeCheckpoint } from '../tlog/note.ts';
import { logger } from '../log.ts';
import { segmentId } from '../validation.ts';
import { SERVICE_VERSION } from '../version.ts';
import { createIdentityDocument, openIdentityDocument, openIdentityDocumentSealed, temporaryIdentity, type NodeIdentity } from './identity.ts';
import { type AdminRepository, NONCE_KEY_SIGNER, type PeerRecord } from './repository.ts';
import { notOwnFile } from '../own-file.ts';

export type IdentitySource = { kind: 'file'; path: string } | { kind: 'registry' };

export interface AdminOptions {
  repository: AdminRepository;
  organizations: { getOrganization(orgId: string): Promise<OrganizationRecord | undefined> };
  ledger: Ledger;
  access: AccessControl;
  sealer: Sealer;
  identity: IdentitySource;
  licenseKey: string | undefined;
  peerTimeoutMs: number;
  /** The header this node (and its peers) read API keys from. */
  apiKeyHeader: string;
  fetch?: typeof fetch;
  now?: () => number;
}

export const challengeInput = z.object({
  challenge: z.string().regex(/^([0-9a-fA-F]{2}){1,1024}$/, 'must be 1 to 1024 bytes, hex encoded'),
});

export const secureEventInput = z.object({
  entity_id: z.string().min(1).max(256),
  event_type: z.string().min(1).max(128),
  details: z.record(z.string(), z.unknown()).default({}),
  details_metadata: z.record(z.string(), z.unknown()).nullish(),
  org_id: z.string().min(1).max(64),
  /** *(extension)* The node the event was signed for (`GET /api/admin/identity`'s `node_id`): signed with it, good on that node only. */
  node_id: z.string().min(1).max(128).optional(),
  nonce: z.string().regex(/^[A-Za-z0-9_-]{8,128}$/, 'must be 8 to 128 of A-Z a-z 0-9 _ -'),
  signature: z.string().regex(/^[0-9a-fA-F]{128}$/, 'must be an Ed25519 signature, 128 hex characters'),
});

/** A peer's id: a path segment of its routes. */
const PEER_ID = segmentId(64, 'A-Za-z0-9_.-', 'A-Z a-z 0-9 _ . -');

export const peerInput = z.object({
  peer_id: z.string().regex(PEER_ID.pattern, `must be ${PEER_ID.rule}`),
  url: z.url({ protocol: /^https?$/ }).max(2048),
  public_key: z.string().min(1).max(4096),
  api_key: z.string().min(1).max(512).optional(),
});

/** `3d 4h 5m 6s`, leaving out leading zero units (`5m 6s`, `0s`). */
export function formatUptime(totalSeconds: number): string {
  const s = Math.max(0, Math.floor(totalSeconds));
  const parts: [number, string][] = [
    [Math.floor(s / 86_400), 'd'],
    [Math.floor((s % 86_400) / 3_600), 'h'],
    [Math.floor((s % 3_600) / 60), 'm'],
    [s % 60, 's'],
  ];
  const first = parts.findIndex(([n]) => n > 0);
  return first < 0
    ? '0s'
    : parts
        .slice(first)
        .map(([n, unit]) => `${n}${unit}`)
        .join(' ');
}

/** What a secure event's signature covers (shared/ledger/signed-events.ts). */
export { secureEventMessage };

/** Whose nonces a signature spends: the signing key's (an Ed25519 public key, hex). */
const nonceSigner = (publicKey: string) => `${NONCE_KEY_SIGNER}${publicKey}`;

const warned = new Set<string>();
/** A warning about how the process is set up: said once per process, however many requests meet it. */
function warnOnce(message: string, fields: Record<string, unknown>): void {
  if (warned.has(message)) return;
  warned.add(message);
  logger.warn(message, fields);
}

export function createAdmin(options: AdminOptions) {
  const { repository, ledger, sealer } = options;
  const fetcher = options.fetch ?? fetch;
  const now = options.now ?? (() => Date.now() / 1000);

  let loaded: Promise<NodeIdentity> | undefined;
  async function loadIdentity(): Promise<NodeIdentity> {
    const source = options.identity;
    if (source.kind === 'file') {
      // The local launcher makes the file at first start (or, asked to, a temporary one, and says so once);
      // a function run without it signs with keys of its own process, said once per process.
      if (!existsSync(source.path)) {
        warnOnce('no node identity file: signing with temporary keys, which change at every start', { path: source.path, fix: 'npm run identity -- init' });
        return temporaryIdentity();
      }
      const planted = notOwnFile(source.path);
      if (planted) throw new Error(planted);
      return openIdentityDocument(readFileSync(source.path, 'utf8'), sealer);
    }
    // In the cloud every instance must be the same node: one identity, made once, in the registry.
    const stored = await repository.getIdentity();
    if (stored) {
      const { identity, resealed } = await openIdentityDocumentSealed(stored, sealer, sealer);
      // Made before its key had a KMS scope of its own: sealed again under it, once, by the first signer that opens it
      // (best effort: a role that may not write it, or another instance first, leaves it to the next).
      if (resealed) {
        await repository.replaceIdentity(stored, resealed).then(
          (replaced) => replaced && logger.info('node identity sealed again under its own scope', {}),
          (error: unknown) => logger.warn('node identity not sealed again under its own scope; the next signer will try', { error }),
        );
      }
      return identity;
    }
    const { identity, document } = await createIdentityDocument(sealer);
    if (await repository.putIdentity(document)) return identity;
    return openIdentityDocument((await repository.getIdentity())!, sealer);
  }
  const identity = () => {
    loaded ??= loadIdentity().catch((error) => {
      loaded = undefined;
      throw error;
    });
    return loaded;
  };

  function publicPeer(peer: PeerRecord) {
    return { peer_id: peer.peer_id, url: peer.url, public_key: peer.public_key, created_at: peer.created_at };
  }

  return {
    identity,

    async describeIdentity() {
      const id = await identity();
      return { node_id: id.nodeId, public_key: id.publicKey, algorithm: id.algorithm };
    },

    async verifyIdentity({ challenge }: z.output<typeof challengeInput>) {
      if (Buffer.from(challenge, 'hex').subarray(0, NODE_STATEMENT_PREFIX.length).toString('latin1') === NODE_STATEMENT_PREFIX) {
        // Such bytes are how the node states things in its own name (signed checkpoints): never sign them for others.
        throw ValidationError.single(['body', 'challenge'], `A challenge may not start with the bytes '${NODE_STATEMENT_PREFIX}'`);
      }
      if (looksLikeCheckpoint(Buffer.from(challenge, 'hex'))) {
        // Nor anything shaped like a C2SP checkpoint's text: its signature would pass for a signed checkpoint.
        throw ValidationError.single(['body', 'challenge'], 'A challenge may not be shaped like a checkpoint (a line, a decimal line, a base64 hash line)');
      }
      const id = await identity();
      const signature = id.sign(Buffer.from(challenge, 'hex')).toString('hex');
      return { status: 'success' as const, node_id: id.nodeId, signature, challenge, public_key: id.publicKey, algorithm: id.algorithm };
    },

    async status() {
      const ledgerState = await ledger.describe();
      const uptimeSeconds = ledgerState.main_created_at === null ? 0 : Math.max(0, Math.floor(now() - ledgerState.main_created_at));
      return {
        status: 'active' as const,
        version: SERVICE_VERSION,
        chains_active: ledgerState.sub_chains,
        license_active: Boolean(options.licenseKey),
        uptime: formatUptime(uptimeSeconds),
        uptime_seconds: uptimeSeconds,
      };
    },

    async secureEvent(chainName: string, input: z.output<typeof secureEventInput>) {
      const org = await options.organizations.getOrganization(input.org_id);
      if (!org) throw new UnprocessableError(`Unknown organization '${input.org_id}': secure events are signed by registered organizations`);
      if (!org.public_key) throw new UnprocessableError(`Organization '${input.org_id}' has no public key to verify with`);
      const message = secureEventMessage({ chain_name: chainName, ...input });
      // The signature is checked before the nonce is spent, so forged requests cannot burn nonces.
      if (!verifyEd25519(org.public_key, message, Buffer.from(input.signature, 'hex'))) {
        throw new UnprocessableError("The signature does not verify with the organization's key");
      }
      if (input.node_id !== undefined) {
        // Signed for one node: not good on another that registered the same organization's key.
        const here = (await identity()).nodeId;
        if (input.node_id !== here) throw new UnprocessableError(`The event was signed for node '${input.node_id}'; this node is '${here}'`);
      }
      // The event is the signing organization's: it lands only where that organization may append
      // (on a channel's chain, only a member's signature), whoever relays it.
      const signer: Principal = { key_id: null, role: 'writer', org_id: org.org_id };
      await options.access.chain(signer, 'chain.append', chainName);
      // A nonce is spent for the signing key, not for the organization named: one signature is appended once, whichever
      // organization a relay names with it (two organizations registered before 2026-12-06 may share a key; the red
      // team appended one signed event twice that way).
      if (!(await repository.useNonce(nonceSigner(org.public_key), input.nonce))) {
        throw new ConflictError(`Nonce '${input.nonce}' was already used with organization '${org.org_id}''s signing key`);
      }
      try {
        const { event_id, block } = await ledger.appendEvent(
          chainName,
          {
            entity_id: input.entity_id,
            event_type: input.event_type,
            details: input.details,
            details_cid: null,
            details_nonce: null,
            details_metadata: input.details_metadata ?? null,
            is_offchain: false,
          },
          // Large details are uploaded first (seconds for megabytes): the signer's right is checked again before the
          // commit, so that an organization an admin took out meanwhile does not append after its removal (red team).
          {
            stillAllowed: () => options.access.chain(signer, 'chain.append', chainName),
            // Recorded in the event: anyone reading the block can check the signature again.
            signature: {
              org_id: org.org_id,
              public_key: org.public_key,
              nonce: input.nonce,
              ...(input.node_id === undefined ? {} : { node_id: input.node_id }),
              signature: input.signature.toLowerCase(),
            },
          },
        );
        return {
          success: true,
          message: `Signed event added to block ${block.index} of '${chainName}'`,
          event_id,
          verified: true as const,
          signer: org.org_id,
        };
      } catch (error) {
        // Nothing was appended: the nonce may be used again. Not when the append's outcome is unknown (it may have
        // landed: a 500 from an append that could not be settled, or an error of no known kind): a relay's retry
        // would then land the one signature twice (red team, 2026-12-07). The nonce stays spent; the signer signs
        // again with a new one if the event is not on the chain.
        if (error instanceof DomainError && !(error instanceof OutcomeUnknownError)) {
          await repository.releaseNonce(nonceSigner(org.public_key), input.nonce).catch(() => undefined);
        }
        throw error;
      }
    },

    async registerPeer(input: z.output<typeof peerInput>) {
      const peer: PeerRecord = {
        peer_id: input.peer_id,
        url: input.url.replace(/\/+$/, ''),
        public_key: parsePublicKey(input.public_key),
        sealed_api_key: input.api_key ? await sealer.seal(input.api_key, payloadScope.service) : null,
        created_at: new Date().toISOString(),
      };
      if (!(await repository.putPeer(peer))) throw new ConflictError(`Peer '${peer.peer_id}' already exists`);
      return publicPeer(peer);
    },

    async listPeers() {
      return (await repository.listPeers()).map(publicPeer).sort((a, b) => a.peer_id.localeCompare(b.peer_id));
    },

    /** Reachable: the peer's health answered; verified: it signed a fresh challenge with its registered key. */
    async ping(targetId: string) {
      const peer = await repository.getPeer(targetId);
      if (!peer) throw new NotFoundError(`Peer '${targetId}' not found`);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (peer.sealed_api_key) headers[options.apiKeyHeader] = String(await sealer.unseal(peer.sealed_api_key, SERVICE_OPENER));
      const started = performance.now();
      try {
        // A redirect is not followed: the key goes to the peer's registered address only (fetch keeps custom headers
        // across origins), and what answers from elsewhere is not that peer.
        await (await fetcher(`${peer.url}/api/ledger/health`, { redirect: 'error', signal: timeoutSignal(options.peerTimeoutMs) })).arrayBuffer();
      } catch {
        return { target_id: targetId, reachable: false, latency_ms: null, verified: false };
      }
      const latency = Math.round((performance.now() - started) * 10) / 10;
      let verified = false;
      try {
        const challenge = randomBytes(32).toString('hex');
        const res = await fetcher(`${peer.url}/api/admin/verify-identity`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ challenge }),
          redirect: 'error',
          signal: timeoutSignal(options.peerTimeoutMs),
        });
        const answer = (await res.json()) as { challenge?: string; signature?: string };
        verified =
          res.ok &&
          answer.challenge === challenge &&
          typeof answer.signature === 'string' &&
          /^[0-9a-f]{128}$/i.test(answer.signature) &&
          verifyEd25519(peer.public_key, Buffer.from(challenge, 'hex'), Buffer.from(answer.signature, 'hex'));
      } catch {
        verified = false;
      }
      return { target_id: targetId, reachable: true, latency_ms: latency, verified };
    },
  };
}

export type Admin = ReturnType<typeof createAdmin>;
