/**
 * The numbers the service refuses to take in (shared/json-numbers.ts): found by scanning the JSON text itself, so that
 * the check is the same on every Node (a JSON.parse reviver's source text exists from Node 21 only: on Node 20 the
 * check had refused nothing).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inexactNumber, keptExactly } from '#shared/json-numbers';

describe('numbers a double does not keep as written', () => {
  it('are found in the text, with the key they are under, past strings that look like them', () => {
    assert.deepEqual(inexactNumber('{"a":9007199254740993}'), { key: 'a', source: '9007199254740993' });
    assert.deepEqual(inexactNumber('{"x":{"list":[1,-12345678901234567890]}}'), { key: 'list', source: '-12345678901234567890' });
    assert.deepEqual(inexactNumber('{"k\\"ey":1e400}'), { key: 'k"ey', source: '1e400' });
    assert.deepEqual(inexactNumber('[9007199254740993.00]'), { key: undefined, source: '9007199254740993.00' });
    assert.equal(inexactNumber('{"id":"9007199254740993","n":"1e400","\\"9007199254740993":1}'), undefined);
  });

  it('keep what a double holds or prints itself with, fractions and exponents', () => {
    for (const source of [
      '9007199254740991',
      '9007199254740994',
      '12345678901234567000',
      '1000000000000000000000',
      '-0',
      '0.1',
      '1e300',
      '1E+21',
      '5e-324',
      '0e-400',
    ]) {
      assert.ok(keptExactly(Number(source), source), source);
    }
    for (const source of ['9007199254740993', '9007199254740993.0', '12345678901234567890', '1e400', '-1e400', '1e-400']) {
      assert.ok(!keptExactly(Number(source), source), source);
    }
    assert.equal(inexactNumber(JSON.stringify({ a: 2 ** 60 + 0.5, b: Number.MAX_VALUE, c: -(2 ** 70) })), undefined, "JSON.stringify's numbers");
  });
});
