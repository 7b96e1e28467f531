/**
 * The least latency each way of committing allows at a steady arrival rate on one chain (Poisson), in the
 * simulation's latency model (test/sim/network.ts), with no protocol overhead beyond the requests: no settle, no
 * gather, looks that land the moment their answer is written, leases free. Each is a bound for a family of
 * protocols, not a measure of this one (`npm run bench:cloud -- --rates …` measures this one):
 *
 * - **one commit at a time**: each append its own transaction on the head (a lone writer's path), the next sent
 *   the moment the last lands. Bounded by the head: past about 30 a second the queue grows without end.
 * - **combining, outcome read** (this service's path): claim, pending append, a round that seals every pending
 *   append visible when its read is sent (the next round's read sent when its commit lands), the round's records,
 *   and the writer's look.
 * - **every writer its own round, outcome in the answer** (not built): claim, pending append, a read of the head and
 *   the pending appends, and a conditional write of the head sealing what the read saw. The write lands only on the
 *   head its read saw; refused, its answer (the head, ReturnValuesOnConditionCheckFailure) says whether another
 *   writer's round sealed this append; if none did, the read and the write again. No look, no lease. A writer whose
 *   round landed writes its records and segment before it answers; one sealed by another's round answers once those
 *   are written (about 16 ms after that round landed). Every writer writes the head once a try, so the head's
 *   partition takes the arrival rate in writes (refused ones cost a write unit too).
 */
import { roundTrip } from '../test/sim/network.ts';
import { seeded } from '../test/sim/world.ts';
import { PARTITION_WCU } from './capacity.ts';

/** Appends drawn at each rate (after the first tenth, left out as warm-up). */
const APPENDS = 40_000;
/** Write units a write of the head costs (an item of 1–2 KB: its frontier, lease, cursor and newest metadata). */
const HEAD_WRITE_UNITS = 2;
/** A pending append's age before a round may seal it (the appender's settleMs). */
const SETTLE_MS = 10;
/** Past this p99 the queue grew all run: no steady state. */
const UNBOUNDED_MS = 5_000;

interface Way {
  latencies: number[];
  /** Writes of the head a second. */
  headWrites: number;
}

function arrivals(random: () => number, rate: number, count: number): number[] {
  const times: number[] = [];
  let t = 0;
  for (let i = 0; i < count; i += 1) {
    t += (-Math.log(1 - random()) / rate) * 1000;
    times.push(t);
  }
  return times;
}

/** The simulation's request latencies, drawn from `random`: bench:serial-path's paths are built of these too. */
export function draws(random: () => number) {
  const single = () => roundTrip(random, 'UpdateItem');
  const query = () => roundTrip(random, 'Query');
  const batch = () => roundTrip(random, 'BatchWriteItem');
  const transaction = (items: number) => roundTrip(random, 'TransactWriteItems') + 15 + 0.3 * items + random() * 4;
  return { single, query, batch, transaction };
}

function oneAtATime(random: () => number, times: number[]): Way {
  const { single, transaction } = draws(random);
  let headFree = 0;
  const latencies = times.map((a) => {
    const start = Math.max(a + single(), headFree);
    headFree = start + transaction(3);
    return headFree - a;
  });
  return { latencies, headWrites: (times.length / times[times.length - 1]!) * 1000 };
}

function combiningRead(random: () => number, times: number[]): Way {
  const { single, query, batch } = draws(random);
  const visible = times.map((a, i) => ({ i, at: a + single() + single() })).sort((x, y) => x.at - y.at);
  const latencies = new Array<number>(times.length);
  let next = 0;
  let readFree = 0;
  let rounds = 0;
  while (next < visible.length) {
    const readAt = Math.max(readFree, visible[next]!.at);
    const committed = readAt + query() + single();
    const written = committed + batch();
    rounds += 1;
    while (next < visible.length && visible[next]!.at <= readAt) {
      const { i } = visible[next]!;
      latencies[i] = written + query() - times[i]!;
      next += 1;
    }
    readFree = committed;
  }
  return { latencies, headWrites: (rounds / times[times.length - 1]!) * 1000 };
}

function ownRounds(random: () => number, times: number[]): Way {
  const { single, query, batch } = draws(random);
  const latencies = new Array<number>(times.length);
  // Its pending append sent after its key's claim, and landed a request later; its read waits until the append is
  // SETTLE_MS old (so that the cursor it moves past it skips no append keyed a moment before, still on its way).
  const sent = times.map((a) => a + single());
  const visible = sent.map((at) => at + single());
  // Each try: its read's snapshot of the head and the pending appends, and its write landing on the head.
  interface Try {
    i: number;
    snapshot: number;
    lands: number;
    answered: number;
  }
  const tries: Try[] = []; // a binary heap by landing time
  const push = (t: Try) => {
    tries.push(t);
    for (let c = tries.length - 1; c > 0; ) {
      const p = (c - 1) >> 1;
      if (tries[p]!.lands <= tries[c]!.lands) break;
      [tries[p], tries[c]] = [tries[c]!, tries[p]!];
      c = p;
    }
  };
  const pop = (): Try => {
    const top = tries[0]!;
    const last = tries.pop()!;
    if (tries.length > 0) {
      tries[0] = last;
      for (let p = 0; ; ) {
        const l = 2 * p + 1;
        const r = l + 1;
        let m = p;
        if (l < tries.length && tries[l]!.lands < tries[m]!.lands) m = l;
        if (r < tries.length && tries[r]!.lands < tries[m]!.lands) m = r;
        if (m === p) break;
        [tries[p], tries[m]] = [tries[m]!, tries[p]!];
        p = m;
      }
    }
    return top;
  };
  const tryFrom = (i: number, from: number) => {
    const read = Math.max(query(), single());
    const write = single();
    push({ i, snapshot: from + read / 2, lands: from + read + write / 2, answered: from + read + write });
  };
  visible.forEach((v, i) => tryFrom(i, Math.max(v, sent[i]! + SETTLE_MS)));
  let lastSuccess = -Infinity;
  let sealedUpTo = -Infinity;
  let writes = 0;
  while (tries.length > 0) {
    const t = pop();
    writes += 1;
    if (lastSuccess <= t.snapshot) {
      // The head is as its read saw it: the write lands, sealing every pending append the read saw. Its writer
      // writes the round's records and segment before it answers (every path answers a block that is written).
      lastSuccess = t.lands;
      sealedUpTo = Math.max(sealedUpTo, t.snapshot);
      latencies[t.i] = t.answered + batch() - times[t.i]!;
    } else if (visible[t.i]! <= sealedUpTo) {
      // Sealed by another writer's round, which writes its records: answered from the refusal, once they are written.
      latencies[t.i] = Math.max(t.answered, lastSuccess + 16) - times[t.i]!;
    } else tryFrom(t.i, t.answered);
  }
  return { latencies, headWrites: (writes / times[times.length - 1]!) * 1000 };
}

/** The `p` quantile of sorted values. */
export const at = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

/** One way's figures at one rate: p50 and p99 in ms (undefined when the queue grew all run), head writes a second. */
export interface WayFigures {
  p50?: number;
  p99?: number;
  headWrites: number;
  /** Its writes of the head pass one partition's write units (at HEAD_WRITE_UNITS a write): throttled there. */
  throttled: boolean;
}

function figures(way: Way): WayFigures {
  const steady = way.latencies.slice(Math.floor(way.latencies.length / 10)).sort((a, b) => a - b);
  const p99 = at(steady, 0.99);
  const throttled = way.headWrites * HEAD_WRITE_UNITS > PARTITION_WCU;
  return p99 > UNBOUNDED_MS ? { headWrites: way.headWrites, throttled } : { p50: at(steady, 0.5), p99, headWrites: way.headWrites, throttled };
}

export interface RateBound {
  rate: number;
  oneAtATime: WayFigures;
  combiningRead: WayFigures;
  ownRounds: WayFigures;
}

/** Each way's figures at each rate (Poisson arrivals on one chain, `appends` of them, the first tenth left out). */
export function rateBounds(rates: number[], seed = 1, appends = APPENDS): RateBound[] {
  return rates.map((rate) => {
    const random = seeded(seed);
    const times = arrivals(random, rate, appends);
    return {
      rate,
      ownRounds: figures(ownRounds(random, times)),
      oneAtATime: figures(oneAtATime(random, times)),
      combiningRead: figures(combiningRead(random, times)),
    };
  });
}

function cell(way: WayFigures, limitWrites: boolean): string {
  if (way.p50 === undefined || way.p99 === undefined) return 'no steady state (the queue grows)';
  const text = `${way.p50.toFixed(0)} / ${way.p99.toFixed(0)} ms`;
  if (!limitWrites || !way.throttled) return text;
  return `${text}, but ${Math.round(way.headWrites * HEAD_WRITE_UNITS).toLocaleString('en')} WCU/s on the head (throttled past ${PARTITION_WCU.toLocaleString('en')})`;
}

/** The table of docs/capacity.md's open loop: each way's p50 / p99 at each rate. */
export function ratesTable(rows: RateBound[]): string {
  const lines = [
    '| arrivals/s | one commit at a time, p50 / p99 | combining, outcome read (this service), p50 / p99 | every writer its own round, outcome in the answer, p50 / p99 | its writes of the head a second |',
    '|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.rate.toLocaleString('en')} | ${cell(r.oneAtATime, false)} | ${cell(r.combiningRead, false)} | ${cell(r.ownRounds, true)} | ${Math.round(r.ownRounds.headWrites).toLocaleString('en')} |`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}
