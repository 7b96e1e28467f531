/**
 * The access policy offline: the pure rules, the reads access control makes (and does not make), the
 * guarded ledger refusing before the domain is touched, and pushes filtered per subscriber. The route
 * by route matrix over HTTP is test/integration/authorization.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAccessControl, type ChannelDirectory } from '#shared/access/access';
import { guardLedger } from '#shared/access/guarded';
import { ANONYMOUS, OPEN_ACCESS, RULES, decide, passesEdge, type Action, type Principal, type Resource } from '#shared/access/policy';
import { type ApiKeyRecord, type ApiKeyRepository, createApiKey } from '#shared/admin/api-keys';
import { BadRequestError, ChainNotFoundError, ForbiddenError, InvalidChainNameError } from '#shared/errors';
import type { Ledger } from '#shared/ledger/ledger';
import { assertCreatableSubChainName } from '#shared/ledger/names';
import type { Block } from '#shared/ledger/types';
import { fanOut, type ConnectionStore, type Subscriber } from '#shared/realtime/realtime';

const key = (role: Principal['role'], org_id: string | null = null): Principal => ({ key_id: `k-${role}-${org_id}`, role, org_id });
const acmeReader = key('reader', 'acme');
const acmeWriter = key('writer', 'acme');
const globexWriter = key('writer', 'globex');
const orglessWriter = key('writer');
const admin = key('admin');

const supply = { id: 'supply', members: ['acme'] };
const channelChain: Resource = { kind: 'chain', name: 'channel-supply', channel: supply };
const plainChain: Resource = { kind: 'chain', name: 'orders', channel: null };

const allowed = (p: Principal, action: Action, resource: Resource) => decide(p, action, resource).allow;

describe('The access policy (pure)', () => {
  it('decides a writer key without an organization once, for every action: plain chains and public facts yes, anything an organization owns no', () => {
    // The resource each action is asked about where it matters: a channel (or its chain) when there is one.
    const channel: Resource = { kind: 'channel', channel: supply };
    const onChannel: Partial<Record<Action, Resource>> = {
      'chain.read': channelChain,
      'chain.append': channelChain,
      'chain.anchor': channelChain,
      'channel.read': channel,
      'channel.add_member': channel,
      'channel.remove_member': channel,
      'channel.create_collection': channel,
      'private_data.read': channel,
      'private_data.write': channel,
    };
    const elsewhere: Partial<Record<Action, Resource>> = {
      'channel.create': { kind: 'service' },
      'organization.register': { kind: 'organization', org_id: 'acme' },
      'organization.read': { kind: 'organization', org_id: 'acme' },
      'contract.publish': { kind: 'contract', contract_id: 'sum', owner: undefined },
      'contract.read': { kind: 'contract', contract_id: 'sum', owner: 'acme' },
      'contract.execute': { kind: 'contract', contract_id: 'sum', owner: 'acme' },
    };
    const decided = Object.fromEntries(
      (Object.keys(RULES) as Action[]).map((action) => {
        const resource = onChannel[action] ?? elsewhere[action] ?? plainChain;
        const decision = decide(orglessWriter, action, resource);
        return [action, decision.allow ? 'yes' : decision.reason];
      }),
    );
    const members = "only member organizations act in channel 'supply', and this key has no organization";
    assert.deepEqual(decided, {
      'chain.read': members,
      'chain.read_metadata': 'yes',
      'chain.create': 'yes',
      'chain.append': members,
      'chain.anchor': members,
      'channel.create': 'channels are created by organizations, and this key has no organization',
      'channel.read': members,
      'channel.add_member': members,
      'channel.remove_member': "it needs the 'admin' role and this key has 'writer'",
      'channel.create_collection': members,
      'private_data.read': members,
      'private_data.write': members,
      'organization.read': 'yes',
      'organization.register': 'a writer registers only its own organization, and this key has no organization',
      'contract.read': 'yes',
      'contract.publish': 'contracts belong to organizations, and this key has no organization',
      'contract.execute': 'yes',
      'offchain.write': 'yes',
      'subject.erase': "it needs the 'admin' role and this key has 'writer'",
    });
    // On plain chains the same key reads, appends and anchors like any writer.
    for (const action of ['chain.read', 'chain.append', 'chain.anchor'] as const) assert.equal(allowed(orglessWriter, action, plainChain), true, action);
  });

  it("lets a key through a route's edge by role rank only (public needs none)", () => {
    assert.equal(passesEdge('reader', 'public'), true);
    assert.equal(passesEdge('reader', 'reader'), true);
    assert.equal(passesEdge('reader', 'writer'), false);
    assert.equal(passesEdge('writer', 'reader'), true);
    assert.equal(passesEdge('writer', 'admin'), false);
    assert.equal(passesEdge('admin', 'admin'), true);
  });

  it('lets members act on their channel by role, and refuses everyone else but admins', () => {
    assert.equal(allowed(acmeReader, 'chain.read', channelChain), true);
    assert.equal(allowed(acmeReader, 'chain.append', channelChain), false, 'a member reader does not write');
    assert.equal(allowed(acmeWriter, 'chain.append', channelChain), true);
    assert.equal(allowed(globexWriter, 'chain.append', channelChain), false);
    assert.equal(allowed(globexWriter, 'chain.read', channelChain), false);
    assert.equal(allowed(orglessWriter, 'chain.append', channelChain), false);
    assert.equal(allowed(admin, 'chain.append', channelChain), true);
    assert.equal(allowed(OPEN_ACCESS, 'private_data.write', { kind: 'channel', channel: supply }), true);
    for (const action of ['channel.add_member', 'channel.create_collection', 'private_data.write', 'private_data.read', 'channel.read'] as const) {
      assert.equal(allowed(globexWriter, action, { kind: 'channel', channel: supply }), false, action);
      assert.equal(allowed(orglessWriter, action, { kind: 'channel', channel: supply }), false, action);
    }
  });

  it('keeps hash-level facts of a channel chain public to readers', () => {
    assert.equal(allowed(key('reader'), 'chain.read_metadata', channelChain), true);
    assert.equal(allowed(key('reader', 'globex'), 'chain.read_metadata', channelChain), true);
    assert.equal(allowed(ANONYMOUS, 'chain.read_metadata', channelChain), false);
  });

  it('lets any writer use plain chains, and no reader write them', () => {
    assert.equal(allowed(orglessWriter, 'chain.append', plainChain), true);
    assert.equal(allowed(globexWriter, 'chain.anchor', plainChain), true);
    assert.equal(allowed(key('reader'), 'chain.append', plainChain), false);
    assert.equal(allowed(key('reader', 'acme'), 'chain.create', plainChain), false);
  });

  it('gives channels, contracts and organizations to organizations only', () => {
    assert.equal(allowed(orglessWriter, 'channel.create', { kind: 'service' }), false);
    assert.equal(allowed(acmeWriter, 'channel.create', { kind: 'service' }), true);
    assert.equal(allowed(acmeWriter, 'organization.register', { kind: 'organization', org_id: 'acme' }), true);
    assert.equal(allowed(acmeWriter, 'organization.register', { kind: 'organization', org_id: 'initech' }), false);
    const contract = (owner: string | null | undefined): Resource => ({ kind: 'contract', contract_id: 'sum', owner });
    assert.equal(allowed(acmeWriter, 'contract.publish', contract(undefined)), true, 'a new id is anyone’s to claim');
    assert.equal(allowed(acmeWriter, 'contract.publish', contract('acme')), true);
    assert.equal(allowed(globexWriter, 'contract.publish', contract('acme')), false);
    assert.equal(allowed(acmeWriter, 'contract.publish', contract(null)), false, 'admins’ contracts stay theirs');
    assert.equal(allowed(orglessWriter, 'contract.publish', contract(undefined)), false);
    assert.equal(allowed(admin, 'contract.publish', contract('acme')), true);
    assert.equal(allowed(orglessWriter, 'contract.execute', contract('acme')), true, 'running is not owning');
  });

  it('names the missing permission and the reason in the 403', () => {
    const access = createAccessControl({ channels: directory({ supply: ['acme'] }).directory });
    assert.throws(
      () => access.check(orglessWriter, 'channel.create', { kind: 'service' }),
      (error: unknown) => error instanceof ForbiddenError && /Missing permission 'channel\.create'.*no organization/.test(error.message),
    );
  });
});

/** A channel directory over a fixed membership that counts its reads. */
function directory(channels: Record<string, string[]>): { directory: ChannelDirectory; reads: () => number } {
  let reads = 0;
  return {
    reads: () => reads,
    directory: {
      async getChannel(id) {
        reads += 1;
        return channels[id] ? { channel_id: id, name: id, chain_name: `channel-${id}`, created_at: '2026-01-01T00:00:00Z' } : undefined;
      },
      async getChannelDetails(id) {
        reads += 1;
        return { organizations: channels[id] ?? [], collections: [] };
      },
    },
  };
}

describe('Access control (reads what the policy needs, nothing more)', () => {
  it('reads nothing for plain chains, for admins, or for hash-level facts', async () => {
    const { directory: channels, reads } = directory({ supply: ['acme'] });
    const access = createAccessControl({ channels });
    await access.chain(orglessWriter, 'chain.append', 'orders');
    await access.chain(admin, 'chain.append', 'channel-supply');
    await access.chain(key('reader'), 'chain.read_metadata', 'channel-supply');
    assert.equal(reads(), 0);
    await access.chain(acmeWriter, 'chain.append', 'channel-supply');
    assert.ok(reads() > 0);
  });

  it('answers 404 for a channel chain with no channel, 403 for a non-member', async () => {
    const access = createAccessControl({ channels: directory({ supply: ['acme'] }).directory });
    await assert.rejects(access.chain(acmeWriter, 'chain.append', 'channel-nowhere'), ChainNotFoundError);
    await assert.rejects(access.chain(globexWriter, 'chain.append', 'channel-supply'), ForbiddenError);
    await assert.rejects(access.channel(acmeWriter, 'channel.read', 'nowhere'), /Channel 'nowhere' not found/);
  });
});

describe('The guarded ledger', () => {
  function recordingLedger(): { ledger: Ledger; calls: string[] } {
    const calls: string[] = [];
    const block = (chain: string, index: number): Block => ({
      index,
      chain_name: chain,
      timestamp: 1,
      previous_hash: '0'.repeat(64),
      hash: 'a'.repeat(64),
      events: [],
    });
    const event = (chain: string) => ({
      event_id: `${chain}_1_0`,
      chain_name: chain,
      block_index: 1,
      entity_id: 'pkg',
      event_type: 't',
      details: {},
      details_cid: null,
      details_nonce: null,
      details_metadata: null,
      timestamp: 1,
      is_offchain: false,
    });
    const ledger = new Proxy({} as Ledger, {
      get:
        (_target, name: string) =>
        async (...args: unknown[]) => {
          calls.push(name === 'createSubChain' ? `${name}(${String(args[0])}, ${JSON.stringify(args[1])})` : `${name}(${String(args[0])})`);
          if (name === 'traceEntity') return { entity_id: 'pkg', chains: ['orders', 'channel-supply'], events: [event('orders'), event('channel-supply')] };
          if (name === 'appendEvents') return [{ event_id: 'x', block: block(String(args[0]), 1) }];
          if (name === 'resolveEvents') return args[0];
          return { event_id: 'x', block: block(String(args[0]), 1) };
        },
    });
    return { ledger, calls };
  }

  it('refuses a non-member before the ledger is called at all', async () => {
    const { ledger, calls } = recordingLedger();
    const access = createAccessControl({ channels: directory({ supply: ['acme'] }).directory });
    const guarded = guardLedger(ledger, access, globexWriter);
    const draft = {
      entity_id: 'forged',
      event_type: 'organization_joined',
      details: {},
      details_cid: null,
      details_nonce: null,
      details_metadata: null,
      is_offchain: false,
    };
    await assert.rejects(guarded.appendEvent('channel-supply', draft), ForbiddenError);
    await assert.rejects(guarded.appendEvents('channel-supply', [draft, draft]), ForbiddenError);
    await assert.rejects(guarded.submitProof('channel-supply'), ForbiddenError);
    await assert.rejects(guarded.listBlocks('channel-supply', { limit: 10, offset: 0, descending: false }), ForbiddenError);
    assert.deepEqual(calls, []);
    await guardLedger(ledger, access, acmeWriter).appendEvents('channel-supply', [draft]);
    assert.deepEqual(calls, ['appendEvents(channel-supply)']);
  });

  it('never lets a caller create a channel chain, even an admin', async () => {
    const { ledger, calls } = recordingLedger();
    const access = createAccessControl({ channels: directory({}).directory });
    // The guard asks the ledger with allowChannel off, whatever the caller passed; the ledger then refuses the name.
    await guardLedger(ledger, access, admin).createSubChain('channel-x', { allowChannel: true });
    assert.deepEqual(calls, ['createSubChain(channel-x, {"allowChannel":false})']);
    assert.throws(() => assertCreatableSubChainName('channel-x', { allowChannel: false }), InvalidChainNameError);
    await assert.rejects(guardLedger(ledger, access, key('reader')).createSubChain('orders'), ForbiddenError);
  });

  it('leaves out of a trace across chains the events of chains the caller may not read', async () => {
    const { ledger } = recordingLedger();
    const access = createAccessControl({ channels: directory({ supply: ['acme'] }).directory });
    const outsider = await guardLedger(ledger, access, globexWriter).traceEntity('pkg');
    assert.deepEqual(outsider.chains, ['orders']);
    assert.deepEqual(
      outsider.events.map((e) => e.chain_name),
      ['orders'],
    );
    const member = await guardLedger(ledger, access, acmeReader).traceEntity('pkg');
    assert.deepEqual(member.chains, ['orders', 'channel-supply']);
  });
});

describe('Reserved chain names', () => {
  it('are refused in any case', () => {
    for (const name of ['main', 'Main', 'MAIN', 'mAiN', 'channel-x', 'Channel-x', 'CHANNEL-x']) {
      assert.throws(() => assertCreatableSubChainName(name), InvalidChainNameError, name);
    }
    for (const name of ['mainline', 'channels', 'my-channel-x', 'domain']) assertCreatableSubChainName(name);
  });
});

describe('Pushes per subscriber', () => {
  it('sends a channel chain’s blocks to members (and admins) only, whatever they subscribed to', async () => {
    const subscribers: Record<string, Subscriber[]> = {
      'chain#*': [
        { connection_id: 'acme-all', key_id: 'a', role: 'reader', org_id: 'acme' },
        { connection_id: 'globex-all', key_id: 'g', role: 'reader', org_id: 'globex' },
        { connection_id: 'admin-all', key_id: 'x', role: 'admin', org_id: null },
      ],
      'type#priced': [{ connection_id: 'orgless-type', key_id: 'o', role: 'reader', org_id: null }],
      'chain#orders': [{ connection_id: 'globex-orders', key_id: 'g', role: 'reader', org_id: 'globex' }],
    };
    const store = { subscribers: async (filter: string) => subscribers[filter] ?? [], disconnect: async () => undefined } as unknown as ConnectionStore;
    const sent: [string, string][] = [];
    const access = createAccessControl({ channels: directory({ supply: ['acme'] }).directory });
    const mayReceive = (s: Subscriber, chain: string) => access.chainReader({ key_id: s.key_id, role: s.role, org_id: s.org_id })(chain);
    const block = (chain: string): Block => ({
      index: 1,
      chain_name: chain,
      timestamp: 1,
      previous_hash: '0'.repeat(64),
      hash: 'b'.repeat(64),
      events: [
        {
          event_id: `${chain}_1_0`,
          chain_name: chain,
          block_index: 1,
          entity_id: 'sku',
          event_type: 'priced',
          details: {},
          details_cid: null,
          details_nonce: null,
          details_metadata: null,
          timestamp: 1,
          is_offchain: false,
        },
      ],
    });
    await fanOut(
      [block('channel-supply'), block('orders')],
      store,
      async (id, message) => {
        sent.push([id, `${JSON.parse(message).type}:${JSON.parse(message).chain}`]);
        return 'sent';
      },
      mayReceive,
    );
    const got = (id: string) => sent.filter(([to]) => to === id).map(([, m]) => m);
    assert.deepEqual(got('acme-all'), ['block_added:channel-supply', 'event:channel-supply', 'block_added:orders', 'event:orders']);
    assert.deepEqual(got('admin-all'), got('acme-all'));
    assert.deepEqual(got('globex-all'), ['block_added:orders', 'event:orders']);
    assert.deepEqual(got('orgless-type'), ['event:orders']);
    assert.deepEqual(got('globex-orders'), ['block_added:orders', 'event:orders']);
  });

  it("sends nothing to a revoked key's connections and forgets each of them once", async () => {
    const subscribers: Record<string, Subscriber[]> = {
      'chain#*': [
        { connection_id: 'kept', key_id: 'k', role: 'reader', org_id: null },
        { connection_id: 'doomed-all', key_id: 'r', role: 'reader', org_id: null },
      ],
      'chain#orders': [{ connection_id: 'doomed-orders', key_id: 'r', role: 'reader', org_id: null }],
      'type#priced': [{ connection_id: 'doomed-all', key_id: 'r', role: 'reader', org_id: null }],
    };
    const forgotten: string[] = [];
    const store = {
      subscribers: async (filter: string) => subscribers[filter] ?? [],
      disconnect: async (id: string) => void forgotten.push(id),
    } as unknown as ConnectionStore;
    const sent: string[] = [];
    const block = (index: number): Block => ({
      index,
      chain_name: 'orders',
      timestamp: 1,
      previous_hash: '0'.repeat(64),
      hash: 'c'.repeat(64),
      events: [],
    });
    const out = await fanOut(
      [block(1), block(2)],
      store,
      async (id) => {
        sent.push(id);
        return 'sent';
      },
      async (s) => (s.key_id === 'r' ? 'revoked' : true),
    );
    assert.deepEqual(sent, ['kept', 'kept']);
    assert.deepEqual(forgotten.sort(), ['doomed-all', 'doomed-orders']);
    assert.deepEqual(out.revoked.sort(), ['doomed-all', 'doomed-orders']);
  });
});

describe("a key's organization", () => {
  it('is an organization id or none: npm run keys refuses any other, and stores nothing (found by the red-team pass)', async () => {
    const stored: ApiKeyRecord[] = [];
    const repository: ApiKeyRepository = {
      put: async (record) => void stored.push(record),
      findByHash: async () => undefined,
      list: async () => stored,
      hashOf: async () => undefined,
      revoke: async () => false,
    };
    // `.` and `..` are path segments URLs resolve away: no route could name such an organization (red team).
    for (const org of ['a b/../#x', '', 'x'.repeat(65), 'ACME#1', '.', '..']) {
      await assert.rejects(createApiKey(repository, 'reader', org), (error: Error) => {
        assert.ok(error instanceof BadRequestError);
        assert.equal(error.message, `A key's organization must be 1-64 of A-Z a-z 0-9 _ . -, and not . or .., not '${org}'`);
        return true;
      });
    }
    assert.equal(stored.length, 0);
    assert.equal((await createApiKey(repository, 'writer', 'acme.eu-1')).record.org_id, 'acme.eu-1');
    assert.equal((await createApiKey(repository, 'writer', '...')).record.org_id, '...');
    assert.equal((await createApiKey(repository, 'reader')).record.org_id, null);
  });
});
