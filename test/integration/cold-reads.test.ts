/**
 * A new chain audited at once by a C2SP client, against cold instances: the case that once held a tile read
 * for the tlog function's whole 29 s timeout and then answered API Gateway's 500.
 *
 * Each round: a fresh chain of a few hundred blocks appended by batches; then, with every instance of the
 * pool stopped as idle (SVC_LOCAL_IDLE_MS, as Lambda reclaims idle instances), every tile and entry bundle
 * of the chain read at once, each a first read on a cold instance; then, cold again, Go's
 * x/mod/sumdb audit with its tiles fetched in parallel, as x/mod's own sumdb client fetches them. Every
 * answer must be right and come within 5 s (far below the timeout that once ran out).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { settingsSchema } from '#shared/config';
import { allOrStop, call, startStack, stopAndRemove, type Stack } from '#test/support/stack';
import { buildTlogCheck, runTlogCheck } from '#test/support/go-tlog';

const ROUNDS = 3;
const IDLE_MS = 1_000;
/** Stopped as idle: past the idle time and the reaper's next look (it looks every IDLE_MS). */
const COLD_AFTER_MS = 2 * IDLE_MS + 800;
/**
 * The failure this guards against held a read for the function's 29 s timeout. A cold instance's start
 * (a worker, its bundle loaded) takes 1–2 s on a busy 2-core machine, so the bound tells a hang from a slow
 * start, not speed: how fast cold reads are is measured by `npm run bench`.
 */
const WITHIN_MS = 5_000;

let stack: Stack;
let checker: string;

before(async () => {
  [stack, checker] = await allOrStop<[Stack, string]>([
    startStack({
      // The rate limiter on, in DynamoDB as instances share it, as `npm start` runs by default (high enough not to trip),
      // and as many instances a function as `npm start` allows (test stacks allow fewer): the reads start that many at once.
      env: {
        SVC_LOCAL_IDLE_MS: String(IDLE_MS),
        SVC_RATE_LIMIT_RPM: '10000',
        SVC_LOCAL_MAX_INSTANCES: String(settingsSchema.shape.SVC_LOCAL_MAX_INSTANCES.parse(undefined)),
      },
    }),
    buildTlogCheck(),
  ]);
});

after(() => stopAndRemove(stack));

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${stack.url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
}

/** Every tile path of a tree of `size` leaves (hash tiles of each level and entry bundles), with its byte length. */
function tilesOf(size: number): { path: string; bytes: number }[] {
  const paths: { path: string; bytes: number }[] = [];
  for (let level = 0; 256 ** level <= size; level += 1) {
    const hashes = Math.floor(size / 256 ** level);
    for (let index = 0; index * 256 < hashes; index += 1) {
      const width = Math.min(256, hashes - index * 256);
      const name = `${String(index).padStart(3, '0')}${width < 256 ? `.p/${width}` : ''}`;
      paths.push({ path: `tile/${level}/${name}`, bytes: 32 * width });
      if (level === 0) paths.push({ path: `tile/entries/${name}`, bytes: 34 * width });
    }
  }
  return paths;
}

describe('a fresh chain read at once on cold instances', () => {
  for (let round = 1; round <= ROUNDS; round += 1) {
    it(`round ${round}: every tile and entry bundle answers within ${WITHIN_MS} ms, and Go's parallel audit too`, async (t) => {
      const chain = `cold-${round}`;
      // A few hundred blocks: a full tile and a partial one at level 0 (and their entry bundles), a level-1 tile.
      const size = 300 + 80 * (round - 1);
      assert.equal((await call(stack.url, 'POST', `/api/v1/chains/${chain}/create`)).status, 201);
      for (let done = 1; done < size; done += 50) {
        const events = Array.from({ length: Math.min(50, size - done) }, (_, i) => ({
          entity_id: `item-${done + i}`,
          event_type: 'recorded',
          details: { n: done + i },
        }));
        const res = await call(stack.url, 'POST', `/api/v1/chains/${chain}/events/batch`, { events });
        assert.equal(res.status, 200, res.text);
      }

      // Cold: every instance of the tlog function was stopped as idle.
      await new Promise((r) => setTimeout(r, COLD_AFTER_MS));
      const coldBefore = await metric('lambda_cold_starts_total');
      const reads = tilesOf(size).map((t) => ({ ...t, path: `/tlog/${chain}/${t.path}` }));
      const answers = await Promise.all(
        reads.map(async ({ path, bytes }) => {
          const started = Date.now();
          const res = await fetch(`${stack.url}${path}`);
          const body = Buffer.from(await res.arrayBuffer());
          return { path, bytes, status: res.status, length: body.length, text: body.toString(), ms: Date.now() - started };
        }),
      );
      const coldStarts = (await metric('lambda_cold_starts_total')) - coldBefore;
      for (const answer of answers) {
        assert.equal(answer.status, 200, `${answer.path}: ${answer.text.slice(0, 200)}`);
        assert.equal(answer.length, answer.bytes, `${answer.path} is whole`);
        assert.ok(answer.ms <= WITHIN_MS, `${answer.path} answered in ${answer.ms} ms`);
      }
      t.diagnostic(`${reads.length} cold reads: slowest ${Math.max(...answers.map((a) => a.ms))} ms`);
      assert.ok(coldStarts >= reads.length, `the reads met cold instances (${coldStarts} cold starts for ${reads.length} reads)`);

      // Cold again, then a C2SP client: Go's own x/mod/sumdb/tlog, its tiles fetched in parallel.
      await new Promise((r) => setTimeout(r, COLD_AFTER_MS));
      const { code, result, stderr } = await runTlogCheck(checker, ['-url', stack.url, '-chain', chain, '-parallel']);
      assert.equal(code, 0, stderr);
      assert.equal(result!.tree_size, size);
      assert.equal(result!.records_proven, size, 'every block proven in the tree');
      t.diagnostic(`Go's audit (${result!.tiles_fetched} tiles): slowest fetch ${result!.slowest_fetch_ms} ms`);
      assert.ok(Number(result!.slowest_fetch_ms) <= WITHIN_MS, `Go's slowest fetch took ${result!.slowest_fetch_ms} ms`);
      assert.doesNotMatch(stack.output(), /integration failed/);
    });
  }
});
