import { startStack, stopAndRemove, call } from '#test/support/stack';
const runtime = process.argv[2] ?? 'single-process';
const stack = await startStack({
  env: {
    SVC_LOCAL_RUNTIME: runtime,
    SVC_CHECK_RESPONSES: process.env.CHECK ?? 'false',
    SVC_LOG_LEVEL: 'warn',
    SVC_RATE_LIMIT_RPM: '0',
    SVC_METRICS_FLUSH_MS: '0',
    // On disk, as `npm run bench` runs it; MEMORY=1: in memory (DynamoDB Local's on-disk BatchWriteItem is twice a transaction's time, write-paths.ts).
    SVC_DYNAMODB_IN_MEMORY: process.env.MEMORY === '1' ? 'true' : 'false',
  },
});
try {
  await call(stack.url, 'POST', '/api/v1/chains/b/create');
  let n = 0;
  const body = () => ({
    events: Array.from({ length: 99 }, () => ({ entity_id: `e-${n}`, event_type: 'recorded', details: { n: n++, note: 'x'.repeat(100) } })),
  });
  const metric = async (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await (await fetch(`${stack.url}/metrics`)).text())?.[1] ?? 0);
  for (let i = 0; i < 5; i++) await call(stack.url, 'POST', '/api/v1/chains/b/events/batch', body());
  const r0 = await metric('dynamodb_requests_total');
  const t0 = await metric('dynamodb_transact_writes_total');
  // CLIENTS callers at once (each on its own instance with `instances`), SECONDS long; one alone, 20 batches.
  const clients = Number(process.env.CLIENTS ?? 1);
  const until = performance.now() + Number(process.env.SECONDS ?? 10) * 1000;
  const started = performance.now();
  const times: number[] = [];
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (clients === 1 ? times.length < 20 : performance.now() < until) {
        const s = performance.now();
        const r = await call(stack.url, 'POST', '/api/v1/chains/b/events/batch', body());
        times.push(performance.now() - s);
        if (r.status !== 200) console.log(r.status, r.text);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const N = times.length;
  const r1 = await metric('dynamodb_requests_total');
  const t1 = await metric('dynamodb_transact_writes_total');
  times.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      runtime,
      clients,
      eventsPerSecond: Math.round((N * 99) / seconds),
      p50: times[N >> 1]!.toFixed(0),
      p99: times[Math.floor(N * 0.99)]!.toFixed(0),
      min: times[0]!.toFixed(0),
      requestsPerBatch: (r1 - r0 - N * 0) / N,
      transactsPerBatch: (t1 - t0) / N,
    }),
  );
} finally {
  await stopAndRemove(stack);
}
