/**
 * `npm run docs:authorization`: writes the matrix of test/authorization/matrix.ts into
 * docs/authorization.md, between its markers. The authorization test fails while the two differ.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MATRIX_END, MATRIX_START, renderMatrix } from './matrix.ts';

export const DOC_PATH = new URL('../../docs/authorization.md', import.meta.url).pathname;

/** The document with its matrix section replaced by the current rendering. */
export function withCurrentMatrix(document: string): string {
  const start = document.indexOf(MATRIX_START);
  const end = document.indexOf(MATRIX_END);
  if (start < 0 || end < start) throw new Error(`${DOC_PATH} has no matrix markers`);
  return `${document.slice(0, start + MATRIX_START.length)}\n${renderMatrix()}${document.slice(end)}`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const before = readFileSync(DOC_PATH, 'utf8');
  const after = withCurrentMatrix(before);
  if (after !== before) writeFileSync(DOC_PATH, after);
  process.stdout.write(after === before ? 'docs/authorization.md is current\n' : 'docs/authorization.md updated\n');
}
