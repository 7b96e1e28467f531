/**
 * What a kept page of 100 blocks costs beside its 100 records (docs/capacity.md, "Reads"): three kinds of block
 * (details of a few bytes, an order-like record, 300 random bytes), each page's JSON and packed size, and the
 * read units of one eventually consistent read of the kept page against its records', and its write units once;
 * and the page as answered (its JSON), as sent to a caller that accepts br or gzip (shared/http/compression.ts), and
 * what compressing it costs.
 * `node --import tsx bench/probes/page-size.ts`
 */
import { randomBytes } from 'node:crypto';
import { buildBlocks } from '#shared/ledger/blocks';
import { compressed } from '#shared/http/compression';
import { canonicalJson, inContractOrder, ZERO_HASH } from '#shared/ledger/hashing';
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
    ...answered(blocks),
  });
}

/**
 * The page's answer as JSON, the bytes it crosses the network as to a caller accepting br, or gzip, and the ms of
 * CPU compressing it costs the node (the mean of 200, after 20 to warm up).
 */
function answered(blocks: ReturnType<typeof buildBlocks>) {
  const body = JSON.stringify({ chain_name: 'orders', total: 1_000_000, limit: 100, offset: 100, blocks: blocks.map(inContractOrder) });
  const send = (coding: 'br' | 'gzip') => compressed({ statusCode: 200, headers: { 'Content-Type': 'application/json' }, body }, coding);
  const ms = (coding: 'br' | 'gzip') => {
    for (let i = 0; i < 20; i += 1) send(coding);
    const t0 = performance.now();
    for (let i = 0; i < 200; i += 1) send(coding);
    return Math.round(((performance.now() - t0) / 200) * 100) / 100;
  };
  const sent = (coding: 'br' | 'gzip') => Buffer.from(send(coding).body!, 'base64').byteLength;
  return { answer_json: Buffer.byteLength(body), sent_br: sent('br'), sent_gzip: sent('gzip'), br_ms: ms('br'), gzip_ms: ms('gzip') };
}
