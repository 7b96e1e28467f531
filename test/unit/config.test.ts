import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '#shared/config';

describe('Settings (shared/config.ts)', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.SVC_PORT, 2661);
    assert.equal(config.SVC_DATA_DIR, '.data');
    assert.equal(config.SVC_DYNAMODB_ENDPOINT, undefined);
    assert.equal(config.SVC_ENV, 'development');
  });

  it('stops on a bad value with a message naming the setting and the value', () => {
    for (const [name, value] of [
      ['SVC_PORT', 'abc'],
      ['SVC_PORT', '70000'],
      ['SVC_DYNAMODB_ENDPOINT', 'not a url'],
      ['SVC_ENV', 'prod'],
      ['SVC_APPEND_MAX_ATTEMPTS', '0'],
    ] as const) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (error: unknown) => error instanceof ConfigError && error.message.includes(name) && error.message.includes(value),
        `${name}=${value}`,
      );
    }
  });

  it('names every bad setting at once', () => {
    assert.throws(
      () => loadConfig({ SVC_PORT: 'x', SVC_LOG_LEVEL: 'loud' }),
      (error: unknown) => error instanceof ConfigError && error.problems.length === 2,
    );
  });

  it('treats an empty value as unset', () => {
    assert.equal(loadConfig({ SVC_PORT: '' }).SVC_PORT, 2661);
  });

  it('refuses SVC_EDGE_ONLY without the edge secret it checks, and never echoes a malformed secret', () => {
    assert.throws(
      () => loadConfig({ SVC_EDGE_ONLY: 'true' }),
      (error: unknown) => error instanceof ConfigError && /SVC_EDGE_ONLY: needs SVC_EDGE_SECRET/.test(error.message),
    );
    assert.equal(loadConfig({ SVC_EDGE_ONLY: 'true', SVC_EDGE_SECRET: 'a'.repeat(32) }).SVC_EDGE_ONLY, true);
    assert.equal(loadConfig({}).SVC_EDGE_ONLY, false);
    assert.throws(
      () => loadConfig({ SVC_EDGE_SECRET: 'short-secret' }),
      (error: unknown) => error instanceof ConfigError && error.message.includes('SVC_EDGE_SECRET') && !error.message.includes('short-secret'),
    );
  });
});
