/**
 * What the business group accepts, as zod schemas: the routes parse requests with them (a failure is the
 * 422 of docs/rules.md, "Errors"), and the domain takes what they produce.
 */
import semver from 'semver';
import * as z from 'zod';
import { ORG_ID_PATTERN, ORG_ID_RULE } from '../access/policy.ts';
import { MAX_ATOMIC_BLOCKS } from '../ledger/appender.ts';
import { CHANNEL_CHAIN_PREFIX } from '../ledger/names.ts';
import { ENTITY_ID_MAX, EVENT_TYPE_MAX, entityIdSchema, eventTypeSchema } from '../ledger/events.ts';
import { SUBJECT_ID, SUBJECT_ID_RULE } from '../ledger/subject-port.ts';
import { isDotSegment, isWellFormedJson, isWellFormedText, segmentId, WELL_FORMED_RULE } from '../validation.ts';

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** A contract's id: a path segment of its routes. */
const CONTRACT_ID = segmentId(128, 'A-Za-z0-9_.-', 'A-Z a-z 0-9 _ . -');
/** The longest channel name whose chain name, `channel-<name>`, is still a chain name. */
export const MAX_CHANNEL_NAME = 64 - CHANNEL_CHAIN_PREFIX.length;
export const MAX_INLINE_SOURCE_BYTES = 200_000;
/** A contract's emits commit in one transaction, all or none, as a batch does. */
export const MAX_EMITS = MAX_ATOMIC_BLOCKS;

export const organizationInput = z.object({
  org_id: z.string().regex(ORG_ID_PATTERN, ORG_ID_RULE),
  name: z.string().min(1).max(256).refine(isWellFormedText, WELL_FORMED_RULE),
  public_key: z.string().min(1).max(4096).nullish(),
});

export const channelInput = z.object({ name: z.string().min(1).max(256) });
export const memberInput = z.object({ org_id: z.string().regex(ORG_ID_PATTERN, ORG_ID_RULE) });
export const collectionInput = z.object({ collection: z.string().regex(NAME, 'must be 1-64 of A-Z a-z 0-9 _ -') });

export const privateDataInput = z
  .object({
    channel: z.string().min(1).max(64),
    collection: z.string().min(1).max(64),
    // The key is the stored value's DynamoDB sort key: at most 1,024 bytes, whatever its characters, but a path segment
    // of its read's route (never `.` or `..`).
    key: z
      .string()
      .min(1)
      .max(512)
      .refine(isWellFormedText, WELL_FORMED_RULE)
      .refine((key) => Buffer.byteLength(key) <= 1024, 'must be at most 1024 bytes in UTF-8')
      .refine((key) => !isDotSegment(key), 'must not be . or .. (a path segment no URL can name)'),
    value: z
      .string()
      .max(5 * 1024 * 1024)
      .refine(isWellFormedText, WELL_FORMED_RULE)
      .optional(),
    value_cid: z.string().min(1).max(256).optional(),
    value_nonce: z
      .string()
      .regex(/^[0-9a-f]{24}$/, 'must be 24 hex characters')
      .nullish(),
    event_metadata: z.record(z.string(), z.unknown()).refine(isWellFormedJson, WELL_FORMED_RULE).default({}),
    /** The value is personal data of this data subject: sealed under its key, erasable (docs/personal-data.md). */
    subject_id: z.string().regex(SUBJECT_ID, `must be ${SUBJECT_ID_RULE}`).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.subject_id !== undefined && v.value_cid !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['value_cid'], message: "A data subject's value is sent inline: the service seals it under the subject's key" });
    }
    // What the channel's chain records of the write: its entity id and type keep the event's rules.
    const fields = [
      ['entity_id', entityIdSchema, ENTITY_ID_MAX],
      ['event_type', eventTypeSchema, EVENT_TYPE_MAX],
    ] as const;
    for (const [field, schema, max] of fields) {
      const given = v.event_metadata[field];
      if (typeof given === 'string' && given !== '' && !schema.safeParse(given).success) {
        ctx.addIssue({ code: 'custom', path: ['event_metadata', field], message: `must be at most ${max} characters` });
      }
    }
    if ((v.value === undefined) === (v.value_cid === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'Send exactly one of value and value_cid' });
    }
    if (v.value_cid !== undefined && !v.value_nonce) {
      ctx.addIssue({ code: 'invalid_type', expected: 'string', input: undefined, path: ['value_nonce'], message: 'Required with value_cid' });
    }
  });

export const contractInput = z
  .object({
    contract_id: z.string().regex(CONTRACT_ID.pattern, `must be ${CONTRACT_ID.rule}`),
    version: z.string().refine((v) => semver.valid(v) === v, 'must be a semantic version such as 1.2.0'),
    implementation: z.string().min(1).max(MAX_INLINE_SOURCE_BYTES).refine(isWellFormedText, WELL_FORMED_RULE).nullish(),
    implementation_cid: z.string().min(1).max(256).nullish(),
    implementation_nonce: z
      .string()
      .regex(/^[0-9a-f]{24}$/, 'must be 24 hex characters')
      .nullish(),
    metadata: z.record(z.string(), z.unknown()).refine(isWellFormedJson, WELL_FORMED_RULE).default({}),
  })
  .superRefine((v, ctx) => {
    if (!v.implementation === !v.implementation_cid) {
      ctx.addIssue({ code: 'custom', path: ['implementation'], message: 'Send exactly one of implementation and implementation_cid' });
    }
    if (v.implementation_cid && !v.implementation_nonce) {
      ctx.addIssue({ code: 'invalid_type', expected: 'string', input: undefined, path: ['implementation_nonce'], message: 'Required with implementation_cid' });
    }
  });

export const executeInput = z.object({
  contract_id: z.string().regex(CONTRACT_ID.pattern),
  version: z
    .string()
    .refine((v) => semver.valid(v) === v, 'must be a semantic version')
    .optional(),
  event: z.object({
    entity_id: z.string().min(1).max(256),
    event: z.string().min(1).max(128),
    details: z.record(z.string(), z.unknown()).default({}),
  }),
  context: z
    .object({ chain: z.string().min(1).max(64).optional() })
    .loose()
    .default({}),
});
