/**
 * Data subjects' keys and sealed details, offline (issue 23's foundation): a key per subject made once
 * and kept only wrapped, details sealed under it that its key opens and no other, and erasure that
 * leaves nothing that opens them, answered again the same way, 404 for a subject never seen. The
 * DynamoDB repository's writes are checked with aws-sdk-client-mock.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { GoneError, NotFoundError } from '#shared/errors';
import { LocalKeyProvider } from '#shared/offchain/key-providers';
import { createSubjectRepository } from '#shared/storage/subject-repository';
import { createFileSubjectRepository } from '#shared/subjects/file-repository';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seal } from '#shared/offchain/envelope';
import { createSubjectKeys, openDetails, paddedLength, sealDetails } from '#shared/subjects/subjects';
import { createMemorySubjects } from '../support/memory-subjects.ts';

describe('data subjects (offline)', () => {
  it('makes one key per subject, kept only wrapped, that opens its details and no other subject’s', async () => {
    const repository = createMemorySubjects();
    const subjects = createSubjectKeys({ repository, keys: new LocalKeyProvider(randomBytes(32)) });
    const alice = await subjects.keyFor('alice');
    assert.deepEqual(await subjects.keyFor('alice'), alice, 'the same key every time');
    const bob = await subjects.keyFor('bob');
    assert.notDeepEqual(bob, alice);
    assert.ok(!JSON.stringify([...repository.items.values()]).includes(alice.toString('base64')), 'stored wrapped, never in the clear');

    const sealed = sealDetails(alice, 'alice', { name: 'Alice Smith', email: 'alice@example.com' });
    assert.ok(!sealed.includes('Alice'), 'the sealed form holds no plaintext');
    assert.deepEqual(openDetails(alice, 'alice', sealed), { name: 'Alice Smith', email: 'alice@example.com' });
    assert.throws(() => openDetails(bob, 'alice', sealed), 'another key does not open them');
    assert.throws(() => openDetails(alice, 'bob', sealed), NotFoundError, 'nor does naming another subject');
  });

  it("pads what it seals to a bucket: an erased event's sealed details give no plaintext length to the byte (red team)", () => {
    // An erased event's details_sealed stays on chain; its ciphertext's length had been the plaintext's, exactly.
    const key = randomBytes(32);
    const ciphertext = (details: Record<string, unknown>) => Buffer.from(JSON.parse(sealDetails(key, 'alice', details)).ciphertext, 'base64').length;
    assert.equal(ciphertext({ name: 'Al' }), 256);
    assert.equal(ciphertext({ name: 'Alexandra Catherine Smith-Worthington' }), 256, 'two names, one length');
    assert.equal(ciphertext({ cv: 'x'.repeat(300) }), 512);
    assert.equal(ciphertext({ cv: 'x'.repeat(70_000) }), 131_072);
    assert.deepEqual([paddedLength(1), paddedLength(257), paddedLength(65_536), paddedLength(65_537)], [256, 512, 65_536, 131_072]);
    assert.deepEqual(openDetails(key, 'alice', sealDetails(key, 'alice', { name: 'Al' })), { name: 'Al' });
    // Seals made before padding still open.
    const unpadded = seal(Buffer.from('{"name":"Al"}'), key, Buffer.alloc(0), { provider: 'subject', key_id: 'subject:alice' });
    assert.deepEqual(openDetails(key, 'alice', JSON.stringify(unpadded)), { name: 'Al' });
  });

  it('erases a subject: its key is gone, nothing opens its details, a second erase answers the first, 404 for a stranger', async () => {
    const repository = createMemorySubjects();
    const master = randomBytes(32);
    const subjects = createSubjectKeys({ repository, keys: new LocalKeyProvider(master), now: () => new Date('2026-11-24T12:00:00Z') });
    const key = await subjects.keyFor('alice');
    const sealed = sealDetails(key, 'alice', { name: 'Alice Smith' });
    await subjects.recordEvents('alice', 3);
    await subjects.keyFor('bob');
    // Two erasures of one subject at once: one erases, the other answers what that one did.
    const racing = await Promise.all([subjects.erase('bob', { erased_by: 'a', reason: 'x' }), subjects.erase('bob', { erased_by: 'b', reason: 'y' })]);
    assert.deepEqual(racing.map((r) => r.status).sort(), ['already', 'erased']);

    const first = await subjects.erase('alice', { erased_by: 'admin-1', reason: 'GDPR art. 17 request #42' });
    assert.deepEqual(first, {
      status: 'erased',
      record: { subject_id: 'alice', erased_at: '2026-11-24T12:00:00.000Z', erased_by: 'admin-1', reason: 'GDPR art. 17 request #42', events: 3 },
      payloads: [],
      eventId: null,
    });
    const [again, concurrent] = await Promise.all([
      subjects.erase('alice', { erased_by: 'admin-2', reason: 'again' }),
      subjects.erase('alice', { erased_by: 'admin-3', reason: 'at once' }),
    ]);
    assert.deepEqual(concurrent, again);
    assert.deepEqual(again, { status: 'already', record: first.record, payloads: [], eventId: null }, 'idempotent: the first erasure is what is answered');
    await assert.rejects(subjects.erase('carol', { erased_by: null, reason: 'x' }), NotFoundError);

    await assert.rejects(subjects.keyFor('alice'), GoneError, 'no new data for an erased subject');
    assert.deepEqual(await subjects.keysFor(['alice']), new Map([['alice', null]]));
    // What is left anywhere: the record, and the sealed details. The master key opens nothing of it.
    const left = JSON.stringify([...repository.items.values()]);
    assert.ok(!left.includes('wrapped_key'), 'the wrapped key is gone');
    assert.throws(() => openDetails(master, 'alice', sealed));
  });
});

describe('the subject repository (DynamoDB, aws-sdk-client-mock)', () => {
  const client = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
  const dynamo = mockClient(client);
  const repository = createSubjectRepository({ client, tableName: 'registry' });

  it('creates a key only where none is, and erases by removing the wrapped key on the condition that it is there', async () => {
    dynamo.reset();
    dynamo
      .on(PutCommand)
      .resolvesOnce({})
      .rejectsOnce(new ConditionalCheckFailedException({ message: 'exists', $metadata: {} }));
    const key = { wrapped_key: 'd3JhcHBlZA==', kek: { provider: 'local', key_id: 'local:1' }, created_at: 't' };
    assert.equal(await repository.create('alice', key), true);
    assert.equal(await repository.create('alice', key), false);
    assert.equal(dynamo.commandCalls(PutCommand)[0]!.args[0].input.ConditionExpression, 'attribute_not_exists(pk)');

    dynamo
      .on(UpdateCommand)
      .resolvesOnce({})
      .rejectsOnce(new ConditionalCheckFailedException({ message: 'gone', $metadata: {} }));
    const record = { erased_at: 't2', erased_by: null, reason: 'r' };
    assert.equal(await repository.erase('alice', record), true);
    assert.equal(await repository.erase('alice', record), false, 'already erased');
    const update = dynamo.commandCalls(UpdateCommand)[0]!.args[0].input;
    assert.match(update.UpdateExpression!, /^REMOVE wrapped_key, kek SET /);
    assert.equal(update.ConditionExpression, 'attribute_exists(wrapped_key)');
    assert.deepEqual(update.Key, { pk: 'SUBJECT#alice', sk: 'KEY' });
  });

  it('reads a subject as active (with its wrapped key) or erased (with the record), strongly consistent', async () => {
    dynamo.reset();
    dynamo
      .on(GetCommand)
      .resolvesOnce({ Item: { pk: 'SUBJECT#a', sk: 'KEY', wrapped_key: 'w', kek: { provider: 'local', key_id: 'k' }, created_at: 't', events: 2 } })
      .resolvesOnce({ Item: { pk: 'SUBJECT#a', sk: 'KEY', erased_at: 't2', erased_by: 'admin-1', reason: 'r', events: 2, payloads: new Set(['Qm2', 'Qm1']) } })
      .resolvesOnce({});
    assert.deepEqual(await repository.get('a'), {
      state: 'active',
      wrapped_key: 'w',
      kek: { provider: 'local', key_id: 'k' },
      created_at: 't',
      events: 2,
      payloads: [],
    });
    assert.deepEqual(await repository.get('a'), {
      state: 'erased',
      subject_id: 'a',
      erased_at: 't2',
      erased_by: 'admin-1',
      reason: 'r',
      events: 2,
      payloads: ['Qm1', 'Qm2'],
    });
    assert.equal(await repository.get('a'), undefined);
    assert.equal(dynamo.commandCalls(GetCommand)[0]!.args[0].input.ConsistentRead, true);
  });
});

describe('the subject file store (the local stack)', () => {
  it('keeps each key in a file of its own, and erasure removes that file, leaving only the record', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'subjects-'));
    try {
      const master = randomBytes(32);
      const subjects = createSubjectKeys({ repository: createFileSubjectRepository(dir), keys: new LocalKeyProvider(master) });
      const key = await subjects.keyFor('alice');
      assert.deepEqual(await subjects.keyFor('alice'), key);
      await subjects.recordEvents('alice', 2);
      const [file] = readdirSync(dir);
      const wrapped = JSON.parse(readFileSync(join(dir, file!), 'utf8')).wrapped_key as string;
      const racing = await Promise.all([subjects.erase('alice', { erased_by: 'a', reason: 'x' }), subjects.erase('alice', { erased_by: 'b', reason: 'y' })]);
      assert.deepEqual(racing.map((r) => r.status).sort(), ['already', 'erased']);
      assert.equal(racing[0]!.record.events, 2);
      assert.ok(!existsSync(join(dir, file!)), 'the key file is removed');
      const left = readdirSync(dir)
        .map((name) => readFileSync(join(dir, name), 'utf8'))
        .join('');
      assert.ok(!left.includes(wrapped), 'no file holds the wrapped key');
      await assert.rejects(subjects.keyFor('alice'), GoneError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never rewrites a key file to count events, so counting racing an erasure cannot put the key back or tear it (red team)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'subjects-'));
    try {
      const repository = createFileSubjectRepository(dir);
      assert.equal(await repository.create('carol', { wrapped_key: 'd3JhcHBlZA', kek: { provider: 'local', key_id: 'k' }, created_at: 'now' }), true);
      const [keyFile] = readdirSync(dir);
      const before = { text: readFileSync(join(dir, keyFile!), 'utf8'), stat: statSync(join(dir, keyFile!)) };
      await repository.countEvents('carol', 2);
      await repository.countEvents('carol', 3);
      const after = statSync(join(dir, keyFile!));
      assert.equal(readFileSync(join(dir, keyFile!), 'utf8'), before.text);
      assert.deepEqual([after.ino, after.mtimeMs], [before.stat.ino, before.stat.mtimeMs], 'the key file is the one written at its creation');
      assert.equal((await repository.get('carol'))!.events, 5, 'the count is kept beside it');
      assert.equal(await repository.erase('carol', { erased_by: 'a', reason: 'x', erased_at: 'now' } as never), true);
      assert.equal((await repository.get('carol'))!.events, 5, 'and moves into the erasure record');
      await repository.countEvents('carol', 1);
      assert.deepEqual(
        readdirSync(dir).map((name) => name.split('.').slice(1).join('.')),
        ['erased.json'],
        'after the erasure: the record alone, no key, no count, nothing half-written beside it',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
