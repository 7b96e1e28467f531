/**
 * `npx ledger-verify --url URL --chain NAME [--public-key HEX] [--api-key KEY]
 *                    [--checkpoint FILE] [--save-checkpoint FILE]`
 * `npx ledger-verify --tiles --url URL --chain NAME [--vkey VKEY] [--state FILE] [--blocks] [--api-key KEY]`
 *
 * Prints a verdict; exits 0 when verified, 1 when not (naming the first bad block), 2 on bad usage.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { verifyLedger, type SignedCheckpoint } from './verifier.ts';
import { verifyTlog, type MonitorState } from './tlog.ts';

const USAGE = `Usage: npx ledger-verify --url URL --chain NAME [--public-key HEX] [--api-key KEY]
                          [--checkpoint FILE] [--save-checkpoint FILE]

  --public-key       the node's Ed25519 public key (64 hex) you trust; without it the node's own word is taken
  --checkpoint       a checkpoint saved earlier: the chain must still have the same root at that size
  --save-checkpoint  keep today's signed checkpoint, to check tomorrow's chain against it
  --api-key          when the node requires keys (or set LEDGER_API_KEY)

       npx ledger-verify --tiles --url URL --chain NAME [--vkey VKEY] [--state FILE] [--blocks]

  --tiles            audit the chain as a C2SP transparency log (signed checkpoint, tiles, entry bundles)
  --vkey             the note verifier key you trust (GET /tlog/vkey once, keep it); without it the node's own
  --state            a monitor's state file: read if it exists (only entries since are fetched, and the log
                     must extend it), written after a verified run
  --blocks           also download every new block and check it hashes to its entry`;

let parsed;
try {
  parsed = parseArgs({
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
      help: { type: 'boolean' },
    },
  });
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
  process.exit(2);
}
const { values } = parsed;
if (values.help || !values.url || !values.chain) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(values.help ? 0 : 2);
}
if (values['public-key'] && !/^[0-9a-fA-F]{64}$/.test(values['public-key'])) {
  process.stderr.write('--public-key must be 64 hex characters (an Ed25519 public key)\n');
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
  });
  for (const note of verdict.notes) process.stdout.write(`  note: ${note}\n`);
  if (verdict.verified) {
    if (values.state && verdict.state) {
      // Written whole, then renamed: a run cut short never leaves half a state behind.
      writeFileSync(`${values.state}.tmp`, `${JSON.stringify(verdict.state, null, 2)}\n`);
      renameSync(`${values.state}.tmp`, values.state);
    }
    const seconds = (performance.now() - started) / 1000;
    const since = state ? ` (${verdict.checked} new since the saved state, which it extends)` : '';
    process.stdout.write(
      `verified: '${verdict.chain}', ${verdict.size} entries${since}, root ${verdict.root}, ${verdict.tilesFetched} tiles, ` +
        `${Math.round(verdict.checked / Math.max(seconds, 0.001))} entries/s${values.blocks ? ', every block re-hashed' : ''}\n`,
    );
    process.exit(0);
  }
  process.stdout.write(`NOT VERIFIED: ${verdict.problem}\n`);
  if (verdict.firstBadEntry !== null) process.stdout.write(`first bad entry: ${verdict.firstBadEntry}\n`);
  process.exit(1);
}

process.stdout.write(`Verifying chain '${values.chain}' at ${values.url}\n`);
const verdict = await verifyLedger({
  url: values.url,
  chain: values.chain,
  publicKey: values['public-key'],
  apiKey: values['api-key'] ?? process.env.LEDGER_API_KEY,
  savedCheckpoint: saved,
  progress,
});
for (const note of verdict.notes) process.stdout.write(`  note: ${note}\n`);
if (verdict.verified) {
  if (values['save-checkpoint'] && verdict.checkpoint) {
    writeFileSync(values['save-checkpoint'], `${JSON.stringify(verdict.checkpoint, null, 2)}\n`);
    process.stdout.write(`  saved the signed checkpoint to ${values['save-checkpoint']}\n`);
  }
  const anchors = values.chain === 'main' ? '' : `, ${verdict.anchorsChecked} anchor${verdict.anchorsChecked === 1 ? '' : 's'} checked`;
  process.stdout.write(`verified: '${verdict.chain}', ${verdict.blocks} blocks, root ${verdict.root}, signed by ${verdict.nodeId}${anchors}\n`);
  process.exit(0);
}
process.stdout.write(`NOT VERIFIED: ${verdict.problem}\n`);
if (verdict.firstBadBlock !== null) process.stdout.write(`first bad block: ${verdict.firstBadBlock}\n`);
process.exit(1);
