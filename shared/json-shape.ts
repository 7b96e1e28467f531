/**
 * The shape every JSON value the service takes in must keep, whoever sends it: a request's body (shared/http/json-body.ts)
 * or the events a contract emits (shared/business/contracts.ts).
 */
import { ValidationError } from './errors.ts';
import { isWellFormedText, WELL_FORMED_RULE } from './validation.ts';

/** Deepest nesting of arrays and objects a body (or what a contract emits) may have: hashing and validation walk it recursively. */
export const MAX_BODY_DEPTH = 64;

/**
 * Refuses, before anything walks the body recursively, a body nested deeper than MAX_BODY_DEPTH and an
 * object key `__proto__`: JSON.parse keeps it as data, but every later copy (validation, spreading)
 * would turn it into the object's prototype and drop it, changing what the client signed or hashed.
 * `constructor` and `prototype` stay ordinary keys. And a string or key with a lone surrogate: JSON's escapes carry
 * one, but UTF-8 cannot (stored, it reads back as U+FFFD) nor can the canonical JSON a block or a contract's input is
 * hashed in (a contract run given one in its event, a 500 for any writer, red team 2026-12-07). Iterative: a deep
 * body cannot overflow the stack here.
 */
export function checkShape(value: unknown, root: (string | number)[] = ['body'], what = 'The body'): void {
  // Each entry names its parent and key, not a path of its own: a path copied for every element made a 2.6 MB body
  // take 1.9 s here (red team). The path of the offending key is made only when one is refused.
  type Entry = { value: unknown; depth: number; parent: Entry | undefined; key: string | number };
  const pathOf = (entry: Entry | undefined): (string | number)[] => {
    const keys: (string | number)[] = [];
    for (let e = entry; e?.parent !== undefined; e = e.parent) keys.push(e.key);
    return [...root, ...keys.reverse().slice(0, Math.max(0, 8 - root.length))];
  };
  /** A string value's path, or, for a key, its object's (the key itself is not echoed: it is what cannot be written). */
  const illFormed = (loc: (string | number)[], what: string) => ValidationError.single(loc, `${what} ${WELL_FORMED_RULE}`);
  if (typeof value === 'string' && !isWellFormedText(value)) throw illFormed(root, 'It');
  const stack: Entry[] = [{ value, depth: 0, parent: undefined, key: '' }];
  while (stack.length > 0) {
    const entry = stack.pop()!;
    const { value: current, depth } = entry;
    if (current === null || typeof current !== 'object') continue;
    if (depth + 1 > MAX_BODY_DEPTH) {
      throw ValidationError.single(root, `${what} is nested deeper than ${MAX_BODY_DEPTH} levels of arrays and objects`);
    }
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i += 1) {
        const item: unknown = current[i];
        if (item !== null && typeof item === 'object') stack.push({ value: item, depth: depth + 1, parent: entry, key: i });
        else if (typeof item === 'string' && !isWellFormedText(item)) throw illFormed([...pathOf(entry), i], 'It');
      }
      continue;
    }
    for (const key of Object.keys(current)) {
      if (key === '__proto__') throw ValidationError.single([...pathOf(entry), key], "A key named '__proto__' is not accepted: rename it");
      if (!isWellFormedText(key)) throw illFormed(pathOf(entry), 'Each key');
      const item = (current as Record<string, unknown>)[key];
      if (item !== null && typeof item === 'object') stack.push({ value: item, depth: depth + 1, parent: entry, key });
      else if (typeof item === 'string' && !isWellFormedText(item)) throw illFormed([...pathOf(entry), key], 'It');
    }
  }
}
