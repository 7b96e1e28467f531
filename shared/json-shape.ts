/**
 * The shape every JSON value the service takes in must keep, whoever sends it: a request's body (shared/http/json-body.ts)
 * or the events a contract emits (shared/business/contracts.ts).
 */
import { ValidationError } from './errors.ts';

/** Deepest nesting of arrays and objects a body (or what a contract emits) may have: hashing and validation walk it recursively. */
export const MAX_BODY_DEPTH = 64;

/**
 * Refuses, before anything walks the body recursively, a body nested deeper than MAX_BODY_DEPTH and an
 * object key `__proto__`: JSON.parse keeps it as data, but every later copy (validation, spreading)
 * would turn it into the object's prototype and drop it, changing what the client signed or hashed.
 * `constructor` and `prototype` stay ordinary keys. Iterative: a deep body cannot overflow the stack here.
 */
export function checkShape(value: unknown, root: (string | number)[] = ['body'], what = 'The body'): void {
  const stack: { value: unknown; depth: number; path: (string | number)[] }[] = [{ value, depth: 0, path: root }];
  while (stack.length > 0) {
    const { value: current, depth, path } = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth + 1 > MAX_BODY_DEPTH) {
      throw ValidationError.single(root, `${what} is nested deeper than ${MAX_BODY_DEPTH} levels of arrays and objects`);
    }
    if (Array.isArray(current)) {
      current.forEach((item, i) => stack.push({ value: item, depth: depth + 1, path: path.length < 8 ? [...path, i] : path }));
      continue;
    }
    for (const key of Object.keys(current)) {
      if (key === '__proto__') throw ValidationError.single([...path, key], "A key named '__proto__' is not accepted: rename it");
      stack.push({ value: (current as Record<string, unknown>)[key], depth: depth + 1, path: path.length < 8 ? [...path, key] : path });
    }
  }
}
