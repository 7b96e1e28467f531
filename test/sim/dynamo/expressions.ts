/**
 * DynamoDB's expression languages, for the simulated DynamoDB (test/sim/dynamo/engine.ts): condition and
 * filter expressions, key conditions, update expressions and projections, parsed once and evaluated on items
 * in DynamoDB's wire format (AttributeValue). The semantics are the Developer Guide's ("Condition and filter
 * expressions, operators, and functions"; "Update expressions"):
 *
 * - a comparison of operands of different types, or with a missing attribute, is false (`<>` too: DynamoDB
 *   answers false, not true, when an operand is missing);
 * - strings compare by their UTF-8 bytes, numbers by value, binaries by bytes;
 * - `attribute_exists`, `attribute_not_exists`, `begins_with`, `contains`, `size`, `BETWEEN`, `IN`, `AND`,
 *   `OR`, `NOT`, parentheses;
 * - SET of a value, `a + b`, `a - b`, `if_not_exists(path, value)`, `list_append(a, b)`; REMOVE; ADD to a
 *   number or a set; DELETE from a set.
 *
 * Only top-level attributes are supported as paths (the service uses no nested path); a nested path, an
 * unknown function or a placeholder without a value is refused as DynamoDB refuses it, with a
 * ValidationException naming it, so that the simulation never silently differs from the real service.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

export type Item = Record<string, AttributeValue>;

/** A binary value's bytes: on the wire (JSON) a B is base64; in the SDK's own objects a Uint8Array. */
export function bytesOf(value: unknown): Buffer {
  return typeof value === 'string' ? Buffer.from(value, 'base64') : Buffer.from(value as Uint8Array);
}

/** A request DynamoDB refuses as malformed (HTTP 400, ValidationException). */
export class ValidationException extends Error {
  override name = 'ValidationException';
}

type Token = { kind: 'name' | 'placeholder' | 'value' | 'op' | 'punct' | 'word'; text: string };

const WORDS = new Set(['AND', 'OR', 'NOT', 'BETWEEN', 'IN', 'SET', 'REMOVE', 'ADD', 'DELETE']);

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i += 1;
      continue;
    }
    const two = text.slice(i, i + 2);
    if (two === '<=' || two === '>=' || two === '<>') {
      tokens.push({ kind: 'op', text: two });
      i += 2;
      continue;
    }
    if ('=<>+-'.includes(c)) {
      tokens.push({ kind: 'op', text: c });
      i += 1;
      continue;
    }
    if ('(),'.includes(c)) {
      tokens.push({ kind: 'punct', text: c });
      i += 1;
      continue;
    }
    if (c === '.' || c === '[') throw new ValidationException(`nested attribute paths are not supported by the simulation: ${text}`);
    const match = /^[#:]?[A-Za-z0-9_]+/.exec(text.slice(i));
    if (!match) throw new ValidationException(`Invalid expression: unexpected '${c}' in ${text}`);
    const word = match[0];
    if (word.startsWith('#')) tokens.push({ kind: 'placeholder', text: word });
    else if (word.startsWith(':')) tokens.push({ kind: 'value', text: word });
    else if (WORDS.has(word.toUpperCase()) && !/^[a-z_]+\(/.test(text.slice(i))) tokens.push({ kind: 'word', text: word.toUpperCase() });
    else tokens.push({ kind: 'name', text: word });
    i += word.length;
  }
  return tokens;
}

/** What an expression refers to: an attribute (its resolved name) or an expression value. */
export type Operand =
  | { kind: 'path'; name: string }
  | { kind: 'value'; ref: string }
  | { kind: 'size'; of: Operand }
  | { kind: 'if_not_exists'; path: string; fallback: Operand }
  | { kind: 'list_append'; a: Operand; b: Operand }
  | { kind: 'arith'; op: '+' | '-'; a: Operand; b: Operand };

export type Condition =
  | { kind: 'compare'; op: '=' | '<>' | '<' | '<=' | '>' | '>='; a: Operand; b: Operand }
  | { kind: 'between'; a: Operand; low: Operand; high: Operand }
  | { kind: 'in'; a: Operand; list: Operand[] }
  | { kind: 'and' | 'or'; left: Condition; right: Condition }
  | { kind: 'not'; inner: Condition }
  | { kind: 'exists' | 'not_exists'; path: string }
  | { kind: 'begins_with' | 'contains'; a: Operand; b: Operand };

class Parser {
  at = 0;
  private readonly tokens: Token[];
  private readonly names: Record<string, string>;
  private readonly source: string;
  constructor(tokens: Token[], names: Record<string, string>, source: string) {
    this.tokens = tokens;
    this.names = names;
    this.source = source;
  }

  peek(): Token | undefined {
    return this.tokens[this.at];
  }

  next(): Token {
    const token = this.tokens[this.at++];
    if (!token) throw new ValidationException(`Invalid expression: unexpected end of ${this.source}`);
    return token;
  }

  expect(text: string): void {
    const token = this.next();
    if (token.text !== text) throw new ValidationException(`Invalid expression: expected '${text}', got '${token.text}' in ${this.source}`);
  }

  done(): boolean {
    return this.at >= this.tokens.length;
  }

  isWord(word: string): boolean {
    const t = this.peek();
    return t?.kind === 'word' && t.text === word;
  }

  path(): string {
    const token = this.next();
    if (token.kind === 'name') return token.text;
    if (token.kind === 'placeholder') {
      const name = this.names[token.text];
      if (name === undefined)
        throw new ValidationException(`An expression attribute name used in the document path is not defined; attribute name: ${token.text}`);
      return name;
    }
    throw new ValidationException(`Invalid expression: expected an attribute, got '${token.text}' in ${this.source}`);
  }

  operand(): Operand {
    const token = this.peek();
    if (!token) throw new ValidationException(`Invalid expression: unexpected end of ${this.source}`);
    if (token.kind === 'value') {
      this.at += 1;
      return { kind: 'value', ref: token.text };
    }
    if (token.kind === 'name' && this.tokens[this.at + 1]?.text === '(') {
      const fn = token.text;
      this.at += 2;
      let result: Operand;
      if (fn === 'size') result = { kind: 'size', of: this.operand() };
      else if (fn === 'if_not_exists') {
        const path = this.path();
        this.expect(',');
        result = { kind: 'if_not_exists', path, fallback: this.operand() };
      } else if (fn === 'list_append') {
        const a = this.operand();
        this.expect(',');
        result = { kind: 'list_append', a, b: this.operand() };
      } else throw new ValidationException(`Invalid expression: the function '${fn}' is not an operand in ${this.source}`);
      this.expect(')');
      return result;
    }
    return { kind: 'path', name: this.path() };
  }

  /** An update's value: an operand, or two joined by + or -. */
  updateValue(): Operand {
    const a = this.operand();
    const op = this.peek();
    if (op?.kind === 'op' && (op.text === '+' || op.text === '-')) {
      this.at += 1;
      return { kind: 'arith', op: op.text, a, b: this.operand() };
    }
    return a;
  }

  condition(): Condition {
    let left = this.conjunction();
    while (this.isWord('OR')) {
      this.at += 1;
      left = { kind: 'or', left, right: this.conjunction() };
    }
    return left;
  }

  private conjunction(): Condition {
    let left = this.negation();
    while (this.isWord('AND')) {
      this.at += 1;
      left = { kind: 'and', left, right: this.negation() };
    }
    return left;
  }

  private negation(): Condition {
    if (this.isWord('NOT')) {
      this.at += 1;
      return { kind: 'not', inner: this.negation() };
    }
    return this.primary();
  }

  private primary(): Condition {
    const token = this.peek();
    if (token?.text === '(') {
      this.at += 1;
      const inner = this.condition();
      this.expect(')');
      return inner;
    }
    if (token?.kind === 'name' && this.tokens[this.at + 1]?.text === '(' && token.text !== 'size') {
      const fn = token.text;
      this.at += 2;
      let result: Condition;
      if (fn === 'attribute_exists' || fn === 'attribute_not_exists') result = { kind: fn === 'attribute_exists' ? 'exists' : 'not_exists', path: this.path() };
      else if (fn === 'begins_with' || fn === 'contains') {
        const a = this.operand();
        this.expect(',');
        result = { kind: fn, a, b: this.operand() };
      } else throw new ValidationException(`Invalid expression: the function '${fn}' is not supported in ${this.source}`);
      this.expect(')');
      return result;
    }
    const a = this.operand();
    if (this.isWord('BETWEEN')) {
      this.at += 1;
      const low = this.operand();
      if (!this.isWord('AND')) throw new ValidationException(`Invalid expression: BETWEEN without AND in ${this.source}`);
      this.at += 1;
      return { kind: 'between', a, low, high: this.operand() };
    }
    if (this.isWord('IN')) {
      this.at += 1;
      this.expect('(');
      const list = [this.operand()];
      while (this.peek()?.text === ',') {
        this.at += 1;
        list.push(this.operand());
      }
      this.expect(')');
      return { kind: 'in', a, list };
    }
    const op = this.next();
    if (op.kind !== 'op' || op.text === '+' || op.text === '-')
      throw new ValidationException(`Invalid expression: expected a comparison, got '${op.text}' in ${this.source}`);
    return { kind: 'compare', op: op.text as '=', a, b: this.operand() };
  }
}

export function parseCondition(text: string, names: Record<string, string> = {}): Condition {
  const parser = new Parser(tokenize(text), names, text);
  const condition = parser.condition();
  if (!parser.done()) throw new ValidationException(`Invalid expression: unexpected tokens at the end of ${text}`);
  return condition;
}

export interface UpdateActions {
  set: { path: string; value: Operand }[];
  remove: string[];
  add: { path: string; value: Operand }[];
  delete: { path: string; value: Operand }[];
}

export function parseUpdate(text: string, names: Record<string, string> = {}): UpdateActions {
  const parser = new Parser(tokenize(text), names, text);
  const actions: UpdateActions = { set: [], remove: [], add: [], delete: [] };
  const seen = new Set<string>();
  const clause = (verb: string) => {
    for (;;) {
      if (verb === 'SET') {
        const path = parser.path();
        parser.expect('=');
        actions.set.push({ path, value: parser.updateValue() });
      } else if (verb === 'REMOVE') actions.remove.push(parser.path());
      else {
        const path = parser.path();
        (verb === 'ADD' ? actions.add : actions.delete).push({ path, value: parser.operand() });
      }
      const last =
        verb === 'SET' ? actions.set.at(-1)!.path : verb === 'REMOVE' ? actions.remove.at(-1)! : (verb === 'ADD' ? actions.add : actions.delete).at(-1)!.path;
      if (seen.has(last))
        throw new ValidationException(
          `Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [${last}]`,
        );
      seen.add(last);
      if (parser.peek()?.text !== ',') return;
      parser.at += 1;
    }
  };
  while (!parser.done()) {
    const token = parser.next();
    if (token.kind !== 'word' || !['SET', 'REMOVE', 'ADD', 'DELETE'].includes(token.text)) {
      throw new ValidationException(`Invalid UpdateExpression: expected SET, REMOVE, ADD or DELETE, got '${token.text}' in ${text}`);
    }
    clause(token.text);
  }
  return actions;
}

export function parseProjection(text: string, names: Record<string, string> = {}): string[] {
  return text.split(',').map((part) => {
    const p = part.trim();
    if (/[.[]/.test(p)) throw new ValidationException(`nested attribute paths are not supported by the simulation: ${text}`);
    if (p.startsWith('#')) {
      const name = names[p];
      if (name === undefined) throw new ValidationException(`An expression attribute name used in the document path is not defined; attribute name: ${p}`);
      return name;
    }
    return p;
  });
}

// ---------------------------------------------------------------------------------------------------
// Evaluation

/** The type DynamoDB compares by: S, N, B; anything else is not comparable with < and >. */
function typeOf(value: AttributeValue): string {
  return Object.keys(value).find((k) => (value as unknown as Record<string, unknown>)[k] !== undefined)!;
}

function compareScalars(a: AttributeValue, b: AttributeValue): number | undefined {
  const type = typeOf(a);
  if (type !== typeOf(b)) return undefined;
  if (type === 'N') {
    const [x, y] = [Number(a.N), Number(b.N)];
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (type === 'S') return Buffer.compare(Buffer.from(a.S!, 'utf8'), Buffer.from(b.S!, 'utf8'));
  if (type === 'B') return Buffer.compare(bytesOf(a.B), bytesOf(b.B));
  return undefined;
}

/** Deep equality of two attribute values (sets in any order). */
export function sameValue(a: AttributeValue, b: AttributeValue): boolean {
  const type = typeOf(a);
  if (type !== typeOf(b)) return false;
  if (type === 'N') return Number(a.N) === Number(b.N);
  if (type === 'B') return Buffer.compare(bytesOf(a.B), bytesOf(b.B)) === 0;
  if (type === 'SS' || type === 'NS') {
    const x = new Set((a as unknown as Record<string, string[]>)[type]);
    const y = (b as unknown as Record<string, string[]>)[type]!;
    return x.size === y.length && y.every((v) => x.has(v));
  }
  if (type === 'L') return a.L!.length === b.L!.length && a.L!.every((v, i) => sameValue(v, b.L![i]!));
  if (type === 'M') {
    const ka = Object.keys(a.M!);
    return ka.length === Object.keys(b.M!).length && ka.every((k) => b.M![k] !== undefined && sameValue(a.M![k]!, b.M![k]!));
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

export interface Scope {
  item: Item | undefined;
  values: Item;
}

function placeholderValue(ref: string, scope: Scope): AttributeValue {
  const value = scope.values[ref];
  if (value === undefined) throw new ValidationException(`An expression attribute value used in expression is not defined; attribute value: ${ref}`);
  return value;
}

export function evaluateOperand(operand: Operand, scope: Scope): AttributeValue | undefined {
  switch (operand.kind) {
    case 'path':
      return scope.item?.[operand.name];
    case 'value':
      return placeholderValue(operand.ref, scope);
    case 'size': {
      const of = evaluateOperand(operand.of, scope);
      if (!of) return undefined;
      const type = typeOf(of);
      const size =
        type === 'S'
          ? Buffer.byteLength(of.S!, 'utf8')
          : type === 'B'
            ? bytesOf(of.B).byteLength
            : type === 'L'
              ? of.L!.length
              : type === 'M'
                ? Object.keys(of.M!).length
                : ((of as unknown as Record<string, unknown[]>)[type]?.length ?? 0);
      return { N: String(size) };
    }
    case 'if_not_exists':
      return scope.item?.[operand.path] ?? evaluateOperand(operand.fallback, scope);
    case 'list_append': {
      const a = evaluateOperand(operand.a, scope);
      const b = evaluateOperand(operand.b, scope);
      if (!a?.L || !b?.L) throw new ValidationException('An operand in the update expression has an incorrect data type (list_append takes lists)');
      return { L: [...a.L, ...b.L] };
    }
    case 'arith': {
      const a = evaluateOperand(operand.a, scope);
      const b = evaluateOperand(operand.b, scope);
      if (a === undefined) throw new ValidationException('The provided expression refers to an attribute that does not exist in the item');
      if (a.N === undefined || b?.N === undefined) throw new ValidationException('An operand in the update expression has an incorrect data type');
      return { N: String(Number(a.N) + (operand.op === '+' ? 1 : -1) * Number(b.N)) };
    }
  }
}

export function evaluate(condition: Condition, scope: Scope): boolean {
  switch (condition.kind) {
    case 'and':
      return evaluate(condition.left, scope) && evaluate(condition.right, scope);
    case 'or':
      return evaluate(condition.left, scope) || evaluate(condition.right, scope);
    case 'not':
      return !evaluate(condition.inner, scope);
    case 'exists':
      return scope.item?.[condition.path] !== undefined;
    case 'not_exists':
      return scope.item?.[condition.path] === undefined;
    case 'begins_with': {
      const a = evaluateOperand(condition.a, scope);
      const b = evaluateOperand(condition.b, scope);
      if (a?.S !== undefined && b?.S !== undefined) return a.S.startsWith(b.S);
      if (a?.B !== undefined && b?.B !== undefined) return bytesOf(a.B).subarray(0, bytesOf(b.B).length).equals(bytesOf(b.B));
      return false;
    }
    case 'contains': {
      const a = evaluateOperand(condition.a, scope);
      const b = evaluateOperand(condition.b, scope);
      if (!a || !b) return false;
      if (a.S !== undefined && b.S !== undefined) return a.S.includes(b.S);
      if (a.SS && b.S !== undefined) return a.SS.includes(b.S);
      if (a.NS && b.N !== undefined) return a.NS.some((n) => Number(n) === Number(b.N));
      if (a.L) return a.L.some((v) => sameValue(v, b));
      return false;
    }
    case 'between': {
      const a = evaluateOperand(condition.a, scope);
      const low = evaluateOperand(condition.low, scope);
      const high = evaluateOperand(condition.high, scope);
      if (!a || !low || !high) return false;
      const x = compareScalars(a, low);
      const y = compareScalars(a, high);
      return x !== undefined && y !== undefined && x >= 0 && y <= 0;
    }
    case 'in': {
      const a = evaluateOperand(condition.a, scope);
      return (
        !!a &&
        condition.list.some((o) => {
          const v = evaluateOperand(o, scope);
          return !!v && sameValue(a, v);
        })
      );
    }
    case 'compare': {
      const a = evaluateOperand(condition.a, scope);
      const b = evaluateOperand(condition.b, scope);
      if (!a || !b) return false;
      if (condition.op === '=') return sameValue(a, b);
      if (condition.op === '<>') return !sameValue(a, b);
      const order = compareScalars(a, b);
      if (order === undefined) return false;
      return condition.op === '<' ? order < 0 : condition.op === '<=' ? order <= 0 : condition.op === '>' ? order > 0 : order >= 0;
    }
  }
}

/** The item after an update (a new object; `before` is not changed). */
export function applyActions(before: Item | undefined, actions: UpdateActions, values: Item): Item {
  const scope: Scope = { item: before, values };
  const after: Item = { ...(before ?? {}) };
  // Every value is computed from the item as it was before the update, as DynamoDB does.
  const sets = actions.set.map(({ path, value }) => [path, evaluateOperand(value, scope)] as const);
  for (const [path, value] of sets) {
    if (value === undefined) throw new ValidationException('The provided expression refers to an attribute that does not exist in the item');
    after[path] = value;
  }
  for (const path of actions.remove) delete after[path];
  for (const { path, value } of actions.add) {
    const v = evaluateOperand(value, scope)!;
    const current = after[path];
    if (v.N !== undefined) {
      if (current && current.N === undefined) throw new ValidationException('An operand in the update expression has an incorrect data type');
      after[path] = { N: String(Number(current?.N ?? 0) + Number(v.N)) };
    } else if (v.SS) after[path] = { SS: [...new Set([...(current?.SS ?? []), ...v.SS])] };
    else if (v.NS) after[path] = { NS: [...new Set([...(current?.NS ?? []), ...v.NS])] };
    else throw new ValidationException('ADD takes a number or a set');
  }
  for (const { path, value } of actions.delete) {
    const v = evaluateOperand(value, scope)!;
    const current = after[path];
    if (current?.SS && v.SS) {
      const left = current.SS.filter((s) => !v.SS!.includes(s));
      if (left.length) after[path] = { SS: left };
      else delete after[path];
    }
  }
  return after;
}

export function project(item: Item, names: readonly string[] | undefined): Item {
  if (!names) return item;
  return Object.fromEntries(names.filter((n) => item[n] !== undefined).map((n) => [n, item[n]!]));
}

/** Sort keys compare as their type compares (S by UTF-8 bytes, N by value, B by bytes). */
export function compareKeys(a: AttributeValue, b: AttributeValue): number {
  return compareScalars(a, b) ?? 0;
}
