/** WebSocket connections and their subscriptions in the connections table (layout in keys.ts). */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { translateStorageError } from './errors.ts';
import type { Role } from '../access/policy.ts';
import type { ConnectionIdentity, ConnectionSlots, ConnectionStore } from '../realtime/realtime.ts';
import { CONNECTIONS_INDEXES, CONNECTION_META_SK, connectionPk, keyConnectionsPk, subscriptionSk } from './keys.ts';
import { partitionKeys, queryAll, send, writeIf } from './requests.ts';

/** The identity fields of a stored item (connections stored before org_id was kept have none: null). */
function identityOf(item: Record<string, unknown>): ConnectionIdentity {
  return {
    key_id: typeof item.key_id === 'string' ? item.key_id : null,
    ...(typeof item.key_hash === 'string' ? { key_hash: item.key_hash } : {}),
    role: typeof item.role === 'string' ? (item.role as Role) : null,
    org_id: typeof item.org_id === 'string' ? item.org_id : null,
  };
}

/** A key's slot item: which connection holds it, since and until when (TTL deletes it late: `ttl` is checked too). */
function slotItem(keyId: string, slot: string, connectionId: string, expiresAt: number, takenAt: number) {
  return { pk: keyConnectionsPk(keyId), sk: slot, connection_id: connectionId, taken_at: takenAt, ttl: expiresAt };
}

/**
 * How long a slot is held before its holder may be asked about (s): a connection whose $connect is still running (at
 * most API Gateway's 29 s) is not yet known to the management API, and its slot must not be taken back.
 */
const SLOT_SETTLED_S = 30;

/** A slot's sort key: `SLOT#0042`. Items of connections recorded before slots are keyed by the connection's id. */
const slotSk = (n: number) => `SLOT#${String(n).padStart(4, '0')}`;

/** How many times a connection tries another free slot after losing one to a concurrent connection. */
const SLOT_TRIES = 4;

/** How many holders a connection asks about (at once) when every slot of its key is held. */
const SLOT_HOLDERS_ASKED = 8;

export function createConnectionStore({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): ConnectionStore {
  /**
   * One of the key's `max` slots for the connection: the slots held (a strong query; TTL deletes lag, so a slot past
   * its connection's lifetime counts as free), then a conditional put of a free one, which fails if another
   * connection took it meanwhile (then again, from a new look). The connections recorded before slots count too.
   */
  async function takeSlot(keyId: string, connectionId: string, expiresAt: number, { max, nowSeconds, gone }: ConnectionSlots) {
    let asked = false;
    for (let attempt = 0; attempt < SLOT_TRIES; attempt += 1) {
      const held = await queryAll(client, {
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        FilterExpression: '#ttl > :now',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':pk': keyConnectionsPk(keyId), ':now': nowSeconds },
        ProjectionExpression: 'sk, connection_id, taken_at',
        ConsistentRead: true,
      });
      const taken = new Set(held.map((item) => String(item.sk)));
      if (taken.size >= max) {
        // Every slot held: once, ask about a few holders, and take back the slots of those whose sockets are gone.
        if (!gone || asked || !(await reclaimGone(keyId, held, gone, nowSeconds))) return undefined;
        asked = true;
        continue;
      }
      const free = Array.from({ length: max }, (_, n) => slotSk(n)).filter((sk) => !taken.has(sk));
      const slot = free[Math.floor(Math.random() * free.length)];
      if (slot === undefined) return undefined; // held by connections recorded before slots
      const won = await writeIf(
        client,
        new PutCommand({
          TableName: tableName,
          Item: slotItem(keyId, slot, connectionId, expiresAt, nowSeconds),
          ConditionExpression: 'attribute_not_exists(pk) OR #ttl <= :now',
          ExpressionAttributeNames: { '#ttl': 'ttl' },
          ExpressionAttributeValues: { ':now': nowSeconds },
        }),
      );
      if (won) return slot;
    }
    return undefined;
  }

  /** Asks about up to SLOT_HOLDERS_ASKED holders at random; forgets those gone (their slots too). Whether any was. */
  async function reclaimGone(
    keyId: string,
    held: Record<string, unknown>[],
    gone: (connectionId: string) => Promise<boolean>,
    nowSeconds: number,
  ): Promise<boolean> {
    const holders = held
      .filter((item) => !(typeof item.taken_at === 'number' && item.taken_at > nowSeconds - SLOT_SETTLED_S))
      .map((item) => ({ slot: String(item.sk), holder: typeof item.connection_id === 'string' ? item.connection_id : String(item.sk) }))
      .sort(() => Math.random() - 0.5)
      .slice(0, SLOT_HOLDERS_ASKED);
    const answers = await Promise.all(holders.map(async (h) => ({ ...h, gone: await gone(h.holder).catch(() => false) })));
    const freed = answers.filter((a) => a.gone);
    await Promise.all(freed.map(async ({ slot, holder }) => Promise.all([store.disconnect(holder), freeSlot(keyId, slot, holder)])));
    return freed.length > 0;
  }

  /** Deletes a slot while it is still this connection's (one taken over after it expired is another's). */
  async function freeSlot(keyId: string, slot: string, connectionId: string): Promise<void> {
    await writeIf(
      client,
      new DeleteCommand({
        TableName: tableName,
        Key: { pk: keyConnectionsPk(keyId), sk: slot },
        ConditionExpression: 'attribute_not_exists(connection_id) OR connection_id = :me',
        ExpressionAttributeValues: { ':me': connectionId },
      }),
    );
  }

  const store: ConnectionStore = {
    async connect(connectionId, meta, expiresAt, slots) {
      let slot: string | undefined;
      if (meta.key_id !== null && slots) {
        slot = await takeSlot(meta.key_id, connectionId, expiresAt, slots);
        if (slot === undefined) return false;
      }
      try {
        await send(() =>
          client.send(
            new PutCommand({
              TableName: tableName,
              Item: { pk: connectionPk(connectionId), sk: CONNECTION_META_SK, ...meta, ...(slot ? { key_slot: slot } : {}), ttl: expiresAt },
            }),
          ),
        );
      } catch (error) {
        // Not recorded, so never disconnected: its slot is given back now, not at its expiry.
        if (slot !== undefined && meta.key_id !== null) await freeSlot(meta.key_id, slot, connectionId).catch(() => undefined);
        throw error;
      }
      return true;
    },
    async identity(connectionId) {
      const out = await send(() =>
        client.send(new GetCommand({ TableName: tableName, Key: { pk: connectionPk(connectionId), sk: CONNECTION_META_SK }, ConsistentRead: true })),
      );
      if (!out.Item) return undefined;
      return { ...identityOf(out.Item), ...(typeof out.Item.rate_key === 'string' ? { rate_key: out.Item.rate_key } : {}) };
    },
    async subscribe(connectionId, filter, identity, expiresAt, max) {
      const item = {
        pk: connectionPk(connectionId),
        sk: subscriptionSk(filter),
        gsi_filter_pk: filter,
        gsi_filter_sk: connectionId,
        ...identity,
        ttl: expiresAt,
      };
      if (max === undefined) {
        await send(() => client.send(new PutCommand({ TableName: tableName, Item: item })));
        return true;
      }
      // Written only if new (one it holds already stays, as it was), then counted: of subscriptions written at once
      // past the most, each sees the others and takes itself back (all may: the caller is told), so that no more
      // than `max` stay. One read a subscription, as a count before the write was.
      if (!(await writeIf(client, new PutCommand({ TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(sk)' })))) return true;
      if ((await store.subscriptions(connectionId, filter)).count > max) {
        await store.unsubscribe(connectionId, filter);
        return false;
      }
      return true;
    },
    async unsubscribe(connectionId, filter) {
      await send(() => client.send(new DeleteCommand({ TableName: tableName, Key: { pk: connectionPk(connectionId), sk: subscriptionSk(filter) } })));
    },
    async disconnect(connectionId) {
      // Its key (for the key's list of open connections) and its items, read at once; then every item deleted at once.
      const [meta, items] = await Promise.all([
        send(() =>
          client.send(new GetCommand({ TableName: tableName, Key: { pk: connectionPk(connectionId), sk: CONNECTION_META_SK }, ConsistentRead: true })),
        ),
        partitionKeys(client, tableName, connectionPk(connectionId)),
      ]);
      const keyId = meta.Item?.key_id;
      // Its slot among its key's (or, recorded before slots, its entry keyed by the connection), freed only while it
      // is still this connection's: a slot taken over after it expired is another connection's now.
      const slot = typeof meta.Item?.key_slot === 'string' ? meta.Item.key_slot : connectionId;
      await Promise.all([
        ...items.map((key) => send(() => client.send(new DeleteCommand({ TableName: tableName, Key: { pk: key.pk, sk: key.sk } })))),
        ...(typeof keyId === 'string' ? [freeSlot(keyId, slot, connectionId)] : []),
      ]);
    },
    async subscriptions(connectionId, filter) {
      const out = await send(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sub)',
            ExpressionAttributeValues: { ':pk': connectionPk(connectionId), ':sub': subscriptionSk('') },
            ProjectionExpression: 'sk',
            ConsistentRead: true,
          }),
        ),
      );
      const keys = (out.Items ?? []).map((item) => String(item.sk));
      return { count: keys.length, has: keys.includes(subscriptionSk(filter)) };
    },
    async takeMessage(connectionId, second, perSecond) {
      const key = { pk: connectionPk(connectionId), sk: CONNECTION_META_SK };
      const attempt = async (input: ConstructorParameters<typeof UpdateCommand>[0]): Promise<'ok' | 'refused' | 'unknown'> => {
        try {
          await client.send(new UpdateCommand({ ...input, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }));
          return 'ok';
        } catch (error) {
          if (error instanceof ConditionalCheckFailedException) return error.Item ? 'refused' : 'unknown';
          throw translateStorageError(error);
        }
      };
      // Counted in the window if it is this second (or a later one: a message handled after one that arrived later,
      // as two instances may on AWS, counts against the newer window rather than being refused) and not full; else a
      // new window.
      const added = await attempt({
        TableName: tableName,
        Key: key,
        UpdateExpression: 'ADD msg_count :one',
        ConditionExpression: 'msg_window >= :w AND msg_count < :max',
        ExpressionAttributeValues: { ':one': 1, ':w': second, ':max': perSecond },
      });
      if (added !== 'refused') return true; // counted, or not a recorded connection (the route says so)
      const opened = await attempt({
        TableName: tableName,
        Key: key,
        UpdateExpression: 'SET msg_window = :w, msg_count = :one',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(msg_window) OR msg_window < :w)',
        ExpressionAttributeValues: { ':one': 1, ':w': second },
      });
      return opened !== 'refused';
    },
    async subscribers(filter) {
      const items = await queryAll(client, {
        TableName: tableName,
        IndexName: CONNECTIONS_INDEXES.byFilter,
        KeyConditionExpression: 'gsi_filter_pk = :f',
        ExpressionAttributeValues: { ':f': filter },
      });
      return items.map((item) => ({ connection_id: String(item.gsi_filter_sk), ...identityOf(item) }));
    },
  };
  return store;
}
