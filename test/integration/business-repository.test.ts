/**
 * The business repository on DynamoDB Local: what must hold when requests race, held by the writes themselves (a
 * condition in the transaction that creates), never by a read before them. Found by the red team with auth on:
 * concurrent creates had each read a channel's count of collections below the most and all landed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { itemsRead, withReadAllowance } from '#shared/read-allowance';
import { createBusinessRepository } from '#shared/storage/business-repository';
import { createDynamoClient } from '#shared/storage/client';
import { channelPk, COLLECTION_SK_PREFIX, COLLECTIONS_COUNT_SK } from '#shared/storage/keys';
import { failingCommands, startTestDynamo, type TestDynamo } from '#test/support/dynamo';

let storage: TestDynamo;
before(async () => {
  storage = await startTestDynamo('business-repository');
});
after(async () => {
  await storage?.stop();
});

const at = '2026-12-06T00:00:00.000Z';
const channel = (id: string) => ({ channel_id: id, name: id, chain_name: `channel-${id}`, created_at: at });

describe('the business repository under concurrent requests (DynamoDB Local)', () => {
  it('creates no collection past the most a channel may hold, however many creates race for the last places', async () => {
    const client = createDynamoClient(storage.options);
    const repository = createBusinessRepository({ client, tableName: storage.tables.registry });
    assert.equal(await repository.putChannel(channel('race'), { org_id: 'acme', joined_at: at }), true);
    const max = 10;
    for (let i = 0; i < max - 3; i += 1) assert.equal(await repository.putCollection('race', `c${i}`, at, { seen: i, max }), 'created');
    // Twelve creates, each having read the same count (7 of 10): three places are left.
    const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => repository.putCollection('race', `late${i}`, at, { seen: max - 3, max })));
    assert.equal(outcomes.filter((o) => o === 'created').length, 3, outcomes.join(' '));
    assert.equal(outcomes.filter((o) => o === 'full').length, 9, outcomes.join(' '));
    const details = await repository.getChannelDetails('race');
    assert.equal(details.collections.length, max, 'the channel lists the most it may hold, not more');
    assert.deepEqual(details.organizations, ['acme'], 'the count is not read as a member or a collection');
    // A collection it has is still 'exists' (409), not 'full'.
    assert.equal(await repository.putCollection('race', 'c0', at, { seen: max, max }), 'exists');
  });

  it('counts from what the caller read in a channel whose collections predate the count, and holds the most from there', async () => {
    const client = createDynamoClient(storage.options);
    const repository = createBusinessRepository({ client, tableName: storage.tables.registry });
    assert.equal(await repository.putChannel(channel('old'), { org_id: 'acme', joined_at: at }), true);
    // Four collections written as the repository wrote them before it kept a count.
    for (let i = 0; i < 4; i += 1)
      await client.send(
        new PutCommand({
          TableName: storage.tables.registry,
          Item: { pk: channelPk('old'), sk: `${COLLECTION_SK_PREFIX}o${i}`, collection: `o${i}`, created_at: at },
        }),
      );
    const outcomes = await Promise.all(Array.from({ length: 5 }, (_, i) => repository.putCollection('old', `new${i}`, at, { seen: 4, max: 6 })));
    assert.deepEqual(outcomes.filter((o) => o === 'created').length, 2, outcomes.join(' '));
    const count = await client.send(new GetCommand({ TableName: storage.tables.registry, Key: { pk: channelPk('old'), sk: COLLECTIONS_COUNT_SK } }));
    assert.equal(count.Item?.n, 6);
    assert.equal((await repository.getChannelDetails('old')).collections.length, 6);
    // A full channel without a count refuses too (the caller read the most already).
    assert.equal(await repository.putChannel(channel('old-full')), true);
    assert.equal(await repository.putCollection('old-full', 'x', at, { seen: 6, max: 6 }), 'full');
  });

  it('registers a public key to one organization when registrations claiming it race, and answers each (no 500)', async () => {
    const client = createDynamoClient(storage.options);
    const repository = createBusinessRepository({ client, tableName: storage.tables.registry });
    const key = 'ab'.repeat(32);
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        repository.putOrganization({ org_id: `org${i}`, name: `Org ${i}`, msp_id: `Org${i}MSP`, public_key: key, created_at: at }),
      ),
    );
    assert.equal(outcomes.filter((o) => o === 'created').length, 1, outcomes.join(' '));
    assert.equal(outcomes.filter((o) => o === 'key_taken').length, 7, outcomes.join(' '));
    assert.equal((await repository.listOrganizations()).length, 1);
  });

  it("keeps a key's value from the latest block of the chain that wrote it, whatever order the stores land in (red team)", async () => {
    const client = createDynamoClient(storage.options);
    const repository = createBusinessRepository({ client, tableName: storage.tables.registry });
    const value = (block_index: number | undefined, v: string) => ({
      channel: 'deals',
      collection: 'terms',
      key: 'price',
      value_hash: v,
      sealed: v,
      value_cid: null,
      value_nonce: null,
      event_id: `channel-deals_${block_index ?? 0}_0`,
      ...(block_index === undefined ? {} : { block_index }),
      updated_at: at,
    });
    // A record of an earlier version (no block) gives way to any write.
    assert.equal(await repository.putPrivateData(value(undefined, 'old')), 'stored');
    assert.equal(await repository.putPrivateData(value(7, 'seven')), 'stored');
    // Block 4's store arrives after block 7's: the chain's last write stays the value read.
    assert.equal(await repository.putPrivateData(value(4, 'four')), 'superseded');
    assert.equal((await repository.getPrivateData('deals', 'terms', 'price'))?.sealed, 'seven');
    assert.equal(await repository.putPrivateData(value(9, 'nine')), 'stored');
    assert.equal((await repository.getPrivateData('deals', 'terms', 'price'))?.event_id, 'channel-deals_9_0');
    // Eight stores racing: the highest block wins.
    await Promise.all([3, 12, 10, 11, 5, 8, 2, 6].map((i) => repository.putPrivateData(value(i, `v${i}`))));
    assert.equal((await repository.getPrivateData('deals', 'terms', 'price'))?.sealed, 'v12');
  });

  it("removes a channel's registry items all together or not at all (the rollback of a channel whose chain could not be made)", async () => {
    const client = createDynamoClient(storage.options);
    const repository = createBusinessRepository({ client, tableName: storage.tables.registry });
    assert.equal(await repository.putChannel(channel('doomed'), { org_id: 'acme', joined_at: at }), true);
    assert.equal(await repository.addMember('doomed', 'globex', at, false), 'added');
    // Every write after the first fails, as DynamoDB may at any request: the removal is whole or nothing.
    let writes = 0;
    const failing = createBusinessRepository({
      client: failingCommands(client, (command) => /^(Delete|TransactWrite|Put|Update)/.test(command) && ++writes > 1),
      tableName: storage.tables.registry,
    });
    await failing.deleteChannel('doomed').catch(() => undefined);
    const state = async () => ({
      channel: (await repository.getChannel('doomed')) !== undefined,
      members: await repository.getChannelMembers('doomed'),
      acme: (await repository.listChannelIds('acme', 10)).includes('doomed'),
      globex: (await repository.listChannelIds('globex', 10)).includes('doomed'),
    });
    const after = await state();
    const whole = { channel: true, members: ['acme', 'globex'], acme: true, globex: true };
    const none = { channel: false, members: [], acme: false, globex: false };
    assert.ok(
      JSON.stringify(after) === JSON.stringify(whole) || JSON.stringify(after) === JSON.stringify(none),
      `part of the channel was left: ${JSON.stringify(after)}`,
    );
    await repository.deleteChannel('doomed');
    assert.deepEqual(await state(), none);
    // Created again under the name, the channel has only its new founder.
    assert.equal(await repository.putChannel(channel('doomed'), { org_id: 'initech', joined_at: at }), true);
    assert.deepEqual(await repository.getChannelMembers('doomed'), ['initech']);
  });

  it("lists a contract's versions without reading their sources: each inline source is an item of its own (red team)", async () => {
    // 20 versions of 200 KB had cost every read and every run of the contract 975 read units.
    const client = createDynamoClient(storage.options);
    const repository = createBusinessRepository({ client, tableName: storage.tables.registry });
    const source = (i: number) => `// v${i}\n${'x'.repeat(100_000)}`;
    for (let i = 0; i < 20; i += 1) {
      const outcome = await repository.publishContractVersion(
        {
          contract_id: 'fat',
          version: `1.0.${i}`,
          code_hash: `h${i}`,
          implementation: source(i),
          implementation_cid: null,
          implementation_nonce: null,
          metadata: {},
          created_at: at,
        },
        { org_id: 'acme' },
      );
      assert.equal(outcome, 'created');
    }
    const { versions, read } = await withReadAllowance(10_000, async () => ({ versions: await repository.listContractVersions('fat'), read: itemsRead() }));
    assert.equal(versions.length, 20);
    assert.ok(read <= 25, `listing 20 versions read ${read} items (with their sources: 500)`);
    assert.ok(versions.every((v) => v.implementation === null && v.source_kept === true));
    assert.equal(await repository.getContractSource('fat', '1.0.7'), source(7));
    // A version published twice is still refused whole: neither its record nor its source is written again.
    const again = await repository.publishContractVersion({ ...versions[0]!, implementation: 'other', source_kept: undefined }, { org_id: 'acme' });
    assert.equal(again, 'version_exists');
    assert.equal(await repository.getContractSource('fat', versions[0]!.version), source(Number(versions[0]!.version.split('.')[2])));
  });
});
