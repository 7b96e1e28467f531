/**
 * A worker thread of page-workers.ts: fetches the pages it is asked for from the node and checks each on its
 * own (pages.ts), answering what it found, and telling the pool when the node asks it to wait. Bundled and
 * started by page-workers.ts; it holds nothing between pages.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { nodeGet } from './node-get.ts';
import { type CheckedPage, Failure, fetchPage, type NodeLink, type PageRequest } from './pages.ts';

const { base, headers } = workerData as { base: string; headers: Record<string, string> };
const node: NodeLink = { http: nodeGet, base, headers, onWait: (wait) => parentPort!.postMessage({ wait }) };

parentPort!.on('message', async ({ id, request }: { id: number; request: PageRequest }) => {
  let page: CheckedPage;
  try {
    page = await fetchPage(node, request);
  } catch (error) {
    // The page could not be had: nothing of it was checked (a bug here is named too, never a hang).
    const failure = error instanceof Failure ? { message: error.message, block: null, refused: error.refused } : { message: String(error), block: null };
    page = { hashes: [], previous: null, erased: 0, subtrees: [], failure };
  }
  parentPort!.postMessage({ id, page });
});
