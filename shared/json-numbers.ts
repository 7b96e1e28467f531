/**
 * JSON numbers are doubles (RFC 8259 leaves their range to the reader; JavaScript reads binary64): a number whose
 * text says more than the double it reads as would be kept as another number, silently. The service refuses such a
 * number where it takes JSON in (a request's body, GraphQL's variables and literals), rather than store one nobody sent.
 */

/**
 * Whether a number read from `source` is kept as its text says: finite, not a non-zero number read as 0 (`1e-400`),
 * and an integer written without an exponent (`…993`, `…993.0`) read as itself: `9007199254740993` reads as …992
 * and is not kept; digits a double prints itself with (`JSON.stringify`'s `12345678901234567000`) or holds exactly
 * (`9007199254740994`) are. Fractions (`0.1`) and numbers written with an exponent are doubles by their writer's choice.
 */
export function keptExactly(value: number, source: string): boolean {
  if (!Number.isFinite(value)) return false;
  const [digits, exponent] = source.split(/[eE]/) as [string, string | undefined];
  if (exponent === undefined) {
    const integer = /^(-?\d+)(?:\.0+)?$/.exec(digits)?.[1];
    if (integer !== undefined && !Number.isSafeInteger(value)) return integer === String(value) || BigInt(integer) === BigInt(value);
  }
  return value !== 0 || !/[1-9]/.test(digits);
}

/** Text that may hold a number a double cannot keep: 16 digits in a row, or an exponent of 3 digits. */
const MAYBE_INEXACT = /\d{16}|[eE][+-]?\d{3}/;
/** JSON's strings (a key when a colon follows) and numbers, in order; anything else between them is skipped. */
const TOKENS = /"(?:[^"\\]|\\.)*"(\s*:)?|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/** The first number of a JSON text (already parsed: valid) that a double does not keep, with the key it is under. */
export function inexactNumber(text: string): { key: string | undefined; source: string } | undefined {
  if (!MAYBE_INEXACT.test(text)) return undefined;
  let key: string | undefined;
  for (const match of text.matchAll(TOKENS)) {
    const token = match[0];
    if (token.startsWith('"')) {
      if (match[1] !== undefined) key = JSON.parse(token.slice(0, token.lastIndexOf('"') + 1)) as string;
      continue;
    }
    if (!keptExactly(Number(token), token)) return { key, source: token };
  }
  return undefined;
}

/** What the refusal says: where, the number (cut short), and what to do. */
export function inexactMessage({ key, source }: { key: string | undefined; source: string }, where = 'in the body'): string {
  const shown = source.length > 40 ? `${source.slice(0, 40)}…` : source;
  return `The number ${shown}${key === undefined ? '' : ` at key '${key}'`} ${where} cannot be kept exactly (a JSON number is a double: integers past ±${Number.MAX_SAFE_INTEGER} lose digits): send it as a string`;
}
