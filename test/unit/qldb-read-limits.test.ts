/**
 * The importer's read limits (issue 68, "bounded memory and depth"): a streaming pass over each block counts its bytes,
 * values, revisions and depth before the block is built, and a JSON Lines object is read a line at a time, so that a
 * value of 50 MB or 10,000 levels of nesting is refused naming its block, with the importer's memory bounded. Before, a
 * 50 MB string took 1.95 GB and 10 s before its (correct) refusal, a list of 2 million integers 741 MB.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DEFAULT_READ_LIMITS, openExport, QldbExportError, type ReadLimits, verifyExport } from '#shared/qldb/export';
import { importQldbExport } from '#shared/qldb/importer';
import { type ExportFormat, writeExport } from '../support/qldb-journal.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'qldb-limits-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(root, `e${(n += 1)}`);

/** An export of 6 blocks in one object. */
function exportWith(format: ExportFormat): { dir: string; key: string } {
  const dir = fresh();
  const made = writeExport(dir, { count: 6, revisionsPerBlock: 2, blocksPerObject: 6, format });
  return { dir, key: made.objects[0]!.key };
}

function refused(dir: string, limits: Partial<ReadLimits>): string {
  try {
    verifyExport(openExport(dir, undefined, { ...DEFAULT_READ_LIMITS, ...limits }));
  } catch (error) {
    assert.ok(error instanceof QldbExportError, String(error));
    return error.message;
  }
  assert.fail('verified');
}

/** `npm run import:qldb -- --verify-only` on `dir` (its kept bundle, as npm runs it): exit code, output and peak memory. */
function verifyOnly(dir: string, ...args: string[]): { status: number | null; out: string; peakMb: number } {
  const run = spawnSync(process.execPath, ['bin/run.mjs', 'shared/qldb/cli.ts', '--export', dir, '--verify-only', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
  const peak = /peak memory (\d+) MB/.exec(run.stdout);
  assert.ok(peak, `${run.stdout}\n${run.stderr}`);
  return { status: run.status, out: run.stdout, peakMb: Number(peak[1]) };
}

/** Ion binary, by hand: a value's type descriptor and length, a VarUInt, an annotation wrapper. */
const varUInt = (n: number): Buffer => {
  const out = [(n & 0x7f) | 0x80];
  for (let rest = Math.floor(n / 128); rest > 0; rest = Math.floor(rest / 128)) out.unshift(rest & 0x7f);
  return Buffer.from(out);
};
const typed = (type: number, body: Buffer) =>
  Buffer.concat([body.length < 14 ? Buffer.from([(type << 4) | body.length]) : Buffer.concat([Buffer.from([(type << 4) | 14]), varUInt(body.length)]), body]);
/** `$ion_symbol_table::{symbols:[…]}` (or `{imports:$ion_symbol_table}`, appending to the table before it). */
const symbolTable = (symbols: string[], appends = false) => {
  const fields = appends
    ? Buffer.concat([varUInt(6), Buffer.from([0x71, 0x03])])
    : Buffer.concat([varUInt(7), typed(0xb, Buffer.concat(symbols.map((name) => typed(8, Buffer.from(name)))))]);
  const annotations = varUInt(3);
  return typed(0xe, Buffer.concat([varUInt(annotations.length), annotations, typed(0xd, fields)]));
};
const IVM = Buffer.from([0xe0, 0x01, 0x00, 0xea]);

describe("The QLDB importer's read limits", () => {
  it('counts the local symbol tables the Ion library reads inside next(): one too large, and appends built again and again, are refused at once', () => {
    const symbols = (n: number) => Array.from({ length: n }, (_, i) => `s${i.toString(36)}`);
    const cases: [Buffer, RegExp][] = [
      // 150,000 symbols in one table: both readers had kept a copy (10 million had taken 1.8 GB, red team).
      [
        Buffer.concat([IVM, symbolTable(symbols(150_000))]),
        /its local symbol table holds more than the 100,000 symbols the importer reads \(--max-symbols raises/,
      ],
      // 50,000 symbols, then 10,000 tables appending nothing to them (a 460 KB object): each is built whole again, 5e8
      // symbols (100,000 appends to 100,000 had never ended, red team).
      [
        Buffer.concat([IVM, symbolTable(symbols(50_000)), ...Array.from({ length: 10_000 }, () => symbolTable([], true))]),
        /its local symbol tables make the Ion library build more than 10,000,000 symbols/,
      ],
    ];
    for (const [bytes, reason] of cases) {
      const { dir, key } = exportWith('ION_BINARY');
      writeFileSync(join(dir, key.replace(/^journalExport\//, '')), bytes);
      // Refused by the count of its tables, before the Ion library reads them (a hang there would stop this file).
      assert.match(refused(dir, {}), new RegExp(`^data object ${key.replaceAll('.', '\\.')}: ${reason.source}`));
    }
    // Ion text: QLDB writes symbols as text, with no table; one in a text object is refused.
    const text = exportWith('ION_TEXT');
    const object = join(text.dir, text.key.replace(/^journalExport\//, ''));
    writeFileSync(object, `$ion_symbol_table::{symbols:["a","b"]}\n${readFileSync(object, 'utf8')}`);
    assert.match(refused(text.dir, {}), /it holds a local symbol table \(\$ion_symbol_table::…\), which QLDB does not write in Ion text/);
    // Annotations count as values: 300,000 on one value (1.2 MB) are past the values limit (2 million had taken 492 MB).
    const annotated = exportWith('ION_TEXT');
    const annotatedObject = join(annotated.dir, annotated.key.replace(/^journalExport\//, ''));
    writeFileSync(annotatedObject, readFileSync(annotatedObject, 'utf8').replace('Revision:0}', `Revision:0,Ann:${'ab::'.repeat(300_000)}1}`));
    assert.match(refused(annotated.dir, {}), /it holds more than the 200,000 values the importer reads in one block/);
    // A genuine binary export, with the table its writer made, still verifies.
    assert.equal(verifyExport(openExport(exportWith('ION_BINARY').dir)).blocks, 6);
  });

  it('refuses a block past each limit before building it, naming the object, the value or line, and the block; in every format', () => {
    for (const format of ['ION_TEXT', 'ION_BINARY', 'JSON'] as const) {
      const { dir, key } = exportWith(format);
      const where = new RegExp(`^data object ${key.replaceAll('.', '\\.')}, (value|line) 1 \\(block \\S+/0 by the object's name\\): `);
      // Within the defaults, the export verifies.
      assert.equal(verifyExport(openExport(dir)).blocks, 6, format);
      const revisions = refused(dir, { blockRevisions: 1 });
      assert.match(revisions, where, format);
      assert.match(revisions, /more than the 1 revisions the importer reads in one block \(--max-block-revisions raises the limit/, format);
      const values = refused(dir, { blockValues: 20 });
      assert.match(values, where, format);
      assert.match(values, /more than the 20 values the importer reads in one block \(--max-block-values raises/, format);
      const bytes = refused(dir, { blockBytes: 300 });
      assert.match(bytes, where, format);
      assert.match(bytes, /it takes [\d,]+ bytes or more, over the 300 the importer reads in one block \(--max-block-bytes raises/, format);
      if (format === 'JSON') {
        // A JSON Lines object is read a line at a time: its size is not limited.
        assert.equal(verifyExport(openExport(dir, undefined, { ...DEFAULT_READ_LIMITS, objectBytes: 100 })).blocks, 6);
      } else {
        assert.match(
          refused(dir, { objectBytes: 100 }),
          /^data object \S+ takes [\d,]+ bytes, over the 100 an Ion data object may take: ion-js reads Ion from memory.*--max-object-bytes raises it/,
        );
      }
    }
  });

  it('refuses a 50 MB value (Ion text, JSON Lines) and 10,000 levels of nesting with its block named, the importer under 300 MB', (t) => {
    const huge = 'x'.repeat(50_000_000);
    const text = exportWith('ION_TEXT');
    const object = join(text.dir, text.key.replace(/^journalExport\//, ''));
    writeFileSync(object, readFileSync(object, 'utf8').replace('Revision:0}', `Revision:0,Big:"${huge}"}`));
    const json = exportWith('JSON');
    const line = join(json.dir, json.key.replace(/^journalExport\//, ''));
    writeFileSync(line, readFileSync(line, 'utf8').replace('"Revision":0}', `"Revision":0,"Big":"${huge}"}`));
    for (const { dir, unit } of [
      { dir: text.dir, unit: 'value' },
      { dir: json.dir, unit: 'line' },
    ]) {
      const run = verifyOnly(dir);
      assert.equal(run.status, 1, run.out);
      assert.match(
        run.out,
        new RegExp(`NOT IMPORTED: data object \\S+, ${unit} 1 \\(block \\S+/0 by the object's name\\): it takes [\\d,]+ bytes or more, over the 8,388,608`),
      );
      assert.ok(run.peakMb < 300, `peak memory ${run.peakMb} MB`);
      t.diagnostic(`${unit === 'value' ? 'Ion text' : 'JSON Lines'}, a 50 MB value: peak memory ${run.peakMb} MB`);
    }
    const deep = exportWith('ION_TEXT');
    const deepObject = join(deep.dir, deep.key.replace(/^journalExport\//, ''));
    writeFileSync(deepObject, readFileSync(deepObject, 'utf8').replace('Revision:0}', `Revision:0,Deep:${'{a:'.repeat(10_000)}1${'}'.repeat(10_000)}}`));
    const run = verifyOnly(deep.dir);
    assert.equal(run.status, 1, run.out);
    assert.match(
      run.out,
      /NOT IMPORTED: data object \S+, value 1 \(block \S+\/0 by the object's name\): a value in it nests deeper than the importer can read \(500 levels\)/,
    );
    assert.ok(run.peakMb < 300, `peak memory ${run.peakMb} MB`);
    // A limit's setting takes a whole number; anything else is refused with the usage.
    const bad = spawnSync(process.execPath, ['bin/run.mjs', 'shared/qldb/cli.ts', '--export', deep.dir, '--verify-only', '--max-block-bytes', '8MB'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--max-block-bytes takes a whole number of at least 1, not '8MB'\nUsage:/);
  });
});

describe("the importer's requests", () => {
  it('says when the node asks it to wait (over its rate limit), as ledger-verify does, then asks again', async () => {
    // An import over the node's rate limit had waited a minute without a word (newcomer pass, 2026-12-07).
    const { dir } = exportWith('ION_TEXT');
    const lines: string[] = [];
    const answers = [
      new Response(JSON.stringify({ detail: 'Rate limit exceeded; retry in 1 s' }), { status: 429, headers: { 'Retry-After': '1' } }),
      new Response(JSON.stringify({ detail: 'Invalid API key' }), { status: 401 }),
    ];
    let asked = 0;
    const refused = await importQldbExport({
      exportDir: dir,
      url: 'http://ledger.test',
      chain: 'waits',
      log: (line) => lines.push(line),
      fetch: (async () => answers[Math.min((asked += 1) - 1, answers.length - 1)]!) as typeof fetch,
    }).catch((error: unknown) => error);
    assert.ok(refused instanceof Error && /401/.test(refused.message), String(refused));
    assert.equal(asked, 2, 'asked again after the wait');
    assert.ok(
      lines.some((line) => /the node asks to wait 1 s \(over its rate limit\); waiting/.test(line)),
      lines.join('\n'),
    );
  });
});
