/**
 * Where a 99-event batch's time goes, in one process over DynamoDB Local (in memory): each DynamoDB request the
 * ledger sends for one `appendEvents` of 99 events, in order, with its time. `node --import tsx bench/probes/batch-requests.ts`
 */
import { loadConfig } from '#shared/config';
import { createCore } from '#shared/wiring/core';
import { startTestDynamo } from '#test/support/dynamo';

const dynamo = await startTestDynamo('batch-probe');
try {
  const core = createCore(
    loadConfig({
      SVC_DYNAMODB_ENDPOINT: dynamo.endpoint,
      SVC_DYNAMODB_ACCESS_KEY_ID: dynamo.accessKeyId,
      SVC_DATA_DIR: '/tmp/batch-probe',
      SVC_LOG_LEVEL: 'warn',
    }),
  );
  const log: { name: string; ms: number; items?: number }[] = [];
  const client = core.documentClient();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const start = performance.now();
      try {
        return await next(args);
      } finally {
        const input = args.input as { RequestItems?: Record<string, unknown[]>; TransactItems?: unknown[] };
        const items = input.TransactItems?.length ?? Object.values(input.RequestItems ?? {})[0]?.length;
        log.push({ name: context.commandName ?? '?', ms: performance.now() - start, ...(items ? { items } : {}) });
        if (process.env.TRACE === context.commandName) console.log(new Error('where').stack?.split('\n').slice(2, 14).join('\n'));
      }
    },
    { step: 'initialize', name: 'probe' },
  );
  const { ledger } = core.ledgerRuntime();
  await ledger.createSubChain('b', {});
  let n = 0;
  const drafts = () => Array.from({ length: 99 }, () => ({ entity_id: `e-${n}`, event_type: 'recorded', details: { n: n++, note: 'x'.repeat(100) } })) as never;
  for (let i = 0; i < 5; i++) await ledger.appendEvents('b', drafts());
  for (let i = 0; i < 3; i++) {
    log.length = 0;
    const start = performance.now();
    await ledger.appendEvents('b', drafts());
    const total = performance.now() - start;
    const sent = log.reduce((s, r) => s + r.ms, 0);
    console.log(`batch ${i}: ${total.toFixed(0)} ms, ${log.length} requests, ${sent.toFixed(0)} ms in DynamoDB`);
    for (const r of log) console.log(`  ${r.name}${r.items ? ` (${r.items})` : ''} ${r.ms.toFixed(1)} ms`);
  }
} finally {
  await dynamo.stop();
}
