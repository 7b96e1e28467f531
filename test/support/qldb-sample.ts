/**
 * `npm run qldb:sample -- DIR [--blocks N]`: writes a generated QLDB journal export into DIR (Ion text, as
 * `aws s3 cp --recursive` leaves one), with `DIR/digest.json` as `aws qldb get-digest` writes it, to try
 * `npm run import:qldb` without a QLDB ledger (docs/qldb-import.md). Made by test/support/qldb-journal.ts, whose
 * hashing the real QLDB block and the Ion Hash vectors check; not QLDB's output.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { digestFile, writeExport } from './qldb-journal.ts';

const { values, positionals } = parseArgs({ options: { blocks: { type: 'string', default: '12' } }, allowPositionals: true });
if (positionals.length !== 1 || !/^\d+$/.test(values.blocks)) {
  process.stderr.write('Usage: npm run qldb:sample -- DIR [--blocks N]\n');
  process.exit(2);
}
const dir = resolve(process.env.INIT_CWD ?? process.cwd(), positionals[0]!);
const count = Number(values.blocks);
const made = writeExport(dir, { count, revisionsPerBlock: 3, mixed: true, blocksPerObject: 5, seed: 'sample' });
writeFileSync(join(dir, 'digest.json'), `${digestFile(made.digest, made.strandId, count - 1)}\n`);
process.stdout.write(
  `a generated QLDB export in ${dir}: ${made.blocks} blocks, ${made.revisions} revisions, ${made.objects.length} data objects; its digest in ${join(dir, 'digest.json')}\n`,
);
