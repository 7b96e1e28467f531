/**
 * The GraphQL limits hold for documents built to be expensive to measure: fragments are measured once
 * each, so a document that would expand to 2^40 fields is refused in milliseconds (it once stalled the
 * process), and oversized documents stop at the parser.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'graphql';
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
});
