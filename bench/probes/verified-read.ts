/**
 * A verified read beside a plain one, as `npm run bench` measures them (bench/client.ts), without building the
 * bench's 100,000-block chain: a single-process stack on DynamoDB Local (on disk), a chain of PROBE_BLOCKS blocks
 * (20,000; the newest 10 appended one by one, so their metadata is on the head), then two rounds of 300 random
 * reads by index, plain and verified, each block read once before. Prints each round's p50s and their ratio.
 * `node --import tsx bench/probes/verified-read.ts`
 */
import { join } from 'node:path';
import { removeDir, startStack, tempDataDir } from '#test/support/stack';
import { fillChain } from './chain.ts';
import { clientFigures } from '../client.ts';

const BLOCKS = Number(process.env.PROBE_BLOCKS ?? 20_000);
const dir = tempDataDir('verified-read');
const stack = await startStack({
  dataDir: join(dir, 'data'),
  env: { SVC_LOCAL_RUNTIME: 'single-process', SVC_LOG_LEVEL: 'warn', SVC_DYNAMODB_IN_MEMORY: 'false' },
});
try {
  await fillChain(stack.url, 'verify', BLOCKS, 10);
  for (let round = 1; round <= 2; round += 1) {
    const { read } = await clientFigures(stack.url, 'verify', BLOCKS, 300);
    console.log(
      `round ${round}: plain p50 ${read.plain.p50_ms} ms, verified p50 ${read.verified.p50_ms} ms (${(read.verified.p50_ms / read.plain.p50_ms).toFixed(2)}x),`,
      `${read.verified.requests_per_call} request(s) a verified read, ${read.verified.proof_bytes_per_call} bytes of evidence`,
    );
  }
} finally {
  await stack.stop();
  removeDir(dir);
}
