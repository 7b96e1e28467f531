/**
 * An event's details on their way in and out of the ledger. In: a draft is readied to commit (its personal data
 * sealed under its data subject's key, large details moved to IPFS, a client's off-chain reference checked, its
 * size bounded). Out: erasable events are opened with their subject's key, or answered erased, and off-chain
 * details are fetched when asked for (docs/rules.md, "Off-chain payloads").
 */
import { randomBytes } from 'node:crypto';
import { citationError, DependencyUnavailableError, GoneError, UnprocessableError, UnreadablePayloadError } from '../errors.ts';
import { chargeResolved } from '../read-allowance.ts';
import type { EventDraft } from './events.ts';
import { isChannelChainName } from './names.ts';
import { canonicalJson } from './hashing.ts';
import { type OffchainStore, type PayloadOpener, payloadScope } from './offchain-port.ts';
import type { PersonalData } from './subject-port.ts';
import type { Block, LedgerEvent } from './types.ts';

/**
 * Largest event kept on chain. DynamoDB items stop at 400 KB and a block is stored with its indexes;
 * larger payloads belong off chain (docs/rules.md, "Off-chain payloads").
 */
export const MAX_ONCHAIN_EVENT_BYTES = 300_000;

/** An event as answered with `resolve_cid=true`: the stored event, details replaced, or the reason it could not be. */
export type ResolvedEvent = LedgerEvent & { resolve_error?: string; erased?: true };

const RESOLVE_CONCURRENCY = 8;
/** An envelope's members besides its ciphertext (version, scope, nonce, wrapped key, tag), at most: what a payload's size leaves out. */
const ENVELOPE_HEADER_BYTES = 1024;

/** What opens nothing: a read or an append that did not say for whom fails closed (every scope refused). */
export const NO_OPENER: PayloadOpener = async () => false;

export interface EventDetailsOptions {
  offchain?: OffchainStore | undefined;
  personalData?: PersonalData | undefined;
  /** Events whose serialized `details` is larger go off chain. */
  offchainThresholdBytes: number;
}

export function createEventDetails({ offchain, personalData, offchainThresholdBytes }: EventDetailsOptions) {
  const payloads = (): OffchainStore => {
    if (!offchain) throw new DependencyUnavailableError('IPFS (off-chain storage is not configured)');
    return offchain;
  };

  const personal = (): PersonalData => {
    if (!personalData) throw new DependencyUnavailableError('personal data keys (not configured)');
    return personalData;
  };

  /** Counts the appended events of each data subject (what an erasure reports); a failure to count loses no event. */
  async function countPersonal(blocks: Block[]): Promise<void> {
    const counts = new Map<string, number>();
    for (const event of blocks.flatMap((b) => b.events))
      if (event.subject_id !== undefined) counts.set(event.subject_id, (counts.get(event.subject_id) ?? 0) + 1);
    await Promise.all(
      [...counts].map(([id, n]) =>
        personal()
          .recordEvents(id, n)
          .catch(() => undefined),
      ),
    );
  }

  /** An erasable event whose subject was erased, as every read answers it: no details, `erased: true`. */
  const erased = (event: ResolvedEvent) => Object.assign(event, { details: null as unknown as Record<string, unknown>, erased: true as const });

  /**
   * Events as they are answered. Erasable events (with a `subject_id`) show their details opened with
   * their subject's key, or, once the subject was erased, `details: null` and `erased: true`. With
   * `resolveCid`, off-chain details are fetched and decrypted for the caller `opener` stands for (a payload of a
   * scope it may not read is not decrypted); an unreadable payload marks only its event, and an erased subject's
   * payload is 410 Gone.
   */
  async function reveal(events: LedgerEvent[], resolveCid: boolean, opener: PayloadOpener = NO_OPENER): Promise<ResolvedEvent[]> {
    const resolved: ResolvedEvent[] = events.map((e) => ({ ...e }));
    const subjects = resolved.filter((e) => e.subject_id !== undefined);
    if (subjects.length > 0) {
      // One read per subject, inline and off-chain events alike: off-chain details stay {} unless resolved.
      const opened = await personal().openAll(subjects.map((e) => ({ subjectId: e.subject_id!, sealed: e.details_sealed ?? null })));
      subjects.forEach((event, i) => {
        const details = opened[i];
        if (details === null) erased(event);
        else if (details !== undefined) event.details = details;
      });
    }
    if (!resolveCid) return resolved;
    const pending = resolved.filter((e) => e.is_offchain && e.details_cid && e.details_nonce);
    for (const event of pending) if (event.erased) throw new GoneError(`The details of event '${event.event_id}' were erased with their data subject`);
    // Each payload is fetched and decrypted once, however many events cite it; each event's copy goes into the
    // answer, and counts against what one answer can carry before anything more is fetched (read-allowance.ts): as
    // its plaintext's size, about three quarters of its envelope's (base64), so never more than its place in the answer.
    const fetched = new Map<string, Promise<{ value: unknown; bytes: number }>>();
    const fetch = (cid: string, nonce: string) => {
      const key = `${cid}#${nonce}`;
      let found = fetched.get(key);
      if (!found) {
        let size = 0;
        found = payloads()
          .get(cid, nonce, opener, (envelopeBytes) => {
            size = Math.max(0, Math.floor((envelopeBytes * 3) / 4) - ENVELOPE_HEADER_BYTES);
            chargeResolved(size);
          })
          .then((value) => ({ value, bytes: size }));
        fetched.set(key, found);
        return found;
      }
      return found.then((copy) => {
        chargeResolved(copy.bytes);
        return copy;
      });
    };
    for (let i = 0; i < pending.length; i += RESOLVE_CONCURRENCY) {
      await Promise.all(
        pending.slice(i, i + RESOLVE_CONCURRENCY).map(async (event) => {
          try {
            const { value } = await fetch(event.details_cid!, event.details_nonce!);
            if (event.subject_id === undefined) {
              event.details = (value ?? {}) as Record<string, unknown>;
              return;
            }
            // An erasable event's payload is its sealed details: opened with its subject's key.
            const [details] = await personal().openAll([{ subjectId: event.subject_id, sealed: String(value) }]);
            if (!details) throw new GoneError(`The details of event '${event.event_id}' were erased with their data subject`);
            event.details = details;
          } catch (error) {
            if (!(error instanceof UnreadablePayloadError)) throw error;
            event.resolve_error = error.message;
          }
        }),
      );
    }
    return resolved;
  }

  async function resolveBlocks(blocks: Block[], options: { resolveCid?: boolean; opener?: PayloadOpener } | undefined): Promise<Block[]> {
    const resolveCid = options?.resolveCid ?? false;
    if (!resolveCid && !blocks.some((b) => b.events.some((e) => e.subject_id !== undefined))) return blocks;
    const events = await reveal(
      blocks.flatMap((b) => b.events),
      resolveCid,
      options?.opener,
    );
    let next = 0;
    return blocks.map((block) => ({ ...block, events: block.events.map(() => events[next++]!) }));
  }

  /**
   * Checks a client's off-chain reference (the appending caller must be able to read it: `opener`), or moves large
   * details off chain, bound to the chain's scope; then checks the size. `chainExists` is awaited before anything
   * is made for the chain (a subject's key, a payload in IPFS).
   */
  async function prepare(
    chainName: string,
    draft: EventDraft,
    chainExists: () => Promise<unknown>,
    opener: PayloadOpener = NO_OPENER,
    /** References this request checked already (a batch's events citing one payload: it is fetched once). */
    checked?: Set<string>,
  ): Promise<EventDraft> {
    // A channel's content is its members', but its block hashes are every reader's: a salt only members see makes
    // the hash confirm no guess at it (whatever a caller sent as `salt` is replaced). A signature is recorded only
    // from the append's options, which only the secure-event relay sets (whatever a draft carried is dropped).
    const { salt: _sent, signed: _claimed, ...unsalted } = draft;
    draft = isChannelChainName(chainName) ? { ...unsalted, salt: randomBytes(16).toString('hex') } : unsalted;
    if (draft.subject_id !== undefined) {
      // Personal data: only the details sealed under the subject's key are committed (or, when large, put
      // in IPFS, sealed again there); `details` stays {} on chain. An erased subject takes no new data (410).
      await chainExists(); // no key is made for a chain that does not exist
      const sealed = await personal().seal(draft.subject_id, draft.details);
      if (Buffer.byteLength(sealed) > offchainThresholdBytes) {
        const stored = await payloads().put(sealed, payloadScope.chain(chainName));
        // Noted before it is committed: no payload of the subject's is left unknown to its erasure.
        await personal().recordPayload(draft.subject_id, stored.cid);
        draft = { ...draft, details: {}, details_cid: stored.cid, details_nonce: stored.nonce, is_offchain: true, details_sealed: null };
      } else {
        draft = { ...draft, details: {}, details_sealed: sealed };
      }
    } else if (draft.is_offchain) {
      // A client-supplied reference must be readable now, or nobody could ever resolve it.
      const reference = `${draft.details_cid}#${draft.details_nonce}`;
      try {
        if (!checked?.has(reference)) await payloads().get(draft.details_cid!, draft.details_nonce!, opener);
        checked?.add(reference);
      } catch (error) {
        if (error instanceof UnreadablePayloadError) throw citationError('details_cid', error);
        throw error;
      }
    } else if (Buffer.byteLength(JSON.stringify(draft.details)) > offchainThresholdBytes) {
      await chainExists(); // nothing goes to IPFS for a chain that does not exist
      const stored = await payloads().put(draft.details, payloadScope.chain(chainName));
      draft = { ...draft, details: {}, details_cid: stored.cid, details_nonce: stored.nonce, is_offchain: true };
    }
    const size = Buffer.byteLength(canonicalJson(draft));
    if (size > MAX_ONCHAIN_EVENT_BYTES) {
      throw new UnprocessableError(`The event is ${size} bytes; events larger than ${MAX_ONCHAIN_EVENT_BYTES} bytes cannot be kept on chain`);
    }
    return draft;
  }

  return { payloads, personal, countPersonal, reveal, resolveBlocks, prepare };
}
