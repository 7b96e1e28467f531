/**
 * What a kept page of 100 blocks costs beside its 100 records (docs/capacity.md, "Reads"): three kinds of block
 * (details of a few bytes, an order-like record, 300 random bytes), each page's JSON and packed size, and the
 * read units of one eventually consistent read of the kept page against its records', and its write units once.
 * `node --import tsx bench/probes/page-size.ts`
 */
import { randomBytes } from 'node:crypto';
import { buildBlocks } from '#shared/ledger/blocks';
import { canonicalJson, ZERO_HASH } from '#shared/ledger/hashing';
import { packPage } from '#shared/storage/ledger-pages';

for (const [label, details] of [
  ['small {i}', (i: number) => ({ i })],
  [
    'order-like',
    (i: number) => ({
      order: `ord-${i}`,
      amount: Math.round(Math.random() * 1e6) / 100,
      currency: 'EUR',
      customer: randomBytes(8).toString('hex'),
      note: 'shipped to warehouse 4',
    }),
  ],
  ['random 400 B', () => ({ blob: randomBytes(300).toString('base64') })],
] as const) {
  const drafts = Array.from({ length: 100 }, (_, i) => ({
    events: [
      {
        entity_id: `entity-${i}`,
        event_type: 'recorded',
        details: details(i),
        details_cid: null,
        details_nonce: null,
        details_metadata: null,
        is_offchain: false,
      },
    ],
  }));
  const blocks = buildBlocks('orders', { headIndex: 99, headHash: ZERO_HASH }, drafts as never, () => 1764000000 + Math.random());
  const raw = blocks.reduce((n, b) => n + Buffer.byteLength(canonicalJson(b)), 0);
  const packed = packPage(blocks).byteLength;
  const rcu = (bytes: number) => Math.ceil(bytes / 4096) / 2;
  // Records: one item each, eventually consistent: half a unit per started 4 KB each.
  const recordItems = blocks.reduce((n, b) => n + rcu(Buffer.byteLength(canonicalJson(b)) + 200), 0);
  console.log(label, {
    raw_per_block: Math.round(raw / 100),
    packed,
    ratio: (packed / raw).toFixed(2),
    page_rcu: rcu(packed + 60),
    records_rcu: recordItems,
    wcu_once: Math.ceil((packed + 60) / 1024),
  });
}
