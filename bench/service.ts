/**
 * What the benchmarks do to the running service over HTTP: create chains, append with autocannon, and read
 * the ledger counters of /metrics (summed over every instance). `npm run bench` and `npm run bench:instances`
 * both measure appends with these, so their figures are of the same requests.
 */
import autocannon, { type Result } from 'autocannon';
import { call, type Stack } from '#test/support/stack';

/**
 * Settings every measured stack runs with: the service as deployed. The test stack's defaults check every
 * answer against the shape its route declares (SVC_CHECK_RESPONSES, off unless set), which costs the service
 * a validation of each answer, a page of 100 blocks most; the bench measured that until 2026-11-28.
 */
export const AS_DEPLOYED = { SVC_CHECK_RESPONSES: 'false' } as const;

export interface LedgerCounters {
  events: number;
  conflicts: number;
  commits: number;
  requests: number;
  transactWrites: number;
  transactItems: number;
  leaseTakes: number;
  pendingReads: number;
  roundWrites: number;
  rewrites: number;
}

/** The stack's /metrics now, as a reader of one series by its name and labels as printed (`name{label="x"}`): NaN when absent. */
export async function metricsOf(stack: Stack): Promise<(series: string) => number> {
  const text = (await call(stack.url, 'GET', '/metrics')).text;
  return (series) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? NaN : Number(line.slice(series.length + 1));
  };
}

/** The ledger counters of /metrics. */
export async function ledgerCounters(stack: Stack): Promise<LedgerCounters> {
  const value = await metricsOf(stack);
  return {
    events: value('ledger_events_appended_total'),
    conflicts: value('ledger_append_conflicts_total'),
    commits: value('ledger_append_commits_total'),
    requests: value('dynamodb_requests_total'),
    transactWrites: value('dynamodb_transact_writes_total'),
    transactItems: value('dynamodb_transact_items_total'),
    leaseTakes: value('ledger_append_lease_takes_total'),
    pendingReads: value('ledger_append_pending_reads_total'),
    roundWrites: value('ledger_append_round_writes_total'),
    rewrites: value('ledger_append_rewrites_total'),
  };
}

/**
 * Gets every one of `n` single-request instances to add what it counted to the shared counters: an instance
 * flushes at the end of a request once SVC_METRICS_FLUSH_MS (`flushMs`) has passed (no timer, as on Lambda),
 * so after a pause that long, `n` requests at once (one per idle instance) to a route that touches no table.
 * `idleSince` (performance.now() when the instances' last requests were answered; default now): only what is
 * left of the pause is waited.
 */
export async function flushInstances(stack: Stack, n: number, flushMs: number, idleSince = performance.now()): Promise<void> {
  const left = idleSince + flushMs + 100 - performance.now();
  if (left > 0) await new Promise((r) => setTimeout(r, left));
  await Promise.all(Array.from({ length: n }, () => call(stack.url, 'GET', '/api/v1/bench-flush-no-such-route')));
}

export async function mustCreate(stack: Stack, chain: string): Promise<void> {
  const res = await call(stack.url, 'POST', `/api/v1/chains/${chain}/create`);
  if (res.status !== 201) throw new Error(`creating ${chain}: ${res.status} ${res.text}`);
}

export function eventBody(chain: string, n: number) {
  return { entity_id: `${chain}-${n % 64}`, event_type: 'bench', details: { n, note: 'service append over HTTP' } };
}

/**
 * Appends over HTTP with autocannon, for `span` milliseconds or `{ amount }` requests however long they take; each
 * request's entity varies, and its `details.n` counts from `firstN`.
 */
export function cannonAppends(stack: Stack, chain: string, connections: number, span: number | { amount: number }, firstN = 0): Promise<Result> {
  let n = firstN;
  return autocannon({
    url: stack.url,
    connections,
    ...(typeof span === 'number' ? { duration: span / 1000 } : { amount: span.amount }),
    timeout: 30,
    requests: [
      {
        method: 'POST',
        path: `/api/v1/chains/${chain}/events`,
        headers: { 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: JSON.stringify(eventBody(chain, n++)) }),
      },
    ],
  });
}
