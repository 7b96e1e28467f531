/**
 * GET /metrics over the running local stack: Prometheus text that a parser reads, counters that move
 * by exactly the requests made, and counts shared across instances with the dynamodb backend.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { call, removeDir, startStack, type Stack } from '#test/support/stack';

const started: Stack[] = [];
after(async () => {
  for (const s of started.reverse()) {
    await s.stop();
    removeDir(s.dataDir);
  }
});

async function stack(env: Record<string, string> = {}): Promise<Stack> {
  const s = await startStack({ env });
  started.push(s);
  return s;
}

/** The scraped families, by name; a sample value by name and labels. */
async function scrape(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/metrics`, { headers });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const families = parsePrometheusTextFormat(await res.text()) as {
    name: string;
    type: string;
    metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string }[];
  }[];
  const byName = new Map(families.map((f) => [f.name, f]));
  return {
    byName,
    value: (name: string) => Number(byName.get(name)?.metrics[0]?.value ?? NaN),
  };
}

describe('/metrics', () => {
  it('answers Prometheus text with the figures of docs/rules.md, "Health and metrics"', async () => {
    const s = await stack();
    const m = await scrape(s.url);
    for (const [name, type] of [
      ['http_requests_success_total', 'COUNTER'],
      ['http_requests_failed_total', 'COUNTER'],
      ['http_request_latency_avg_seconds', 'GAUGE'],
      ['http_request_duration_seconds', 'HISTOGRAM'],
      ['process_resident_memory_bytes', 'GAUGE'],
      ['process_cpu_seconds_total', 'COUNTER'],
      ['ledger_events_appended_total', 'COUNTER'],
      ['ledger_append_conflicts_total', 'COUNTER'],
      ['ledger_append_commits_total', 'COUNTER'],
    ]) {
      assert.equal(m.byName.get(name!)?.type, type, name);
    }
    assert.ok(m.value('process_resident_memory_bytes') > 10_000_000);
  });

  it('moves its counters by exactly the requests made', async () => {
    // Every instance adds its counts to the shared ones after each request (SVC_METRICS_FLUSH_MS=0).
    const s = await stack({ SVC_METRICS_FLUSH_MS: '0' });
    const before = await scrape(s.url);
    await call(s.url, 'POST', '/api/v1/chains/m/create');
    for (let i = 0; i < 3; i += 1) await call(s.url, 'POST', '/api/v1/chains/m/events', { entity_id: `e${i}`, event_type: 't' });
    await call(s.url, 'GET', '/api/v1/chains/ghost/stats'); // 404
    await call(s.url, 'GET', '/api/v1/chains/m/blocks?limit=0'); // 422
    const afterwards = await scrape(s.url);
    // The first scrape was itself a request: it is counted in the second.
    assert.equal(afterwards.value('http_requests_success_total') - before.value('http_requests_success_total'), 1 + 1 + 3);
    assert.equal(afterwards.value('http_requests_failed_total') - before.value('http_requests_failed_total'), 2);
    assert.equal(afterwards.value('ledger_events_appended_total') - before.value('ledger_events_appended_total'), 3);
    // One after another, each event is its own transaction.
    assert.equal(afterwards.value('ledger_append_commits_total') - before.value('ledger_append_commits_total'), 3);
    const histogram = afterwards.byName.get('http_request_duration_seconds')!.metrics[0]!;
    assert.equal(Number(histogram.count), afterwards.value('http_requests_success_total') + afterwards.value('http_requests_failed_total'));
    assert.equal(Number(histogram.buckets!['+Inf'] ?? histogram.count), Number(histogram.count));
    assert.ok(afterwards.value('http_request_latency_avg_seconds') > 0);
  });

  it("holds counts back within SVC_METRICS_FLUSH_MS and adds them at the instance's next request, never from a timer", async () => {
    // Lambda freezes an idle instance, so nothing may wait for a timer: what an instance held back reaches
    // the shared counts with its next request (after the interval), and no sooner.
    const s = await stack({ SVC_METRICS_FLUSH_MS: '3000' });
    await call(s.url, 'POST', '/api/v1/chains/later/create'); // the ledger instance's first request flushes at once
    const before = await scrape(s.url);
    for (let i = 0; i < 4; i += 1) await call(s.url, 'POST', '/api/v1/chains/later/events', { entity_id: `e${i}`, event_type: 't' });
    await new Promise((r) => setTimeout(r, 3_200));
    const idle = (await scrape(s.url)).value('ledger_events_appended_total') - before.value('ledger_events_appended_total');
    assert.equal(idle, 0, 'an idle instance adds nothing: no timer ran');
    await call(s.url, 'POST', '/api/v1/chains/later/events', { entity_id: 'e4', event_type: 't' });
    const delta = (await scrape(s.url)).value('ledger_events_appended_total') - before.value('ledger_events_appended_total');
    assert.equal(delta, 5, 'the next request, past the interval, added the four held back and itself');
  });

  it('needs a key when auth is on, like any route', async () => {
    const s = await stack({ SVC_AUTH_ENABLED: 'true' });
    assert.equal((await call(s.url, 'GET', '/metrics')).status, 401);
  });

  it('sums the whole service across instances with the dynamodb backend', async () => {
    const a = await stack({ SVC_METRICS_BACKEND: 'dynamodb', SVC_METRICS_FLUSH_MS: '0' });
    const b = await stack({ SVC_METRICS_BACKEND: 'dynamodb', SVC_METRICS_FLUSH_MS: '0', ...a.dataEnv });
    const before = await scrape(a.url);
    for (let i = 0; i < 4; i += 1) await call(a.url, 'GET', '/api/v1/chains');
    for (let i = 0; i < 3; i += 1) await call(b.url, 'GET', '/api/v1/chains');
    await call(b.url, 'GET', '/api/v1/chains/ghost/stats');
    const fromB = await scrape(b.url);
    // 4 + 3 on the two instances, and the first scrape on a.
    assert.equal(fromB.value('http_requests_success_total') - before.value('http_requests_success_total'), 4 + 3 + 1);
    assert.equal(fromB.value('http_requests_failed_total') - before.value('http_requests_failed_total'), 1);
  });
});
