/**
 * zod → docs/rules.md, "Errors": validation failures become a 422 with FastAPI-style `detail` entries
 * (`loc`, `msg`, `type`), so clients of the original service keep working.
 */
import * as z from 'zod';
import { ValidationError, type ValidationIssue } from './errors.ts';

export type Location = 'body' | 'query' | 'path';

/**
 * Text that UTF-8 can carry as it is: no lone surrogate. One would be stored as U+FFFD (a value read back otherwise than
 * written, a key that no URL names), as the ledger's hashing refuses an event's (red team).
 */
export const WELL_FORMED_RULE = 'must be well-formed Unicode (no lone surrogate)';
export const isWellFormedText = (text: string) => text.isWellFormed();

/** Whether every string in a JSON value, its object keys too, is well-formed (isWellFormedText). */
export function isWellFormedJson(value: unknown): boolean {
  if (typeof value === 'string') return isWellFormedText(value);
  if (Array.isArray(value)) return value.every(isWellFormedJson);
  if (value !== null && typeof value === 'object') return Object.entries(value).every(([k, v]) => isWellFormedText(k) && isWellFormedJson(v));
  return true;
}

/**
 * Whether a value is `.` or `..`: URLs resolve those path segments away (percent-encoded too), so no route could name
 * an id or key so spelt (an organization `..` made a channel's member could never be taken out of it).
 */
export function isDotSegment(value: string): boolean {
  return value === '.' || value === '..';
}

/**
 * An id that is a path segment of its routes: 1 to `max` of `characters` (a regex class's content, shown to callers as
 * `shown`), never `.` or `..` (isDotSegment). Its pattern, and its rule as errors say it.
 */
export function segmentId(max: number, characters: string, shown: string): { pattern: RegExp; rule: string } {
  return { pattern: new RegExp(`^(?!\\.\\.?$)[${characters}]{1,${max}}$`), rule: `1-${max} of ${shown}, and not . or ..` };
}

const TYPE_NAMES: Record<string, string> = {
  string: 'string_type',
  number: 'float_type',
  int: 'int_type',
  boolean: 'bool_type',
  object: 'dict_type',
  record: 'dict_type',
  array: 'list_type',
};

function issueType(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'missing' : (TYPE_NAMES[issue.expected] ?? `${issue.expected}_type`);
    case 'too_small':
      return issue.origin === 'string' ? 'string_too_short' : issue.origin === 'array' ? 'too_short' : 'greater_than_equal';
    case 'too_big':
      return issue.origin === 'string' ? 'string_too_long' : issue.origin === 'array' ? 'too_long' : 'less_than_equal';
    case 'invalid_format':
      return 'string_pattern_mismatch';
    case 'invalid_value':
      return 'enum';
    case 'unrecognized_keys':
      return 'extra_forbidden';
    default:
      return 'value_error';
  }
}

/** The FastAPI-style entries of a zod error, located under `where`. */
export function toValidationIssues(error: z.ZodError, where: Location): ValidationIssue[] {
  return error.issues.map((issue) => {
    const missing = issue.code === 'invalid_type' && issue.input === undefined;
    return {
      loc: [where, ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))],
      msg: missing ? 'Required' : issue.message,
      type: issueType(issue),
    };
  });
}

/** Parses `value` with `schema` or throws the contract's 422. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: Location): z.output<S> {
  // reportInput: zod v4 leaves `issue.input` out otherwise, and it tells a missing field from a wrong one.
  const result = schema.safeParse(value, { reportInput: true });
  if (!result.success) throw new ValidationError(toValidationIssues(result.error, where));
  return result.data;
}

/** A required query-string integer within bounds; "abc" or "1.5" is a 422. */
export function queryInteger(min: number, max?: number) {
  let number = z.number().int().min(min);
  if (max !== undefined) number = number.max(max);
  return z
    .string()
    .regex(/^-?\d{1,15}$/, 'Input should be a valid integer')
    .transform(Number)
    .pipe(number);
}

/** A query-string integer with a default and bounds; "abc" or "1.5" is a 422, not a silent default. */
export function queryInt(defaultValue: number, min: number, max?: number) {
  return queryInteger(min, max)
    .optional()
    .transform((v) => v ?? defaultValue);
}

/** A query-string boolean: true/false/1/0/yes/no, any case. */
export function queryBool(defaultValue: boolean) {
  return z
    .string()
    .transform((v) => v.toLowerCase())
    .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'Input should be a valid boolean' }))
    .transform((v) => v === 'true' || v === '1' || v === 'yes')
    .optional()
    .transform((v) => v ?? defaultValue);
}
