/**
 * `npm run bench:sweep [-- N]`: how many chains one sweep of unwritten rounds reads a second (shared/ledger/sweep.ts),
 * over DynamoDB Local: N chains (default 3,000) made directly in the table, then one sweep over all of them,
 * 100 a page, saving its place after each page as on AWS. None of them has a round to finish, so this is the
 * rate at which a sweep covers the chain list; docs/appending.md turns it into chains per invocation.
 */
import { finishAbandonedRounds } from '#shared/ledger/sweep';
import { newChain } from '#shared/ledger/ledger';
import { startTestDynamo } from '#test/support/dynamo';

const count = Number(process.argv[2] ?? 3000);
if (!Number.isInteger(count) || count < 1) {
  console.error('Usage: npm run bench:sweep [-- N]   (N chains, default 3000)');
  process.exit(2);
}

const dynamo = await startTestDynamo('bench-sweep');
try {
  const repository = dynamo.repository;
  process.stdout.write(`making ${count} chains… `);
  for (let i = 0; i < count; i += 25) {
    const names = Array.from({ length: Math.min(25, count - i) }, (_, k) => `sweep-${String(i + k).padStart(7, '0')}`);
    await Promise.all(names.map((name) => repository.createChains([newChain(name, 'sub', Date.now() / 1000)])));
  }
  console.log('done');
  const appender = {
    finishAbandoned: async (): Promise<never> => {
      throw new Error('no chain here has a round to finish');
    },
  };
  const started = performance.now();
  const result = await finishAbandonedRounds({ repository, appender }, () => 60_000);
  const seconds = (performance.now() - started) / 1000;
  const rate = result.chains / seconds;
  console.log(`one sweep read ${result.chains} heads in ${seconds.toFixed(2)} s: ${Math.round(rate)} chains/s (reached the end: ${result.reachedEnd})`);
  console.log(`in one 29 s invocation (26 s of it: 3 s kept back) about ${Math.round((rate * 26) / 1000) * 1000} chains`);
} finally {
  await dynamo.stop();
}
