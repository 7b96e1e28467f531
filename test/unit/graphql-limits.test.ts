/**
 * The GraphQL limits hold for documents built to be expensive to measure: fragments are measured once
 * each, so a document that would expand to 2^40 fields is refused in milliseconds (it once stalled the
 * process), and oversized documents stop at the parser.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getIntrospectionQuery, parse } from 'graphql';
import { ReadLimitExceededError } from '#shared/errors';
import { MAX_TOKENS, expandedFieldCount, runGraphql, type GraphqlOptions } from '#shared/graphql/graphql';

// Refused documents never reach a resolver, so no ledger is needed.
const options = { ledger: {} as GraphqlOptions['ledger'], production: true, mayWrite: false, method: 'POST' } satisfies GraphqlOptions;
const doubling = (levels: number) =>
  `query { ...F0 } ${Array.from({ length: levels }, (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`).join(' ')} fragment F${levels} on Query { chains { name } }`;

describe('GraphQL limits against hostile documents', () => {
  it('counts fields with fragments in place', () => {
    assert.equal(expandedFieldCount(parse('{ chains { name } }')), 2);
    assert.equal(expandedFieldCount(parse('{ ...A ...A } fragment A on Query { chains { name type } }')), 6);
    assert.equal(expandedFieldCount(parse(doubling(10))), 2 * 2 ** 10);
  });

  it('refuses fragments doubling 40 times, quickly', async () => {
    const started = performance.now();
    const answer = await runGraphql({ query: doubling(40) }, options);
    assert.equal(answer.status, 400);
    assert.match(JSON.stringify(answer.body), /QUERY_TOO_COMPLEX/);
    assert.ok(performance.now() - started < 1_000);
  });

  it(`stops parsing past ${MAX_TOKENS} tokens`, async () => {
    const answer = await runGraphql({ query: `{ ${'chains { name } '.repeat(MAX_TOKENS)} }` }, options);
    assert.equal(answer.status, 400);
    assert.match(JSON.stringify(answer.body), /tokens/);
  });

  it('prices list fields by their limit: 490 aliases of blocks(limit: 100) are refused, a page of 10 is not', async () => {
    const aliases = Array.from({ length: 490 }, (_, i) => `b${i}: blocks(chainName: "x", limit: 100) { hash }`).join(' ');
    const flood = await runGraphql({ query: `{ ${aliases} }` }, options);
    assert.equal(flood.status, 400);
    assert.match(JSON.stringify(flood.body), /costs 49000 points; the limit is 1000/);
    const nested = await runGraphql({ query: '{ events(chainName: "x") { eventId details } }' }, options);
    assert.doesNotMatch(JSON.stringify(nested.body), /QUERY_TOO_COMPLEX/, 'the default 100 events cost 100 points');
    const page = await runGraphql(
      { query: '{ b1: blocks(chainName: "x", limit: 10) { hash events { eventId } } b2: blocks(chainName: "x", limit: 100) { hash } }' },
      options,
    );
    assert.doesNotMatch(JSON.stringify(page.body), /QUERY_TOO_COMPLEX/);
  });

  it('lets the standard introspection query through outside production, and still refuses 17 levels', async () => {
    const open = { ...options, production: false, ledger: {} as GraphqlOptions['ledger'] };
    const standard = await runGraphql({ query: getIntrospectionQuery() }, open);
    assert.equal(standard.status, 200, JSON.stringify(standard.body).slice(0, 300));
    assert.ok((standard.body as { data: { __schema: { types: unknown[] } } }).data.__schema.types.length > 5);
    assert.equal((await runGraphql({ query: getIntrospectionQuery() }, options)).status, 400, 'refused in production');
    const ofTypes = (n: number) => `${'ofType { '.repeat(n)}name${' }'.repeat(n)}`;
    const deep = await runGraphql({ query: `{ __schema { types { fields { type { ${ofTypes(12)} } } } } }` }, open);
    assert.equal(deep.status, 400);
    assert.match(JSON.stringify(deep.body), /17 levels deep; the limit is 16 inside introspection/);
  });
});

describe('what a field reads (red team: any writer can make thousands of chains)', () => {
  it("chain(name) reads that chain's head, never the list of every chain", async () => {
    const read: string[] = [];
    const ledger = {
      listChains: async () => {
        throw new Error('the list of every chain was read');
      },
      getChain: async (name: string) => {
        read.push(name);
        return name === 'orders' ? { name, type: 'sub', block_count: 3, latest_block_hash: 'ab' } : null;
      },
    } as unknown as GraphqlOptions['ledger'];
    const answer = await runGraphql({ query: '{ a: chain(name: "orders") { name blockCount } b: chain(name: "none") { name } }' }, { ...options, ledger });
    assert.deepEqual(JSON.parse(JSON.stringify(answer.body)), { data: { a: { name: 'orders', blockCount: 3 }, b: null } });
    assert.deepEqual(read, ['orders', 'none']);
  });
});

describe('a request past its reads (red team)', () => {
  const over = () => new ReadLimitExceededError(600);
  it('refuses a query whole: no part of its answer', async () => {
    const ledger = {
      getChain: async (name: string) => {
        if (name === 'b') throw over();
        return { name, type: 'sub', block_count: 1, latest_block_hash: null };
      },
    } as unknown as GraphqlOptions['ledger'];
    const answer = await runGraphql({ query: '{ a: chain(name: "a") { name } b: chain(name: "b") { name } }' }, { ...options, ledger });
    assert.equal(answer.status, 422);
    assert.deepEqual(JSON.parse(JSON.stringify(answer.body)).data, undefined);
    assert.equal((answer.body.errors![0] as { extensions: { code: string } }).extensions.code, 'READ_LIMIT_EXCEEDED');
  });

  it('answers a mutation with what it did: the appends before the field that went past the cap are kept and said (it had been a 422 with 99 events committed)', async () => {
    let appended = 0;
    const ledger = {
      appendEvent: async (chain: string) => {
        if (appended === 2) throw over();
        appended += 1;
        return { event_id: `${chain}_${appended}_0`, block: { index: appended, chain_name: chain } };
      },
    } as unknown as GraphqlOptions['ledger'];
    const fields = Array.from({ length: 4 }, (_, i) => `m${i}: addEvent(chainName: "c", input: {entityId: "e", eventType: "t"}) { eventId }`).join(' ');
    const answer = await runGraphql({ query: `mutation { ${fields} }` }, { ...options, mayWrite: true, ledger });
    assert.equal(answer.status, 200);
    const body = JSON.parse(JSON.stringify(answer.body));
    assert.deepEqual(body.data.m0, { eventId: 'c_1_0' });
    assert.deepEqual(body.data.m1, { eventId: 'c_2_0' });
    assert.equal(body.data.m2, null);
    assert.equal(body.errors[0].extensions.status, 422);
    assert.match(body.errors[0].message, /reads more than 600 items/);
    assert.equal(appended, 2, 'the fields after it met the cap too, each said in errors');
  });
});
