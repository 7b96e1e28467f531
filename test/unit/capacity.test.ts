import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { CapacityMeter, applyUpdate, itemSize, tableShape } from '#shared/storage/capacity';
import { createDynamoClient, meterDynamoRequests } from '#shared/storage/client';
import { readCapacity, reportCapacity } from '#shared/storage/capacity-report';
import { ledgerTableDefinition } from '#shared/storage/tables';
import { capacityModel, latencyBound, roundWriteUnits, transactionMs } from '../../bench/capacity.ts';
import { priceRows, qldbRows } from '../../bench/prices.ts';
import { rateBounds } from '../../bench/serial-rates.ts';

const m = (o: Record<string, unknown>) => marshall(o) as Record<string, AttributeValue>;
const meter = () => new CapacityMeter({ ledger: tableShape(ledgerTableDefinition('ledger')) });
const byPartition = (mtr: CapacityMeter) => Object.fromEntries(Object.entries(mtr.totals).map(([k, v]) => [k, v]));

describe('Capacity pricing by DynamoDB rules', () => {
  it('sizes items the way DynamoDB does: names and values, numbers by significant digits, containers with overhead', () => {
    assert.equal(itemSize(m({ pk: 'CHAIN#a' })), 2 + 7);
    assert.equal(itemSize(m({ n: 12345 })), 1 + 4, 'five digits: 3 bytes + 1');
    assert.equal(itemSize(m({ n: 100 })), 1 + 2, 'trailing zeros are not significant');
    assert.equal(itemSize(m({ l: ['ab', 'c'] })), 1 + 3 + (1 + 2) + (1 + 1));
    assert.equal(itemSize(m({ ok: true, gone: null })), 2 + 1 + 4 + 1);
  });

  it('prices a put by started KB, twice inside a transaction, plus a standard write per index the item lands in', () => {
    const mtr = meter();
    const block = m({ pk: 'CHAIN#a#0', sk: 'BLOCK#000000000001', block_json: 'x'.repeat(1500), gsi_hash: 'h1', gsi_entity_pk: 'ENTITY#e', gsi_entity_sk: 's' });
    mtr.price('TransactWriteItemsCommand', { TransactItems: [{ Put: { TableName: 'ledger', Item: block } }] }, {}, 'ok');
    const totals = byPartition(mtr);
    assert.deepEqual(totals['ledger||CHAIN#a#0'], { wcu: 4, rcu: 0 }, '~1.6 KB: 2 WCU, doubled in a transaction');
    assert.deepEqual(totals['ledger|by-hash|h1'], { wcu: 1, rcu: 0 }, 'keys-only index: one small write');
    assert.deepEqual(totals['ledger|by-entity|ENTITY#e'], { wcu: 2, rcu: 0 }, 'the entity index carries block_json: 2 KB');
  });

  it('prices an update at the larger image, and charges no index write when the index does not change', () => {
    const mtr = meter();
    const head = m({ pk: 'CHAIN#a', sk: 'HEAD', head_index: 1, frontier: ['f'.repeat(1100)] });
    mtr.price('PutItemCommand', { TableName: 'ledger', Item: head }, {}, 'ok');
    assert.equal(mtr.unknownBefore, 0);
    mtr.price(
      'UpdateItemCommand',
      {
        TableName: 'ledger',
        Key: m({ pk: 'CHAIN#a', sk: 'HEAD' }),
        UpdateExpression: 'SET head_index = head_index + :one REMOVE frontier',
        ExpressionAttributeValues: m({ ':one': 1 }),
      },
      {},
      'ok',
    );
    assert.deepEqual(byPartition(mtr)['ledger||CHAIN#a'], { wcu: 2 + 2, rcu: 0 }, 'the shrinking update still pays for the 1.1 KB item before it');
    assert.equal(Object.keys(mtr.totals).length, 1, 'the head is in no index');
    assert.equal(mtr.unknownBefore, 0, 'the put showed the item whole');
    mtr.price(
      'UpdateItemCommand',
      { TableName: 'ledger', Key: m({ pk: 'CHAIN#b', sk: 'HEAD' }), UpdateExpression: 'SET x = :x', ExpressionAttributeValues: m({ ':x': 1 }) },
      {},
      'ok',
    );
    assert.equal(mtr.unknownBefore, 1, 'an update of an item never seen is priced from what it writes, and counted');
    const after = applyUpdate(head, {
      UpdateExpression: 'SET head_index = head_index + :one, #t = :t REMOVE frontier',
      ExpressionAttributeNames: { '#t': 'turn' },
      ExpressionAttributeValues: m({ ':one': 1, ':t': 'w' }),
    });
    assert.deepEqual(after, m({ pk: 'CHAIN#a', sk: 'HEAD', head_index: 2, turn: 'w' }));
  });

  it('bills a failed condition on the table only, and nothing for a throttled request', () => {
    const mtr = meter();
    const item = m({ pk: 'CHAIN#a#0', sk: 'BLOCK#000000000002', gsi_hash: 'h2' });
    mtr.price('PutItemCommand', { TableName: 'ledger', Item: item, ConditionExpression: 'attribute_not_exists(pk)' }, undefined, 'condition-failed');
    mtr.price('PutItemCommand', { TableName: 'ledger', Item: item }, undefined, 'not-billed');
    assert.deepEqual(byPartition(mtr), { 'ledger||CHAIN#a#0': { wcu: 1, rcu: 0, failed: 1 } });
  });

  it('prices reads by started 4 KB, a query for all it read together, half when eventually consistent', () => {
    const mtr = meter();
    const items = [0, 1].map((i) => m({ pk: 'CHAIN#a#0', sk: `BLOCK#${i}`, block_json: 'y'.repeat(3000) }));
    mtr.price(
      'QueryCommand',
      { TableName: 'ledger', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: m({ ':p': 'CHAIN#a#0' }), ConsistentRead: true },
      { Items: items },
      'ok',
    );
    mtr.price(
      'QueryCommand',
      {
        TableName: 'ledger',
        IndexName: 'by-entity',
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': 'gsi_entity_pk' },
        ExpressionAttributeValues: m({ ':p': 'ENTITY#e' }),
      },
      { Items: [] },
      'ok',
    );
    mtr.price('GetItemCommand', { TableName: 'ledger', Key: m({ pk: 'CHAIN#b', sk: 'HEAD' }) }, {}, 'ok');
    const totals = byPartition(mtr);
    assert.deepEqual(totals['ledger||CHAIN#a#0'], { wcu: 0, rcu: 2 }, '~6 KB strongly consistent: 2 RCU');
    assert.deepEqual(totals['ledger|by-entity|ENTITY#e'], { wcu: 0, rcu: 0.5 }, 'an empty index query still costs the minimum, eventually consistent');
    assert.deepEqual(totals['ledger||CHAIN#b'], { wcu: 0, rcu: 0.5 }, 'a missed item costs the minimum');
  });

  it('prices the requests a real client sends, the document client’s included, through the SDK middleware', async () => {
    // A stand-in for DynamoDB's HTTP API: the SDK's whole middleware stack runs, as against the real one.
    const answers: Record<string, unknown> = {
      PutItem: {},
      GetItem: { Item: m({ pk: 'CHAIN#z', sk: 'HEAD', note: 'n'.repeat(5000) }) },
    };
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const op = String(req.headers['x-amz-target']).split('.')[1]!;
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        res.end(JSON.stringify(answers[op] ?? {}));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const mtr = meter();
    meterDynamoRequests(mtr);
    try {
      const client = createDynamoClient({ region: 'us-east-1', endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
      await client.send(new PutCommand({ TableName: 'ledger', Item: { pk: 'CHAIN#z#0', sk: 'BLOCK#1', gsi_hash: 'hz' } }));
      const read = await client.send(new GetCommand({ TableName: 'ledger', Key: { pk: 'CHAIN#z', sk: 'HEAD' }, ConsistentRead: true }));
      assert.equal(read.Item?.note, 'n'.repeat(5000), 'the caller still gets plain values');
      assert.deepEqual(byPartition(mtr), {
        'ledger||CHAIN#z#0': { wcu: 1, rcu: 0 },
        'ledger|by-hash|hz': { wcu: 1, rcu: 0 },
        'ledger||CHAIN#z': { wcu: 0, rcu: 2 },
      });
    } finally {
      meterDynamoRequests(undefined);
      server.close();
    }
  });
});

describe('The capacity model of the bench', () => {
  const settings = {
    tables: { ledger: 'ledger', registry: 'registry', rateLimits: 'ratelimits', connections: 'connections' },
    blockShards: 16,
    pendingShards: 4,
    metricsShards: 32,
    batchMax: 100,
    maxLeadMs: 200,
  };

  it('finds the partition class that binds one chain, and scales the service with its chains until a shared class binds', () => {
    // 100 events in 10 commits: records 2 WCU each (spread), pending 1 WCU each over 4 shards (and 2 RCU
    // each of followers' looks), the head 4 WCU per commit plus 1 WCU for each of 20 refused lease
    // attempts and 1.5 RCU per event of looks, a segment per round.
    const totals = {
      'ledger||CHAIN#a': { wcu: 40 + 20, rcu: 150, failed: 20 },
      'ledger||HASH#x': { wcu: 200, rcu: 0 },
      'ledger||SEG#a': { wcu: 10, rcu: 0 },
      'ledger||PENDING#a#0': { wcu: 100, rcu: 200 },
      'ledger|by-entity|ENTITY#e': { wcu: 100, rcu: 0 },
      'registry||METRICS#3': { wcu: 20, rcu: 0 },
    };
    const model = capacityModel(totals, 100, 10, 0, settings);
    const head = model.classes.find((c) => c.name === 'chain head')!;
    assert.equal(head.wcu_per_commit, 4);
    assert.equal(head.refused_wcu_per_event, 0.2);
    // At full speed a round carries 100 events: 4/100 + 0.2 = 0.24 WCU per event; reads 1.5 per event bind first.
    assert.equal(head.full_wcu_per_event, 0.24);
    assert.equal(head.ceiling_events_per_s, 2000, '3,000 RCU/s at 1.5 RCU per event');
    // A full round's segment: 41 + 84 × 100 bytes = 9 KB, 9 WCU per round of 100 events.
    const segments = model.classes.find((c) => c.name === 'metadata segments')!;
    assert.equal(segments.wcu_per_event, 0.1, 'as measured');
    assert.equal(segments.full_wcu_per_event, 0.09, 'sized for a full round');
    assert.equal(
      model.classes.find((c) => c.name === 'pending appends')!.ceiling_events_per_s,
      4_000,
      'writes bind before reads: 1 WCU per event over 4 shards',
    );
    assert.deepEqual(model.one_chain, { events_per_s: 2000, bound_by: 'chain head', write_unit_bound: 2000 });
    assert.equal(model.busiest_partition.key, 'ledger||HASH#x');
    assert.deepEqual(
      model.service.map((s) => s.events_per_s),
      [2000, 160_000, 160_000],
      'metrics counters: 0.2 WCU per event over 32 partitions bind at 160,000 events/s',
    );
  });

  it('sizes what a full round writes besides its events: its segment, its round item, a seal per shard', () => {
    assert.deepEqual(roundWriteUnits(256, 16), { segment: 22, round: 22, seals: 16 * 2, pendingReads: 16 * 4 });
    assert.deepEqual(roundWriteUnits(5, 16), { segment: 1, round: 1, seals: 5, pendingReads: 16 });
  });

  it('bounds one chain by its serial rounds too, priced at measured AWS latencies, the lower bound wins', () => {
    assert.equal(transactionMs(2), 25);
    assert.equal(transactionMs(25), 32);
    assert.equal(transactionMs(45), 39);
    // 100 events in 10 commits, each: a lease take, a pending read, its records wave and a release; no transaction.
    const serial = { events: 100, commits: 10, transactWrites: 0, transactItems: 0, leaseTakes: 10, pendingReads: 10, roundWrites: 20 };
    const bound = latencyBound(serial, 100, 200);
    assert.deepEqual(bound.per_commit, { transactions: 0, lease_takes: 1, pending_reads: 1, round_writes: 2, events: 10 });
    // measured, each request in turn: the commit, and 4 more requests, 8 ms each
    assert.equal(bound.measured.round_ms, 40);
    assert.equal(bound.measured.events_per_s, 250);
    // full, pipelined: the commit (8) and the wave (16) that the next read and round item (8 + 8) overlap: 24 ms;
    // a lead of 200 ms holds 8 rounds, so a lease take and a release (16 ms) cost each round 2 ms.
    assert.equal(bound.full.rounds_per_lead, 8);
    assert.equal(bound.full.round_ms, 26);
    assert.equal(bound.full.events_per_s, Math.round((1000 / 26) * 100));
    assert.equal(bound.p99_append_ms, Math.round(16 + 2 * 26 + 26 / 4 + 16));
    const totals = { 'ledger||HASH#x': { wcu: 100, rcu: 0 }, 'ledger||PENDING#a#0': { wcu: 100, rcu: 0 } };
    const model = capacityModel(totals, 100, 10, 0, settings, serial);
    assert.equal(model.one_chain.write_unit_bound, 4_000, 'pending: 1 WCU per event over 4 partitions');
    assert.equal(model.one_chain.latency_bound, bound.full.events_per_s);
    assert.equal(model.one_chain.events_per_s, 3_846, 'the lower of the two: rounds of 100 events every 26 ms');
    assert.equal(model.one_chain.bound_by, 'commit latency (serial commits)');
  });

  it('bounds each way of committing at a steady rate: one at a time saturates, every combining path stays above a 45 ms median', () => {
    const [five, fifty, thousand] = rateBounds([5, 50, 1_000], 1, 8_000);
    // Alone, a lone writer's transaction; past about 30 a second one commit at a time cannot keep up.
    assert.ok(five!.oneAtATime.p50! < 45, `one at a time at 5/s: ${five!.oneAtATime.p50}`);
    assert.equal(fifty!.oneAtATime.p50, undefined, 'one at a time at 50/s has no steady state');
    for (const row of [five!, fifty!, thousand!]) {
      // Six requests in a row, however light the load: above issue 69's 45 ms at the median at every rate.
      assert.ok(row.combiningRead.p50! > 50, `combining at ${row.rate}/s: p50 ${row.combiningRead.p50}`);
      // The outcome in the head write's answer (no look), the records written before the answer: well under the
      // combining path at every rate, p99 under 120 ms; the median still a few ms above 45.
      assert.ok(
        row.ownRounds.p50! < row.combiningRead.p50! - 5 && row.ownRounds.p50! > 40 && row.ownRounds.p99! < 120,
        `own rounds at ${row.rate}/s: ${row.ownRounds.p50} / ${row.ownRounds.p99}`,
      );
      assert.ok(row.ownRounds.headWrites >= row.rate * 0.9, 'every writer writes the head at least once');
    }
    assert.equal(fifty!.ownRounds.throttled, false);
    assert.equal(thousand!.ownRounds.throttled, true, '1,000 head writes a second at 2 units each pass one partition');
  });

  it('prices a million events from the units per event, and QLDB beside it', () => {
    const serial = { events: 100, commits: 10, transactWrites: 10, transactItems: 260, leaseTakes: 10, pendingReads: 10, roundWrites: 20 };
    const model = capacityModel({ 'ledger||CHAIN#a#0': { wcu: 400, rcu: 100 } }, 100, 10, 0, settings, serial);
    const [single, batch, read] = priceRows(model, 100, { requests: 2, rcu: 18, ms: 12 });
    // 4 WCU and 1 RCU per event on demand: 4 × $0.625 + 1 × $0.125 per million.
    assert.equal(single!.dynamodb_on_demand, 2.63);
    // provisioned at 70 %: (4 × 0.00065 + 1 × 0.00013) × 10^6 / 3,600 / 0.7
    assert.equal(single!.dynamodb_provisioned, Math.round((((4 * 0.00065 + 0.00013) * 1e6) / 3600 / 0.7) * 100) / 100);
    assert.equal(single!.api_gateway, 1);
    assert.equal(batch!.api_gateway, 0.01, 'one request for 100 events');
    assert.equal(read!.api_gateway, 2, 'two requests per verified read');
    assert.ok(Math.abs(single!.total_on_demand - (single!.dynamodb_on_demand + single!.lambda + single!.api_gateway)) <= 0.011, 'the total of its parts');
    assert.deepEqual(
      qldbRows().map((q) => [q.low, q.high]),
      [
        [0.84, 3.07],
        [0.27, 0.54],
      ],
    );
  });
});

describe('the capacity report the bench reads', () => {
  it('appends only the partitions that changed, and the reader adds up every process, the newest line of each winning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'capacity-report-'));
    try {
      const { meter: mtr, write } = reportCapacity(dir, [ledgerTableDefinition('ledger')]);
      meterDynamoRequests(undefined); // this test prices by hand
      const get = (pk: string) => mtr.price('GetItemCommand', { TableName: 'ledger', Key: m({ pk, sk: 'HEAD' }) }, { Item: m({ pk, sk: 'HEAD' }) }, 'ok');
      for (let i = 0; i < 1_000; i += 1) get(`CHAIN#c${i}`);
      write();
      get('CHAIN#c7');
      write();
      write(); // nothing changed: no line
      const [file] = readdirSync(dir);
      const lines = readFileSync(join(dir, file!), 'utf8').trim().split('\n');
      assert.equal(lines.length, 2);
      assert.deepEqual(Object.keys(JSON.parse(lines[1]!).totals), ['ledger||CHAIN#c7'], 'the second line names only what changed');
      // Another process's file, with a line cut short as a process stopped mid-write.
      writeFileSync(
        join(dir, 'capacity-1-0.jsonl'),
        `${JSON.stringify({ totals: { 'ledger||CHAIN#c7': { wcu: 1, rcu: 0 } }, unknownBefore: 2 })}\n{"totals":{"ledger||CHAIN#c7":`,
      );
      const read = readCapacity(dir);
      assert.equal(Object.keys(read.totals).length, 1_000);
      assert.deepEqual(read.totals['ledger||CHAIN#c7'], { wcu: 1, rcu: 1, failed: 0 }, 'two reads of half a unit here, a write there');
      assert.deepEqual(read.totals['ledger||CHAIN#c8'], { wcu: 0, rcu: 0.5, failed: 0 });
      assert.equal(read.unknownBefore, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
