/**
 * Realtime pushes over WebSocket (docs/rules.md, "WebSocket"): subscriptions by chain, by event type, or to
 * everything (`*`), and the fan-out of committed blocks as `block_added` and `event` messages.
 * Pure domain: connections are stored through a port, messages sent through another.
 */
import * as z from 'zod';
import type { Role } from '../access/policy.ts';
import { ANONYMOUS, OPEN_ACCESS, type Principal } from '../access/policy.ts';
import { EVENT_TYPE_MAX } from '../ledger/events.ts';
import { isWellFormedChainName } from '../ledger/names.ts';
import type { Block, LedgerEvent } from '../ledger/types.ts';
import { isWellFormedText } from '../validation.ts';
import { steadyNow } from '../clock.ts';
import { deadlinePassed } from '../deadline.ts';
import { DeadlineExceededError } from '../errors.ts';
import { logger } from '../log.ts';

/** A subscription filter: `chain#<name>`, `chain#*`, or `type#<event type>`. */
export type Filter = string;

/** Who opened a connection, as $connect found the key; `role: null` when auth was off. */
export interface ConnectionIdentity {
  key_id: string | null;
  role: Role | null;
  org_id: string | null;
  /**
   * The SHA-256 of the key it connected with: a key is checked by its hash, not only its id, since the seeded admin
   * key keeps its id when SVC_ADMIN_API_KEY changes. Absent on connections recorded before it was kept.
   */
  key_hash?: string;
}

/**
 * Whether a connection's key still stands: its id still names a key (`stored`, the hash kept for it), and that key is
 * the one it connected with (the seeded admin key keeps its id when it is replaced). A connection recorded before
 * keys' hashes were kept is checked by the id alone.
 */
export function keyStillHeld(stored: string | undefined, connectedWith: string | undefined): boolean {
  return stored !== undefined && (connectedWith === undefined || stored === connectedWith);
}

/** A connection subscribed to a filter, with who it is (so pushes can be checked without another read). */
export interface Subscriber extends ConnectionIdentity {
  connection_id: string;
}

/** How many connections a key may hold, at what time, and how to ask API Gateway whether a holder's socket is gone. */
export interface ConnectionSlots {
  max: number;
  nowSeconds: number;
  /**
   * Whether a connection no longer exists at API Gateway (its management API answers 410). With it, a key whose slots
   * are all held asks about a few holders and takes back the slots of those gone: $disconnect is best-effort on AWS,
   * and a connection that never got one held its slot to its record's expiry.
   */
  gone?: (connectionId: string) => Promise<boolean>;
}

export interface ConnectionStore {
  /**
   * Records a new connection (who it is, until when it may live; `rate_key`: the rate limiter's name for its key, which
   * its messages are counted against). With `slots`, a key's connection takes one of its key's slots (at
   * `nowSeconds`), each a conditional write, so that a key never holds more however many connect at once: false
   * (nothing recorded) when every slot is held.
   */
  connect(
    connectionId: string,
    meta: ConnectionIdentity & { connected_at: string; rate_key?: string },
    expiresAt: number,
    slots?: ConnectionSlots,
  ): Promise<boolean>;
  /** Who opened the connection, and the rate limiter's name for its key; undefined when it is not (or no longer) recorded. */
  identity(connectionId: string): Promise<(ConnectionIdentity & { rate_key?: string }) | undefined>;
  /**
   * Subscribes the connection to a filter; with `max`, false (nothing left subscribed) when that would make it hold
   * more: written if new, then counted, so that subscriptions sent at once (on AWS one connection's messages may reach
   * several instances together) never leave more than `max`.
   */
  subscribe(connectionId: string, filter: Filter, identity: ConnectionIdentity, expiresAt: number, max?: number): Promise<boolean>;
  unsubscribe(connectionId: string, filter: Filter): Promise<void>;
  /** Removes a connection and all its subscriptions. */
  disconnect(connectionId: string): Promise<void>;
  /** How many subscriptions the connection has, and whether it has this filter already. */
  subscriptions(connectionId: string, filter: Filter): Promise<{ count: number; has: boolean }>;
  /**
   * Counts a message of the connection in `second` (when it reached API Gateway); false when that second already
   * holds `perSecond` (on AWS one connection's messages reach many instances at once: the count lives with the
   * connection). A message counted after one from a later second counts against that later second's window.
   */
  takeMessage(connectionId: string, second: number, perSecond: number): Promise<boolean>;
  /** The connections subscribed to a filter (one index query). */
  subscribers(filter: Filter): Promise<Subscriber[]>;
}

/**
 * A connection's principal for the access policy. A connection opened while auth was off has no role:
 * it is OPEN_ACCESS while auth stays off, and may receive nothing once auth is on.
 */
export function connectionPrincipal(identity: ConnectionIdentity, authEnabled: boolean): Principal {
  if (!authEnabled) return OPEN_ACCESS;
  return identity.role === null ? ANONYMOUS : { key_id: identity.key_id, role: identity.role, org_id: identity.org_id };
}

/**
 * Whether a subscriber may receive the blocks and events of a chain (the access policy's `chain.read`); 'revoked'
 * when the connection's key no longer exists (it receives nothing, and the connection is forgotten).
 */
export type MayReceive = (subscriber: Subscriber, chainName: string) => Promise<boolean | 'revoked'>;

/** Sends one message to one connection; 'gone' when the connection no longer exists (410). */
export type Send = (connectionId: string, message: string) => Promise<'sent' | 'gone'>;

export const EVENT_DETAILS_LIMIT = 16 * 1024;
export const MESSAGE_LIMIT = 32 * 1024;

// Each message reads "A subscribe message must <message>". A chain is `*` or a chain's name: a name no chain can have
// (`../x`, `chain#*`, `%2a`) was answered `subscribed` and kept a subscription that nothing would ever match (red team).
const CHAIN_RULE = 'name its chain as * or as a chain is named (1-64 of A-Z a-z 0-9 _ -)';
const EVENT_TYPE_RULE = `name an event_type of 1-${EVENT_TYPE_MAX} characters, well-formed Unicode`;
const subscription = z
  .object({
    type: z.enum(['subscribe', 'unsubscribe']),
    chain: z
      .string({ error: CHAIN_RULE })
      .refine((chain) => chain === '*' || isWellFormedChainName(chain), CHAIN_RULE)
      .optional(),
    event_type: z
      .string({ error: EVENT_TYPE_RULE })
      .min(1, EVENT_TYPE_RULE)
      .max(EVENT_TYPE_MAX, EVENT_TYPE_RULE)
      .refine(isWellFormedText, EVENT_TYPE_RULE)
      .optional(),
  })
  .refine((m) => (m.chain === undefined) !== (m.event_type === undefined), 'name exactly one of chain and event_type');

export function filterOf(message: { chain?: string | undefined; event_type?: string | undefined }): Filter {
  return message.chain !== undefined ? `chain#${message.chain}` : `type#${message.event_type}`;
}

/** What a client message asks for, or the error to answer it with. */
export type ClientRequest =
  | { kind: 'subscribe' | 'unsubscribe'; filter: Filter; chain: string | null; event_type: string | null }
  | { kind: 'ping' }
  | { kind: 'invalid'; detail: string };

export function parseClientMessage(text: string | undefined | null): ClientRequest {
  let value: unknown;
  try {
    value = JSON.parse(text ?? '');
  } catch {
    return { kind: 'invalid', detail: 'Messages are JSON objects with a "type"' };
  }
  const type = (value as { type?: unknown } | null)?.type;
  if (type === 'ping') return { kind: 'ping' };
  if (type === 'subscribe' || type === 'unsubscribe') {
    const parsed = subscription.safeParse(value);
    if (!parsed.success)
      return {
        kind: 'invalid',
        detail: `${type === 'unsubscribe' ? 'An' : 'A'} ${type} message must ${parsed.error.issues[0]?.message ?? 'name a chain or an event_type'}`,
      };
    return { kind: type, filter: filterOf(parsed.data), chain: parsed.data.chain ?? null, event_type: parsed.data.event_type ?? null };
  }
  return { kind: 'invalid', detail: `Unknown message type ${JSON.stringify(type ?? null)}: use subscribe, unsubscribe or ping` };
}

export const messages = {
  subscribed: (chain: string | null, eventType: string | null, type: 'subscribed' | 'unsubscribed' = 'subscribed') =>
    JSON.stringify({ type, chain, event_type: eventType }),
  pong: (now = Date.now()) => JSON.stringify({ type: 'pong', timestamp: now / 1000 }),
  error: (detail: string) => JSON.stringify({ type: 'error', detail }),
  blockAdded: (block: Block) =>
    JSON.stringify({
      type: 'block_added',
      chain: block.chain_name,
      block: { index: block.index, hash: block.hash, previous_hash: block.previous_hash, timestamp: block.timestamp, event_count: block.events.length },
    }),
  /** The event, its details left out when larger than 16 KiB (and its metadata too if still too large). */
  event: (event: LedgerEvent) => {
    const full = JSON.stringify({ type: 'event', chain: event.chain_name, event });
    if (Buffer.byteLength(JSON.stringify(event.details)) <= EVENT_DETAILS_LIMIT && Buffer.byteLength(full) <= MESSAGE_LIMIT) return full;
    const { details: _details, ...withoutDetails } = event;
    const smaller = JSON.stringify({ type: 'event', chain: event.chain_name, event: { ...withoutDetails, details_omitted: true } });
    if (Buffer.byteLength(smaller) <= MESSAGE_LIMIT) return smaller;
    const { details_metadata: _meta, ...bare } = withoutDetails;
    return JSON.stringify({ type: 'event', chain: event.chain_name, event: { ...bare, details_omitted: true, details_metadata_omitted: true } });
  },
};

/** What a fan-out may not exceed, and when it must stop. */
export interface FanOutLimits {
  /** When to stop pushing (`steadyNow`'s ms): the blocks not pushed by then are answered as unfinished, for a retry. */
  stopAt?: number;
  /**
   * Takes `count` pushes from a key's budget for this minute (SVC_WS_PUSHES_PER_MINUTE) and answers how many it may
   * have (all, some or none), and whether this batch is the one that reached the limit (its connections are told, once
   * a minute, not at every batch after). Called once per key per batch.
   */
  takePushes?: (keyId: string, count: number) => Promise<{ granted: number; reached: boolean }>;
}

export interface FanOutResult {
  sent: number;
  /** Connections found gone (410), removed. */
  gone: string[];
  /** Connections of revoked keys, removed. */
  revoked: string[];
  /** Connections whose push failed otherwise: the rest of this batch's messages to each were not sent (logged). */
  failed: string[];
  /** Connections of keys past their push budget: the rest of their messages not sent (told in the batch that reached it). */
  limited: string[];
  /** The blocks from the first some connection missed at `stopAt` on (in the order pushed, by chain and index): none when all were pushed. */
  unfinished: Block[];
}

/**
 * Sends committed blocks to their subscribers: for each block, `block_added` to the subscribers of its
 * chain and of `*`, then one `event` per event to the subscribers of its chain, of its type and of `*`
 * (once per connection), leaving out every subscriber that `mayReceive` refuses for that chain (a
 * channel's chain reaches its members only, whatever they subscribed to). Each connection gets its
 * messages in block order, and connections are served in parallel. Stopped at `stopAt`, it answers the blocks from
 * the first that some connection did not get, for a retry (which pushes those again: at least once, not exactly).
 * A push that fails (other than gone) ends that connection's share of the batch and nothing else's: one slow or
 * throttled socket never makes every other one receive the batch twice. Each key's connections together get at most
 * what `takePushes` grants (red team: a reader key's 100 connections subscribed to `*` multiplied every append a
 * hundredfold, at the ledger's cost); past it they get one error message saying so. Gone connections are removed,
 * and so are the connections of revoked keys (with their subscriptions: whatever they send next is refused).
 */
export async function fanOut(
  blocks: readonly Block[],
  store: ConnectionStore,
  send: Send,
  mayReceive: MayReceive,
  limits: FanOutLimits = {},
): Promise<FanOutResult> {
  const ordered = [...blocks].sort((a, b) => (a.chain_name === b.chain_name ? a.index - b.index : a.chain_name < b.chain_name ? -1 : 1));
  const lookups = new Map<Filter, Promise<Subscriber[]>>();
  const subscribersOf = (filter: Filter) => {
    let found = lookups.get(filter);
    if (!found) lookups.set(filter, (found = store.subscribers(filter)));
    return found;
  };

  /** The subscribers among these that may receive this chain's messages, each connection once. */
  const revoked = new Set<string>();
  const keyOf = new Map<string, string>();
  const allowed = async (chainName: string, ...groups: Subscriber[][]): Promise<Set<string>> => {
    const ids = new Set<string>();
    for (const subscriber of groups.flat()) {
      if (ids.has(subscriber.connection_id) || revoked.has(subscriber.connection_id)) continue;
      const may = await mayReceive(subscriber, chainName);
      if (may === 'revoked') revoked.add(subscriber.connection_id);
      else if (may) {
        ids.add(subscriber.connection_id);
        keyOf.set(subscriber.connection_id, subscriber.key_id ?? '');
      }
    }
    return ids;
  };

  // Each connection's messages of the whole batch, in block order, each with the place in `ordered` of the block it
  // belongs to, planned before anything is sent: each key's total is known up front. The connections are then served
  // in parallel, none waiting for another's slow pushes.
  const queues = new Map<string, { at: number; message: string }[]>();
  for (const [index, block] of ordered.entries()) {
    const enqueue = (ids: Iterable<string>, message: string) => {
      for (const id of ids) {
        const queue = queues.get(id);
        if (queue) queue.push({ at: index, message });
        else queues.set(id, [{ at: index, message }]);
      }
    };
    const [chainSubs, allSubs] = await Promise.all([subscribersOf(`chain#${block.chain_name}`), subscribersOf('chain#*')]);
    enqueue(await allowed(block.chain_name, chainSubs, allSubs), messages.blockAdded(block));
    for (const event of block.events) {
      const typeSubs = await subscribersOf(`type#${event.event_type}`);
      enqueue(await allowed(block.chain_name, chainSubs, typeSubs, allSubs), messages.event(event));
    }
  }

  // Each key's allowance for this batch, taken once.
  const granted = new Map<string, number>();
  const reached = new Set<string>();
  if (limits.takePushes) {
    const wanted = new Map<string, number>();
    for (const [id, queue] of queues) wanted.set(keyOf.get(id)!, (wanted.get(keyOf.get(id)!) ?? 0) + queue.length);
    await Promise.all(
      [...wanted].map(async ([key, count]) => {
        const grant = await limits.takePushes!(key, count);
        granted.set(key, grant.granted);
        if (grant.reached) reached.add(key);
      }),
    );
  }

  let sent = 0;
  const gone = new Set<string>();
  const failed = new Set<string>();
  const limited = new Set<string>();
  // The first block some connection did not get before the deadline: the retry starts there (pushing again, to the
  // connections that had got further, what they already had).
  let firstUnfinished = ordered.length;
  const stopping = () => (limits.stopAt !== undefined && steadyNow() >= limits.stopAt) || deadlinePassed();
  await Promise.all(
    [...queues].map(async ([connectionId, queue]) => {
      for (const { at, message } of queue) {
        if (stopping()) {
          firstUnfinished = Math.min(firstUnfinished, at);
          return;
        }
        if (limits.takePushes) {
          const key = keyOf.get(connectionId)!;
          const left = granted.get(key) ?? 0;
          if (left <= 0) {
            limited.add(connectionId);
            return;
          }
          granted.set(key, left - 1);
        }
        try {
          if ((await send(connectionId, message)) === 'gone') {
            gone.add(connectionId);
            await store.disconnect(connectionId);
            return;
          }
          sent += 1;
        } catch (error) {
          // Cut off by the invocation's deadline: its block is unfinished (pushed again by the retry), not failed.
          if (error instanceof DeadlineExceededError || deadlinePassed()) {
            firstUnfinished = Math.min(firstUnfinished, at);
            return;
          }
          failed.add(connectionId);
          const block = ordered[at]!;
          logger.warn('a WebSocket push failed: the rest of this batch is not sent to that connection', {
            connection_id: connectionId,
            chain: block.chain_name,
            block: block.index,
            error,
          });
          return;
        }
      }
    }),
  );
  const unfinished = ordered.slice(firstUnfinished);
  // Told in the batch that reached the limit, uncounted (what it missed is in the chain); nothing past the deadline. What
  // is left here must not fail the batch: a retry would push every block again.
  const told = deadlinePassed() ? [] : [...limited].filter((id) => reached.has(keyOf.get(id)!));
  await Promise.all(
    told.map((id) =>
      send(
        id,
        messages.error(
          `This key's connections reached their push limit for the minute (SVC_WS_PUSHES_PER_MINUTE): later blocks and events were not sent; read them from the chain`,
        ),
      ).catch(() => 'gone'),
    ),
  );
  await Promise.all(
    [...revoked].map((connectionId) =>
      store
        .disconnect(connectionId)
        .catch((error: unknown) =>
          logger.warn("a revoked key's connection could not be forgotten now: the next push or message will", { connection_id: connectionId, error }),
        ),
    ),
  );
  return { sent, gone: [...gone], revoked: [...revoked], failed: [...failed], limited: [...limited], unfinished };
}
