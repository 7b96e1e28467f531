/**
 * `ledger-verify --url URL --chain NAME [--public-key HEX] [--api-key KEY]
 *                [--checkpoint FILE] [--save-checkpoint FILE] [--qldb [--qldb-digest FILE]]`
 * `ledger-verify --tiles --url URL --chain NAME [--vkey VKEY] [--state FILE] [--blocks] [--api-key KEY]`
 *
 * The package @verifiable-ledger/verify (verifier/): `npx @verifiable-ledger/verify …` in a clone or where it is installed.
 * Prints a verdict; exits 0 when verified, 1 when not (naming the first bad block), 2 on bad usage.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { parseArgsOrExit } from '../cli-args.ts';
import type { ImportAudit } from '../qldb/audit.ts';
import { QLDB_IMPORT_EVENT } from '../ledger/event-types.ts';
import { nodeGet } from './node-get.ts';
import { defaultThreads, startPagePool } from './page-workers.ts';
import { type NodeWait, nodeHeaders } from './pages.ts';
import { type Block, verifyLedger, type SignedCheckpoint } from './verifier.ts';
import { verifyTlog, type MonitorState } from './tlog.ts';

const USAGE = `Usage: ledger-verify --url URL --chain NAME [--public-key HEX] [--api-key KEY]
                      [--checkpoint FILE] [--save-checkpoint FILE] [--qldb [--qldb-digest FILE]] [--threads N]

  --public-key       the node's Ed25519 public key (64 hex) you trust; without it the node's own word is taken
  --checkpoint       a checkpoint saved earlier: the chain must still have the same root at that size
  --save-checkpoint  keep today's signed checkpoint, to check tomorrow's chain against it
  --api-key          when the node requires keys (or set LEDGER_API_KEY)
  --qldb             the chain is a QLDB import (npm run import:qldb): also rebuild QLDB's blocks from its
                     events and check them by QLDB's hashing, up to the tip its Main Chain record names
                     (a chain of several exports of one journal: each import, and each link between them)
  --qldb-digest      with --qldb: a digest saved from QLDB (aws qldb get-digest), checked against every block hash
                     the chain's imports hold from block 0 to the digest's tip
  --threads          worker threads that fetch and check pages of blocks (default: one a core, up to 8;
                     0: all in the main thread)

       ledger-verify --tiles --url URL --chain NAME [--vkey VKEY] [--state FILE] [--blocks]

  --tiles            audit the chain as a C2SP transparency log (signed checkpoint, tiles, entry bundles)
  --vkey             the note verifier key you trust (GET /tlog/vkey once, keep it); without it the node's own
  --state            a monitor's state file: read if it exists (only entries since are fetched, and the log
                     must extend it), written after a verified run
  --blocks           also download every new block and check it hashes to its entry

The package @verifiable-ledger/verify: npx @verifiable-ledger/verify … (in a clone of the ledger's repository, or
where the package is installed; never npx ledger-verify outside a clone, a name the registry does not hold for us).`;

const { values } = parseArgsOrExit(
  {
    options: {
      url: { type: 'string' },
      chain: { type: 'string' },
      'public-key': { type: 'string' },
      'api-key': { type: 'string' },
      checkpoint: { type: 'string' },
      'save-checkpoint': { type: 'string' },
      tiles: { type: 'boolean' },
      vkey: { type: 'string' },
      state: { type: 'string' },
      blocks: { type: 'boolean' },
      qldb: { type: 'boolean' },
      'qldb-digest': { type: 'string' },
      threads: { type: 'string' },
      help: { type: 'boolean' },
    },
  },
  USAGE,
  2,
);
if (values.help || !values.url || !values.chain) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(values.help ? 0 : 2);
}
if (!URL.canParse(values.url) || !/^https?:$/.test(new URL(values.url).protocol)) {
  process.stderr.write(`--url must be an http or https URL, not '${values.url}'\n`);
  process.exit(2);
}
if (values['public-key'] && !/^[0-9a-fA-F]{64}$/.test(values['public-key'])) {
  process.stderr.write('--public-key must be 64 hex characters (an Ed25519 public key)\n');
  process.exit(2);
}

const threads = values.threads === undefined ? defaultThreads() : Number(values.threads);
if (!Number.isInteger(threads) || threads < 0 || threads > 64) {
  process.stderr.write('--threads must be a whole number from 0 to 64\n');
  process.exit(2);
}

if (values['qldb-digest'] && !values.qldb) {
  process.stderr.write('--qldb-digest goes with --qldb\n');
  process.exit(2);
}

let saved: SignedCheckpoint | undefined;
if (values.checkpoint) {
  try {
    saved = JSON.parse(readFileSync(values.checkpoint, 'utf8')) as SignedCheckpoint;
  } catch (error) {
    process.stderr.write(`cannot read the checkpoint ${values.checkpoint}: ${(error as Error).message}\n`);
    process.exit(2);
  }
}

const tty = process.stderr.isTTY === true;

/**
 * The node refused a request (401, 403): nothing was checked, so nothing is said to be wrong with the chain (exit 2,
 * as for any run that could not be made), and the fix is named.
 */
function couldNotVerify(problem: string | null): never {
  process.stdout.write(
    `COULD NOT VERIFY: ${problem}\n  the node refused the request: give an API key it takes with --api-key KEY or LEDGER_API_KEY (a reader's is enough)\n`,
  );
  process.exit(2);
}

/**
 * A node that asks to wait (over its rate limit: 429; busy: 503) is waited for, and the request sent again (pages.ts,
 * askNode). Said once a wait, not once a request: every request in flight meets the same limit at the same moment.
 */
let waitSaidUntil = 0;
function onWait({ status, seconds, limit }: NodeWait): void {
  if (Date.now() < waitSaidUntil) return;
  waitSaidUntil = Date.now() + seconds * 1000;
  const why = status === 429 ? `over its rate limit${limit ? ` (${limit} requests a minute)` : ''}; a key with a higher limit audits faster` : 'busy (503)';
  process.stderr.write(`${tty ? '\n' : ''}  the node asks to wait ${seconds} s: ${why}. Waiting.\n`);
}

let lastReported = -1;
function progress(chain: string, done: number, total: number, unit = 'blocks'): void {
  const share = total === 0 ? 1 : done / total;
  if (tty) {
    const width = 30;
    const full = Math.round(share * width);
    process.stderr.write(`\r  ${chain.padEnd(16).slice(0, 16)} [${'#'.repeat(full)}${' '.repeat(width - full)}] ${done}/${total} ${unit}`);
    if (done >= total) process.stderr.write('\n');
  } else {
    const step = Math.floor(share * 10);
    if (step !== lastReported || done >= total) {
      lastReported = done >= total ? -1 : step;
      process.stderr.write(`  ${chain}: ${done}/${total} ${unit} checked\n`);
    }
  }
}

if (values.tiles) {
  let state: MonitorState | undefined;
  if (values.state && existsSync(values.state)) {
    try {
      state = JSON.parse(readFileSync(values.state, 'utf8')) as MonitorState;
    } catch (error) {
      process.stderr.write(`cannot read the state ${values.state}: ${(error as Error).message}\n`);
      process.exit(2);
    }
  }
  process.stdout.write(`Auditing chain '${values.chain}' at ${values.url} as a transparency log${state ? ' (from the saved state)' : ''}\n`);
  const started = performance.now();
  const verdict = await verifyTlog({
    url: values.url,
    chain: values.chain,
    vkey: values.vkey,
    apiKey: values['api-key'] ?? process.env.LEDGER_API_KEY,
    state,
    blocks: values.blocks,
    progress: (chain, done, total) => progress(chain, done, total, 'entries'),
    onWait,
    get: nodeGet,
  });
  for (const note of verdict.notes) process.stdout.write(`  note: ${note}\n`);
  if (verdict.verified) {
    if (values.state && verdict.state) {
      // Written whole, then renamed: a run cut short never leaves half a state behind.
      // A name no one could have made first (a link planted at a fixed `.tmp` name would be written through).
      const partial = `${values.state}.${randomBytes(8).toString('hex')}.tmp`;
      writeFileSync(partial, `${JSON.stringify(verdict.state, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
      renameSync(partial, values.state);
    }
    const seconds = (performance.now() - started) / 1000;
    const since = state ? ` (${verdict.checked} new since the saved state, which it extends)` : '';
    process.stdout.write(
      `verified: '${verdict.chain}', ${verdict.size} entries${since}, root ${verdict.root}, ${verdict.tilesFetched} tiles, ` +
        `${Math.round(verdict.checked / Math.max(seconds, 0.001))} entries/s${values.blocks ? ', every block re-hashed' : ''}\n`,
    );
    process.exit(0);
  }
  if (verdict.refused) couldNotVerify(verdict.problem);
  process.stdout.write(`NOT VERIFIED: ${verdict.problem}\n`);
  if (verdict.firstBadEntry !== null) process.stdout.write(`first bad entry: ${verdict.firstBadEntry}\n`);
  process.exit(1);
}

process.stdout.write(`Verifying chain '${values.chain}' at ${values.url}\n`);
// With --qldb: the chain's events rebuild QLDB's blocks as they are checked; the Main Chain's anchors of the
// chain that carry the import's record are kept, to compare with the chain's own record.
// Loaded only then: QLDB's Ion parser is most of what the verifier would otherwise load at every start.
const { ImportAuditor, QldbVerificationError, parseDigest, QldbExportError } = values.qldb
  ? { ...(await import('../qldb/audit.ts')), ...(await import('../qldb/journal.ts')), ...(await import('../qldb/export.ts')) }
  : {};
let qldbDigest: ReturnType<NonNullable<typeof parseDigest>> | undefined;
if (values['qldb-digest'] && parseDigest) {
  try {
    qldbDigest = parseDigest(readFileSync(values['qldb-digest']));
  } catch (error) {
    if (!(QldbExportError && error instanceof QldbExportError) && (error as NodeJS.ErrnoException).code === undefined) throw error;
    process.stderr.write(`cannot read the digest ${values['qldb-digest']}: ${(error as Error).message}\n`);
    process.exit(2);
  }
}
const auditor = ImportAuditor ? new ImportAuditor(qldbDigest ? { digest: qldbDigest } : {}) : undefined;
const anchoredRecords: Record<string, unknown>[] = [];
let qldbProblem: string | null = null;
const apiKey = values['api-key'] ?? process.env.LEDGER_API_KEY;
const pool = threads > 0 ? startPagePool({ base: values.url.replace(/\/+$/, ''), headers: nodeHeaders(values.url, apiKey), threads, onWait }) : undefined;
const verdict = await verifyLedger({
  get: nodeGet,
  ...(auditor
    ? {
        onBlock: (chain: string, block: Block) => {
          if (chain === 'main') {
            const details = block.events[0]?.details as { sub_chain?: string; qldb_import?: Record<string, unknown> } | undefined;
            if (details && details.sub_chain === values.chain && details.qldb_import) anchoredRecords.push(details.qldb_import);
            return;
          }
          if (block.index === 0 || qldbProblem) return;
          try {
            for (const event of block.events) auditor.add(event);
          } catch (error) {
            if (!(QldbVerificationError && error instanceof QldbVerificationError)) throw error;
            qldbProblem = `block ${block.index} of '${chain}' (QLDB ${error.message})`;
          }
        },
      }
    : {}),
  url: values.url,
  chain: values.chain,
  publicKey: values['public-key'],
  apiKey,
  savedCheckpoint: saved,
  progress,
  onWait,
  ...(pool ? { pages: pool } : {}),
}).finally(() => pool?.close());
for (const note of verdict.notes) process.stdout.write(`  note: ${note}\n`);
if (verdict.verified && auditor) {
  let audit: ImportAudit | undefined;
  try {
    if (!qldbProblem) audit = auditor.finish();
  } catch (error) {
    if (!(QldbVerificationError && error instanceof QldbVerificationError)) throw error;
    qldbProblem = `QLDB ${error.message}`;
  }
  if (!qldbProblem && audit) {
    const unanchored = audit.records.find((record) => !anchoredRecords.some((r) => isDeepStrictEqual(r, record)));
    if (!audit.record) qldbProblem = `the chain holds no ${QLDB_IMPORT_EVENT} record: the import did not finish (run npm run import:qldb again)`;
    else if (unanchored)
      qldbProblem = `no Main Chain anchor carries the chain's import record of export ${String(unanchored.export_id)} (submit a proof of the chain)`;
  }
  if (qldbProblem || !audit) {
    process.stdout.write(`NOT VERIFIED: ${qldbProblem}\n`);
    process.exit(1);
  }
  process.stdout.write(
    `  QLDB: ${audit.exports.length === 1 ? `export ${audit.exportId}` : `exports ${audit.exports.join(', ')}, each continuing the one before`}, ${audit.blocks} blocks rebuilt and verified by QLDB's hashing up to ${audit.tip?.address.strandId}/${audit.tip?.address.sequenceNo} (${audit.tip?.blockHash}), ` +
      `${audit.revisions} revisions (${audit.revisionsRehashed} rehashed from their Ion, the others through their block), ${audit.records.length === 1 ? 'the record' : `each of the ${audit.records.length} records`} anchored on the Main Chain\n`,
  );
  if (audit.deletions > 0)
    process.stdout.write(
      `  note: ${audit.deletions} deletions' revision hashes, and with them their metadata, rest on their blocks' hashes alone: QLDB does not publish how a deletion's hash is made\n`,
    );
  if (audit.digestMatched)
    process.stdout.write(`  QLDB digest: the Merkle root of the block hashes from block 0 to ${audit.digestMatched.sequenceNo} matches it\n`);
  if (audit.detailsNotCompared > 0)
    process.stdout.write(`  note: ${audit.detailsNotCompared} revisions' details are off chain or erased: their Ion was checked, not their JSON\n`);
}
if (verdict.verified) {
  if (values['save-checkpoint'] && verdict.checkpoint) {
    writeFileSync(values['save-checkpoint'], `${JSON.stringify(verdict.checkpoint, null, 2)}\n`);
    process.stdout.write(`  saved the signed checkpoint to ${values['save-checkpoint']}\n`);
  }
  const anchors = values.chain === 'main' ? '' : `, ${verdict.anchorsChecked} anchor${verdict.anchorsChecked === 1 ? '' : 's'} checked`;
  process.stdout.write(`verified: '${verdict.chain}', ${verdict.blocks} blocks, root ${verdict.root}, signed by ${verdict.nodeId}${anchors}\n`);
  process.exit(0);
}
if (verdict.refused) couldNotVerify(verdict.problem);
process.stdout.write(`NOT VERIFIED: ${verdict.problem}\n`);
if (verdict.firstBadBlock !== null) process.stdout.write(`first bad block: ${verdict.firstBadBlock}\n`);
process.exit(1);
