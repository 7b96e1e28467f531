/**
 * The manual as steps a reader runs, in order (test/integration/doc-examples.test.ts walks them).
 *
 * A ```bash block is read line by line: every line that is not a comment is a step (with `\` continuations, or a
 * quote still open, joined). The `# …` lines right below a command, or a comment on its own line that starts
 * with a status or with JSON, are the answer it shows: an optional status (`201 {…}`), then JSON in which `…`
 * may stand for members left out (`{"index":1,…}`), items left out (`[…]`) or the varying part of a string
 * (`"94650293…"`). Comments that are prose are left alone.
 *
 * A ```ts or ```js block whose first line says how to run it (`// taste.mts: run it with npx tsx taste.mts`) is a
 * program: saved under that name and run with that command; the `// …` lines that end it are what it prints.
 */
import assert from 'node:assert/strict';

export interface DocStep {
  /** Where it is written, for messages: `docs/api.md:19`. */
  where: string;
  /** The shell text, continuations joined (for a program: the command that runs it). */
  command: string;
  /** What the manual shows it answering, if it shows anything. */
  expected?: { status?: number; json: unknown; text: string };
  /** A program: its file name and code, and the lines it is shown printing. */
  program?: { file: string; code: string; prints: string[] };
}

const ELIDED = '__elided__';

/** The line that makes a ```ts or ```js block a program: `// <file>: run it with <command>`. */
const RUN_LINE = /^\/\/ (\S+\.m?[jt]s): run it with (.+)$/;

/** The steps of a Markdown page, in order: its bash lines and its programs. */
export function docSteps(page: string, markdown: string): DocStep[] {
  const steps: DocStep[] = [];
  const lines = markdown.split('\n');
  let fence: string | undefined;
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i]!;
    if (line.startsWith('```')) {
      fence = fence === undefined ? line.slice(3).trim() : undefined;
      if (fence === 'ts' || fence === 'js') {
        const run = RUN_LINE.exec(lines[i + 1] ?? '');
        const close = lines.indexOf('```', i + 1);
        if (run && close > i) {
          const code = lines.slice(i + 1, close);
          const prints: string[] = [];
          for (let j = code.length - 1; j >= 0 && code[j]!.startsWith('// '); j -= 1) prints.unshift(code[j]!.slice(3));
          steps.push({ where: `${page}:${i + 2}`, command: run[2]!.trim(), program: { file: run[1]!, code: `${code.join('\n')}\n`, prints } });
        }
        i = Math.max(close, i);
        fence = undefined;
      }
      continue;
    }
    if (fence !== 'bash' || line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const where = `${page}:${i + 1}`;
    let command = line;
    // Continued: a trailing backslash, or a quote still open at the end of the line.
    for (;;) {
      if (command.trimEnd().endsWith('\\') && i + 1 < lines.length) command = `${command.trimEnd().slice(0, -1)} ${lines[++i]!.trim()}`;
      else if (openQuote(command) && i + 1 < lines.length) command = `${command}\n${lines[++i]!}`;
      else break;
    }
    // A trailing comment: an answer when it starts like one, else prose.
    let trailing: string | undefined;
    const hash = commentStart(command);
    if (hash >= 0) {
      trailing = command.slice(hash + 1).trim();
      command = command.slice(0, hash).trimEnd();
    }
    const shown: string[] = [];
    while (i + 1 < lines.length && lines[i + 1]!.startsWith('# ')) shown.push(lines[++i]!.slice(2));
    const text = (shown.length ? shown.join('\n') : (trailing ?? '')).trim();
    const step: DocStep = { where, command };
    const answer = /^(?:(\d{3})(?:\s|$))?\s*([[{][\s\S]*)?$/.exec(text);
    if (text && answer && (answer[1] || answer[2])) {
      // What follows the JSON (`— then send …`, `(null: the admins …)`) is prose.
      const body = answer[2]?.slice(0, jsonEnd(answer[2]));
      step.expected = { status: answer[1] ? Number(answer[1]) : undefined, json: body ? parseShown(body, where) : undefined, text };
    }
    steps.push(step);
  }
  return steps;
}

/** Whether a line a program printed is the one the manual shows (`…` stands for any text). */
export function printedAs(line: string, shown: string): boolean {
  const pattern = shown
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${pattern}$`).test(line);
}

/** Where the JSON value that opens `text` ends (its closing bracket matched, strings skipped). */
function jsonEnd(text: string): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth += 1;
    else if ((c === '}' || c === ']') && --depth === 0) return i + 1;
  }
  return text.length;
}

/** Whether a quote is still open at the end of a shell line. */
function openQuote(line: string): boolean {
  let quote: string | null = null;
  for (const c of line) {
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#') break;
  }
  return quote !== null;
}

/** Where a shell comment starts on a line (a `#` after whitespace, outside quotes), or -1. */
function commentStart(line: string): number {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && /\s/.test(line[i - 1] ?? ' ')) return i;
  }
  return -1;
}

/** The JSON the manual shows, with each `…` outside a string turned into a marker the comparison knows. */
export function parseShown(text: string, where = ''): unknown {
  let out = '';
  let inString = false;
  const open: string[] = [];
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    if (c === '{' || c === '[') open.push(c);
    if (c === '}' || c === ']') open.pop();
    if (c === '…') {
      out += open[open.length - 1] === '{' ? `"${ELIDED}":true` : `"${ELIDED}"`;
      continue;
    }
    out += c;
  }
  try {
    return JSON.parse(out);
  } catch (error) {
    throw new Error(`${where}: the answer shown is not JSON (with … for what is left out): ${(error as Error).message}\n${text}`);
  }
}

/** Strings that differ on every run: hashes, ids made of randomness, times, CIDs. */
const VOLATILE = [
  /^[0-9a-f]{64}$/,
  /^[0-9a-f]{24}$/,
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/,
  /^node-[0-9a-f]{16}$/,
  /^(Qm|bafy)[1-9A-Za-z]{20,}$/,
];
/** Members whose values differ on every run (times, durations). */
const VOLATILE_MEMBERS = new Set(['timestamp', 'created_at', 'registered_at', 'duration_ms', 'latency_ms', 'uptime', 'uptime_seconds']);

/**
 * Asserts that `actual` has the shape the manual shows: the same members (more where it shows `…`), the
 * same lengths (any where it shows `[…]`), and the same values, but for what varies by run (hashes,
 * times, random ids, and any string the manual cuts with `…`), of which only the type must match.
 */
export function assertShape(actual: unknown, shown: unknown, path: string): void {
  if (Array.isArray(shown)) {
    assert.ok(Array.isArray(actual), `${path}: an array, got ${JSON.stringify(actual)}`);
    if (shown.includes(ELIDED)) return;
    assert.equal(actual.length, shown.length, `${path}: ${shown.length} items, got ${actual.length}: ${JSON.stringify(actual)}`);
    shown.forEach((item, i) => assertShape(actual[i], item, `${path}[${i}]`));
    return;
  }
  if (shown !== null && typeof shown === 'object') {
    assert.ok(actual !== null && typeof actual === 'object' && !Array.isArray(actual), `${path}: an object, got ${JSON.stringify(actual)}`);
    const { [ELIDED]: open, ...members } = shown as Record<string, unknown>;
    const got = actual as Record<string, unknown>;
    if (!open) assert.deepEqual(Object.keys(got).sort(), Object.keys(members).sort(), `${path}: the members shown`);
    for (const [key, value] of Object.entries(members)) {
      assert.ok(key in got, `${path}.${key}: missing from ${JSON.stringify(actual)}`);
      if (VOLATILE_MEMBERS.has(key) && typeof value !== 'object') assert.equal(typeof got[key], typeof value, `${path}.${key}: a ${typeof value}`);
      else assertShape(got[key], value, `${path}.${key}`);
    }
    return;
  }
  if (typeof shown === 'string' && (shown.includes('…') || VOLATILE.some((pattern) => pattern.test(shown)))) {
    assert.equal(typeof actual, 'string', `${path}: a string, got ${JSON.stringify(actual)}`);
    const prefix = shown.slice(0, shown.indexOf('…'));
    // A cut string keeps its fixed part (`"orders_…"`, `"Qm…"`), unless what is cut is a hash or an id.
    if (shown.includes('…') && !/^[0-9a-f-]{6,}$/.test(prefix) && !/^node-/.test(prefix)) {
      assert.ok((actual as string).startsWith(prefix), `${path}: starts with ${JSON.stringify(prefix)}, got ${JSON.stringify(actual)}`);
    }
    return;
  }
  assert.deepEqual(actual, shown, `${path}: the value shown`);
}
