/**
 * A worker thread of page-workers.ts: fetches the pages it is asked for from the node and checks each on its
 * own (pages.ts), answering what it found. Bundled and started by page-workers.ts; it holds nothing between pages.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type CheckedPage, Failure, fetchPage, type PageRequest } from './pages.ts';

const { base, headers } = workerData as { base: string; headers: Record<string, string> };

parentPort!.on('message', async ({ id, request }: { id: number; request: PageRequest }) => {
  let page: CheckedPage;
  try {
    page = await fetchPage(fetch, base, headers, request);
  } catch (error) {
    // The page could not be had: nothing of it was checked (a bug here is named too, never a hang).
    page = { hashes: [], previous: null, erased: 0, failure: { message: error instanceof Failure ? error.message : String(error), block: null } };
  }
  parentPort!.postMessage({ id, page });
});
