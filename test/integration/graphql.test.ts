/**
 * GraphQL at /graphql over the running local stack: the spec's `events` query against what REST shows,
 * off-chain resolution, the depth / complexity / introspection limits, mutations, and who may run them.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { call, keysCli, removeDir, startStack, type Stack } from '#test/support/stack';

let stack: Stack;
let base: string;

const gql = (query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}, url = stack.url) =>
  call(url, 'POST', '/graphql', { query, ...(variables ? { variables } : {}) }, headers);

before(async () => {
  stack = await startStack();
  base = `${stack.url}/api/v1`;
  await call(base, 'POST', '/chains/orders/create');
  await call(base, 'POST', '/chains/returns/create');
  await call(base, 'POST', '/chains/orders/events', {
    entity_id: 'pkg-1',
    event_type: 'created',
    details: { carrier: 'ups' },
    details_metadata: { src: 'erp' },
  });
  await call(base, 'POST', '/chains/returns/events', { entity_id: 'pkg-1', event_type: 'returned', details: { reason: 'damaged' } });
  await call(base, 'POST', '/chains/orders/events', { entity_id: 'pkg-1', event_type: 'archived', details: { blob: 'z'.repeat(70_000) } });
});

after(async () => {
  await stack?.stop();
  if (stack) removeDir(stack.dataDir);
});

describe('GraphQL (/graphql)', () => {
  it("answers the spec's events query with the events REST shows, camelCase", async () => {
    const res = await gql(
      '{ events(entityId: "pkg-1") { eventId chainName blockIndex entityId eventType details detailsCid detailsNonce detailsMetadata timestamp isOffchain } }',
    );
    assert.equal(res.status, 200, res.text);
    const rest = (await call(base, 'GET', '/entities/pkg-1/trace')).body.events;
    assert.deepEqual(
      res.body.data.events,
      rest.map((e: any) => ({
        eventId: e.event_id,
        chainName: e.chain_name,
        blockIndex: e.block_index,
        entityId: e.entity_id,
        eventType: e.event_type,
        details: e.details,
        detailsCid: e.details_cid,
        detailsNonce: e.details_nonce,
        detailsMetadata: e.details_metadata,
        timestamp: e.timestamp,
        isOffchain: e.is_offchain,
      })),
    );
    const oneChain = await gql('query($c: String) { events(chainName: $c, entityId: "pkg-1") { eventType } }', { c: 'returns' });
    assert.deepEqual(oneChain.body.data.events, [{ eventType: 'returned' }]);
    const chainOnly = await gql('{ events(chainName: "orders", limit: 1) { eventId } }');
    assert.deepEqual(chainOnly.body.data.events, [{ eventId: 'orders_2_0' }]);
    const viaGet = await call(stack.url, 'GET', `/graphql?query=${encodeURIComponent('{ events(entityId: "pkg-1") { eventId } }')}`);
    assert.equal(viaGet.body.data.events.length, 3);
  });

  it('decrypts off-chain details with resolveCid, and marks them isOffchain', async () => {
    const plain = await gql('{ events(chainName: "orders", entityId: "pkg-1") { eventType details isOffchain } }');
    const archived = plain.body.data.events.find((e: any) => e.eventType === 'archived');
    assert.deepEqual(archived, { eventType: 'archived', details: {}, isOffchain: true });
    const resolved = await gql('{ events(chainName: "orders", entityId: "pkg-1", resolveCid: true) { eventType details isOffchain } }');
    const full = resolved.body.data.events.find((e: any) => e.eventType === 'archived');
    assert.equal(full.details.blob.length, 70_000);
    assert.equal(full.isOffchain, true);
  });

  it('serves chains, chain, blocks, block and trace', async () => {
    const res = await gql(`{
      chains { name type blockCount }
      chain(name: "orders") { name totalEvents proofCount registeredSubChains latestBlockHash }
      blocks(chainName: "orders", limit: 2) { index previousHash hash events { eventId } }
      block(chainName: "orders", index: 1) { hash events { details } }
      trace(entityId: "pkg-1") { chains events { eventId } }
    }`);
    assert.equal(res.status, 200, res.text);
    const d = res.body.data;
    assert.deepEqual(
      d.chains.map((c: any) => c.name),
      ['main', 'orders', 'returns'],
    );
    assert.deepEqual(
      { ...d.chain, latestBlockHash: undefined },
      { name: 'orders', totalEvents: 2, proofCount: 0, registeredSubChains: null, latestBlockHash: undefined },
    );
    assert.deepEqual(
      d.blocks.map((b: any) => b.index),
      [0, 1],
    );
    assert.equal(d.blocks[1].previousHash, d.blocks[0].hash);
    assert.deepEqual(d.block.events[0].details, { carrier: 'ups' });
    assert.deepEqual(d.trace.chains, ['orders', 'returns']);
  });

  it('appends through mutations, as REST would', async () => {
    const made = await gql('mutation { createSubChain(name: "graph") { success chainName } }');
    assert.deepEqual(made.body.data.createSubChain, { success: true, chainName: 'graph' });
    const added = await gql('mutation($i: EventInput!) { addEvent(chainName: "graph", input: $i) { success eventId } }', {
      i: { entityId: 'g-1', eventType: 'drawn', details: { nodes: 3 } },
    });
    assert.deepEqual(added.body.data.addEvent, { success: true, eventId: 'graph_1_0' });
    const proof = await gql('mutation { submitProof(chainName: "graph") { success proofId } }');
    assert.equal(proof.body.data.submitProof.success, true);
    const rest = (await call(base, 'GET', '/chains/graph/blocks/1')).body;
    assert.deepEqual(rest.events[0].details, { nodes: 3 });
  });

  it('refuses a number a double cannot keep, inline or in variables (GET too), rather than storing another one (red team)', async () => {
    const before = (await call(base, 'GET', '/chains/orders/stats')).body.total_blocks;
    // Written inline in the query, graphql-js had read 9007199254740993 as …992 and 1e-400 as 0, and stored them.
    for (const literal of ['9007199254740993', '9007199254740993.0', '1e-400']) {
      const res = await gql(`mutation { addEvent(chainName: "orders", input: {entityId: "n", eventType: "t", details: {a: ${literal}}}) { success } }`);
      assert.match(JSON.stringify(res.body.errors), new RegExp(`The number ${literal.replace('.', '\\.')} in the query cannot be kept exactly`), res.text);
      assert.equal(res.body.data?.addEvent ?? null, null);
    }
    const viaVariables = await call(
      stack.url,
      'POST',
      '/graphql',
      '{"query":"mutation($i: EventInput!) { addEvent(chainName: \\"orders\\", input: $i) { success } }","variables":{"i":{"entityId":"n","eventType":"t","details":{"a":9007199254740993}}}}',
    );
    assert.equal(viaVariables.status, 422, viaVariables.text);
    const get = await call(
      stack.url,
      'GET',
      `/graphql?query=${encodeURIComponent('query($n: Int) { chains(limit: 1) { name } }')}&variables=${encodeURIComponent('{"n":9007199254740993}')}`,
    );
    assert.equal(get.status, 422, get.text);
    assert.match(get.text, /The number 9007199254740993 at key 'n' in the variables cannot be kept exactly/);
    assert.equal((await call(base, 'GET', '/chains/orders/stats')).body.total_blocks, before, 'nothing appended');
    // The same numbers as a double prints them, and as strings, go through.
    const kept = await gql(
      'mutation { addEvent(chainName: "orders", input: {entityId: "n", eventType: "t", details: {a: 9007199254740992, b: 0.1, c: "9007199254740993"}}) { success eventId } }',
    );
    assert.equal(kept.body.data.addEvent.success, true, kept.text);
  });

  it('answers domain errors in the errors array, with their status', async () => {
    const res = await gql('{ block(chainName: "ghost", index: 1) { hash } }');
    assert.equal(res.status, 200);
    assert.equal(res.body.data.block, null);
    assert.deepEqual(res.body.errors[0].extensions, { code: 'ChainNotFoundError', status: 404 });
    const dup = await gql('mutation { createSubChain(name: "orders") { success } }');
    assert.equal(dup.body.errors[0].extensions.status, 409);
    const bad = await gql('mutation($i: EventInput!) { addEvent(chainName: "orders", input: $i) { success } }', {
      i: { entityId: 'x', eventType: 'y', details: [1] },
    });
    assert.equal(bad.body.errors[0].extensions.status, 422);
    const neither = await gql('{ events { eventId } }');
    assert.match(neither.body.errors[0].message, /chainName, entityId/);
    const syntax = await gql('{ events(');
    assert.equal(syntax.status, 400);
    assert.equal(syntax.body.errors[0].extensions.code, 'GRAPHQL_PARSE_FAILED');
  });

  it('refuses an introspection query 17 levels deep before running it, and allows 16 (the standard one is 13)', async () => {
    const ofTypes = (n: number) => `${'ofType { '.repeat(n)}name${' }'.repeat(n)}`;
    // __schema(1) types(2) fields(3) type(4) + ofType… + name
    const deep = await gql(`{ __schema { types { fields { type { ${ofTypes(12)} } } } } }`);
    assert.equal(deep.status, 400);
    assert.match(deep.body.errors[0].message, /17 levels deep; the limit is 16 inside introspection/);
    const fine = await gql(`{ __schema { types { fields { type { ${ofTypes(11)} } } } } }`);
    assert.equal(fine.status, 200, fine.text);
  });

  it('refuses a query of 1001 fields, or costing 1001 points, before running it, and allows 1000', async () => {
    // chain(name) is an object (1 point) with a name (none): 500 of them are 1000 fields and 500 points.
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `c${i}: chain(name: "orders") { name }`).join(' ');
    const at1000 = await gql(`{ ${fields(500)} }`);
    assert.equal(at1000.status, 200);
    const at1001 = await gql(`{ __typename ${fields(500)} }`);
    assert.equal(at1001.status, 400);
    assert.match(at1001.body.errors[0].message, /1001 fields; the limit is 1000/);
    // A list with a limit costs limit × each item: 10 × 100 = 1000 points, and one more is refused.
    const pages = (n: number) => Array.from({ length: n }, (_, i) => `p${i}: blocks(chainName: "orders", limit: 100) { hash }`).join(' ');
    assert.equal((await gql(`{ ${pages(10)} }`)).status, 200);
    const over = await gql(`{ ${pages(10)} chain(name: "orders") { name } }`);
    assert.equal(over.status, 400);
    assert.match(over.body.errors[0].message, /1001 points; the limit is 1000/);
    // The largest page any list answers fits the budget: 1,000 chains, events or trace entries (limits 999 and 1,000
    // had cost 1,001 points on GraphQL, answered over REST: red team).
    for (const query of [
      '{ chains(limit: 1000) { name } }',
      '{ trace(entityId: "pkg-1", limit: 1000) { events { eventId } nextCursor } }',
      '{ trace(entityId: "pkg-1", limit: 999) { events { eventId } } }',
      '{ events(entityId: "pkg-1", limit: 1000) { eventId } }',
      '{ events(chainName: "orders", limit: 1000) { eventId } }',
    ]) {
      const res = await gql(query);
      assert.equal(res.status, 200, `${query}: ${res.text.slice(0, 200)}`);
      assert.equal(res.body.errors, undefined, query);
    }
  });

  it('prices what a query reads, not the fields it names: a null limit, the chains list, their statistics, mutations (red team)', async () => {
    // trace(limit: null) had been priced as no limit (150 aliases read 15,000 events); 240 aliases of
    // chains { totalEvents proofCount registeredSubChains } cost 240 points and made DynamoDB unavailable for 5 s; 500
    // aliased addEvent mutations fit one request (past the REST batch cap of 99 and the rate limit).
    const cost = async (query: string) => {
      const res = await gql(query);
      const m = /costs (\d+) points/.exec(res.body.errors?.[0]?.message ?? '');
      return { status: res.status, points: m ? Number(m[1]) : undefined };
    };
    const nulls = Array.from({ length: 10 }, (_, i) => `t${i}: trace(entityId: "pkg-1", limit: null) { events { eventId } }`).join(' ');
    // The default it reads: 100 events, and one entry more to know whether another page follows (101 points an alias).
    assert.deepEqual(await cost(`{ ${nulls} }`), { status: 400, points: 1010 }, 'a null limit is priced as the default it reads');
    const stats = Array.from({ length: 10 }, (_, i) => `c${i}: chains { totalEvents proofCount registeredSubChains }`).join(' ');
    assert.deepEqual(await cost(`{ ${stats} }`), { status: 400, points: 3000 }, 'each statistic a point, the chains priced as 100');
    assert.equal((await gql('{ chains { name totalEvents } }')).status, 200, 'one listing with its statistics runs');
    const appends = Array.from({ length: 101 }, (_, i) => `e${i}: addEvent(chainName: "orders", input: {entityId: "m", eventType: "t"}) { success }`).join(' ');
    assert.deepEqual(await cost(`mutation { ${appends} }`), { status: 400, points: 1010 }, 'a mutation costs 10: at most 100 a request');
  });

  it('allows introspection outside production', async () => {
    const res = await gql('{ __schema { queryType { name } } }');
    assert.deepEqual(res.body.data, { __schema: { queryType: { name: 'Query' } } });
  });
});

describe('GraphQL in production, with keys', () => {
  let prod: Stack;
  const keys: Record<string, string> = {};
  before(async () => {
    prod = await startStack({
      env: {
        SVC_ENV: 'production',
        SVC_CORS_ORIGINS: 'https://app.example.com',
        SVC_AUTH_ENABLED: 'true',
        SVC_ADMIN_API_KEY: `gql-admin-${randomBytes(16).toString('hex')}`,
        // Low enough for three pages of the 250-event trace below (750 items of its index alone), high enough for one.
        SVC_MAX_READ_ITEMS: '600',
      },
    });
    for (const role of ['reader', 'writer']) {
      keys[role] = /Key \(shown once, store it now\): (\S+)/.exec(await keysCli(prod.dataDir, ['create', '--role', role]))![1]!;
    }
  });
  after(async () => {
    await prod?.stop();
    if (prod) removeDir(prod.dataDir);
  });

  it('reads a trace a page at a time, on REST and GraphQL, and refuses 100 aliased traces while health stays fast (red team)', async () => {
    // One request of 100 aliased trace(entityId: "hot") had read every block of a 1,981-event entity 100 times:
    // health answered 503 after 3.5 s and another caller's block read took 15.1 s. The REST trace answered 884 KB.
    const writer = { 'X-API-Key': keys.writer! };
    const reader = { 'X-API-Key': keys.reader! };
    const v1 = `${prod.url}/api/v1`;
    await call(v1, 'POST', '/chains/hot/create', undefined, writer);
    const batch = (n: number, from: number) =>
      call(
        v1,
        'POST',
        '/chains/hot/events/batch',
        { events: Array.from({ length: n }, (_, i) => ({ entity_id: 'hot', event_type: 'tick', details: { i: from + i } })) },
        writer,
      );
    for (const [n, from] of [
      [99, 0],
      [99, 99],
      [52, 198],
    ] as const)
      assert.equal((await batch(n, from)).status, 200);
    // REST: 100 by default, then on from the cursor; every event once, in order; the last page says so.
    const seen: number[] = [];
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const page = await call(v1, 'GET', `/entities/hot/trace${cursor ? `?cursor=${cursor}` : ''}`, undefined, reader);
      assert.equal(page.status, 200, page.text);
      assert.ok(page.body.events.length <= 100, `a page of ${page.body.events.length}`);
      seen.push(...page.body.events.map((e: { details: { i: number } }) => e.details.i));
      cursor = page.body.next_cursor;
      pages += 1;
    } while (cursor && pages < 10);
    assert.deepEqual(
      seen,
      Array.from({ length: 250 }, (_, i) => i),
      'every event once, in order',
    );
    assert.equal(pages, 3);
    const big = await call(v1, 'GET', '/entities/hot/trace?limit=1000', undefined, reader);
    assert.equal(big.body.events.length, 250);
    assert.equal(big.body.next_cursor, null);
    assert.equal((await call(v1, 'GET', '/entities/hot/trace?limit=1001', undefined, reader)).status, 422);
    const forged = await call(v1, 'GET', `/entities/hot/trace?cursor=${Buffer.from('ENTITY#other').toString('base64url')}`, undefined, reader);
    assert.equal(forged.status, 422, forged.text);
    assert.match(forged.text, /next_cursor/);
    // GraphQL: the same pages through trace(limit, after).
    const first = await gql('{ trace(entityId: "hot", limit: 200) { events { blockIndex } nextCursor } }', undefined, reader, prod.url);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.data.trace.events.length, 200);
    const rest = await gql(
      'query($a: String) { trace(entityId: "hot", limit: 200, after: $a) { events { blockIndex } nextCursor } }',
      { a: first.body.data.trace.nextCursor },
      reader,
      prod.url,
    );
    assert.equal(rest.body.data.trace.events.length, 50);
    assert.equal(rest.body.data.trace.nextCursor, null);
    // 100 aliases of a trace cost 100 events each: refused before anything is read, while health stays fast.
    const aliases = Array.from({ length: 100 }, (_, i) => `t${i}: trace(entityId: "hot") { events { eventId } }`).join(' ');
    const [bomb, health] = await Promise.all([
      gql(`{ ${aliases} }`, undefined, reader, prod.url),
      (async () => {
        const started = performance.now();
        const res = await call(v1, 'GET', '/health');
        return { status: res.status, ms: performance.now() - started };
      })(),
    ]);
    assert.equal(bomb.status, 400, bomb.text.slice(0, 300));
    assert.match(bomb.body.errors[0].message, /costs \d+ points; the limit is 1000/);
    assert.equal(health.status, 200);
    assert.ok(health.ms < 3_000, `health took ${Math.round(health.ms)} ms`);
  });

  it('caps what one request reads from DynamoDB, whatever fields led there: past the cap it is refused whole, with a 422 that says so (red team)', async () => {
    // Priced within the 1,000 points (3 × 250), these three aliases read the 250-event trace three times: 750 items
    // of its index alone, past this stack's SVC_MAX_READ_ITEMS of 600, while one of them reads within it.
    const reader = { 'X-API-Key': keys.reader! };
    const one = await gql('{ t0: trace(entityId: "hot", limit: 250) { events { eventId } } }', undefined, reader, prod.url);
    assert.equal(one.status, 200, one.text.slice(0, 300));
    assert.equal(one.body.data.t0.events.length, 250);
    const three = Array.from({ length: 3 }, (_, i) => `t${i}: trace(entityId: "hot", limit: 250) { events { eventId } }`).join(' ');
    const [over, health] = await Promise.all([
      gql(`{ ${three} }`, undefined, reader, prod.url),
      (async () => {
        const started = performance.now();
        const res = await call(`${prod.url}/api/v1`, 'GET', '/health');
        return { status: res.status, ms: performance.now() - started };
      })(),
    ]);
    assert.equal(over.status, 422, over.text.slice(0, 300));
    assert.equal(over.body.data, undefined, 'no part of the answer');
    assert.equal(over.body.errors.length, 1);
    assert.equal(over.body.errors[0].extensions.code, 'READ_LIMIT_EXCEEDED');
    assert.match(over.body.errors[0].message, /reads more than 600 items from storage.*ask for less/);
    assert.equal(health.status, 200);
    assert.ok(health.ms < 3_000, `health took ${Math.round(health.ms)} ms`);
    // The same reads in three requests are three answers.
    for (let i = 0; i < 3; i += 1)
      assert.equal((await gql('{ trace(entityId: "hot", limit: 250) { events { eventId } } }', undefined, reader, prod.url)).status, 200);
  });

  it('a trace reads at most 100 blocks past events it does not answer, and GraphQL prices it by them: limit=1 cannot make one request read thousands (red team)', async () => {
    // Each index entry a trace reads is a whole block. A trace with limit=1 read on up to 1,000 entries past those it
    // skipped (another chain's, or a hidden channel's), and GraphQL priced it by its limit: 499 aliases of
    // trace(limit: 1) were within the 1,000 points and read about 600 MB; 40 of them made DynamoDB unavailable.
    const writer = { 'X-API-Key': keys.writer! };
    const reader = { 'X-API-Key': keys.reader! };
    const v1 = `${prod.url}/api/v1`;
    await call(v1, 'POST', '/chains/hot-other/create', undefined, writer);
    assert.equal((await call(v1, 'POST', '/chains/hot-other/events', { entity_id: 'hot', event_type: 'elsewhere', details: {} }, writer)).status, 200);
    // Filtered to the other chain, past the 250 entries of "hot": 100 a request, then a cursor, until the event.
    const pages: number[] = [];
    let found: { event_type: string }[] = [];
    let cursor: string | null = null;
    do {
      const page = await call(v1, 'GET', `/entities/hot/trace?limit=1&chain_name=hot-other${cursor ? `&cursor=${cursor}` : ''}`, undefined, reader);
      assert.equal(page.status, 200, page.text);
      pages.push(page.body.events.length);
      found = found.concat(page.body.events);
      cursor = page.body.next_cursor;
    } while (cursor && pages.length < 10);
    assert.deepEqual(pages, [0, 0, 1], 'two pages of 100 skipped entries each, then the event (one page of 251 before)');
    assert.deepEqual(
      found.map((e) => e.event_type),
      ['elsewhere'],
    );
    // GraphQL: a trace is priced by the entries it may read (100 at least), not its limit of 1.
    const eleven = Array.from({ length: 11 }, (_, i) => `t${i}: trace(entityId: "hot", limit: 1) { events { eventId } }`).join(' ');
    const refused = await gql(`{ ${eleven} }`, undefined, reader, prod.url);
    assert.equal(refused.status, 400, refused.text.slice(0, 300));
    assert.match(refused.body.errors[0].message, /costs 1100 points; the limit is 1000/);
    const events = Array.from({ length: 11 }, (_, i) => `e${i}: events(entityId: "hot", limit: 1) { eventId }`).join(' ');
    assert.equal((await gql(`{ ${events} }`, undefined, reader, prod.url)).status, 400, 'events of an entity are a trace');
    const three = Array.from({ length: 3 }, (_, i) => `t${i}: trace(entityId: "hot", limit: 1) { events { eventId } }`).join(' ');
    const within = await gql(`{ ${three} }`, undefined, reader, prod.url);
    assert.equal(within.status, 200, within.text.slice(0, 300));
    assert.equal(within.body.data.t2.events.length, 1);
  });

  it("counts a read's size, not only its items: three traces of 20 large blocks are past 600, one is within (red team)", async () => {
    // A block is read whole: twenty of 60 KB are about 300 units of 4 KB, as DynamoDB bills them, and counted as 20
    // items they had let one request read hundreds of MB within an allowance of items.
    const writer = { 'X-API-Key': keys.writer! };
    const reader = { 'X-API-Key': keys.reader! };
    const v1 = `${prod.url}/api/v1`;
    await call(v1, 'POST', '/chains/fat/create', undefined, writer);
    for (let i = 0; i < 20; i += 1) {
      const big = { blob: randomBytes(45_000).toString('base64') };
      assert.equal((await call(v1, 'POST', '/chains/fat/events', { entity_id: 'fat', event_type: 'big', details: big }, writer)).status, 200);
    }
    const one = await gql('{ t0: trace(entityId: "fat", limit: 20) { events { eventId } } }', undefined, reader, prod.url);
    assert.equal(one.status, 200, one.text.slice(0, 300));
    assert.equal(one.body.data.t0.events.length, 20);
    const three = Array.from({ length: 3 }, (_, i) => `t${i}: trace(entityId: "fat", limit: 20) { events { eventId } }`).join(' ');
    const over = await gql(`{ ${three} }`, undefined, reader, prod.url);
    assert.equal(over.status, 422, over.text.slice(0, 300));
    assert.equal(over.body.errors[0].extensions.code, 'READ_LIMIT_EXCEEDED');
  });

  it('counts off-chain payloads as reads and as answer: each fetched once a request, past the cap 422, past one answer 422 before it is built (red team)', async () => {
    // One 4 MB payload cited by 99 events had been fetched and decrypted 99 times a request, outside the read cap, and
    // an answer of 392 MB built before the answer's limit refused it; a GraphQL query selecting `eventId` alone
    // decrypted them all too.
    const writer = { 'X-API-Key': keys.writer! };
    const reader = { 'X-API-Key': keys.reader! };
    const v1 = `${prod.url}/api/v1`;
    await call(v1, 'POST', '/chains/amp/create', undefined, writer);
    // Two payloads of 1.2 MB: about 400 items of 4 KB each as fetched (their envelopes), against this stack's 600.
    const store = async (fill: string) => {
      const stored = await call(v1, 'POST', '/offchain', { data: { blob: fill.repeat(1_200_000) }, chain: 'amp' }, writer);
      assert.equal(stored.status, 201, stored.text.slice(0, 300));
      return { details_cid: stored.body.cid, details_nonce: stored.body.nonce };
    };
    const [first, second] = [await store('a'), await store('b')];
    // Six events citing the first in one batch: checked once (six fetches would be 2,400 items), then one citing the second.
    const cites = (ref: typeof first, n: number) => Array.from({ length: n }, (_, i) => ({ entity_id: `amp-${i}`, event_type: 'cite', ...ref }));
    const batch = await call(v1, 'POST', '/chains/amp/events/batch', { events: cites(first, 6) }, writer);
    assert.ok(batch.status === 200 || batch.status === 201, batch.text.slice(0, 300));
    assert.equal((await call(v1, 'POST', '/chains/amp/events', cites(second, 1)[0], writer)).status, 200);

    // Three events citing the first (blocks 1-3; block 0 opens the chain): fetched once, 3.6 MB of details, one answer.
    const three = await call(v1, 'GET', '/chains/amp/blocks?resolve_cid=true&offset=1&limit=3', undefined, reader);
    assert.equal(three.status, 200, three.text.slice(0, 300));
    assert.deepEqual(
      three.body.blocks.map((b: any) => b.events[0].details.blob.length),
      [1_200_000, 1_200_000, 1_200_000],
    );
    // Six: fetched once, but 7.2 MB of details, more than one answer carries: refused before the answer is built.
    const six = await call(v1, 'GET', '/chains/amp/blocks?resolve_cid=true&offset=1&limit=6', undefined, reader);
    assert.equal(six.status, 422, six.text.slice(0, 300));
    assert.match(six.body.detail, /off-chain payloads this request resolves come to more than 6291556 bytes/);
    // Both payloads in one request: about 800 items fetched, past the cap of 600.
    const both = await call(v1, 'GET', '/chains/amp/blocks?resolve_cid=true&offset=6&limit=2', undefined, reader);
    assert.equal(both.status, 422, both.text.slice(0, 300));
    assert.match(both.body.detail, /reads more than 600 items from storage/);
    // GraphQL fetches them only for a selection that shows them.
    const ids = await gql('{ events(chainName: "amp", resolveCid: true, limit: 2) { eventId } }', undefined, reader, prod.url);
    assert.equal(ids.status, 200, ids.text.slice(0, 300));
    assert.equal(ids.body.data.events.length, 2);
    const shown = await gql('{ events(chainName: "amp", resolveCid: true, limit: 2) { eventId details } }', undefined, reader, prod.url);
    assert.equal(shown.status, 422, shown.text.slice(0, 300));
    assert.equal(shown.body.errors[0].extensions.code, 'READ_LIMIT_EXCEEDED');
    const many = await gql('{ events(chainName: "amp", resolveCid: true, limit: 7) { ... on Event { resolveError } } }', undefined, reader, prod.url);
    assert.equal(many.status, 422, many.text.slice(0, 300));
  });

  it('keeps GraphQL literals to the body rules, and answers bad input 4xx, never 500 (red team)', async () => {
    const writer = { 'X-API-Key': keys.writer! };
    const proto = await gql(
      'mutation { addEvent(chainName: "amp", input: { entityId: "lit", eventType: "t", details: { a: 1, b: { __proto__: 1 } } }) { eventId } }',
      undefined,
      writer,
      prod.url,
    );
    assert.equal(proto.body.data.addEvent, null, proto.text.slice(0, 300));
    assert.equal(proto.body.errors[0].extensions.status, 422);
    const deep = `${'{ a: '.repeat(100)}1${' }'.repeat(100)}`;
    const nested = await gql(
      `mutation { addEvent(chainName: "amp", input: { entityId: "lit", eventType: "t", details: ${deep} }) { eventId } }`,
      undefined,
      writer,
      prod.url,
    );
    assert.equal(nested.body.data.addEvent, null, nested.text.slice(0, 300));
    assert.match(nested.body.errors[0].message, /nested deeper than 64 levels/);
    const negative = await gql('{ block(chainName: "amp", index: -5) { hash } }', undefined, writer, prod.url);
    assert.equal(negative.body.errors[0].extensions.status, 422, negative.text.slice(0, 300));
    const operation = await call(
      prod.url,
      'POST',
      '/graphql',
      { query: 'query A { chains { name } } query B { chains { name } }', operationName: { toString: 'B' } },
      writer,
    );
    assert.equal(operation.status, 400, operation.text.slice(0, 300));
    assert.match(operation.body.errors[0].message, /operationName must be a string/);
  });

  it('lists the chains a page at a time: a bare array, and a Link to the next page while the list goes on (red team: thousands of chains)', async () => {
    const reader = { 'X-API-Key': keys.reader! };
    const v1 = `${prod.url}/api/v1`;
    const all = await call(v1, 'GET', '/chains', undefined, reader);
    assert.equal(all.status, 200);
    assert.ok(Array.isArray(all.body) && all.body.length >= 2, all.text);
    assert.equal(all.headers.get('link'), null, 'the whole list in one page: no next');
    const seen: string[] = [];
    let path: string | undefined = '/chains?limit=1';
    for (let pages = 0; path && pages < 10; pages += 1) {
      const page = await call(v1, 'GET', path, undefined, reader);
      assert.equal(page.status, 200, page.text);
      assert.equal(page.body.length, 1);
      seen.push(...page.body.map((c: { name: string }) => c.name));
      const link = page.headers.get('link');
      path = link ? `/chains${/^<([^>]+)>; rel="next"$/.exec(link)![1]}` : undefined;
    }
    assert.deepEqual(
      seen,
      all.body.map((c: { name: string }) => c.name),
      'every chain once, in order',
    );
    assert.equal((await call(v1, 'GET', '/chains?limit=1001', undefined, reader)).status, 422);
    assert.equal((await call(v1, 'GET', '/chains?after=../x', undefined, reader)).status, 422);
    const gqlPage = await gql('{ chains(limit: 1, after: "main") { name } }', undefined, reader, prod.url);
    assert.deepEqual(gqlPage.body.data.chains, [{ name: all.body[1].name }]);
  });

  it('refuses __schema introspection', async () => {
    const res = await gql('{ __schema { queryType { name } } }', undefined, { 'X-API-Key': keys.reader! }, prod.url);
    assert.equal(res.status, 400);
    assert.match(res.body.errors[0].message, /introspection/i);
  });

  it('lets a reader query but not mutate; a writer may mutate; no key is 401', async () => {
    assert.equal((await gql('{ chains { name } }', undefined, {}, prod.url)).status, 401);
    const read = await gql('{ chains { name } }', undefined, { 'X-API-Key': keys.reader! }, prod.url);
    assert.equal(read.status, 200);
    const denied = await gql('mutation { createSubChain(name: "x") { success } }', undefined, { 'X-API-Key': keys.reader! }, prod.url);
    assert.equal(denied.status, 403);
    assert.equal(denied.body.errors[0].extensions.code, 'FORBIDDEN');
    const allowed = await gql('mutation { createSubChain(name: "x") { success } }', undefined, { 'X-API-Key': keys.writer! }, prod.url);
    assert.deepEqual(allowed.body.data, { createSubChain: { success: true } });
    const viaGet = await call(prod.url, 'GET', `/graphql?query=${encodeURIComponent('mutation { createSubChain(name: "y") { success } }')}`, undefined, {
      'X-API-Key': keys.writer!,
    });
    assert.equal(viaGet.status, 405);
  });
});
