/**
 * IPFS through kubo-rpc-client: against a real Kubo (SVC_IPFS_API_URL) or the local stack's embedded
 * node, which answers the same RPC. Adds pin by default, with Kubo's defaults (CIDv0, 256 KiB chunks).
 *
 * The client is loaded on first use, not with the function: it and its codecs are a quarter of a function's bundle
 * (550 KB of 2.1 MB), and most invocations never touch IPFS. Importing the ledger function's bundle took 220-250 ms of
 * CPU with it loaded at once, 180-195 ms without (Node 20 here, medians of five).
 */
import type { KuboRPCClient } from 'kubo-rpc-client';
import { deadlinePassed, timeoutSignal } from '../deadline.ts';
import { DeadlineExceededError, DependencyUnavailableError, UnreadablePayloadError } from '../errors.ts';
import { isUnavailable } from '../storage/errors.ts';
import { logger } from '../log.ts';

export interface IpfsStore {
  /** Stores bytes; answers their CID. */
  add(bytes: Uint8Array): Promise<string>;
  /** The bytes of a CID; UnreadablePayloadError when it cannot be had, 503 when IPFS is unreachable. */
  cat(cid: string): Promise<Uint8Array>;
  /** Throws when the node cannot be reached. */
  ping(): Promise<void>;
  /** Unpins a DAG and deletes its blocks from this node; false when its root was not there. */
  remove(cid: string): Promise<boolean>;
}

export interface IpfsStoreOptions {
  url: string;
  /** An Authorization header value for a Kubo whose RPC API requires one. */
  authorization?: string | undefined;
  /** A fetch that takes longer is given up (a real Kubo may search the network for a missing CID). */
  timeoutMs: number;
  /** Largest object read back. */
  maxBytes: number;
}

function translate(error: unknown, what: string): Error {
  if (error instanceof UnreadablePayloadError || error instanceof DeadlineExceededError) return error;
  // Cut off by the invocation's deadline rather than by IPFS's own timeout: the request ran out of time (503).
  if (deadlinePassed()) return new DeadlineExceededError('IPFS', { cause: error });
  if (isUnavailable(error)) return new DependencyUnavailableError('IPFS', { cause: error });
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return new UnreadablePayloadError(`${what}: IPFS did not deliver it in time`);
  }
  // The library's words (its node's state, its paths) go to the log; a caller is told what failed.
  logger.warn('IPFS could not provide a payload', { what, error });
  return new UnreadablePayloadError(`${what}: IPFS could not provide it`, { cause: error });
}

export function createIpfsStore(options: IpfsStoreOptions): IpfsStore {
  let loaded: Promise<KuboRPCClient> | undefined;
  const kubo = () =>
    (loaded ??= import('kubo-rpc-client').then(({ create }) =>
      create({
        url: options.url,
        timeout: options.timeoutMs,
        ...(options.authorization ? { headers: { Authorization: options.authorization } } : {}),
      }),
    ));
  return {
    async add(bytes) {
      try {
        const client = await kubo();
        const added = await client.add(bytes, { pin: true, signal: timeoutSignal(options.timeoutMs) });
        return added.cid.toString();
      } catch (error) {
        const translated = translate(error, 'storing the payload');
        // A store that fails for another reason than reachability is still the dependency failing.
        throw translated instanceof DeadlineExceededError
          ? translated
          : translated instanceof UnreadablePayloadError
            ? new DependencyUnavailableError('IPFS', { cause: error })
            : translated;
      }
    },

    async cat(cid) {
      const chunks: Uint8Array[] = [];
      let size = 0;
      try {
        const client = await kubo();
        for await (const chunk of client.cat(cid, { signal: timeoutSignal(options.timeoutMs) })) {
          size += chunk.length;
          if (size > options.maxBytes) throw new UnreadablePayloadError(`CID ${cid} is larger than ${options.maxBytes} bytes`);
          chunks.push(chunk);
        }
      } catch (error) {
        throw translate(error, `CID ${cid}`);
      }
      return Buffer.concat(chunks);
    },

    async ping() {
      try {
        const client = await kubo();
        await client.version({ signal: timeoutSignal(Math.min(options.timeoutMs, 3_000)) });
      } catch (error) {
        throw new DependencyUnavailableError('IPFS', { cause: error });
      }
    },

    async remove(cid) {
      const signal = () => timeoutSignal(options.timeoutMs);
      try {
        const client = await kubo();
        const { CID } = await import('multiformats/cid');
        await client.pin.rm(cid, { signal: signal() }).catch((error: unknown) => {
          // Not pinned (already removed, or added unpinned): nothing to unpin.
          if (!/not pinned/.test(error instanceof Error ? error.message : '')) throw error;
        });
        const blocks = [cid];
        try {
          for await (const ref of client.refs(cid, { recursive: true, signal: signal() })) if (ref.ref) blocks.push(ref.ref);
        } catch (error) {
          if (/not found|could not find/.test(error instanceof Error ? error.message : '')) return false;
          throw error;
        }
        let removed = false;
        for await (const result of client.block.rm(
          blocks.map((b) => CID.parse(b)),
          { force: true, signal: signal() },
        ))
          if (!result.error && result.cid.toString() === cid) removed = true;
        return removed;
      } catch (error) {
        // Whatever stops a removal is the dependency failing: the erasure answers 503 and can be run again.
        if (error instanceof DependencyUnavailableError) throw error;
        throw deadlinePassed() ? new DeadlineExceededError('IPFS', { cause: error }) : new DependencyUnavailableError('IPFS', { cause: error });
      }
    },
  };
}
