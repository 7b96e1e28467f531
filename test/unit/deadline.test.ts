/**
 * Every wait of an invocation ends by its deadline (shared/deadline.ts), and AWS SDK requests end with it.
 * The DynamoDB client is the service's own (shared/storage/client.ts) talking HTTP to a server that
 * accepts connections and never answers: a DynamoDB that hangs. Before the fix its `requestTimeout` only
 * logged a warning (to a logger that drops warnings), so these requests waited forever.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import {
  ANSWER_MARGIN_MS,
  checkDeadline,
  currentDeadline,
  deadlineSignal,
  invocationDeadline,
  outsideDeadline,
  pause,
  remainingMs,
  withDeadline,
  withGrace,
} from '#shared/deadline';
import { steadyNow } from '#shared/clock';
import { DeadlineExceededError, DependencyUnavailableError } from '#shared/errors';
import { createDynamoClient } from '#shared/storage/client';
import { send } from '#shared/storage/requests';

describe('an invocation deadline', () => {
  it('keeps its length when the wall clock is set forward or back while it runs (an NTP step)', async () => {
    const wallClock = Date.now;
    try {
      await withDeadline(steadyNow() + 1_000, async () => {
        Date.now = () => wallClock() + 3_600_000;
        assert.ok(remainingMs() > 900, 'an hour forward: the deadline has not passed');
        checkDeadline('a receipt');
        await pause(20, 'a receipt');
        Date.now = () => wallClock() - 3_600_000;
        const started = steadyNow();
        await assert.rejects(pause(2_000, 'a receipt'), DeadlineExceededError, 'an hour back: a wait past the deadline is still refused');
        assert.ok(steadyNow() - started < 100, 'at once');
      });
    } finally {
      Date.now = wallClock;
    }
  });

  it('is the time the function has left less the margin kept to answer', () => {
    assert.equal(invocationDeadline({ getRemainingTimeInMillis: () => 29_000 }, 1_000), 1_000 + 29_000 - ANSWER_MARGIN_MS);
    assert.equal(invocationDeadline(undefined), Number.POSITIVE_INFINITY, 'no context (a script): unbounded');
  });

  it('travels with the async work it started, and an inner budget can only shorten it', async () => {
    assert.equal(remainingMs(), Number.POSITIVE_INFINITY, 'outside any budget nothing is bounded');
    await withDeadline(steadyNow() + 5_000, async () => {
      await new Promise((r) => setTimeout(r, 5));
      assert.ok(remainingMs() > 4_000 && remainingMs() <= 5_000);
      const outer = currentDeadline();
      await withDeadline(steadyNow() + 60_000, async () => assert.equal(currentDeadline(), outer, 'a longer inner deadline does not extend it'));
      await withDeadline(steadyNow() + 100, async () => assert.ok(remainingMs() <= 100, 'a shorter one applies'));
    });
  });

  it('aborts its signal at the deadline, with the reason a 503 names', async () => {
    await withDeadline(steadyNow() + 50, async () => {
      const signal = deadlineSignal()!;
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      assert.ok(signal.reason instanceof DeadlineExceededError);
      assert.equal(signal.reason.statusCode, 503);
      assert.ok(signal.reason.headers['Retry-After']);
      assert.throws(
        () => checkDeadline('a lease'),
        (e: unknown) => e instanceof DeadlineExceededError && /a lease/.test(e.message),
      );
    });
  });

  it('refuses a pause that would end past it, at once rather than at the deadline', async () => {
    await withDeadline(steadyNow() + 200, async () => {
      await pause(10, 'a receipt');
      const started = steadyNow();
      await assert.rejects(pause(1_000, 'a receipt'), (e: unknown) => e instanceof DeadlineExceededError && /a receipt/.test(e.message));
      assert.ok(steadyNow() - started < 50, 'it did not sleep first');
    });
  });

  it('lends a short grace past it to the read that settles what an aborted write did', async () => {
    await withDeadline(steadyNow() + 20, async () => {
      await new Promise((r) => setTimeout(r, 40));
      assert.equal(remainingMs(), 0);
      await withGrace(300, async () => {
        assert.ok(remainingMs() > 0 && remainingMs() <= 300);
        assert.equal(deadlineSignal()!.aborted, false);
      });
    });
  });

  it('is absent from work run outside it, however that work nests budgets, waits and graces', async () => {
    await withDeadline(steadyNow() + 30, () =>
      outsideDeadline(async () => {
        await new Promise((r) => setTimeout(r, 50)); // past the caller's deadline
        assert.equal(currentDeadline(), Number.POSITIVE_INFINITY);
        assert.equal(deadlineSignal(), undefined, 'no deadline, no signal to abort requests with');
        await withGrace(300, async () => {
          await new Promise((r) => setTimeout(r, 20));
          assert.equal(deadlineSignal()?.aborted ?? false, false, 'a grace of no deadline aborts nothing');
        });
        await withDeadline(Number.POSITIVE_INFINITY, async () => {
          await new Promise((r) => setTimeout(r, 20));
          assert.equal(deadlineSignal()?.aborted ?? false, false);
        });
        // A budget set inside it ends at its own deadline, and the code after it is outside any again.
        await withDeadline(steadyNow() + 1_000, async () => assert.ok(remainingMs() > 900));
        assert.equal(currentDeadline(), Number.POSITIVE_INFINITY);
      }),
    );
  });
});

describe('DynamoDB requests that are never answered', () => {
  let silent: Server;
  const sockets = new Set<Socket>();
  let endpoint: string;

  before(async () => {
    // Accepts connections, reads the requests, never answers: a DynamoDB (or a network) that hangs.
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('data', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  const read = (client: ReturnType<typeof createDynamoClient>) =>
    send(() => client.send(new GetCommand({ TableName: 'ledger', Key: { pk: 'CHAIN#x', sk: 'HEAD' }, ConsistentRead: true })));

  it('fail each attempt at its timeout, and after the retries answer 503 (DynamoDB unavailable)', async () => {
    const client = createDynamoClient({ region: 'us-east-1', endpoint, attemptTimeoutMs: 200 });
    const started = steadyNow();
    await assert.rejects(read(client), (e: unknown) => e instanceof DependencyUnavailableError && e.statusCode === 503 && /DynamoDB/.test(e.message));
    const took = steadyNow() - started;
    // Three attempts of 200 ms and the SDK's short backoffs between them.
    assert.ok(took >= 550 && took < 3_000, `gave up after ${took} ms`);
    client.destroy();
  });

  it("end at the invocation's deadline, well before their own timeouts, as a 503 naming the wait", async () => {
    const client = createDynamoClient({ region: 'us-east-1', endpoint, attemptTimeoutMs: 10_000 });
    const started = steadyNow();
    await withDeadline(steadyNow() + 300, () =>
      assert.rejects(read(client), (e: unknown) => e instanceof DeadlineExceededError && /DynamoDB/.test(e.message) && e.headers['Retry-After'] !== undefined),
    );
    const took = steadyNow() - started;
    assert.ok(took >= 280 && took < 1_500, `answered after ${took} ms`);
    client.destroy();
  });
});
