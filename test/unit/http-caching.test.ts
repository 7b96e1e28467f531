/**
 * The conditional-request rules of shared/http/caching.ts, offline (docs/rules.md, "Caching"); the stack's
 * answers are tested over HTTP in test/integration/caching.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPEN_ACCESS } from '#shared/access/policy';
import { cacheScope, entityTag, immutable, matchesTag } from '#shared/http/caching';

describe('HTTP caching rules', () => {
  it('matches If-None-Match as RFC 9110 says: *, a list, weak tags naming strong ones; nothing else', () => {
    const tag = entityTag('chain', 'abc');
    assert.match(tag, /^"[A-Za-z0-9_-]{43}"$/);
    assert.ok(matchesTag(tag, tag));
    assert.ok(matchesTag(`W/${tag}`, tag));
    assert.ok(matchesTag(` "x" ,${tag} `, tag));
    assert.ok(matchesTag('*', tag));
    assert.ok(!matchesTag(undefined, tag));
    assert.ok(!matchesTag('', tag));
    assert.ok(!matchesTag(tag.slice(1, -1), tag), 'an unquoted tag is another tag');
    assert.ok(!matchesTag(entityTag('chain', 'abd'), tag));
  });

  it('makes answers public only when every caller may read them (auth off)', () => {
    assert.equal(cacheScope(OPEN_ACCESS), 'public');
    const keyed = { key_id: 'k1', role: 'reader', org_id: null } as unknown as Parameters<typeof cacheScope>[0];
    assert.equal(cacheScope(keyed), 'private');
    assert.equal(immutable('"t"', keyed)['Cache-Control'], 'private, max-age=31536000, immutable');
  });
});
