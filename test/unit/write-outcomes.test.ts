/**
 * Whether a failed DynamoDB write certainly changed nothing (DependencyUnavailableError.notApplied): what lets
 * an append that failed so be answered 503 at once instead of 500 (outcome unknown). The client is the
 * service's own (shared/storage/client.ts), talking HTTP to a scripted server that answers each attempt as a
 * DynamoDB, or a network, would: a closed port, definite refusals (4xx), 500s, and connections cut after
 * the request was sent. Only a request none of whose attempts can have been applied is "not applied".
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { DependencyUnavailableError } from '#shared/errors';
import { createDynamoClient } from '#shared/storage/client';
import { send } from '#shared/storage/requests';

type Answer = 'throttle' | 'server-error' | 'cut' | 'conflict';

describe('a write that failed: did it change nothing?', () => {
  let server: Server;
  let endpoint: string;
  let script: Answer[] = [];
  let seen = 0;

  before(async () => {
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        const answer = script[Math.min(seen, script.length - 1)];
        seen += 1;
        if (answer === 'cut') return request.socket.destroy();
        const [status, type] =
          answer === 'server-error'
            ? [500, 'InternalServerError']
            : answer === 'conflict'
              ? [400, 'TransactionConflictException']
              : [400, 'ProvisionedThroughputExceededException'];
        response.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' });
        response.end(JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message: 'scripted' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => new Promise((resolve) => server.close(resolve)));

  /** Puts one item through the service's client against `at`, each attempt answered by `answers` in turn. */
  async function failedPut(answers: Answer[], at = endpoint): Promise<DependencyUnavailableError> {
    script = answers;
    seen = 0;
    const client = createDynamoClient({ region: 'us-east-1', endpoint: at, attemptTimeoutMs: 2_000 });
    try {
      await send(() => client.send(new PutCommand({ TableName: 'ledger', Item: { pk: 'x', sk: 'y' }, ConditionExpression: 'attribute_not_exists(pk)' })));
    } catch (error) {
      assert.ok(error instanceof DependencyUnavailableError, `a 503, not ${String(error)}`);
      return error;
    } finally {
      client.destroy();
    }
    assert.fail('the put succeeded');
  }

  it('DynamoDB not listening (connection refused on every attempt): nothing changed', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    assert.equal((await failedPut([], `http://127.0.0.1:${port}`)).notApplied, true);
  });

  it('refused by DynamoDB on every attempt (throttled): nothing changed', async () => {
    const error = await failedPut(['throttle']);
    assert.equal(seen, 3, 'the SDK tried three times');
    assert.equal(error.notApplied, true);
  });

  it('answered 500 (DynamoDB says such a request may or may not have been applied): not known', async () => {
    assert.equal((await failedPut(['server-error'])).notApplied, false);
  });

  it('a connection cut after the request was sent, then refusals: not known (the first may have landed)', async () => {
    const error = await failedPut(['cut', 'throttle', 'throttle']);
    assert.equal(seen, 3);
    assert.equal(error.notApplied, false);
  });

  it('a write sent again after a transaction held its item: not known when an earlier request may have landed', async () => {
    // The first request: its first attempt cut (may have landed), its second refused as held by a transaction;
    // the write is sent again (requests.ts) and that request is throttled throughout.
    const error = await failedPut(['cut', 'conflict', 'throttle']);
    assert.equal(error.notApplied, false);
    const clean = await failedPut(['conflict', 'throttle']);
    assert.equal(clean.notApplied, true, 'refused every time: nothing changed');
  });
});
