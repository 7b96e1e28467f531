/**
 * Personal data and erasure over HTTP, on the local stack (DynamoDB Local, the embedded IPFS node):
 * events marked with a `subject_id` (single, batch, GraphQL, large ones off chain) read back in the clear
 * on both prefixes and GraphQL while the subject's key exists; after POST …/subjects/{id}/erase every read
 * shows `details: null, erased: true`, resolving the payload is 410, `npx ledger-verify` still verifies
 * the chains (and says how many events were erased), and the plaintext is nowhere in the data directory.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '../../infra/bundling.ts';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { canonicalJson } from '#shared/ledger/hashing';
import { createDynamoClient } from '#shared/storage/client';
import { privateDataPk, subjectKey } from '#shared/storage/keys';
import { call, keysCli, type Stack, startStack, stopAndRemove } from '../support/stack.ts';

const SECRET = 'Alice Quintessa Smith';
const SECRET_EMAIL = 'alice.quintessa@example.org';

/** Every file under a folder, read as bytes, searched for a string (UTF-8 and, for JSON escaping, as is). */
function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    for (const name of readdirSync(path)) {
      const full = join(path, name);
      const stat = statSync(full);
      if (stat.isDirectory()) walk(full);
      else if (readFileSync(full).includes(Buffer.from(needle, 'utf8'))) found.push(full);
    }
  };
  walk(dir);
  return found;
}

/** `npx ledger-verify` as its bin (bin/ledger-verify.mjs), started by node: npx's own start is 1.5 s of CPU a run. */
function verify(stack: Stack, chain: string): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, ['bin/ledger-verify.mjs', '--url', stack.url, '--chain', chain], { cwd: ROOT, encoding: 'utf8' });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

describe('Personal data and erasure (crypto-shredding) over HTTP', () => {
  let stack: Stack;
  const person = (details: Record<string, unknown>, subject = 'subj-alice') => ({
    entity_id: 'customer-7',
    event_type: 'registered',
    details,
    subject_id: subject,
  });

  before(async () => {
    // A low threshold sends the large event's sealed details to IPFS. Its own DynamoDB Local on its data dir: what
    // is searched for plaintext is every file the stack keeps (tables, journal, IPFS blocks).
    stack = await startStack({ env: { SVC_OFFCHAIN_THRESHOLD_BYTES: '4096' }, ownDynamoDb: true });
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/people/create')).status, 201);
  });
  after(() => stopAndRemove(stack));

  it('keeps personal data readable while the subject exists, then erased everywhere, with every chain still verifying', async () => {
    const inline = await call(stack.url, 'POST', '/api/ledger/chains/people/events', person({ name: SECRET, email: SECRET_EMAIL }));
    assert.equal(inline.status, 200, inline.text);
    const batch = await call(stack.url, 'POST', '/api/v1/chains/people/events/batch', {
      events: [person({ step: 'kyc', name: SECRET }), { entity_id: 'order-1', event_type: 'ordered', details: { sku: 'x' } }],
    });
    assert.equal(batch.status, 200, batch.text);
    const large = await call(stack.url, 'POST', '/api/v1/chains/people/events', person({ cv: `${SECRET} `.repeat(500) }));
    assert.equal(large.status, 200, large.text);
    const gql = await call(stack.url, 'POST', '/graphql', {
      query: 'mutation($i: EventInput!) { addEvent(chainName: "people", input: $i) { success eventId } }',
      variables: { i: { entityId: 'customer-7', eventType: 'note', details: { said: SECRET }, subjectId: 'subj-alice' } },
    });
    assert.equal(gql.body.data?.addEvent?.success, true, gql.text);
    // Another subject, not erased: its data stays readable throughout.
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/people/events', person({ name: 'Bob' }, 'subj-bob'))).status, 200);

    for (const prefix of ['/api/ledger', '/api/v1']) {
      const page = await call(stack.url, 'GET', `${prefix}/chains/people/blocks?limit=10`);
      assert.deepEqual(page.body.blocks[1].events[0].details, { name: SECRET, email: SECRET_EMAIL });
      assert.equal(page.body.blocks[1].events[0].subject_id, 'subj-alice');
    }
    const resolved = await call(stack.url, 'GET', '/api/v1/chains/people/blocks/4?resolve_cid=true');
    assert.equal(resolved.body.events[0].is_offchain, true);
    assert.match(resolved.body.events[0].details.cv, /^Alice Quintessa Smith /);
    assert.deepEqual(filesContaining(stack.dataDir, SECRET), [], 'even before erasure the plaintext is stored nowhere');
    assert.equal(verify(stack, 'people').status, 0);

    // The subject's wrapped key, as the local stack keeps it (a file of its own, not a database row whose
    // bytes a database may keep): after erasure it must be gone from every file.
    const keyFile = join(stack.dataDir, 'subjects', `${createHash('sha256').update('subj-alice').digest('hex')}.key.json`);
    const wrappedKey = String(JSON.parse(readFileSync(keyFile, 'utf8')).wrapped_key);
    assert.match(wrappedKey, /^[A-Za-z0-9+/=]{40,}$/);

    // Erase: bad input first.
    assert.equal((await call(stack.url, 'POST', '/api/ledger/subjects/bad%20id/erase', { reason: 'x' })).status, 400);
    assert.equal((await call(stack.url, 'POST', '/api/ledger/subjects/nobody/erase', { reason: 'x' })).status, 404);
    assert.equal((await call(stack.url, 'POST', '/api/ledger/subjects/subj-alice/erase', {})).status, 422);
    const erased = await call(stack.url, 'POST', '/api/ledger/subjects/subj-alice/erase', { reason: 'GDPR art. 17, ticket 42' });
    assert.equal(erased.status, 200, erased.text);
    assert.equal(erased.body.status, 'erased');
    assert.equal(erased.body.events, 4);
    assert.deepEqual([erased.body.payloads, erased.body.payloads_removed], [1, 1], 'the large payload is removed from our IPFS node');
    const ipfsUrl = /IPFS: (http:\/\/[^ ]+)/.exec(stack.output())![1]!;
    const cat = await fetch(`${ipfsUrl}/api/v0/cat?arg=${resolved.body.events[0].details_cid}`, { method: 'POST' });
    assert.equal(cat.status, 500);
    assert.match(await cat.text(), /not found/);
    const again = await call(stack.url, 'POST', '/api/v1/subjects/subj-alice/erase', { reason: 'again' });
    assert.equal(again.status, 200);
    assert.equal(again.body.status, 'already_erased');
    assert.equal(again.body.erased_at, erased.body.erased_at);
    assert.equal(again.body.event_id, erased.body.event_id, 'the same erasure, recorded once');

    // The audit trail on the Main Chain.
    const main = await call(stack.url, 'GET', '/api/v1/chains/main/blocks?order=desc&limit=1');
    assert.equal(main.body.blocks[0].events[0].event_type, 'erasure');
    assert.equal(main.body.blocks[0].events[0].details.reason, 'GDPR art. 17, ticket 42');

    // Every read: REST on both prefixes, one block, trace, GraphQL.
    for (const prefix of ['/api/ledger', '/api/v1']) {
      const page = await call(stack.url, 'GET', `${prefix}/chains/people/blocks?limit=10`);
      const events = page.body.blocks.flatMap((b: { events: Record<string, unknown>[] }) => b.events);
      for (const event of events.filter((e: Record<string, unknown>) => e.subject_id === 'subj-alice')) {
        assert.equal(event.details, null);
        assert.equal(event.erased, true);
      }
      assert.deepEqual(events.find((e: Record<string, unknown>) => e.subject_id === 'subj-bob').details, { name: 'Bob' });
      assert.deepEqual(events.find((e: Record<string, unknown>) => e.entity_id === 'order-1').details, { sku: 'x' });
    }
    assert.equal((await call(stack.url, 'GET', '/api/v1/chains/people/blocks/4?resolve_cid=true')).status, 410);
    const trace = await call(stack.url, 'GET', '/api/v1/entities/customer-7/trace');
    assert.ok(trace.body.events.filter((e: Record<string, unknown>) => e.subject_id === 'subj-alice').every((e: Record<string, unknown>) => e.erased === true));
    const viaGraphql = await call(stack.url, 'POST', '/graphql', {
      query: '{ events(chainName: "people", entityId: "customer-7") { subjectId details erased } }',
    });
    assert.ok(
      viaGraphql.body.data.events
        .filter((e: { subjectId: string }) => e.subjectId === 'subj-alice')
        .every((e: { details: unknown; erased: boolean }) => e.details === null && e.erased),
    );
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/people/events', person({ name: SECRET }))).status, 410, 'no new data for an erased subject');

    // Proofs still hold: the chains verify end to end, and the verifier says what was erased.
    const people = verify(stack, 'people');
    assert.equal(people.status, 0, people.out);
    assert.match(people.out, /4 event\(s\) of 'people' belong to erased data subjects/);
    assert.equal(verify(stack, 'main').status, 0);
    const proof = await call(stack.url, 'GET', '/api/v1/chains/people/blocks/1/proof');
    assert.equal(proof.status, 200);
    // And as a C2SP transparency log, every block re-hashed against its entry.
    const vkey = (await (await fetch(`${stack.url}/tlog/vkey`)).text()).trim();
    const tiles = spawnSync(process.execPath, ['bin/ledger-verify.mjs', '--url', stack.url, '--chain', 'people', '--tiles', '--vkey', vkey, '--blocks'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    assert.equal(tiles.status, 0, `${tiles.stdout}${tiles.stderr}`);
    assert.match(tiles.stdout, /every block re-hashed/);

    // No way back: the plaintext is in no file of the data directory (DynamoDB Local, IPFS, journal), nor in the logs.
    assert.deepEqual(filesContaining(stack.dataDir, SECRET), []);
    assert.deepEqual(filesContaining(stack.dataDir, SECRET_EMAIL), []);
    assert.ok(!stack.output().includes(SECRET));
    assert.ok(!existsSync(keyFile), 'the key file is gone; the record of the erasure stays');
    assert.deepEqual(filesContaining(stack.dataDir, wrappedKey), [], 'the wrapped key is in no file of the data directory');
  });

  it("erases a data subject's private data too: readable by members until then, absent after (404, its record deleted), never stored in the clear", async () => {
    const B = '/api/business';
    assert.equal((await call(stack.url, 'POST', `${B}/organizations`, { org_id: 'clinic', name: 'Clinic' })).status, 201);
    assert.equal((await call(stack.url, 'POST', `${B}/channels`, { name: 'care' })).status, 201);
    assert.equal((await call(stack.url, 'POST', `${B}/channels/care/organizations`, { org_id: 'clinic' })).status, 201);
    assert.equal((await call(stack.url, 'POST', `${B}/channels/care/private-collections`, { collection: 'records' })).status, 201);
    const value = 'Carol Ximena Jones, allergy: penicillin';
    const written = await call(stack.url, 'POST', `${B}/private-data`, { channel: 'care', collection: 'records', key: 'r-1', value, subject_id: 'subj-carol' });
    assert.equal(written.status, 201, written.text);
    assert.equal((await call(stack.url, 'GET', `/api/v2/private-data/care/records/r-1`)).body.value, value);
    assert.deepEqual(filesContaining(stack.dataDir, 'Carol Ximena'), []);

    const erased = await call(stack.url, 'POST', '/api/v1/subjects/subj-carol/erase', { reason: 'patient request' });
    assert.equal(erased.status, 200, erased.text);
    assert.equal(erased.body.events, 1, 'its channel event');
    assert.equal((await call(stack.url, 'GET', `${B}/private-data/care/records/r-1`)).status, 404);
    assert.equal(verify(stack, 'channel-care').status, 0);
  });
});

describe("Erasure with the cloud stack's key store (the registry table, on DynamoDB Local)", () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ env: { SVC_SUBJECT_KEY_STORE: 'registry', SVC_OFFCHAIN_THRESHOLD_BYTES: '4096' } });
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/people/create')).status, 201);
  });
  after(() => stopAndRemove(stack));

  it('keeps keys, counts, payloads and private values in the registry item, and erases them there once', async () => {
    const documents = createDynamoClient({ region: 'us-east-1', endpoint: stack.dynamoEndpoint, accessKeyId: stack.dynamoAccessKeyId });
    const subject = { entity_id: 'customer-9', event_type: 'registered', subject_id: 'subj-dave' };
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/people/events', { ...subject, details: { name: 'Dave' } })).status, 200);
    // A private value of the subject's: the item lists it, and the erasure deletes its record (the key may be personal).
    const B = '/api/business';
    assert.equal((await call(stack.url, 'POST', `${B}/channels`, { name: 'crm' })).status, 201);
    assert.equal((await call(stack.url, 'POST', `${B}/channels/crm/private-collections`, { collection: 'contacts' })).status, 201);
    const value = { channel: 'crm', collection: 'contacts', key: 'dave@example.com', value: 'Dave', subject_id: 'subj-dave' };
    assert.equal((await call(stack.url, 'POST', `${B}/private-data`, value)).status, 201);
    // Listed in an item of its own beside the subject's (whose reads stay one small item however many values it has).
    const listed = async () =>
      (
        (
          await documents.send(
            new QueryCommand({
              TableName: stack.tables.registry,
              KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
              ExpressionAttributeValues: { ':pk': subjectKey('subj-dave').pk, ':p': 'PRIVATE#' },
            }),
          )
        ).Items ?? []
      ).map((i) => i.ref);
    assert.deepEqual(await listed(), [JSON.stringify(['crm', 'contacts', 'dave@example.com'])]);
    const subjectItem = (await documents.send(new GetCommand({ TableName: stack.tables.registry, Key: subjectKey('subj-dave') }))).Item;
    assert.ok(subjectItem && !JSON.stringify(subjectItem).includes('dave@example.com'), "the subject's own item does not grow with its values");
    const large = await call(stack.url, 'POST', '/api/v1/chains/people/events', { ...subject, details: { cv: 'Dave '.repeat(2000) } });
    assert.equal(large.status, 200, large.text);
    assert.deepEqual((await call(stack.url, 'GET', '/api/v1/chains/people/blocks/1')).body.events[0].details, { name: 'Dave' });

    const [first, second] = await Promise.all([
      call(stack.url, 'POST', '/api/v1/subjects/subj-dave/erase', { reason: 'one' }),
      call(stack.url, 'POST', '/api/v1/subjects/subj-dave/erase', { reason: 'two' }),
    ]);
    assert.deepEqual([first.status, second.status], [200, 200]);
    assert.deepEqual([first.body.status, second.body.status].sort(), ['already_erased', 'erased'], 'two erasures at once: one erases');
    assert.equal(first.body.event_id, second.body.event_id, 'one Main Chain event');
    assert.equal(first.body.events, 3, "two on its chain, one on the channel's");
    assert.equal(first.body.payloads, 1);
    assert.equal(first.body.payloads_removed + second.body.payloads_removed, 1, 'the payload removed once');
    assert.equal((await call(stack.url, 'GET', `${B}/private-data/crm/contacts/dave@example.com`)).status, 404);
    const record = await documents.send(
      new GetCommand({ TableName: stack.tables.registry, Key: { pk: privateDataPk('crm', 'contacts'), sk: 'dave@example.com' } }),
    );
    assert.equal(record.Item, undefined, "the private value's record is deleted");
    assert.deepEqual(await listed(), [], 'and the list naming it emptied');
    const page = await call(stack.url, 'GET', '/api/v1/chains/people/blocks?limit=5');
    for (const block of page.body.blocks.slice(1)) assert.deepEqual([block.events[0].details, block.events[0].erased], [null, true]);
    assert.equal((await call(stack.url, 'GET', '/api/v1/chains/people/blocks/2?resolve_cid=true')).status, 410);
    const main = await call(stack.url, 'GET', '/api/v1/chains/main/blocks?limit=10');
    assert.equal(main.body.blocks.filter((b: { events: { event_type: string }[] }) => b.events[0]?.event_type === 'erasure').length, 1);
    assert.equal(verify(stack, 'people').status, 0);
  });
});

describe('Erasure and Idempotency-Key replays, with auth on (the red-team case)', () => {
  let stack: Stack;
  const ADMIN = 'erasure-admin-key-0123456789abcdef';
  let writer: string;
  before(async () => {
    // Its own DynamoDB Local on its data dir: what is searched is every file the stack keeps (tables and journal).
    stack = await startStack({ env: { SVC_AUTH_ENABLED: 'true', SVC_ADMIN_API_KEY: ADMIN }, ownDynamoDb: true });
    writer = /Key \(shown once, store it now\): (\S+)/.exec(await keysCli(stack.dataDir, ['create', '--role', 'writer']))![1]!;
    assert.equal((await call(stack.url, 'POST', '/api/v1/chains/people/create', undefined, { 'X-API-Key': writer })).status, 201);
  });
  after(() => stopAndRemove(stack));

  it('answers every replay of an erased subject 410, and keeps no plain hash of its details anywhere', async () => {
    const bob = { entity_id: 'cust-2', event_type: 'signup', subject_id: 'subj-2', details: { name: 'BOB-PII', email: 'bob@example.com' } };
    const send = (body: unknown, key: string) => call(stack.url, 'POST', '/api/v1/chains/people/events', body, { 'X-API-Key': writer, 'Idempotency-Key': key });
    const first = await send(bob, 'k-bob-1');
    assert.equal(first.status, 200, first.text);
    const again = await send(bob, 'k-bob-1');
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body.event_id, first.body.event_id);

    const erased = await call(stack.url, 'POST', '/api/v1/subjects/subj-2/erase', { reason: 'test' }, { 'X-API-Key': ADMIN });
    assert.equal(erased.status, 200, erased.text);
    const carol = { ...bob, details: { ...bob.details, name: 'CAROL' } };
    for (const [body, key] of [
      [bob, 'k-bob-1'],
      [carol, 'k-bob-1'],
      [bob, 'k-bob-2'],
    ] as const) {
      const res = await send(body, key);
      assert.equal(res.status, 410, `${key} ${body.details.name}: ${res.text}`);
      assert.equal(res.headers.get('idempotent-replayed'), null);
    }
    // What the unkeyed fingerprint was (SHA-256 of the canonical drafts) is in no file: not in the table, not in the journal.
    const draft = { ...bob, details_cid: null, details_nonce: null, details_metadata: null, is_offchain: false };
    const plain = createHash('sha256')
      .update(canonicalJson({ kind: 'event', drafts: [draft] }))
      .digest('hex');
    assert.ok(filesContaining(stack.dataDir, '"fingerprint"').length > 0, 'the key records are in the data directory (the journal)');
    assert.deepEqual(filesContaining(stack.dataDir, plain), []);
    assert.deepEqual(filesContaining(stack.dataDir, 'BOB-PII'), []);
  });
});
