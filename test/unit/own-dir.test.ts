/**
 * The local stack's data dir is its user's alone: made 0700, and refused when another local user owns it (one made
 * first at a path in a shared folder: its keys would be theirs to plant or read; red team, 2026-12-07).
 */
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { dynamoAccessKey } from '#infra/local/dynamodb-data';
import { makeOwnDir } from '#infra/local/own-dir';
import { LocalKeyProvider } from '#shared/offchain/key-providers';
import { notOwnFile } from '#shared/own-file';

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

  it("refuses a key file inside it that another user owns: the master key, the identity, DynamoDB Local's access key", () => {
    const key = join(root, 'master.key');
    writeFileSync(key, `${'ab'.repeat(32)}\n`, { mode: 0o600 });
    assert.equal(notOwnFile(key), undefined, "this user's own");
    assert.match(notOwnFile(key, process.getuid!() + 1) ?? '', /belongs to another user .*it is not read as this user's key/);
  });

  it('is refused by the key readers themselves when another user owns the file (as root, which can give it away)', {
    skip: process.getuid?.() !== 0 && 'only root can give a file to another user here',
  }, () => {
    const key = join(root, 'planted.key');
    writeFileSync(key, `${'00'.repeat(32)}\n`, { mode: 0o666 });
    chownSync(key, 65534, 65534);
    assert.throws(() => LocalKeyProvider.fromFile(key, { create: false }), /belongs to another user \(uid 65534\)/);
    const data = join(root, 'planted-data');
    mkdirSync(data);
    writeFileSync(join(data, 'access-key'), 'abcdefabcdefabcdef\n');
    chownSync(join(data, 'access-key'), 65534, 65534);
    assert.throws(() => dynamoAccessKey(data), /belongs to another user/);
  });
});
