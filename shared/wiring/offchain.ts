/**
 * Off-chain payloads and data keys: the IPFS client, the KMS client (or the local master key) and the
 * envelope store. Loaded on first use (core.ts imports this module dynamically): the two clients are about
 * half of a function's bundle start-up, and most requests (reads, tiles, proofs) need neither, so a cold
 * instance that serves them does not pay for them.
 */
import { KMSClient } from '@aws-sdk/client-kms';
import { AWS_HTTP, DeadlineHttpHandler } from '../aws-http.ts';
import { masterKeyPath, type Settings } from '../config.ts';
import { DependencyUnavailableError } from '../errors.ts';
import type { OffchainStore } from '../ledger/offchain-port.ts';
import { createIpfsStore, type IpfsStore } from '../offchain/ipfs-store.ts';
import { KmsKeyProvider, type KeyProvider, LocalKeyProvider } from '../offchain/key-providers.ts';
import { createOffchainStore } from '../offchain/offchain.ts';
import { QUIET_SDK_LOGGER } from '../storage/client.ts';

export interface OffchainParts {
  /** What wraps data keys: KMS (SVC_KMS_KEY_ID) or the local master key file. */
  keys: KeyProvider;
  /** Encrypted payloads in IPFS (SVC_IPFS_API_URL); without one, the operations that need IPFS answer 503. */
  offchain: OffchainStore;
}

export function buildOffchain(settings: Readonly<Settings>): OffchainParts {
  const keys: KeyProvider = settings.SVC_KMS_KEY_ID
    ? new KmsKeyProvider({
        client: new KMSClient({ region: settings.SVC_AWS_REGION, maxAttempts: 3, logger: QUIET_SDK_LOGGER, requestHandler: new DeadlineHttpHandler(AWS_HTTP) }),
        keyId: settings.SVC_KMS_KEY_ID,
      })
    : LocalKeyProvider.fromFile(masterKeyPath(settings), { create: false });
  const url = settings.SVC_IPFS_API_URL;
  const unavailable = async () => Promise.reject(new DependencyUnavailableError('IPFS (SVC_IPFS_API_URL is not set)'));
  const ipfs: IpfsStore = url
    ? createIpfsStore({ url, authorization: settings.SVC_IPFS_API_AUTH || undefined, timeoutMs: settings.SVC_IPFS_TIMEOUT_MS, maxBytes: 16 * 1024 * 1024 })
    : // Not configured is the same to a client as not reachable: the operations that need IPFS answer 503.
      { add: unavailable, cat: unavailable, ping: unavailable, remove: unavailable };
  return { keys, offchain: createOffchainStore({ ipfs, keys }) };
}
