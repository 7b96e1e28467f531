/**
 * `npm run import:qldb -- --export DIR --url URL --chain NAME [--digest FILE] [--export-id ID] [--api-key KEY] [--accept-unverified-data]`
 * `npm run import:qldb -- --export DIR --verify-only [--digest FILE] [--export-id ID] [--accept-unverified-data]`
 * (each with the read limits `--max-object-bytes`, `--max-block-bytes`, `--max-block-values`, `--max-block-revisions`)
 *
 * Verifies a QLDB journal export downloaded from S3, then imports it into a Sub-Chain through the service's API,
 * resumably (docs/qldb-import.md). Exits 0 when imported, 1 when the export fails verification or the import
 * stops (run it again to go on), 2 on bad usage.
 */
import { resolve } from 'node:path';
import { parseArgsOrExit } from '../cli-args.ts';
import { DEFAULT_READ_LIMITS, LIMIT_OPTIONS, QldbExportError, type ReadLimits } from './export.ts';
import { ImportError, importQldbExport, verifyForImport } from './importer.ts';
import { QldbVerificationError } from './journal.ts';

const USAGE = `Usage: npm run import:qldb -- --export DIR --url URL --chain NAME [--digest FILE] [--export-id ID] [--api-key KEY] [--accept-unverified-data]
       npm run import:qldb -- --export DIR --verify-only [--digest FILE] [--export-id ID] [--accept-unverified-data]

  --export     the export as downloaded from S3: aws s3 cp --recursive s3://<bucket>/<prefix>/ DIR
  --url        the service (the local stack's address, or a deployment's API)
  --chain      the Sub-Chain to import into: new, or this export's import cut short (it goes on)
  --digest     a digest saved from QLDB (aws qldb get-digest --name LEDGER > FILE): checked at its tip
  --export-id  which export, when DIR holds several
  --api-key    when the service requires keys (or set LEDGER_API_KEY)
  --verify-only  verify the export (and the digest) and stop: nothing is sent anywhere
  --accept-unverified-data  a JSON Lines export only: import revisions whose data JSON cannot bind to their hashes
               (timestamps, blobs, symbols, floats in documents), each marked data_verified: false; without it
               such an export is refused
  --max-object-bytes N     an Ion data object's size at most (default ${DEFAULT_READ_LIMITS.objectBytes}): Ion objects are read whole
  --max-block-bytes N      one block's size as written at most (default ${DEFAULT_READ_LIMITS.blockBytes})
  --max-block-values N     the values in one block at most (default ${DEFAULT_READ_LIMITS.blockValues})
  --max-block-revisions N  the revisions in one block at most (default ${DEFAULT_READ_LIMITS.blockRevisions})
  --max-symbols N          an Ion binary object's local symbol table's symbols at most (default ${DEFAULT_READ_LIMITS.symbols})
               A block past one of them is refused, naming it; they bound the importer's memory (docs/qldb-import.md)`;

const { values } = parseArgsOrExit(
  {
    options: {
      export: { type: 'string' },
      url: { type: 'string' },
      chain: { type: 'string' },
      digest: { type: 'string' },
      'export-id': { type: 'string' },
      'api-key': { type: 'string' },
      'verify-only': { type: 'boolean' },
      'accept-unverified-data': { type: 'boolean' },
      'max-object-bytes': { type: 'string' },
      'max-block-bytes': { type: 'string' },
      'max-block-values': { type: 'string' },
      'max-block-revisions': { type: 'string' },
      'max-symbols': { type: 'string' },
      help: { type: 'boolean' },
    },
  },
  USAGE,
  2,
);
if (values.help || !values.export || (!values['verify-only'] && (!values.url || !values.chain))) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(values.help ? 0 : 2);
}

// The read limits: each a whole number of at least 1, or the usage.
const limits: Partial<ReadLimits> = {};
for (const [limit, option] of Object.entries(LIMIT_OPTIONS) as [keyof ReadLimits, string][]) {
  const given = values[option.slice(2) as keyof typeof values];
  if (given === undefined) continue;
  if (typeof given !== 'string' || !/^[1-9]\d{0,14}$/.test(given)) {
    process.stderr.write(`${option} takes a whole number of at least 1, not '${String(given)}'\n${USAGE}\n`);
    process.exit(2);
  }
  limits[limit] = Number(given);
}

// `npm run` starts scripts in the package's directory: paths are the caller's, from where npm was run.
const here = (path: string) => resolve(process.env.INIT_CWD ?? process.cwd(), path);
values.export = here(values.export);
if (values.digest) values.digest = here(values.digest);

const tty = process.stderr.isTTY === true;
let lastLine = 0;
const seconds = (ms: number) =>
  ms >= 3_600_000 ? `${(ms / 3_600_000).toFixed(1)} h` : ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`;

const peak = () => `peak memory ${Math.round(process.resourceUsage().maxRSS / 1024)} MB`;
try {
  if (values['verify-only']) {
    verifyForImport({
      exportDir: values.export,
      ...(values.digest ? { digestFile: values.digest } : {}),
      ...(values['export-id'] ? { exportId: values['export-id'] } : {}),
      ...(values['accept-unverified-data'] ? { acceptUnverifiedData: true } : {}),
      limits,
      log: (line) => process.stdout.write(`${line}\n`),
    });
    process.stdout.write(`took ${seconds(performance.now())}, ${peak()}\n`);
    process.exit(0);
  }
  const result = await importQldbExport({
    exportDir: values.export,
    url: values.url!,
    chain: values.chain!,
    ...(values.digest ? { digestFile: values.digest } : {}),
    ...(values['export-id'] ? { exportId: values['export-id'] } : {}),
    ...((values['api-key'] ?? process.env.LEDGER_API_KEY) ? { apiKey: values['api-key'] ?? process.env.LEDGER_API_KEY } : {}),
    ...(values['accept-unverified-data'] ? { acceptUnverifiedData: true } : {}),
    limits,
    log: (line) => process.stdout.write(`${line}\n`),
    progress: (p) => {
      const now = Date.now();
      const done = p.blocks >= p.totalBlocks;
      if (!done && now - lastLine < (tty ? 250 : 2_000)) return;
      lastLine = now;
      const rate = p.elapsedMs > 0 ? (p.revisions / p.elapsedMs) * 1000 : 0;
      const left = rate > 0 ? ((p.totalRevisions - p.revisions) / rate) * 1000 : 0;
      const line = `  ${p.blocks}/${p.totalBlocks} blocks, ${p.revisions}/${p.totalRevisions} revisions, ${Math.round(rate)} revisions/s, ${done ? 'done' : `${seconds(left)} left`}`;
      process.stderr.write(tty ? `\r${line}${done ? '\n' : ''}` : `${line}\n`);
    },
  });
  const continued = result.record.continues as { export_id: string } | undefined;
  if (result.alreadyComplete) process.stdout.write(`already imported: chain '${values.chain}' holds export ${result.summary.exportId} whole\n`);
  else
    process.stdout.write(
      `imported: ${result.record.blocks} blocks, ${result.record.revisions} revisions into '${values.chain}'${result.resumedAfter ? ' (resumed)' : ''}${continued ? `, continuing export ${continued.export_id}'s import` : ''}, ${result.eventsAppended} events appended in ${result.batches} batch${result.batches === 1 ? '' : 'es'}\n`,
    );
  process.stdout.write(
    `anchored on the Main Chain: proof ${result.proofId} records export ${result.summary.exportId} at tip ${result.summary.tip.blockHash}\n`,
  );
  process.stdout.write(`took ${seconds(performance.now())}, ${peak()}\n`);
  process.exit(0);
} catch (error) {
  if (error instanceof QldbVerificationError || error instanceof QldbExportError) {
    process.stdout.write(`NOT IMPORTED: ${error.message}\nnothing was imported\n`);
    process.stdout.write(`took ${seconds(performance.now())}, ${peak()}\n`);
    process.exit(1);
  }
  if (error instanceof ImportError) {
    process.stdout.write(`IMPORT STOPPED: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
