/**
 * What canonical JSON (RFC 8785) costs a block, the text every append hashes and every verified block is checked by:
 * `canonicalJson` (shared/ledger/hashing.ts) against the `canonicalize` library (the unit tests' oracle), on a block
 * of one order-like event, 300,000 times each, alternating, twice.
 * `node --import tsx bench/probes/canonical-json.ts`
 */
import canonicalize from 'canonicalize';
import { canonicalJson } from '#shared/ledger/hashing';

const block = {
  index: 12_345,
  chain_name: 'orders',
  timestamp: 1_764_000_000.123,
  previous_hash: 'a'.repeat(64),
  events: [
    {
      event_id: 'orders_12345_0',
      entity_id: 'order-42',
      event_type: 'order_created',
      details: {
        amount: 129.5,
        currency: 'EUR',
        items: [
          { sku: 'X-1', qty: 2 },
          { sku: 'Y-2', qty: 1 },
        ],
        note: 'deliver to back door',
      },
      details_metadata: null,
      is_offchain: false,
    },
  ],
};
if (canonicalJson(block) !== canonicalize(block)) throw new Error('the two disagree on the probe block');
const RUNS = 300_000;
for (let round = 0; round < 2; round += 1) {
  for (const [name, write] of [
    ['canonicalJson', canonicalJson],
    ['canonicalize', (v: unknown) => canonicalize(v) ?? ''],
  ] as const) {
    const t0 = performance.now();
    let bytes = 0;
    for (let i = 0; i < RUNS; i += 1) bytes += write(block).length;
    console.log(`${name}: ${(((performance.now() - t0) * 1000) / RUNS).toFixed(2)} µs a block (${bytes / RUNS} characters)`);
  }
}
