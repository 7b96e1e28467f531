/**
 * `npm run bench:serial-path`: the least time an append can take on AWS, by the path it must go, in the
 * simulation's own latency model (test/sim/network.ts: DynamoDB's round trips from a Lambda function in the
 * table's region, a transaction's hold, one request in a thousand a straggler). No queueing, no contention, no
 * CPU: each path's requests one after the other, each drawn as the simulation draws it, 200,000 times (seed 1).
 *
 * What it shows (docs/capacity.md, "The latency bound"): a writer that waits for a leader's round and learns its
 * outcome by reading DynamoDB goes through at least six requests in a row (its key's claim, its pending append,
 * the leader's read, the leader's commit, the round's records, its own look), and waits for the next round's
 * read besides. Those alone put its p99 near or past 100 ms before any wait the protocol adds; a lone writer's
 * two requests stay under 50.
 *
 * Then the same at steady arrival rates (Poisson, one chain; issue 69's open loop): the least p50 and p99 each way
 * of committing allows when appends overlap, with no protocol overhead beyond the requests (docs/capacity.md, "At a
 * steady rate: the open loop"). `--rates 5,20,…` chooses them.
 */
import { parseArgsOrExit } from '../shared/cli-args.ts';
import { seeded } from '../test/sim/world.ts';
import { at, draws, rateBounds, ratesTable } from './serial-rates.ts';

const usage = 'Usage: npm run bench:serial-path [-- --rates 5,20,50,100,200,500,1000,2000]';
const { values } = parseArgsOrExit({ options: { rates: { type: 'string', default: '5,20,50,100,200,500,1000,2000' } } }, usage, 2);
const rates = values.rates.split(',').map(Number);
if (rates.some((r) => !(r > 0))) {
  console.error(usage);
  process.exit(2);
}

const SAMPLES = 200_000;
const random = seeded(1);
const { single, query, batch, transaction } = draws(random);
/** A leader's round: its read of the pending appends, its commit on the head, its records (the commit cadence). */
const round = () => query() + single() + batch();

const paths: [string, number, () => number][] = [
  ['a lone writer, with a key: its claim, then one transaction (head, record, key answer)', 2, () => single() + transaction(3)],
  ['a lone writer, without a key: one transaction (head, record)', 1, () => transaction(2)],
  [
    'a waiting writer, with a key, never waiting: claim, pending append, the round (read, commit, records), its look at once',
    6,
    () => single() + single() + round() + query(),
  ],
  ['the same without a key', 5, () => single() + round() + query()],
  [
    'a waiting writer, with a key, its append waiting for the next round to read it (uniform within one round)',
    6,
    () => single() + single() + random() * round() + round() + query(),
  ],
];

process.stdout.write(`| path | requests in a row | p50 | p99 |\n|---|---|---|---|\n`);
for (const [name, requests, draw] of paths) {
  const times = Array.from({ length: SAMPLES }, draw).sort((a, b) => a - b);
  process.stdout.write(`| ${name} | ${requests} | ${at(times, 0.5).toFixed(0)} ms | ${at(times, 0.99).toFixed(0)} ms |\n`);
}

process.stdout.write(`\n${ratesTable(rateBounds(rates))}`);
