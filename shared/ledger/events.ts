/**
 * EventRequest and its rules (docs/rules.md, "Chains and blocks"): `event` is an alias of
 * `event_type` (both with different values is 422); a missing `details` becomes `{}`; a `details_cid`
 * marks the event off-chain and then `details` stays `{}` on chain.
 */
import * as z from 'zod';
import { UnprocessableError } from '../errors.ts';
import { parseInput } from '../validation.ts';
import { SERVICE_EVENT } from './event-types.ts';
import { LOOK_ALIKES } from './look-alikes.ts';
import { canonicalJson } from './hashing.ts';
import { SUBJECT_ID, SUBJECT_ID_RULE } from './subject-port.ts';
import type { LedgerEvent } from './types.ts';

const jsonObject = z.record(z.string(), z.unknown());

/** The longest entity id, in characters: what every chain's by-entity index is keyed by (a DynamoDB key: bounded). */
export const ENTITY_ID_MAX = 256;
/** The longest event type, in characters. */
export const EVENT_TYPE_MAX = 128;
export const entityIdSchema = z.string().min(1).max(ENTITY_ID_MAX);
export const eventTypeSchema = z.string().min(1).max(EVENT_TYPE_MAX);

export const eventRequestSchema = z
  .object({
    entity_id: entityIdSchema,
    event_type: eventTypeSchema.optional(),
    event: eventTypeSchema.optional(),
    details: jsonObject.nullish(),
    details_cid: z.string().min(1).max(256).nullish(),
    details_nonce: z.string().min(1).max(256).nullish(),
    details_metadata: jsonObject.nullish(),
    /** Marks the details as personal data of this data subject: kept only sealed under its key, erasable. */
    subject_id: z.string().regex(SUBJECT_ID, `must be ${SUBJECT_ID_RULE}`).optional(),
  })
  .superRefine((value, ctx) => {
    if (value.subject_id !== undefined && value.details_cid) {
      ctx.addIssue({
        code: 'custom',
        path: ['details_cid'],
        message: "An erasable event's details are sent inline: the service seals them under the subject's key",
      });
    }
    if (value.event_type === undefined && value.event === undefined) {
      ctx.addIssue({ code: 'invalid_type', expected: 'string', input: undefined, path: ['event_type'], message: 'Required' });
    }
    if (value.event_type !== undefined && value.event !== undefined && value.event_type !== value.event) {
      ctx.addIssue({ code: 'custom', path: ['event'], message: "'event' is an alias of 'event_type'; they differ" });
    }
    if (value.details_cid && !value.details_nonce) {
      ctx.addIssue({ code: 'invalid_type', expected: 'string', input: undefined, path: ['details_nonce'], message: 'Required with details_cid' });
    }
    if (value.details_cid && value.details && Object.keys(value.details).length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['details'],
        message: 'Send either details (on chain) or details_cid (off chain), not both',
      });
    }
  });

/** A validated event, before the ledger gives it a place (id, chain, block, timestamp). */
export type EventDraft = Omit<LedgerEvent, 'event_id' | 'chain_name' | 'block_index' | 'timestamp'>;

/** Most events in one batch: one block each plus the chain head fill one 100-item DynamoDB transaction. */
export const MAX_BATCH_EVENTS = 99;

/** The batch extension's body: `{"events": [EventRequest, …]}`, 1 to 99 of them. */
export const eventBatchSchema = z.object({
  events: z.array(eventRequestSchema).min(1).max(MAX_BATCH_EVENTS),
});

/**
 * Refuses (422) a draft whose entity id or type break the event's rules, whichever way it came (the events routes,
 * private data, contracts, secure events, an import): the ledger checks it before anything is sealed, since a block
 * whose records DynamoDB cannot store (an index key over its limit) would hold its chain's head forever.
 */
export function assertDraftFields(draft: Pick<EventDraft, 'entity_id' | 'event_type'>, index?: number, by: 'caller' | 'service' = 'caller'): void {
  const which = index === undefined ? "An event's" : `Event ${index}'s`;
  if (!entityIdSchema.safeParse(draft.entity_id).success) {
    throw new UnprocessableError(`${which} entity_id must be a string of 1 to ${ENTITY_ID_MAX} characters`);
  }
  if (!eventTypeSchema.safeParse(draft.event_type).success) {
    throw new UnprocessableError(`${which} event_type must be a string of 1 to ${EVENT_TYPE_MAX} characters`);
  }
  // An entity id a reader cannot tell from another (`pkg-17` and `pkg-17\u200d`, a right-to-left override) would
  // let a writer add events that read as another entity's in the explorer and an audit (red team, 2026-12-07).
  if (unseenInEntityId(draft.entity_id)) {
    throw new UnprocessableError(
      `${which} entity_id may not hold control or invisible characters (a joiner only inside a word of a script or an emoji sequence that needs it), nor begin or end with a space`,
    );
  }
  if (INVISIBLE.test(draft.event_type) || SPACE_AT_ENDS.test(draft.event_type)) {
    throw new UnprocessableError(`${which} event_type may not hold control or invisible characters, nor begin or end with a space`);
  }
  if (by === 'caller' && readsAsServiceType(draft.event_type)) {
    throw new UnprocessableError(
      `${which} event_type '${draft.event_type}' is one the service writes itself, or reads as one (${SERVICE_EVENT_TYPES.join(', ')}): a caller's event takes another, so that a reader can rely on these meaning what the service recorded`,
    );
  }
}

/** The event types only the service writes (shared/ledger/event-types.ts): refused in any caller's event. */
const SERVICE_EVENT_TYPES: readonly string[] = Object.values(SERVICE_EVENT);
/** One character a reader does not see: a control, a format (zero-width, a direction mark), a line or paragraph separator. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
/** A space at either end of an id or a type, which a reader does not see either. */
const SPACE_AT_ENDS = /^\s|\s$/u;
/** The viramas of the Brahmic scripts most written (Devanagari to Sinhala, Myanmar, Khmer), after which a joiner shapes a conjunct. */
const VIRAMA = /[\u094D\u09CD\u0A4D\u0ACD\u0B4D\u0BCD\u0C4D\u0CCD\u0D4D\u0DCA\u1039\u17D2]/u;
const JOINING_SCRIPT = /[\p{Script=Arabic}\p{Script=Syriac}]/u;
const PICTOGRAPH = /\p{Extended_Pictographic}/u;
/** An emoji's presentation selector or skin tone, which may stand between a pictograph and a joiner. */
const EMOJI_MODIFIER = /[\uFE0F\u{1F3FB}-\u{1F3FF}]/u;
/** The subdivision flags Unicode recommends (England, Scotland, Wales): 🏴, tag letters, the cancel tag. */
const FLAG_SEQUENCE = /\u{1F3F4}(?:\u{E0067}\u{E0062}(?:\u{E0065}\u{E006E}\u{E0067}|\u{E0073}\u{E0063}\u{E0074}|\u{E0077}\u{E006C}\u{E0073}))\u{E007F}/gu;

/**
 * Whether an entity id holds what a reader does not see, but for what words and emoji need (a review of 2026-12-07):
 * a zero-width joiner or non-joiner after a virama (a conjunct, `क्‍ष`), a non-joiner between two Arabic or Syriac
 * letters (Persian `می‌خواهم`), a joiner between two pictographs (`👨‍👩‍👧`), and the tags of the three subdivision flags.
 * Anywhere else (`pkg-1\u200d7`, `за\u200dказ`, any other run of tags) it only hides a difference, as every other
 * control or format does; and so does a space at either end. A space inside an id (`order 17`) is seen.
 */
function unseenInEntityId(id: string): boolean {
  if (SPACE_AT_ENDS.test(id)) return true;
  const chars = [...id.replace(FLAG_SEQUENCE, '\u{1F3F4}')];
  return chars.some((c, i) => {
    if (!INVISIBLE.test(c)) return false;
    const before = chars[i - 1] ?? '';
    const after = chars[i + 1] ?? '';
    if (c === '\u200c' || c === '\u200d') {
      if (VIRAMA.test(before) && after !== '' && !INVISIBLE.test(after)) return false;
      if (c === '\u200c') return !(JOINING_SCRIPT.test(before) && JOINING_SCRIPT.test(after));
      const pictograph = PICTOGRAPH.test(before) || (EMOJI_MODIFIER.test(before) && PICTOGRAPH.test(chars[i - 2] ?? ''));
      return !(pictograph && PICTOGRAPH.test(after));
    }
    return true;
  });
}

/**
 * What a type reads as: its letters and digits, case, compatibility forms and accents folded (NFKD without its marks,
 * then NFKC): `ërâsûrë` reads as erasure (a review of 2026-12-07).
 */
const skeleton = (type: string): string[] => [
  ...type
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, ''),
];
const SERVICE_SKELETONS = SERVICE_EVENT_TYPES.map(skeleton);
/**
 * Letters drawn like Latin ones that Unicode's confusables (look-alikes.ts, which holds the Cyrillic, Greek and
 * Armenian ones the red team used: `ѕub_сhаin_proof`, `օrgaոizatiօn_left`) do not map to them, by the lowercase form
 * skeleton() leaves, with each Latin letter they may read as: `η` reads as n, and as h for `Η`; NKo `ߋ`; the small
 * capitals (`ᴇrasսrᴇ`, red team 2026-12-07).
 */
const LOOKS_LATIN: Readonly<Record<string, string>> = {
  η: 'nh',
  ȷ: 'j',
  ߋ: 'o',
  ᴀ: 'a',
  ʙ: 'b',
  ᴅ: 'd',
  ᴇ: 'e',
  ɢ: 'g',
  ʜ: 'h',
  ᴊ: 'j',
  ᴋ: 'k',
  ʟ: 'l',
  ᴍ: 'm',
  ɴ: 'n',
  ᴘ: 'p',
  ᴛ: 't',
};
/**
 * Whether a type is, or reads as, one of the service's: the same letters and digits whatever the case, separators or
 * compatibility forms (`Organization-Left`, `organization left`, `organization\u2010left`), letters drawn like the
 * Latin ones they stand for (LOOKS_LATIN: `оrgаnizаtiоn_lеft` in Cyrillic; and Unicode's confusables, look-alikes.ts:
 * Lisu, Cherokee, Canadian syllabics… wrote whole service types, a review of 2026-12-07), and others from outside
 * ASCII (letters of neither kind): up to two of them, or any number while the letters that match their places are at
 * least as many (three Armenian letters in `organization_left` had passed the rule of two, red team 2026-12-07).
 * An ASCII letter out of its place, and a word of another script, are not one of them. Letters Unicode does not
 * list as confusable, in a type of a script written wholly in them, are: no rule of letters catches every drawing.
 */
function readsAsServiceType(type: string): boolean {
  const letters = skeleton(type);
  return SERVICE_SKELETONS.some((service) => {
    if (service.length !== letters.length) return false;
    let swapped = 0;
    let kept = 0;
    for (const [i, c] of letters.entries()) {
      if (c === service[i] || readsAs(c).includes(service[i]!)) {
        kept += 1;
        continue;
      }
      if (c <= '\x7f') return false;
      swapped += 1;
    }
    return swapped <= 2 || kept >= swapped;
  });
}

/** The Latin letters a character outside ASCII may read as: LOOKS_LATIN's, and Unicode's confusables' (look-alikes.ts). */
const READS_AS = (() => {
  const map = new Map<string, string>(Object.entries(LOOKS_LATIN));
  for (const [letter, sources] of Object.entries(LOOK_ALIKES)) {
    for (const c of sources) map.set(c, (map.get(c) ?? '') + letter);
  }
  return map;
})();
const readsAs = (c: string) => READS_AS.get(c) ?? '';

/** Validates a request body into an EventDraft, or throws the contract's 422. */
export function parseEventRequest(body: unknown): EventDraft {
  return draftOf(parseInput(eventRequestSchema, body, 'body'));
}

/** Validates a batch body into EventDrafts in order, or throws the contract's 422 naming the event. */
export function parseEventBatch(body: unknown): EventDraft[] {
  return parseInput(eventBatchSchema, body, 'body').events.map(draftOf);
}

/** An event request, already checked by `eventRequestSchema`, as the draft the ledger appends. */
export function draftOf(input: z.infer<typeof eventRequestSchema>): EventDraft {
  const offchain = Boolean(input.details_cid);
  const draft: EventDraft = {
    entity_id: input.entity_id,
    event_type: (input.event_type ?? input.event)!,
    details: offchain ? {} : (input.details ?? {}),
    details_cid: input.details_cid ?? null,
    details_nonce: input.details_nonce ?? null,
    details_metadata: input.details_metadata ?? null,
    is_offchain: offchain,
    ...(input.subject_id !== undefined ? { subject_id: input.subject_id } : {}),
  };
  try {
    canonicalJson(draft);
  } catch (error) {
    // e.g. a lone UTF-16 surrogate from a "\ud800" escape: JSON allows it, canonical JSON cannot hash it.
    throw new UnprocessableError(`The event cannot be hashed: ${(error as Error).message}`);
  }
  return draft;
}
