/**
 * Tables written by an earlier version: the chain list used to be a GSI over the heads (every append of
 * every chain wrote its one partition). A table in that layout is migrated by `npm run migrate` (and by
 * the launcher at start): afterwards the chains list, count and append as before, and nothing lands in
 * the old index any more. Built here the way the earlier version wrote it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand, ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { startDynamoDbLocal, type DynamoDbLocal } from '#infra/local/dynamodb-local';
import { ChainAppender } from '#shared/ledger/appender';
import { ZERO_HASH, canonicalJson, sealBlock } from '#shared/ledger/hashing';
import { createLedger } from '#shared/ledger/ledger';
import { extendTree } from '#shared/ledger/tree';
import { createDynamoBaseClient, createDynamoClient } from '#shared/storage/client';
import { CHAINS_PARTITION, LEDGER_INDEXES, blockSk, chainPk } from '#shared/storage/keys';
import { createLedgerRepository } from '#shared/storage/ledger-repository';
import { migrateLedgerTable, migrateTables } from '#shared/storage/migrations';
import { createBusinessRepository } from '#shared/storage/business-repository';
import { withReadAllowance } from '#shared/read-allowance';
import { allTableSpecs, ensureTables, ledgerTableDefinition } from '#shared/storage/tables';
import { eventDraft } from '#test/support/drafts';
import { removeDir, tempDataDir } from '#test/support/stack';

const ROOT = new URL('../../', import.meta.url).pathname;

/** The run's DynamoDB Local under `npm test` (tables of this file's own, deleted after), else a JVM of its own. */
let dynamo: DynamoDbLocal | undefined;
let endpoint: string;
let accessKeyId: string;
const shared = process.env.LEDGER_TEST_DYNAMODB;
const OLD = shared ? `migrations-${randomUUID().slice(0, 8)}.old_ledger` : 'old_ledger';
const CLI = shared ? `migrations-${randomUUID().slice(0, 8)}.cli_ledger` : 'cli_ledger';
const COUNTED = shared ? `migrations-${randomUUID().slice(0, 8)}.counted_ledger` : 'counted_ledger';
const SCOPED = shared ? `migrations-${randomUUID().slice(0, 8)}.scoped_ledger` : 'scoped_ledger';
const REGISTRY = shared ? `migrations-${randomUUID().slice(0, 8)}.registry` : 'registry';
let admin: DynamoDBClient;
let client: DynamoDBDocumentClient;
const dir = shared ? '' : tempDataDir('migrations');

/** The ledger table as the earlier version defined it: today's, plus the chains GSI over the heads. */
async function createOldTable(name: string): Promise<void> {
  const current = ledgerTableDefinition(name);
  await admin.send(
    new CreateTableCommand({
      ...current,
      AttributeDefinitions: [
        ...current.AttributeDefinitions!,
        { AttributeName: 'gsi_chains_pk', AttributeType: 'S' },
        { AttributeName: 'gsi_chains_sk', AttributeType: 'S' },
      ],
      GlobalSecondaryIndexes: [
        ...current.GlobalSecondaryIndexes!,
        {
          IndexName: LEDGER_INDEXES.chains,
          KeySchema: [
            { AttributeName: 'gsi_chains_pk', KeyType: 'HASH' },
            { AttributeName: 'gsi_chains_sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
      ],
    }),
  );
}

/** A chain as the earlier version wrote it: its head (with the index keys) and its genesis block. */
async function oldChain(table: string, name: string, kind: 'main' | 'sub'): Promise<void> {
  const genesis = sealBlock({ index: 0, chain_name: name, timestamp: 1_700_000_000, previous_hash: ZERO_HASH, events: [] });
  const frontier = extendTree([], 0, [genesis.hash]).frontier;
  await client.send(
    new PutCommand({
      TableName: table,
      Item: {
        pk: chainPk(name),
        sk: 'HEAD',
        chain_name: name,
        kind,
        head_index: 0,
        head_hash: genesis.hash,
        event_count: 0,
        proof_count: 0,
        created_at: 1_700_000_000,
        frontier,
        gsi_chains_pk: 'CHAINS',
        gsi_chains_sk: `${kind === 'main' ? '0' : '1'}#${name}`,
      },
    }),
  );
  await client.send(
    new PutCommand({
      TableName: table,
      Item: {
        pk: chainPk(name),
        sk: blockSk(0),
        chain_name: name,
        index: 0,
        hash: genesis.hash,
        previous_hash: ZERO_HASH,
        timestamp: genesis.timestamp,
        event_count: 0,
        block_json: canonicalJson(genesis),
        gsi_hash: genesis.hash,
      },
    }),
  );
}

async function inOldIndex(table: string): Promise<number> {
  const out = await client.send(
    new QueryCommand({
      TableName: table,
      IndexName: LEDGER_INDEXES.chains,
      KeyConditionExpression: 'gsi_chains_pk = :p',
      ExpressionAttributeValues: { ':p': 'CHAINS' },
    }),
  );
  return out.Items?.length ?? 0;
}

before(async () => {
  if (!shared) dynamo = await startDynamoDbLocal({ dataDir: dir, inMemory: true });
  endpoint = shared ?? dynamo!.endpoint;
  accessKeyId = shared ? process.env.LEDGER_TEST_DYNAMODB_KEY! : dynamo!.accessKeyId;
  admin = createDynamoBaseClient({ region: 'us-east-1', endpoint, accessKeyId });
  client = createDynamoClient({ region: 'us-east-1', endpoint, accessKeyId });
});

after(async () => {
  if (shared)
    await Promise.all([OLD, CLI, COUNTED, SCOPED, REGISTRY].map((TableName) => admin.send(new DeleteTableCommand({ TableName })).catch(() => undefined)));
  await dynamo?.stop();
  if (dir) removeDir(dir);
});

describe('Migrating a ledger table written by an earlier version', () => {
  it('moves the chain list out of the per-append index, once, and the chains work as before', async () => {
    await createOldTable(OLD);
    for (const [name, kind] of [
      ['main', 'main'],
      ['orders', 'sub'],
      ['audit', 'sub'],
    ] as const)
      await oldChain(OLD, name, kind);
    const repository = createLedgerRepository({ client, tableName: OLD });
    assert.deepEqual(await repository.listHeads(), [], 'unmigrated, the new layout sees no list');

    assert.deepEqual(await migrateLedgerTable(admin, client, OLD), [
      { name: 'chain-list', migrated: 3 },
      { name: 'sub-chain-count', migrated: 2 },
      { name: 'scoped-entity-index', migrated: 0 },
    ]);
    assert.deepEqual(
      (await repository.listHeads()).map((h) => h.chainName),
      ['main', 'audit', 'orders'],
      'Main Chain first, then by name',
    );
    assert.equal(await repository.countSubChains(), 2);
    assert.equal(await inOldIndex(OLD), 0, 'no head is in the old index any more');

    // Appends and new chains go on, and never land in the old index.
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 25 }) });
    await ledger.appendEvent('orders', {
      entity_id: 'e',
      event_type: 't',
      details: {},
      details_cid: null,
      details_nonce: null,
      details_metadata: null,
      is_offchain: false,
    });
    await ledger.createSubChain('fresh');
    assert.deepEqual(
      (await ledger.listChains({ limit: 1000 })).chains.map((c) => [c.name, c.block_count]),
      [
        ['main', 1],
        ['audit', 1],
        ['fresh', 1],
        ['orders', 2],
      ],
    );
    // A chain of the earlier version keeps its blocks in one partition; a new one spreads them. Both read back.
    assert.equal((await ledger.getBlock('orders', { kind: 'index', index: 1 })).events[0]?.entity_id, 'e');
    assert.equal((await repository.getBlockRange('orders', 0, 1, false)).length, 2);
    await ledger.appendEvents(
      'fresh',
      Array.from({ length: 20 }, (_, n) => ({
        entity_id: `f${n}`,
        event_type: 't',
        details: {},
        details_cid: null,
        details_nonce: null,
        details_metadata: null,
        is_offchain: false,
      })),
    );
    assert.deepEqual(
      (await repository.getBlockRange('fresh', 0, 20, true)).map((b) => b.index),
      Array.from({ length: 21 }, (_, i) => 20 - i),
    );
    assert.equal((await repository.listBlockHashes('fresh', 20)).length, 21);
    assert.equal(await inOldIndex(OLD), 0);

    assert.equal(await repository.countSubChains(), 3, 'the two of the earlier version, counted once, and the new one');
    assert.deepEqual(
      await migrateLedgerTable(admin, client, OLD),
      [
        { name: 'chain-list', migrated: 0 },
        { name: 'sub-chain-count', migrated: 0 },
        { name: 'scoped-entity-index', migrated: 0 },
      ],
      'a second run finds nothing to do',
    );
  });

  it('keeps the count of Sub-Chains: read from a few items however many there are, exact when a creation finds its chain, those of an earlier version counted once', async () => {
    await admin.send(new CreateTableCommand(ledgerTableDefinition(COUNTED)));
    // Sub-Chains the earlier version listed: list items with no mark of the kept count.
    for (const name of ['old-a', 'old-b', 'old-c']) {
      await client.send(new PutCommand({ TableName: COUNTED, Item: { pk: CHAINS_PARTITION, sk: `1#${name}`, chain_name: name, kind: 'sub', created_at: 1 } }));
    }
    const repository = createLedgerRepository({ client, tableName: COUNTED });
    // The first read counts the list (3 items) and takes the count of the earlier ones on the way.
    assert.equal(await withReadAllowance(100, () => repository.countSubChains()), 3);
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 25 }) });
    for (let i = 0; i < 12; i += 1) await ledger.createSubChain(`s${i}`);
    await assert.rejects(ledger.createSubChain('s0'), /exists/, 'a creation that finds its chain adds nothing');
    // Fifteen Sub-Chains read within an allowance of ten items: counting the list at each read (before 2026-12-06)
    // read all fifteen, and the Main Chain's statistics answered 422 past SVC_MAX_READ_ITEMS.
    assert.equal(await withReadAllowance(10, () => repository.countSubChains()), 15);
    assert.equal((await withReadAllowance(10, () => ledger.getStats('main'))).registered_sub_chains, 15);
    assert.deepEqual(await migrateLedgerTable(admin, client, COUNTED), [
      { name: 'chain-list', migrated: 0 },
      { name: 'sub-chain-count', migrated: 0 },
      { name: 'scoped-entity-index', migrated: 0 },
    ]);
  });

  it('npm run migrate does it against a DynamoDB named by SVC_DYNAMODB_ENDPOINT, even after the old index was dropped', async () => {
    // A table of the earlier version whose index a deploy already removed: today's definition, old heads.
    await admin.send(new CreateTableCommand(ledgerTableDefinition(CLI)));
    await oldChain(CLI, 'main', 'main');
    await oldChain(CLI, 'shipments', 'sub');
    const run = (): { status: number | null; out: string } => {
      const r = spawnSync(process.execPath, ['bin/run.mjs', 'infra/local/migrate.ts'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, SVC_DYNAMODB_ENDPOINT: endpoint, SVC_DYNAMODB_ACCESS_KEY_ID: accessKeyId, SVC_LEDGER_TABLE: CLI },
        timeout: 60_000,
      });
      return { status: r.status, out: `${r.stdout}${r.stderr}` };
    };
    const first = run();
    assert.equal(first.status, 0, first.out);
    assert.match(first.out, /chain-list: 2 item\(s\) migrated/);
    assert.match(first.out, /sub-chain-count: 1 item\(s\) migrated/);
    const second = run().out;
    assert.match(second, /chain-list: nothing to do/);
    assert.match(second, /sub-chain-count: nothing to do/);
    assert.match(second, /scoped-entity-index: nothing to do/);
    assert.match(second, /org-channels: nothing to do/);
    assert.match(second, /nonces-kept: nothing to do/);
    const repository = createLedgerRepository({ client, tableName: CLI });
    assert.deepEqual(
      (await repository.listHeads()).map((h) => h.chainName),
      ['main', 'shipments'],
    );
  });

  it("moves a channel's entity index entries to the channel's own scope, and lists each organization's channels, once", async () => {
    const tables = { ledger: SCOPED, registry: REGISTRY };
    const specs = allTableSpecs({ ledger: SCOPED, registry: REGISTRY, rateLimits: `${SCOPED}-rl`, connections: `${SCOPED}-c` });
    await ensureTables(admin, { ledger: specs.ledger, registry: specs.registry });
    const repository = createLedgerRepository({ client, tableName: SCOPED });
    const ledger = createLedger({ repository, appender: new ChainAppender(repository, { maxAttempts: 8, batchMax: 25 }) });
    const draft = (entityId: string) => eventDraft(entityId, {}, 't');
    await ledger.createSubChain('channel-deals', { allowChannel: true });
    await ledger.createSubChain('open');
    for (let i = 0; i < 3; i += 1) await ledger.appendEvent('channel-deals', draft('deal-1'));
    await ledger.appendEvent('open', draft('deal-1'));
    // The entries as an earlier version wrote them: every chain's in the entity's one partition.
    const scoped = await client.send(
      new ScanCommand({ TableName: SCOPED, FilterExpression: 'begins_with(gsi_entity_pk, :s)', ExpressionAttributeValues: { ':s': 'ENTITY@' } }),
    );
    assert.ok((scoped.Items ?? []).length >= 3, 'a channel chain is indexed in its own scope');
    for (const item of scoped.Items ?? [])
      await client.send(
        new UpdateCommand({
          TableName: SCOPED,
          Key: { pk: item.pk, sk: item.sk },
          UpdateExpression: 'SET gsi_entity_pk = :e',
          ExpressionAttributeValues: { ':e': 'ENTITY#deal-1' },
        }),
      );
    // A channel and its members as an earlier version wrote them: no list of an organization's channels.
    await client.send(
      new PutCommand({
        TableName: REGISTRY,
        Item: { pk: 'CHANNELS', sk: 'deals', channel_id: 'deals', name: 'deals', chain_name: 'channel-deals', created_at: 'x' },
      }),
    );
    for (const org of ['acme', 'globex'])
      await client.send(new PutCommand({ TableName: REGISTRY, Item: { pk: 'CHANNEL#deals', sk: `MEMBER#${org}`, org_id: org, joined_at: 'x' } }));
    const business = createBusinessRepository({ client, tableName: REGISTRY });
    assert.deepEqual(await business.listChannelIds('acme', 10), [], 'unmigrated: no list');
    // Unmigrated, a caller who reads no channel still reads the channel's entries (and the ledger skips them as hidden).
    const outsider = { channels: [], visible: async (chain: string) => !chain.startsWith('channel-') };
    const before = await ledger.traceEntity('deal-1', undefined, outsider);
    assert.deepEqual(before.chains, ['open']);

    const reports = await migrateTables(admin, client, tables);
    assert.deepEqual(
      reports.filter((r) => r.migrated > 0),
      [
        { name: 'scoped-entity-index', migrated: (scoped.Items ?? []).length },
        { name: 'org-channels', migrated: 2 },
      ],
    );
    assert.deepEqual(await business.listChannelIds('acme', 10), ['deals']);
    assert.deepEqual(await business.listChannelIds('globex', 10), ['deals']);
    // Migrated: the outsider's trace never reads the channel's entries; a member's reads both scopes, merged in order.
    let read = 0;
    const counting = {
      ...repository,
      queryEntityPage: (...args: Parameters<typeof repository.queryEntityPage>) =>
        repository.queryEntityPage(...args).then((page) => {
          read += page.read;
          return page;
        }),
    };
    const countingLedger = createLedger({ repository: counting, appender: new ChainAppender(counting, { maxAttempts: 8, batchMax: 25 }) });
    const outside = await countingLedger.traceEntity('deal-1', undefined, outsider);
    assert.deepEqual([outside.chains, read], [['open'], 1], "one entry read: the open chain's");
    const member = await ledger.traceEntity('deal-1', undefined, { channels: ['channel-deals'] });
    assert.deepEqual(member.chains.sort(), ['channel-deals', 'open']);
    assert.equal(member.events.length, 4);
    assert.deepEqual(await migrateTables(admin, client, tables).then((r) => r.filter((x) => x.migrated > 0)), [], 'a second run finds nothing to do');
  });
});
