/**
 * The conditional-request rules of shared/http/caching.ts, offline (docs/rules.md, "Caching"); the stack's
 * answers are tested over HTTP in test/integration/caching.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPEN_ACCESS } from '#shared/access/policy';
import { cacheScope, entityTag, immutable, matchedTag } from '#shared/http/caching';
import { codedTag } from '#shared/http/compression';

describe('HTTP caching rules', () => {
  it('matches If-None-Match as RFC 9110 says: *, a list, weak tags naming strong ones; nothing else', () => {
    const tag = entityTag('chain', 'abc');
    assert.match(tag, /^"[A-Za-z0-9_-]{43}"$/);
    assert.equal(matchedTag(tag, tag), tag);
    assert.equal(matchedTag(`W/${tag}`, tag), tag);
    assert.equal(matchedTag(` "x" ,${tag} `, tag), tag);
    assert.equal(matchedTag('*', tag), tag);
    assert.equal(matchedTag(undefined, tag), undefined);
    assert.equal(matchedTag('', tag), undefined);
    assert.equal(matchedTag(tag.slice(1, -1), tag), undefined, 'an unquoted tag is another tag');
    assert.equal(matchedTag(entityTag('chain', 'abd'), tag), undefined);
  });

  it("matches a compressed answer's tag, and answers with the form the caller holds", () => {
    const tag = entityTag('chain', 'abc');
    assert.equal(codedTag(tag, 'br'), `${tag.slice(0, -1)}-br"`);
    assert.equal(matchedTag(codedTag(tag, 'br'), tag, 'br'), codedTag(tag, 'br'));
    assert.equal(matchedTag(`W/${codedTag(tag, 'gzip')}`, tag, 'gzip'), codedTag(tag, 'gzip'));
    assert.equal(matchedTag(tag, tag, 'br'), tag, 'the plain form still matches when the caller now accepts br');
    assert.equal(matchedTag(codedTag(tag, 'br'), tag, 'gzip'), undefined, 'the br form is not what a gzip caller would get');
    assert.equal(matchedTag(codedTag(tag, 'br'), tag), undefined, 'nor what a caller accepting no coding would get');
  });

  it('makes answers public only when every caller may read them (auth off)', () => {
    assert.equal(cacheScope(OPEN_ACCESS), 'public');
    const keyed = { key_id: 'k1', role: 'reader', org_id: null } as unknown as Parameters<typeof cacheScope>[0];
    assert.equal(cacheScope(keyed), 'private');
    assert.equal(immutable('"t"', keyed)['Cache-Control'], 'private, max-age=31536000, immutable');
  });
});
