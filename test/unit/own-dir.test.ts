/**
 * The local stack's data dir is its user's alone: made 0700, and refused when another local user owns it (one made
 * first at a path in a shared folder: its keys would be theirs to plant or read; red team, 2026-12-07).
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { makeOwnDir } from '#infra/local/own-dir';

const root = mkdtempSync(join(tmpdir(), 'own-dir-'));
after(() => rmSync(root, { recursive: true, force: true }));

describe('the data dir', () => {
  it("is made 0700, and one of its user's made open before is closed", () => {
    const fresh = join(root, 'fresh', 'data');
    assert.equal(makeOwnDir(fresh), undefined);
    assert.equal(statSync(fresh).mode & 0o777, 0o700);
    const open = join(root, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    assert.equal(makeOwnDir(open), undefined);
    assert.equal(statSync(open).mode & 0o777, 0o700);
  });

  it('is refused when another user owns it, naming the owner and what to do', { skip: process.getuid === undefined && 'no uids here' }, () => {
    const theirs = join(root, 'theirs');
    mkdirSync(theirs);
    chmodSync(theirs, 0o777);
    // As seen by another user (uid + 1): the folder, made by this one, is not theirs.
    const outcome = makeOwnDir(theirs, process.getuid!() + 1);
    assert.ok(outcome && 'refuse' in outcome, JSON.stringify(outcome));
    assert.match(outcome.refuse, new RegExp(`belongs to another user \\(uid ${process.getuid!()}\\).*give SVC_DATA_DIR a folder of your own`));
    assert.equal(statSync(theirs).mode & 0o777, 0o777, 'and left as it was');
  });
});
