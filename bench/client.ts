/**
 * The verified client beside the plain one, on the bench's long chain: what verification adds to an
 * append and to a read (p50), in requests and in bytes of proof per call (the evidence answers' bodies).
 * One client at a time, sequential calls: this prices one call, it is not a throughput figure. Each client reads
 * blocks it has read once before (an instance keeps them), so that neither pays the other's cold reads.
 */
import { LedgerClient } from '#client/client';
import { percentile } from './limits.ts';
import { round } from './resources.ts';

export interface CallFigure {
  calls: number;
  p50_ms: number;
  p99_ms: number;
  requests_per_call: number;
  /** Bytes of evidence (proofs, checkpoint) answered per call: 0 for plain calls. */
  proof_bytes_per_call: number;
}

export interface ClientFigures {
  chain_blocks: number;
  read: { plain: CallFigure; verified: CallFigure; added_p50_ms: number };
  append: { plain: CallFigure; verified: CallFigure; added_p50_ms: number };
}

function counted() {
  const count = { requests: 0, proofBytes: 0 };
  const fetchCounted: typeof fetch = async (input, init) => {
    count.requests += 1;
    const response = await fetch(input, init);
    if (new URL(response.url).pathname.endsWith('/evidence')) {
      // From the header, so that counting adds no work to the timed call (reading a clone of the body did).
      const length = response.headers.get('content-length');
      count.proofBytes += length !== null ? Number(length) : (await response.clone().arrayBuffer()).byteLength;
    }
    return response;
  };
  return { count, fetch: fetchCounted };
}

/**
 * `calls` calls of each of two clients, alternating (a, b, a, b, …), so that both meet the same moments of a
 * machine whose speed drifts within seconds: their ratio is then of the calls, not of the minute each ran in.
 */
async function timePair(
  calls: number,
  clients: [{ count: { requests: number; proofBytes: number } }, { count: { requests: number; proofBytes: number } }],
  call: [(i: number) => Promise<unknown>, (i: number) => Promise<unknown>],
): Promise<[CallFigure, CallFigure]> {
  const before = clients.map((c) => ({ ...c.count }));
  const ms: [number[], number[]] = [[], []];
  for (let i = 0; i < calls; i += 1) {
    for (const side of [0, 1] as const) {
      const start = performance.now();
      await call[side](i);
      ms[side].push(performance.now() - start);
    }
  }
  const figure = (side: 0 | 1): CallFigure => {
    const sorted = ms[side].sort((a, b) => a - b);
    const { count } = clients[side];
    return {
      calls,
      p50_ms: round(percentile(sorted, 50), 2),
      p99_ms: round(percentile(sorted, 99), 2),
      requests_per_call: round((count.requests - before[side]!.requests) / calls, 2),
      proof_bytes_per_call: round((count.proofBytes - before[side]!.proofBytes) / calls, 0),
    };
  };
  return [figure(0), figure(1)];
}

/** Random reads of `chain` (of `blocks` blocks) and appends to it, plain and verified, interleaved in rounds. */
export async function clientFigures(baseUrl: string, chain: string, blocks: number, calls: number): Promise<ClientFigures> {
  const plainCounted = counted();
  const verifiedCounted = counted();
  const plain = Object.assign(new LedgerClient({ baseUrl, verify: false, fetch: plainCounted.fetch }), { count: plainCounted.count });
  const verified = Object.assign(new LedgerClient({ baseUrl, fetch: verifiedCounted.fetch }), { count: verifiedCounted.count });
  await verified.checkpoint(chain); // the pinned key and a trusted state, as a long-lived client has
  const indices = Array.from({ length: calls }, () => Math.floor(Math.random() * blocks));
  // Both read the blocks as warm (each has read them once, untimed): else the first to read them pays the cold reads.
  for (const index of indices) {
    await plain.block(chain, index);
    await verified.block(chain, index);
  }
  const [readPlain, readVerified] = await timePair(
    calls,
    [plain, verified],
    [(i) => plain.block(chain, indices[i]!), (i) => verified.block(chain, indices[i]!)],
  );
  const event = (i: number, who: string) => ({ entity_id: `bench-client-${who}-${i}`, event_type: 'measured', details: { i } });
  const [appendPlain, appendVerified] = await timePair(
    calls,
    [plain, verified],
    [(i) => plain.append(chain, event(i, 'plain')), (i) => verified.append(chain, event(i, 'verified'))],
  );
  return {
    chain_blocks: blocks,
    read: { plain: readPlain, verified: readVerified, added_p50_ms: round(readVerified.p50_ms - readPlain.p50_ms, 2) },
    append: { plain: appendPlain, verified: appendVerified, added_p50_ms: round(appendVerified.p50_ms - appendPlain.p50_ms, 2) },
  };
}
