/**
 * The business domain, offline: createBusiness over in-memory repositories (the ledger's and the
 * registry's ports), the real off-chain envelope with an in-memory IPFS, the real access policy and the
 * real contract sandbox. What a user would notice: a channel's activity lands on its own chain, a private
 * value never reaches any chain (only its hash), members and only members act in a channel, a contract
 * id belongs to its first publisher, and a contract's emits land all or none.
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { createAccessControl } from '#shared/access/access';
import { guardLedger } from '#shared/access/guarded';
import { createAdmin, secureEventMessage } from '#shared/admin/admin';
import type { Principal } from '#shared/access/policy';
import { createBusiness, MAX_COLLECTIONS_PER_CHANNEL } from '#shared/business/business';
import { createContractPool } from '#shared/business/contract-pool';
import { ChainAppender } from '#shared/ledger/appender';
import { createLedger } from '#shared/ledger/ledger';
import { LocalKeyProvider } from '#shared/offchain/key-providers';
import { createOffchainStore } from '#shared/offchain/offchain';
import { eventDraft } from '../support/drafts.ts';
import { createMemoryBusinessRepository } from '../support/memory-business-repository.ts';
import { createMemoryIpfs } from '../support/memory-ipfs.ts';
import { createMemoryLedgerRepository } from '../support/memory-ledger-repository.ts';
import { createMemorySubjects } from '../support/memory-subjects.ts';
import { createPersonalData, createSubjectKeys } from '#shared/subjects/subjects';
import { GoneError, UnauthorizedError, UnprocessableError } from '#shared/errors';

const sandbox = createContractPool({
  limits: { timeoutMs: 2_000, memoryBytes: 32 * 1024 * 1024, stackBytes: 512 * 1024, maxResultBytes: 1024 * 1024 },
  workers: 1,
  queue: 8,
});
after(() => sandbox.close());

function world({ uploads, removals }: { uploads?: () => Promise<void>; removals?: () => Promise<void> } = {}) {
  const ledgerRepository = createMemoryLedgerRepository();
  const keys = new LocalKeyProvider(randomBytes(32));
  const repository = createMemoryBusinessRepository();
  const subjects = createMemorySubjects();
  // `removals`: each delete of an erased subject's private value waits on it first (it may fail).
  const removePrivateValue = async ({ channel, collection, key }: { channel: string; collection: string; key: string }, subjectId: string) => {
    await removals?.();
    await repository.deletePrivateData(channel, collection, key, subjectId);
  };
  const personalData = createPersonalData(createSubjectKeys({ repository: subjects, keys, removePrivateValue }));
  const memory = createMemoryIpfs();
  // `uploads`: each upload to IPFS waits on it first (an upload of megabytes takes seconds).
  const add = async (bytes: Uint8Array) => {
    await uploads?.();
    return memory.add(bytes);
  };
  const ipfs = { ...memory, add };
  const blobs = ipfs.blobs;
  const offchain = createOffchainStore({ keys, ipfs });
  const ledger = createLedger({
    repository: ledgerRepository,
    appender: new ChainAppender(ledgerRepository, { maxAttempts: 8, batchMax: 99 }),
    offchain,
    personalData,
    offchainThresholdBytes: 2048,
  });
  const business = createBusiness({
    repository,
    ledger,
    personalData,
    access: createAccessControl({ channels: repository }),
    offchain,
    sandbox,
    inlineThresholdBytes: 1024,
  });
  return { business, ledger, ledgerRepository, repository, blobs, subjects, offchain };
}

const key = (role: Principal['role'], org_id: string | null): Principal => ({ key_id: `${role}-${org_id}`, role, org_id });

/**
 * A world whose uploads to IPFS wait while the test takes acme (registered with `acmePublicKey`, if given) out of
 * globex's channel 'shared': `overtake(write)` adds acme back, starts the write, takes acme out once its upload has
 * begun, lets the upload go on, and checks that the write was refused and that nothing landed after organization_left.
 */
async function removalDuringUpload(acmePublicKey?: string) {
  let gate = { started: () => {}, released: Promise.resolve() };
  const parts = world({
    uploads: async () => {
      gate.started();
      await gate.released;
    },
  });
  const { business, ledger } = parts;
  const admin = key('admin', null);
  await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme', ...(acmePublicKey ? { public_key: acmePublicKey } : {}) } as never);
  await business.registerOrganization(globex, { org_id: 'globex', name: 'Globex' });
  await business.createChannel(globex, { name: 'shared' });
  async function overtake(write: () => Promise<unknown>): Promise<void> {
    await business.addOrganization(admin, 'shared', { org_id: 'acme' });
    let release!: () => void;
    const started = new Promise<void>((resolve) => {
      gate = { started: resolve, released: new Promise<void>((r) => (release = r)) };
    });
    const late = write();
    await started;
    await business.removeOrganization(admin, 'shared', 'acme');
    release();
    await assert.rejects(late, /not a member of channel 'shared'/);
    const types = (await ledger.listBlocks('channel-shared', { limit: 100, offset: 0, descending: false })).blocks.flatMap((b) =>
      b.events.map((e) => e.event_type),
    );
    assert.equal(types.at(-1), 'organization_left', `nothing after the removal: ${types}`);
  }
  return { ...parts, overtake };
}
const acme = key('writer', 'acme');
const acmeReader = key('reader', 'acme');
const globex = key('writer', 'globex');
const orgless = key('writer', null);

describe('the business domain (offline)', () => {
  it("holds a channel to 100 collections, and checks a channel's chain by its members alone (red team: a member filled one with thousands until every check, an admin's removal included, read past the cap)", async () => {
    const { business, repository, ledger } = world();
    await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme' });
    await business.createChannel(acme, { name: 'full' });
    for (let i = 0; i < MAX_COLLECTIONS_PER_CHANNEL; i += 1) await business.createCollection(acme, 'full', { collection: `c${i}` });
    await assert.rejects(business.createCollection(acme, 'full', { collection: 'one-more' }), (error: Error) => {
      assert.ok(error instanceof UnprocessableError);
      assert.match(error.message, /^Channel 'full' holds 100 collections, the most a channel may \(100\)$/);
      return true;
    });
    // A chain's check reads the members, not the channel's details (its collections).
    const read: string[] = [];
    const counted = {
      ...repository,
      getChannelDetails: (id: string) => {
        read.push(`details ${id}`);
        return repository.getChannelDetails(id);
      },
    };
    const access = createAccessControl({ channels: counted });
    await access.chain(acmeReader, 'chain.read', 'channel-full');
    await assert.rejects(access.chain(key('reader', 'globex'), 'chain.read', 'channel-full'), /member/);
    assert.deepEqual(read, []);
    assert.ok(ledger);
  });

  it("refuses an organization's write that an admin's removal overtook while its value or its event's details were uploaded: nothing lands after organization_left (red team)", async () => {
    const { business, overtake } = await removalDuringUpload();
    await business.createCollection(globex, 'shared', { collection: 'terms' });
    // A large value (uploaded before the event), then a small one whose event's metadata is large (its details go off chain).
    for (const write of [
      { value: 'x'.repeat(4096), event_metadata: {} },
      { value: 'small', event_metadata: { blob: 'm'.repeat(4096) } },
    ])
      await overtake(() => business.writePrivateData(acme, { channel: 'shared', collection: 'terms', key: 'price', ...write } as never));
  });

  it("refuses a member's event whose details an admin's removal overtook while they were uploaded (the guarded ledger checks again)", async () => {
    const { ledger, repository, overtake } = await removalDuringUpload();
    const asAcme = guardLedger(ledger, createAccessControl({ channels: repository }), acme);
    const big = eventDraft('deal', { text: 'x'.repeat(4096) }, 'terms');
    await overtake(() => asAcme.appendEvent('channel-shared', big));
    await overtake(() => asAcme.appendEvents('channel-shared', [big]));
  });

  it("refuses a signed secure event whose large details an admin's removal of the signer overtook while they were uploaded (red team)", async () => {
    const pair = generateKeyPairSync('ed25519');
    const publicKey = pair.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');
    const { ledger, repository, overtake } = await removalDuringUpload(publicKey);
    const adminDomain = createAdmin({
      repository: { useNonce: async () => true, releaseNonce: async () => undefined } as never,
      organizations: repository,
      ledger,
      access: createAccessControl({ channels: repository }),
      sealer: undefined as never,
      identity: { kind: 'file', path: '/nonexistent/identity.json' },
      licenseKey: undefined,
      peerTimeoutMs: 1_000,
      apiKeyHeader: 'X-API-Key',
    });
    const fields = { entity_id: 'deal', event_type: 'signed', details: { text: 'x'.repeat(4096) }, nonce: 'nonce-0001' };
    const signature = sign(null, secureEventMessage({ chain_name: 'channel-shared', ...fields }), pair.privateKey).toString('hex');
    await overtake(() => adminDomain.secureEvent('channel-shared', { ...fields, org_id: 'acme', signature }));
  });

  it('holds the 100 when creates race for the last places: each had read a count below it (red team, auth on)', async () => {
    const { business, repository } = world();
    await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme' });
    await business.createChannel(acme, { name: 'raced' });
    for (let i = 0; i < MAX_COLLECTIONS_PER_CHANNEL - 2; i += 1) await business.createCollection(acme, 'raced', { collection: `c${i}` });
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => business.createCollection(acme, 'raced', { collection: `late${i}` })));
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 2);
    for (const o of outcomes)
      if (o.status === 'rejected')
        assert.ok(o.reason instanceof UnprocessableError && /the most a channel may \(100\)/.test(o.reason.message), String(o.reason));
    assert.equal((await repository.getChannelDetails('raced')).collections.length, MAX_COLLECTIONS_PER_CHANNEL);
  });

  it("records a channel's members and collections on the channel's own chain, and lets members only act in it", async () => {
    const { business, ledgerRepository } = world();
    await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme' });
    await business.registerOrganization(globex, { org_id: 'globex', name: 'Globex' });
    const channel = await business.createChannel(acme, { name: 'supply' });
    assert.equal(channel.chain_name, 'channel-supply');
    await business.createCollection(acme, 'supply', { collection: 'prices' });
    const events = ledgerRepository.blocksOf('channel-supply').flatMap((b) => b.events.map((e) => `${e.event_type} ${JSON.stringify(e.details)}`));
    assert.deepEqual(events, ['organization_joined {"org_id":"acme"}', 'collection_created {"collection":"prices"}']);

    await assert.rejects(business.createCollection(globex, 'supply', { collection: 'x' }), /organization 'globex' is not a member of channel 'supply'/);
    await assert.rejects(business.createChannel(orgless, { name: 'other' }), /channels are created by organizations/);
    await business.addOrganization(acme, 'supply', { org_id: 'globex' });
    await business.createCollection(globex, 'supply', { collection: 'x' });
    assert.deepEqual((await business.getChannel(acmeReader, 'supply')).organizations, ['acme', 'globex']);
  });

  it('keeps a private value off every chain: the chain records its hash, members read it back', async () => {
    const { business, ledgerRepository, repository, blobs } = world();
    await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme' });
    await business.createChannel(acme, { name: 'supply' });
    await business.createCollection(acme, 'supply', { collection: 'prices' });
    const written = await business.writePrivateData(acme, {
      channel: 'supply',
      collection: 'prices',
      key: 'sku-1',
      value: '42.50 EUR',
      event_metadata: {},
    });
    assert.equal(written.value_hash, createHash('sha256').update('42.50 EUR').digest('hex'));
    const onChain = JSON.stringify(ledgerRepository.blocksOf('channel-supply'));
    assert.ok(!onChain.includes('42.50'), 'the value is on no chain');
    assert.ok(onChain.includes(written.value_hash), 'its hash is');
    assert.ok(!JSON.stringify([...repository.privateData.values()]).includes('42.50'), 'the registry keeps it encrypted');
    assert.equal((await business.readPrivateData(acmeReader, 'supply', 'prices', 'sku-1')).value, '42.50 EUR');
    await assert.rejects(business.readPrivateData(key('reader', 'globex'), 'supply', 'prices', 'sku-1'), /not a member/);

    // Larger than the inline threshold: encrypted into IPFS, still off every chain.
    const big = 'x'.repeat(4096);
    await business.writePrivateData(acme, { channel: 'supply', collection: 'prices', key: 'sku-2', value: big, event_metadata: {} });
    assert.equal(blobs.size, 1, 'the large value went to IPFS, encrypted');
    assert.ok(![...blobs.values()].some((b) => Buffer.from(b).toString().includes(big)));
    assert.equal((await business.readPrivateData(acmeReader, 'supply', 'prices', 'sku-2')).value, big);
    assert.ok(!JSON.stringify(ledgerRepository.blocksOf('channel-supply')).includes(big));
  });

  it("seals a data subject's private value under its key, and erasing the subject deletes it (404, as a key never written)", async () => {
    const { business, ledger, ledgerRepository, repository } = world();
    await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme' });
    await business.createChannel(acme, { name: 'supply' });
    await business.createCollection(acme, 'supply', { collection: 'patients' });
    const written = await business.writePrivateData(acme, {
      channel: 'supply',
      collection: 'patients',
      key: 'p-1',
      value: 'Alice Smith, blood type 0+',
      event_metadata: { entity_id: 'p-1', ward: 'Alice ward' },
      subject_id: 'subj-alice',
    });
    assert.notEqual(written.value_hash, createHash('sha256').update('Alice Smith, blood type 0+').digest('hex'), 'no hash a guess could confirm');
    const everything = () => JSON.stringify([ledgerRepository.blocksOf('channel-supply'), [...repository.privateData.values()]]);
    assert.ok(!everything().includes('Alice'), 'neither the value nor the metadata is stored in the clear');
    assert.equal((await business.readPrivateData(acmeReader, 'supply', 'patients', 'p-1')).value, 'Alice Smith, blood type 0+');

    await ledger.eraseSubject('subj-alice', { erased_by: null, reason: 'patient request' });
    assert.equal(repository.privateData.size, 0, 'its record (named by its key) is deleted');
    await assert.rejects(business.readPrivateData(acmeReader, 'supply', 'patients', 'p-1'), /No private data 'p-1' in collection 'patients'/);
    const event = (await ledger.getBlock('channel-supply', { kind: 'index', index: ledgerRepository.blocksOf('channel-supply').length - 1 })).events[0]!;
    assert.deepEqual([event.details, (event as { erased?: boolean }).erased], [null, true], 'its channel event is erased with it');
    // The subject takes no new value.
    await assert.rejects(
      business.writePrivateData(acme, { channel: 'supply', collection: 'patients', key: 'p-2', value: 'x', event_metadata: {}, subject_id: 'subj-alice' }),
      GoneError,
    );
  });

  it("an erased subject's private value whose delete failed reads as absent and is deleted then; a later erasure takes it off the list", async () => {
    let failing = true;
    const { business, ledger, repository, subjects } = world({
      removals: async () => {
        if (failing) throw new Error('DynamoDB unreachable');
      },
    });
    await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme' });
    await business.createChannel(acme, { name: 'supply' });
    await business.createCollection(acme, 'supply', { collection: 'patients' });
    const value = { channel: 'supply', collection: 'patients', value: 'v', event_metadata: {}, subject_id: 'subj-bo' };
    await business.writePrivateData(acme, { ...value, key: 'bo@example.com' });
    await business.writePrivateData(acme, { ...value, key: 'bo2@example.com' });
    await ledger.eraseSubject('subj-bo', { erased_by: null, reason: 'r' });
    assert.equal(repository.privateData.size, 2, 'both deletes failed');
    assert.equal((await subjects.privateValues('subj-bo', 100)).length, 2, 'both still listed');
    await assert.rejects(business.readPrivateData(acmeReader, 'supply', 'patients', 'bo@example.com'), /No private data 'bo@example.com'/);
    assert.equal(repository.privateData.size, 1, 'the one read is deleted');
    assert.deepEqual(await subjects.privateValues('subj-bo', 100), [JSON.stringify(['supply', 'patients', 'bo2@example.com'])], 'and taken off the list');
    failing = false;
    await ledger.eraseSubject('subj-bo', { erased_by: null, reason: 'r' });
    assert.equal(repository.privateData.size, 0);
    assert.deepEqual(await subjects.privateValues('subj-bo', 100), []);
  });

  it('an erasure deletes a bounded number of private values a call, after its event is written; erasing again goes on (red team)', async () => {
    const { business, ledger, repository, subjects } = world();
    await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme' });
    await business.createChannel(acme, { name: 'supply' });
    await business.createCollection(acme, 'supply', { collection: 'patients' });
    for (let i = 0; i < 205; i += 1)
      await business.writePrivateData(acme, {
        channel: 'supply',
        collection: 'patients',
        key: `k-${i}`,
        value: 'v',
        event_metadata: {},
        subject_id: 'subj-many',
      });
    const first = await ledger.eraseSubject('subj-many', { erased_by: null, reason: 'r' });
    assert.equal(first.status, 'erased');
    assert.ok(first.event_id, 'its Main Chain event is written whatever the number of values');
    assert.deepEqual([first.private_values_removed, first.private_values_left], [200, true]);
    assert.equal(repository.privateData.size, 5);
    const second = await ledger.eraseSubject('subj-many', { erased_by: null, reason: 'r' });
    assert.deepEqual([second.status, second.private_values_removed, second.private_values_left], ['already_erased', 5, undefined]);
    assert.equal(repository.privateData.size, 0);
    assert.deepEqual(await subjects.privateValues('subj-many', 1_000), []);
  });

  it("a private value whose subject's key is missing, not erased, reads as absent and is kept (it reads again once the key is back)", async () => {
    const { business, repository, subjects } = world();
    await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme' });
    await business.createChannel(acme, { name: 'supply' });
    await business.createCollection(acme, 'supply', { collection: 'patients' });
    await business.writePrivateData(acme, { channel: 'supply', collection: 'patients', key: 'm-1', value: 'v', event_metadata: {}, subject_id: 'subj-m' });
    const item = subjects.items.get('subj-m')!;
    subjects.items.delete('subj-m'); // a registry restored without it, a data directory copied without its subjects
    await assert.rejects(business.readPrivateData(acmeReader, 'supply', 'patients', 'm-1'), /No private data 'm-1'/);
    assert.equal(repository.privateData.size, 1, 'not deleted: the subject was not erased');
    subjects.items.set('subj-m', item);
    assert.equal((await business.readPrivateData(acmeReader, 'supply', 'patients', 'm-1')).value, 'v');
  });

  it("a subject's private value whose subject is erased as its record is stored: the record goes too, and the write is 410", async () => {
    const { business, ledger, repository, subjects } = world();
    await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme' });
    await business.createChannel(acme, { name: 'supply' });
    await business.createCollection(acme, 'supply', { collection: 'patients' });
    await business.writePrivateData(acme, { channel: 'supply', collection: 'patients', key: 'c-0', value: 'v', event_metadata: {}, subject_id: 'subj-c' });
    // The erasure lands after the write read the subject's key and before its record is stored: it finds none to delete.
    const store = repository.putPrivateData;
    repository.putPrivateData = async (record) => {
      await ledger.eraseSubject('subj-c', { erased_by: null, reason: 'r' });
      return store(record);
    };
    await assert.rejects(
      business.writePrivateData(acme, { channel: 'supply', collection: 'patients', key: 'c-1', value: 'v', event_metadata: {}, subject_id: 'subj-c' }),
      GoneError,
    );
    assert.equal(repository.privateData.size, 0, 'no record of the erased subject is left');
    assert.deepEqual(await subjects.privateValues('subj-c', 100), [], 'nor a list naming its keys');
  });

  it("a subject's private value: its default entity is keyed by the subject's key, not a plain hash of the value's key", async () => {
    const { business, ledgerRepository } = world();
    await business.registerOrganization(acme, { org_id: 'acme', name: 'Acme' });
    await business.createChannel(acme, { name: 'supply' });
    await business.createCollection(acme, 'supply', { collection: 'patients' });
    const write = (key: string, subject_id?: string) =>
      business.writePrivateData(acme, {
        channel: 'supply',
        collection: 'patients',
        key,
        value: 'v',
        event_metadata: {},
        ...(subject_id ? { subject_id } : {}),
      });
    await write('k@example.com', 'subj-1');
    await write('k@example.com', 'subj-1');
    await write('k@example.com', 'subj-2');
    await write('k@example.com');
    const entities = ledgerRepository
      .blocksOf('channel-supply')
      .slice(-4)
      .map((b) => b.events[0]!.entity_id);
    const plain = `patients:${createHash('sha256').update('k@example.com').digest('hex').slice(0, 16)}`;
    assert.equal(entities[0], entities[1], "one subject's writes of a key: one entity");
    assert.notEqual(entities[0], entities[2], "another subject's: another");
    assert.ok(
      entities.slice(0, 3).every((e) => e !== plain && /^patients:[0-9a-f]{16}$/.test(e)),
      entities.join(' '),
    );
    assert.equal(entities[3], plain, 'a value without a subject keeps the plain hash (docs/business.md)');
  });

  it("says a run's stored source that IPFS no longer gives is the service's record, not the caller's citation (second review)", async () => {
    // Its run answered "implementation_cid cannot be fetched and decrypted: no payload this key may read…": the caller
    // had cited nothing.
    const { business, blobs, offchain } = world();
    const up = await offchain.put('function execute(event) { return { n: 1 }; }', 'org:acme' as never);
    await business.registerContract(acme, { contract_id: 'kept', version: '1.0.0', implementation_cid: up.cid, implementation_nonce: up.nonce, metadata: {} });
    blobs.clear();
    await assert.rejects(
      business.executeContract(acme, { contract_id: 'kept', event: { entity_id: 'e', event: 'x', details: {} }, context: { chain: 'main' } }),
      /the stored implementation of version 1\.0\.0 cannot be read from IPFS/,
    );
  });

  it("gives a contract id to its first publisher, runs it, and appends its emits as the caller's, all or none", async () => {
    const { business, ledger, ledgerRepository } = world();
    await ledger.createSubChain('calc');
    const source =
      'function execute(event) { return { total: event.details.a + event.details.b, emit: [{ entity_id: event.entity_id, event_type: "summed", details: { total: event.details.a + event.details.b } }] }; }';
    const published = await business.registerContract(acme, { contract_id: 'sum', version: '1.0.0', implementation: source, metadata: {} });
    assert.equal(published.owner, 'acme');
    await assert.rejects(
      business.registerContract(globex, { contract_id: 'sum', version: '2.0.0', implementation: source, metadata: {} }),
      /belongs to organization 'acme'/,
    );
    await assert.rejects(
      business.registerContract(orgless, { contract_id: 'other', version: '1.0.0', implementation: source, metadata: {} }),
      /contracts belong to organizations/,
    );

    const run = await business.executeContract(globex, {
      contract_id: 'sum',
      event: { entity_id: 'calc-1', event: 'add', details: { a: 2, b: 40 } },
      context: { chain: 'calc' },
    });
    assert.equal((run.result as { total: number }).total, 42);
    assert.deepEqual(run.emitted_event_ids, ['calc_1_0']);
    assert.deepEqual(ledgerRepository.blocksOf('calc')[1]!.events[0]!.details, { total: 42 });
    // A key revoked while its run waited or ran: its emits are not appended (red team, 2026-12-06).
    const revoked = async () => {
      throw new UnauthorizedError('This API key was revoked or changed during the request', 'X-API-Key');
    };
    const input = { contract_id: 'sum', event: { entity_id: 'calc-2', event: 'add', details: { a: 1, b: 1 } }, context: { chain: 'calc' } };
    await assert.rejects(business.executeContract(globex, input, revoked), UnauthorizedError);
    assert.equal(ledgerRepository.blocksOf('calc').length, 2, 'nothing appended');

    const bad = 'function execute(event) { return { emit: [{ entity_id: "a", event_type: "ok" }, { entity_id: "" }] }; }';
    await business.registerContract(acme, { contract_id: 'bad', version: '1.0.0', implementation: bad, metadata: {} });
    await assert.rejects(
      business.executeContract(acme, { contract_id: 'bad', event: { entity_id: 'e', event: 'x', details: {} }, context: { chain: 'calc' } }),
      /emitted an invalid event/,
    );
    assert.equal(ledgerRepository.blocksOf('calc').length, 2, 'neither emit of the refused run was appended');

    // Nested deeper than a request's body may be: refused as the events routes refuse it (red team: it had been appended).
    const deep =
      'function execute(event) { let d = {}; for (let i = 0; i < 100; i++) d = { d }; return { emit: [{ entity_id: "a", event_type: "deep", details: d }] }; }';
    await business.registerContract(acme, { contract_id: 'deep', version: '1.0.0', implementation: deep, metadata: {} });
    await assert.rejects(
      business.executeContract(acme, { contract_id: 'deep', event: { entity_id: 'e', event: 'x', details: {} }, context: { chain: 'calc' } }),
      /The contract's result is nested deeper than 64 levels/,
    );
    assert.equal(ledgerRepository.blocksOf('calc').length, 2, 'nothing of it was appended');
    // Its result alone, too: it is the caller's answer (8,000 levels had gone back as they were, red team).
    const deepResult = 'function execute(event) { let d = {}; for (let i = 0; i < 200; i++) d = { d }; return { d }; }';
    await business.registerContract(acme, { contract_id: 'deep-result', version: '1.0.0', implementation: deepResult, metadata: {} });
    await assert.rejects(
      business.executeContract(acme, { contract_id: 'deep-result', event: { entity_id: 'e', event: 'x', details: {} }, context: {} }),
      /The contract's result is nested deeper than 64 levels/,
    );
  });
});
