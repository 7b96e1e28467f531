/**
 * The probes' chains, written and read through the service. `fillChain`: created, then `blocks` blocks in all,
 * batches of 99 first and the newest `singles` appended one by one (a lone writer's newest blocks stay on the
 * chain's head until their segment is written, so proofs of the tree's last blocks read them there).
 */
import autocannon, { type Result } from 'autocannon';
import { call } from '#test/support/stack';

/** Reads blocks of `chain` by index through the service, 16 at once: each of `indices` once (`amount`), or round and round (`duration`, s). */
export function readByIndex(url: string, chain: string, indices: number[], options: { amount?: number; duration?: number }): Promise<Result> {
  let next = 0;
  return autocannon({
    url,
    connections: 16,
    ...options,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/api/v1/chains/${chain}/blocks/${indices[next++ % indices.length]}` }) }],
  });
}

export async function fillChain(url: string, chain: string, blocks: number, singles: number): Promise<void> {
  await call(url, 'POST', `/api/v1/chains/${chain}/create`);
  for (let done = 1; done < blocks - singles; done += 99) {
    const events = Array.from({ length: Math.min(99, blocks - singles - done) }, (_, k) => ({
      entity_id: `e-${done}-${k}`,
      event_type: 'recorded',
      details: { k },
    }));
    await call(url, 'POST', `/api/v1/chains/${chain}/events/batch`, { events });
  }
  for (let i = 0; i < singles; i += 1) await call(url, 'POST', `/api/v1/chains/${chain}/events`, { entity_id: `s-${i}`, event_type: 'recorded' });
}
