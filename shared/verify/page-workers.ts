/**
 * Pages of blocks fetched and checked in worker threads, so that an audit uses every core: recomputing each
 * block's hash (RFC 8785 + SHA-256) and parsing its page are most of a verifier's work, and pages are checked
 * independently (pages.ts); the verifier links them in order. Node only (the CLI's); the worker's code is
 * bundled from page-worker.ts with esbuild: kept inside the CLI's own kept bundle (bin/bundle-cache.mjs), or,
 * when the verifier runs from its sources, bundled when the pool starts (about 0.27 s of CPU, where loading it
 * through tsx in each worker took more).
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CheckedPage, NodeWait, PageRequest } from './pages.ts';

export interface PagePool {
  check(request: PageRequest): Promise<CheckedPage>;
  /** Pages to ask for ahead of the one being linked, at least: enough to keep every worker busy on a near node. */
  inFlight: number;
  /** Chains of this many blocks or fewer are checked in the verifier's own thread: a few pages are not worth the start. */
  minBlocks: number;
  /** Workers, each checking a page at a time: how far ahead a distant node needs pages asked for (pages.ts, PageWindow). */
  threads: number;
  close(): Promise<void>;
}

/** One worker a core, up to 8 (past that the node, not the verifier, sets the pace). */
export const defaultThreads = (): number => Math.max(1, Math.min(8, availableParallelism()));

/**
 * A pool of `threads` workers, started on the first page it is asked for (a verifier that checks no long chain
 * never pays for starting them, nor, run from its sources, for bundling their code).
 */
export function startPagePool({
  base,
  headers,
  threads,
  minBlocks = 2_000,
  onWait,
}: {
  base: string;
  headers: Record<string, string>;
  threads: number;
  minBlocks?: number;
  /** Told when the node asks a worker to wait (pages.ts, askNode). */
  onWait?: (wait: NodeWait) => void;
}): PagePool {
  let slots: ReturnType<typeof startWorkers> | undefined;
  let nextId = 0;
  return {
    threads,
    minBlocks,
    inFlight: Math.max(6, 3 * threads),
    check(request) {
      slots ??= startWorkers(base, headers, threads, onWait);
      // The least busy worker takes the page.
      const slot = slots.reduce((a, b) => (b.waiting.size < a.waiting.size ? b : a));
      const id = nextId++;
      return new Promise<CheckedPage>((resolve, reject) => {
        slot.waiting.set(id, { resolve, reject });
        slot.worker.postMessage({ id, request });
      });
    },
    async close() {
      await Promise.all((slots ?? []).map((slot) => slot.worker.terminate()));
    },
  };
}

/** The worker's code, when the verifier runs from its kept bundle (bin/bundle-cache.mjs puts it there). */
declare const PAGE_WORKER_CODE: string | undefined;

/** The worker's code: bundled with the verifier's, or else bundled now from its source. */
function workerCode(): string {
  if (typeof PAGE_WORKER_CODE === 'string') return PAGE_WORKER_CODE;
  const { buildSync } = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  return buildSync({
    entryPoints: [fileURLToPath(new URL('./page-worker.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    write: false,
    logLevel: 'silent',
  }).outputFiles[0]!.text;
}

function startWorkers(base: string, headers: Record<string, string>, threads: number, onWait?: (wait: NodeWait) => void) {
  const code = workerCode();
  type Waiting = { resolve: (page: CheckedPage) => void; reject: (error: Error) => void };
  return Array.from({ length: threads }, () => {
    const worker = new Worker(code, { eval: true, workerData: { base, headers } });
    worker.unref(); // an unfinished pool never keeps the verifier's process alive
    const slot = { worker, waiting: new Map<number, Waiting>() };
    const failAll = (error: Error) => {
      for (const waiting of slot.waiting.values()) waiting.reject(error);
      slot.waiting.clear();
    };
    worker.on('message', (message: { id: number; page: CheckedPage } | { wait: NodeWait }) => {
      if ('wait' in message) return onWait?.(message.wait);
      const { id, page } = message;
      slot.waiting.get(id)?.resolve(page);
      slot.waiting.delete(id);
    });
    worker.on('error', (error) => failAll(new Error(`a page worker failed: ${error.message}`, { cause: error })));
    worker.on('exit', (code) => failAll(new Error(`a page worker exited (code ${code})`)));
    return slot;
  });
}
