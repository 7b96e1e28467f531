/**
 * What a million events cost on AWS, from the capacity model's units per event (measured) and AWS's list
 * prices (us-east-1, as published: check the pricing pages before relying on them), beside Amazon QLDB's
 * published prices for the same work. Printed by `npm run bench` and kept in docs/capacity.md.
 *
 * Lambda's duration is the modelled append latency on AWS (latency bound): this machine's durations say
 * nothing about Lambda's.
 */
import type { CapacityModel } from './capacity.ts';

/** List prices, us-east-1 (sources in docs/capacity.md, "Price per million events"). */
export const PRICES = {
  /** DynamoDB on-demand: per write request unit and per read request unit. */
  dynamoWriteRequestUnit: 0.625 / 1e6,
  dynamoReadRequestUnit: 0.125 / 1e6,
  /** DynamoDB provisioned: per WCU-hour and RCU-hour. */
  dynamoWcuHour: 0.00065,
  dynamoRcuHour: 0.00013,
  /** Lambda on arm64: per request and per GB-second. */
  lambdaRequest: 0.2 / 1e6,
  lambdaGbSecond: 0.0000133334,
  /** API Gateway HTTP API: per request (the first 300 million a month). */
  httpApiRequest: 1.0 / 1e6,
  /** KMS: per request (GenerateDataKey, Decrypt). */
  kmsRequest: 0.03 / 10_000,
  /** Amazon QLDB (end of support 2025-07-31): per write I/O and read I/O. */
  qldbWriteIo: 0.7 / 1e6,
  qldbReadIo: 0.136 / 1e6,
} as const;

/** Provisioned capacity runs below 100 %: the utilization it is priced at (auto scaling's usual target). */
export const PROVISIONED_UTILIZATION = 0.7;
/** The functions' memory (the stack's), GB. */
const LAMBDA_GB = 1;

export interface PriceRow {
  work: string;
  /** Per million events (or reads). */
  dynamodb_on_demand: number;
  dynamodb_provisioned: number;
  lambda: number;
  api_gateway: number;
  kms: number;
  total_on_demand: number;
  note: string;
}

const cents = (x: number) => Math.round(x * 100) / 100;

/**
 * Rows for single appends, batches of `batchSize` events, and verified reads, from `model` (the N-instance
 * scenario's units per event and its latency bound).
 */
export function priceRows(model: CapacityModel, batchSize: number, verifiedRead: { requests: number; rcu: number; ms: number }): PriceRow[] {
  const million = 1e6;
  const wcu = model.wcu_per_event;
  const rcu = model.rcu_per_event;
  const onDemand = (w: number, r: number) => million * (w * PRICES.dynamoWriteRequestUnit + r * PRICES.dynamoReadRequestUnit);
  // Provisioned: a WCU serves one unit a second, 3,600 an hour, at the utilization above.
  const provisioned = (w: number, r: number) => (million * (w * PRICES.dynamoWcuHour + r * PRICES.dynamoRcuHour)) / 3600 / PROVISIONED_UTILIZATION;
  // An append lasts on AWS about its modelled median latency: a follower's pending write, half a round
  // waiting, its round, its receipt read (the latency bound's p99 is two rounds).
  const appendMs = model.latency ? 10 + 1.5 * model.latency.full.round_ms : 30;
  const lambda = (invocations: number, ms: number) => million * invocations * (PRICES.lambdaRequest + LAMBDA_GB * (ms / 1000) * PRICES.lambdaGbSecond);
  const row = (work: string, d: number, p: number, l: number, a: number, k: number, note: string): PriceRow => ({
    work,
    dynamodb_on_demand: cents(d),
    dynamodb_provisioned: cents(p),
    lambda: cents(l),
    api_gateway: cents(a),
    kms: cents(k),
    total_on_demand: cents(d + l + a + k),
    note,
  });
  return [
    row(
      'single appends (POST …/events)',
      onDemand(wcu, rcu),
      provisioned(wcu, rcu),
      lambda(1, appendMs),
      million * PRICES.httpApiRequest,
      0,
      `${wcu} WCU + ${rcu} RCU per event; one request each, ~${Math.round(appendMs)} ms on Lambda; no KMS without off-chain details or a data subject`,
    ),
    row(
      `batches of ${batchSize} (POST …/events/batch)`,
      onDemand(wcu, rcu),
      provisioned(wcu, rcu),
      lambda(1 / batchSize, appendMs),
      (million / batchSize) * PRICES.httpApiRequest,
      0,
      'the same units per event (an upper bound: a batch shares its per-request writes); the request split over its events',
    ),
    row(
      'verified reads of one block (per million reads)',
      onDemand(0, verifiedRead.rcu),
      provisioned(0, verifiedRead.rcu),
      lambda(verifiedRead.requests, verifiedRead.ms),
      million * verifiedRead.requests * PRICES.httpApiRequest,
      0,
      `${verifiedRead.requests} request(s) (the block with its evidence), ${verifiedRead.rcu} RCU on an instance that read nothing of the chain before (warm: none), ~${verifiedRead.ms} ms each`,
    ),
  ];
}

/** Amazon QLDB for the same work: write I/Os per inserted document (a range: the count is per statement). */
export function qldbRows(): { work: string; low: number; high: number; note: string }[] {
  return [
    {
      work: 'single appends (one INSERT each)',
      low: cents(1e6 * (1 * PRICES.qldbWriteIo + 1 * PRICES.qldbReadIo)),
      high: cents(1e6 * (4 * PRICES.qldbWriteIo + 2 * PRICES.qldbReadIo)),
      note: '1 to 4 write I/Os and 1 to 2 read I/Os per statement, before the compute that sends it',
    },
    {
      work: 'verified reads (GetRevision with its proof)',
      low: cents(1e6 * 2 * PRICES.qldbReadIo),
      high: cents(1e6 * 4 * PRICES.qldbReadIo),
      note: 'a revision read and its digest and proof: 2 to 4 read I/Os',
    },
  ];
}

const usd = (x: number) => `$${x.toFixed(2)}`;

export function formatPrices(rows: PriceRow[]): string {
  const head = `  ${'work'.padEnd(48)} ${'DynamoDB'.padStart(9)} ${'(prov.)'.padStart(8)} ${'Lambda'.padStart(7)} ${'API GW'.padStart(7)} ${'KMS'.padStart(6)} ${'total'.padStart(7)}`;
  return [
    'Price per million events on AWS (us-east-1 list prices; DynamoDB on demand, provisioned at 70 % in brackets)',
    head,
    ...rows.map(
      (r) =>
        `  ${r.work.padEnd(48)} ${usd(r.dynamodb_on_demand).padStart(9)} ${usd(r.dynamodb_provisioned).padStart(8)} ${usd(r.lambda).padStart(7)} ${usd(r.api_gateway).padStart(7)} ${usd(r.kms).padStart(6)} ${usd(r.total_on_demand).padStart(7)}`,
    ),
    ...qldbRows().map((q) => `  Amazon QLDB, ${q.work}: ${usd(q.low)}–${usd(q.high)} (${q.note})`),
  ].join('\n');
}
