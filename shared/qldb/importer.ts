/**
 * Imports a verified QLDB journal export into a Sub-Chain through the service's API (docs/qldb-import.md):
 *
 * 1. the whole export is verified first (export.ts); a failure imports nothing;
 * 2. the chain is made (or found): an import goes into a chain of its own, so a chain holding anything else is
 *    refused, a chain holding part of this export's import is resumed after its last event, and a chain whose
 *    last import is of an earlier export of the same journal is continued after that import's tip;
 * 3. the events (mapping.ts) go in journal order, in batches of at most 98 (one DynamoDB transaction: all
 *    committed or none), each with an Idempotency-Key made from its first event's journal position: a batch
 *    retried after a lost answer is answered, not appended twice; after a kill, the chain's last event says
 *    where to go on;
 * 4. a closing `qldb_import` event, then a proof: the Main Chain's anchor carries the import's record.
 *
 * Every request has a deadline; retries (network errors, 409 in progress, 429, 5xx) back off and give up with
 * a clear error after RETRY_FOR_MS. Memory holds one data object and one batch.
 */
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { type ChainEvent, ImportAuditor } from './audit.ts';
import {
  DEFAULT_READ_LIMITS,
  type ExportSummary,
  type JournalExport,
  type LedgerDigest,
  type ReadLimits,
  exportBlocks,
  openExport,
  parseDigest,
  QldbExportError,
  verifyExport,
} from './export.ts';
import { b64, isDocumentRevision, QldbVerificationError, verifyBlock, verifyLink, type JournalBlock } from './journal.ts';
import { type ImportedEvent, type JournalPosition, QLDB_BLOCK_EVENT, QLDB_IMPORT_EVENT, comparePositions, eventsOfBlock, positionOf } from './mapping.ts';

/** Events per batch: the service's most with an Idempotency-Key (a block each, the head and the key's record: 100 items). */
const BATCH_EVENTS = 98;
/** Bytes per batch: under what the service commits in one transaction (1.5 MB, with about 512 bytes per block). */
const BATCH_BYTES = 1_200_000;
/** The largest event carried whole (the service keeps events up to 300 kB on chain; details above 64 KiB go to IPFS). */
export const MAX_IMPORTED_EVENT_BYTES = 250_000;
const REQUEST_TIMEOUT_MS = 60_000;
/** How long one request is retried before the import stops (and can be run again to go on). */
const RETRY_FOR_MS = 120_000;

export class ImportError extends Error {
  override name = 'ImportError';
}

export interface ImportOptions {
  exportDir: string;
  exportId?: string;
  digestFile?: string;
  url: string;
  chain: string;
  apiKey?: string;
  /**
   * Import a JSON Lines export's revisions whose data could not be bound to their hashes (values JSON does not type:
   * timestamps, blobs, symbols, floats, a decimal's trailing zeros), each marked `data_verified: false`. Without it
   * such an export is refused: its values could have been changed and nothing would show it.
   */
  acceptUnverifiedData?: boolean;
  /** What one data object and one block may take (export.ts, ReadLimits); the defaults unless given. */
  limits?: Partial<ReadLimits>;
  /** Lines for the user (the verdicts, where the import starts, the result). */
  log?: (line: string) => void;
  /** Called after each batch: blocks and revisions done so far, of the totals. */
  progress?: (p: ImportProgress) => void;
  fetch?: typeof fetch;
}

export interface ImportProgress {
  blocks: number;
  revisions: number;
  totalBlocks: number;
  totalRevisions: number;
  elapsedMs: number;
}

export interface ImportResult {
  summary: ExportSummary;
  /** Where this run began: the start, or after the position the chain already held. */
  resumedAfter: JournalPosition | null;
  eventsAppended: number;
  batches: number;
  alreadyComplete: boolean;
  proofId: string | null;
  record: Record<string, unknown>;
}

/** The parts of the service's answers the importer reads. */
interface ApiBody {
  detail?: unknown;
  proof_id?: string;
  blocks?: { index: number; events: { event_type: string; details: unknown; details_metadata: unknown }[] }[];
  /** GET …/blocks/{index}: one block. */
  events?: { event_type: string; details: unknown; details_metadata: unknown }[];
}

/** The tip of an earlier import of the same journal, which a later export continues (the record's `tip`). */
interface ImportedTip {
  exportId: string;
  strandId: string;
  sequenceNo: number;
  blockHash: string;
}

/**
 * Where an import begins on its chain: after `base` (the genesis, 0, or the record closing an earlier export's import),
 * and, for a later export of the same journal, after the blocks that import holds (up to `after`).
 */
interface ImportStart {
  base: number;
  after: ImportedTip | null;
}

/** The earlier import a `qldb_import` record closed, as a later export continues it; undefined for anything else. */
function importedTip(event: { event_type: string; details?: unknown } | undefined): ImportedTip | undefined {
  if (event?.event_type !== QLDB_IMPORT_EVENT) return undefined;
  const record = event.details as {
    export_id?: unknown;
    tip?: { block_address?: { strand_id?: unknown; sequence_no?: unknown }; block_hash?: unknown };
  } | null;
  const tip = record?.tip;
  if (
    typeof record?.export_id !== 'string' ||
    typeof tip?.block_hash !== 'string' ||
    typeof tip.block_address?.strand_id !== 'string' ||
    typeof tip.block_address.sequence_no !== 'number'
  )
    return undefined;
  return { exportId: record.export_id, strandId: tip.block_address.strand_id, sequenceNo: tip.block_address.sequence_no, blockHash: tip.block_hash };
}

/**
 * Where each of the export's blocks lands on the chain: one chain block per event, in journal order from the index
 * after `start.base` (each QLDB block's own event, then one per document revision; a later export's blocks from the
 * one after the earlier import's tip), and the block's hash.
 */
function chainLayout(exp: JournalExport, start: ImportStart): { sequenceNo: number; index: number; hash: string }[] {
  const layout: { sequenceNo: number; index: number; hash: string }[] = [];
  let index = start.base + 1;
  for (const { block } of exportBlocks(exp)) {
    if (start.after && block.blockAddress.sequenceNo <= start.after.sequenceNo) continue;
    layout.push({ sequenceNo: block.blockAddress.sequenceNo, index, hash: b64(block.blockHash) });
    // Its own event, and one per document revision (eventsOfBlock's, counted without building them).
    index += 1 + block.revisions.filter(isDocumentRevision).length;
  }
  return layout;
}

/**
 * The first of the export's blocks the chain does not hold as this export's import holds it, by a binary search over
 * the QLDB blocks' own events on the chain (about 17 reads for 100,000 blocks): block k's event is at the index this
 * export puts it, with its hash, exactly while every block before it is the same, since each QLDB block's hash
 * covers the one before. Undefined when the chain holds the export's blocks up to `upTo` (a sequence number).
 */
async function firstDifferingBlock(
  exp: JournalExport,
  start: ImportStart,
  upTo: number,
  readBlock: (index: number) => Promise<ApiBody | undefined>,
): Promise<{ sequenceNo: number; held: string | undefined; exported: string } | undefined> {
  const layout = chainLayout(exp, start).filter((b) => b.sequenceNo <= upTo);
  const heldAt = async (at: number): Promise<string | undefined> => {
    const { index, sequenceNo } = layout[at]!;
    const event = (await readBlock(index))?.events?.[0];
    const details = event?.details as { block_hash?: string; block_address?: { sequence_no?: number } } | undefined;
    return event?.event_type === QLDB_BLOCK_EVENT && details?.block_address?.sequence_no === sequenceNo ? details.block_hash : undefined;
  };
  let [low, high] = [0, layout.length];
  while (low < high) {
    const mid = (low + high) >> 1;
    if ((await heldAt(mid)) === layout[mid]!.hash) low = mid + 1;
    else high = mid;
  }
  if (low === layout.length) return undefined;
  return { sequenceNo: layout[low]!.sequenceNo, held: await heldAt(low), exported: layout[low]!.hash };
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * The import's first step, and `--verify-only`: the export opened and verified whole (with the digest, if one is
 * given), each event it will become checked to fit an event. Throws QldbExportError or QldbVerificationError.
 */
export function verifyForImport(options: Pick<ImportOptions, 'exportDir' | 'exportId' | 'digestFile' | 'log' | 'acceptUnverifiedData' | 'limits'>): {
  exp: JournalExport;
  summary: ExportSummary;
} {
  const log = options.log ?? (() => undefined);
  const exp: JournalExport = openExport(options.exportDir, options.exportId, { ...DEFAULT_READ_LIMITS, ...options.limits });
  let digest: LedgerDigest | undefined;
  if (options.digestFile) digest = parseDigest(readFileSync(options.digestFile));
  log(`Verifying export ${exp.exportId} of ledger '${exp.ledgerName}' (${exp.outputFormat}, strand ${exp.strandId}, ${exp.keys.length} data objects)`);
  const summary = verifyExport(exp, {
    ...(digest ? { digest } : {}),
    onBlock: (block) => {
      for (const { event } of eventsOfBlock(block, exp.exportId)) {
        const bytes = Buffer.byteLength(JSON.stringify({ ...event, details: {} }));
        if (bytes > MAX_IMPORTED_EVENT_BYTES)
          throw new QldbExportError(
            `block ${block.blockAddress.strandId}/${block.blockAddress.sequenceNo}: document ${event.entity_id}'s revision takes ${bytes} bytes with its Ion, over the ${MAX_IMPORTED_EVENT_BYTES} an event can carry`,
          );
      }
    },
  });
  log(
    `verified: ${summary.blocks} blocks (${summary.first.address.sequenceNo}…${summary.tip.address.sequenceNo}), ${summary.revisions} document revisions, tip hash ${summary.tip.blockHash}` +
      (summary.digest ? `, digest ${summary.digest.digest} at block ${summary.digest.tip.sequenceNo} matches` : ''),
  );
  const { revisions: deleted, transactions, data } = summary.unchecked;
  if (deleted > 0) log(`  not recomputable: ${deleted} deleted revisions' hashes (a deletion carries no data); each is still covered by its block's hash`);
  if (data > 0 || transactions > 0) {
    const what = [
      ...(data > 0 ? [`${data} revisions' data`] : []),
      ...(transactions > 0 ? [`${transactions} transactions (the tables and documents each names)`] : []),
    ].join(' and ');
    const why = `${what} in this JSON Lines export ${data + transactions === 1 ? 'is' : 'are'} not bound to their hashes: read back as Ion, they do not hash as QLDB hashed them (a timestamp, blob, symbol, float or a decimal's trailing zeros in a document, which JSON does not keep; or a changed value)`;
    if (!options.acceptUnverifiedData)
      throw new QldbExportError(
        `${why}. Its values could have been changed and nothing would show it: export the journal as ION_TEXT or ION_BINARY, or pass --accept-unverified-data to import them marked data_verified: false`,
      );
    log(`  unverified: ${why}; imported as told, each marked data_verified: false`);
  }

  return { exp, summary };
}

export async function importQldbExport(options: ImportOptions): Promise<ImportResult> {
  const log = options.log ?? (() => undefined);
  const http = options.fetch ?? fetch;
  const base = `${options.url.replace(/\/+$/, '')}/api/v1`;
  const chainPath = `${base}/chains/${encodeURIComponent(options.chain)}`;
  const headers: Record<string, string> = { 'Content-Type': 'application/json', ...(options.apiKey ? { 'X-API-Key': options.apiKey } : {}) };

  /** One request, retried while the answer says it may succeed later; other answers are returned. */
  async function request(method: string, url: string, body?: unknown, extra: Record<string, string> = {}): Promise<{ status: number; body: ApiBody }> {
    const until = Date.now() + RETRY_FOR_MS;
    let wait = 200;
    for (;;) {
      let cause: string;
      try {
        const res = await http(url, {
          method,
          headers: { ...headers, ...extra },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const answer = ((await res.json().catch(() => null)) ?? {}) as ApiBody;
        if (res.status !== 409 && res.status !== 429 && res.status < 500) return { status: res.status, body: answer };
        // 409 here is an Idempotency-Key whose first request is still in progress; 429 and 5xx pass.
        if (res.status === 409 && extra['Idempotency-Key'] === undefined) return { status: res.status, body: answer };
        cause = `${res.status} ${JSON.stringify(answer?.detail ?? answer)}`;
        const after = Number(res.headers.get('Retry-After'));
        if (Number.isFinite(after) && after > 0) {
          wait = Math.max(wait, after * 1000);
          // Said, as ledger-verify says it: an import over the node's rate limit had waited a minute without a word.
          log(`  the node asks to wait ${Math.ceil(wait / 1000)} s (${res.status === 429 ? 'over its rate limit' : `${res.status}, busy`}); waiting`);
        }
      } catch (error) {
        cause = (error as Error).message;
      }
      if (Date.now() + wait > until)
        throw new ImportError(`${method} ${url} kept failing for ${RETRY_FOR_MS / 1000} s (last: ${cause}); run the import again to go on`);
      await sleep(wait);
      wait = Math.min(wait * 2, 5_000);
    }
  }

  // 1. Verify everything first.
  const { exp, summary } = verifyForImport(options);

  /** The chain's block at `index`, as GET …/blocks/{index} answers it; undefined when there is none. */
  const readBlock = async (index: number): Promise<ApiBody | undefined> => {
    const got = await request('GET', `${chainPath}/blocks/${index}`);
    return got.status === 200 ? got.body : undefined;
  };
  let start: ImportStart = { base: 0, after: null };

  /** ', from block N on (…)' naming the first block the chain holds otherwise, or '' when it holds them all up to `upTo`. */
  const differsAt = async (upTo: number): Promise<string> => {
    const differing = await firstDifferingBlock(exp, start, upTo, readBlock);
    if (!differing) return '';
    return `, from block ${differing.sequenceNo} on (the chain holds ${differing.held ? `a block ${differing.sequenceNo} of hash ${differing.held}` : 'no such block where this export puts it'}, the export's is ${differing.exported})`;
  };

  /**
   * A later export of a journal whose earlier export the chain holds whole (`after`, its record's tip) continues it
   * from the next block: it must be of the same strand, hold that next block, and link to the tip (its block at the
   * tip's sequence number is the tip, or its first block names the tip as its previous). An export that overlaps the
   * import (QLDB exports by time range) goes on after the tip; one that leaves a gap is refused.
   */
  /**
   * The chain's earlier imports, up to the record at `base`, audited as `ledger-verify --qldb` audits them (every block
   * rebuilt by QLDB's hashing, each import linked to the one before): the tip a later export continues from is then
   * one the chain's own imports reached. A writer's own `qldb_import` event, with no import before it, had been taken
   * for one, and the export's blocks before its tip silently skipped; an export id already on the chain had been
   * taken again, leaving its record refused and the chain unfinished (red team).
   */
  const auditEarlier = async (base: number, after: ImportedTip): Promise<void> => {
    log(`checking the chain's earlier imports (${base} blocks) before continuing them`);
    const auditor = new ImportAuditor();
    let record: unknown;
    try {
      for (let offset = 1; offset <= base; offset += 100) {
        const page = await request('GET', `${chainPath}/blocks?limit=100&offset=${offset}`);
        if (page.status !== 200) throw new ImportError(`cannot read chain '${options.chain}': ${page.status} ${JSON.stringify(page.body)}`);
        for (const block of page.body.blocks ?? []) {
          if (block.index > base) break;
          for (const event of block.events) {
            auditor.add(event as ChainEvent);
            if (block.index === base) record = event.details;
          }
        }
      }
      auditor.finish();
    } catch (error) {
      if (!(error instanceof QldbVerificationError)) throw error;
      throw new ImportError(
        `chain '${options.chain}' does not hold a QLDB import that verifies up to block ${base}: ${error.message}; import into a new chain`,
      );
    }
    const { audit } = auditor;
    if (!audit.record || !isDeepStrictEqual(audit.record, record) || audit.tip?.blockHash !== after.blockHash)
      throw new ImportError(`chain '${options.chain}' does not end its imports at block ${base} with the record it holds there: import into a new chain`);
    if (audit.exports.includes(exp.exportId))
      throw new ImportError(
        `chain '${options.chain}' already holds export ${exp.exportId} (an earlier import of it): a later export of the journal comes under its own export id`,
      );
  };

  const checkContinues = (after: ImportedTip): void => {
    const what = `chain '${options.chain}' holds export ${after.exportId} up to block ${after.sequenceNo} (${after.blockHash})`;
    if (after.strandId !== exp.strandId)
      throw new ImportError(
        `${what} of strand ${after.strandId}; this export is of strand ${exp.strandId}: another ledger's journal, import it into a new chain`,
      );
    const first = summary.first.address.sequenceNo;
    if (first > after.sequenceNo + 1)
      throw new ImportError(
        `${what}; this export begins at block ${first}: blocks ${after.sequenceNo + 1}–${first - 1} are missing, export from the tip's time on`,
      );
    if (summary.tip.address.sequenceNo <= after.sequenceNo)
      throw new ImportError(`${what}; this export ends at block ${summary.tip.address.sequenceNo}: it holds nothing after it`);
    let linked: string | undefined;
    if (first === after.sequenceNo + 1) linked = summary.first.previousBlockHash;
    else
      for (const { block } of exportBlocks(exp))
        if (block.blockAddress.sequenceNo === after.sequenceNo) {
          linked = b64(block.blockHash);
          break;
        }
    if (linked !== after.blockHash)
      throw new ImportError(
        `${what}; this export's ${first === after.sequenceNo + 1 ? `block ${first} follows a block of hash ${linked}` : `block ${after.sequenceNo} has hash ${linked}`}: it is not a later export of the same journal`,
      );
  };

  // 2. The chain: new, this export's import to go on with, or an earlier export's import that this one continues.
  const info = await request('GET', `${chainPath}/stats`);
  if (info.status === 404) {
    const made = await request('POST', `${chainPath}/create`);
    if (made.status !== 201 && made.status !== 409)
      throw new ImportError(`cannot create chain '${options.chain}': ${made.status} ${JSON.stringify(made.body)}`);
  } else if (info.status !== 200) {
    throw new ImportError(`cannot read chain '${options.chain}': ${info.status} ${JSON.stringify(info.body)}`);
  }
  const last = await request('GET', `${chainPath}/blocks?limit=1&offset=0&order=desc`);
  if (last.status !== 200) throw new ImportError(`cannot read chain '${options.chain}': ${last.status} ${JSON.stringify(last.body)}`);
  const lastBlock = last.body.blocks?.[0];
  let resumedAfter: JournalPosition | null = null;
  let alreadyComplete = false;
  let record: Record<string, unknown> | null = null;
  if (lastBlock && lastBlock.index > 0) {
    const event = lastBlock.events[0]!;
    const at = positionOf(event, exp.exportId);
    const earlier = at === undefined ? importedTip(event) : undefined;
    if (at === undefined && !earlier)
      throw new ImportError(`chain '${options.chain}' already holds ${lastBlock.index} block(s) that are not this export's import: import into a new chain`);
    if (earlier) {
      checkContinues(earlier);
      await auditEarlier(lastBlock.index, earlier);
      start = { base: lastBlock.index, after: earlier };
      log(`continuing export ${earlier.exportId}'s import: this export from block ${earlier.sequenceNo + 1} on`);
    } else if (at === 'end') {
      alreadyComplete = true;
      record = event.details as Record<string, unknown>;
      // The same export id is not the same export: its tip must be the one imported (a changed or forged export
      // that verifies by itself had been answered "already imported", never compared).
      const tip = record.tip as { block_address?: { strand_id?: string; sequence_no?: number }; block_hash?: string } | undefined;
      if (
        tip?.block_hash !== summary.tip.blockHash ||
        tip.block_address?.sequence_no !== summary.tip.address.sequenceNo ||
        tip.block_address?.strand_id !== summary.tip.address.strandId
      ) {
        const upTo = Math.min(summary.tip.address.sequenceNo, tip?.block_address?.sequence_no ?? summary.tip.address.sequenceNo);
        start = await startOfResumed(lastBlock.index);
        throw new ImportError(
          `chain '${options.chain}' holds export ${exp.exportId} whole, ending at block ${tip?.block_address?.sequence_no} (${tip?.block_hash}); this export ends at block ${summary.tip.address.sequenceNo} (${summary.tip.blockHash}): it is not the export that was imported${await differsAt(upTo)}`,
        );
      }
    } else if (at) {
      start = await startOfResumed(lastBlock.index);
      // Going on from where the chain stopped is right only if the chain holds this export's blocks up to there: a
      // changed export under the same id had been continued onto another's first part.
      const differs = await differsAt(at.sequenceNo);
      if (differs)
        throw new ImportError(
          `chain '${options.chain}' holds part of export ${exp.exportId}, up to block ${at.sequenceNo}, and it is not this export's${differs}: import this export into a new chain`,
        );
      resumedAfter = at;
      log(`resuming: the chain holds this import up to block ${at.sequenceNo}${at.revision >= 0 ? `, revision ${at.revision}` : ''}`);
    }
  }

  /**
   * Where this export's import began on the chain, when the chain holds part of it (or all): at 1, or right after an
   * earlier export's record, found by a binary search over the chain (the events of this export are the chain's last).
   */
  async function startOfResumed(lastIndex: number): Promise<ImportStart> {
    const ours = async (index: number) => positionOf((await readBlock(index))?.events?.[0] ?? { event_type: '' }, exp.exportId) !== undefined;
    let [low, high] = [1, lastIndex];
    while (low < high) {
      const mid = (low + high) >> 1;
      if (await ours(mid)) high = mid;
      else low = mid + 1;
    }
    if (low === 1) return { base: 0, after: null };
    const before = importedTip((await readBlock(low - 1))?.events?.[0]);
    if (!before)
      throw new ImportError(`chain '${options.chain}' holds other events before this export's import (at block ${low - 1}): import into a new chain`);
    checkContinues(before);
    await auditEarlier(low - 1, before);
    return { base: low - 1, after: before };
  }

  // 3. The events, in journal order, in batches.
  const started = Date.now();
  let blocks = 0;
  let revisions = 0;
  let eventsAppended = 0;
  let batches = 0;
  /** Revisions imported with data not bound to their hash (`data_verified: false`), counted for the record. */
  let unverified = 0;
  // A later export's blocks that the earlier import holds are read first, and not counted as work.
  let skipped = { blocks: 0, revisions: 0 };
  const report = () =>
    options.progress?.({
      blocks,
      revisions,
      totalBlocks: summary.blocks - skipped.blocks,
      totalRevisions: summary.revisions - skipped.revisions,
      elapsedMs: Date.now() - started,
    });

  async function send(batch: { position: JournalPosition; event: ImportedEvent }[]): Promise<void> {
    const first = batch[0]!.position;
    const key = `qldb-${exp.exportId}-${exp.strandId}-${first.sequenceNo}-${first.revision}-${batch.length}`;
    const answer = await request('POST', `${chainPath}/events/batch`, { events: batch.map((b) => b.event) }, { 'Idempotency-Key': key });
    if (answer.status !== 200)
      throw new ImportError(
        `the batch from block ${first.sequenceNo} was refused: ${answer.status} ${JSON.stringify(answer.body?.detail ?? answer.body)}; nothing of it was appended`,
      );
    eventsAppended += batch.length;
    batches += 1;
  }

  if (!alreadyComplete) {
    let batch: { position: JournalPosition; event: ImportedEvent }[] = [];
    let batchBytes = 0;
    let inflight: Promise<void> = Promise.resolve();
    let previous: JournalBlock | undefined;
    let firstImported: JournalBlock | undefined;
    for (const { block } of exportBlocks(exp)) {
      // Verified again as it is imported: what is appended is what was checked, even if a file changed since.
      try {
        verifyBlock(block);
        if (previous) verifyLink(block, previous);
      } catch (error) {
        throw new ImportError(`the export changed after it was verified: ${(error as Error).message}; the chain holds it up to the block before`);
      }
      previous = block;
      // A later export's blocks the earlier import holds already (checked against its tip above) are not imported again.
      if (start.after && block.blockAddress.sequenceNo <= start.after.sequenceNo) {
        skipped = { blocks: skipped.blocks + 1, revisions: skipped.revisions + block.revisions.filter(isDocumentRevision).length };
        continue;
      }
      if (start.after && !firstImported && b64(block.previousBlockHash) !== start.after.blockHash)
        throw new ImportError(`the export changed after it was verified: block ${block.blockAddress.sequenceNo} no longer follows the earlier import's tip`);
      firstImported ??= block;
      blocks += 1;
      for (const item of eventsOfBlock(block, exp.exportId)) {
        if (item.position.revision >= 0) revisions += 1;
        if ((item.event.details_metadata as { qldb?: { data_verified?: boolean } } | undefined)?.qldb?.data_verified === false) unverified += 1;
        if (resumedAfter && comparePositions(item.position, resumedAfter) <= 0) continue;
        const bytes = Buffer.byteLength(JSON.stringify(item.event));
        if (batch.length === BATCH_EVENTS || (batch.length > 0 && batchBytes + bytes > BATCH_BYTES)) {
          // One batch in flight while the next is read and hashed: the chain still gets them one after another.
          await inflight;
          inflight = send(batch).then(report);
          inflight.catch(() => undefined); // awaited before the next batch, or below
          batch = [];
          batchBytes = 0;
        }
        batch.push(item);
        batchBytes += bytes;
      }
    }
    await inflight;
    if (batch.length > 0) await send(batch);
    report();
    if (previous && b64(previous.blockHash) !== summary.tip.blockHash)
      throw new ImportError('the export changed while it was imported: its tip is not the one verified');

    // 4. The record of the import, closing the chain's import.
    // What this import appended: the whole export, or a later export's blocks after the earlier import's tip.
    const { after } = start;
    record = {
      export_id: exp.exportId,
      ledger_name: exp.ledgerName,
      output_format: exp.outputFormat,
      strand_id: exp.strandId,
      first_block: {
        block_address: { strand_id: exp.strandId, sequence_no: firstImported!.blockAddress.sequenceNo },
        previous_block_hash: b64(firstImported!.previousBlockHash),
      },
      tip: { block_address: { strand_id: exp.strandId, sequence_no: summary.tip.address.sequenceNo }, block_hash: summary.tip.blockHash },
      blocks,
      revisions,
      // The export's counts, but the revisions imported unverified as this import counted them (a later export's after the tip).
      unchecked: { ...summary.unchecked, data: unverified },
      digest: summary.digest
        ? { digest: summary.digest.digest, tip_address: { strand_id: summary.digest.tip.strandId, sequence_no: summary.digest.tip.sequenceNo } }
        : null,
      ...(after
        ? {
            continues: {
              export_id: after.exportId,
              tip: { block_address: { strand_id: after.strandId, sequence_no: after.sequenceNo }, block_hash: after.blockHash },
            },
          }
        : {}),
    };
    const closing = await request(
      'POST',
      `${chainPath}/events`,
      { entity_id: `qldb-export:${exp.exportId}`, event_type: QLDB_IMPORT_EVENT, details: record },
      { 'Idempotency-Key': `qldb-${exp.exportId}-${exp.strandId}-imported` },
    );
    if (closing.status !== 200) throw new ImportError(`the import's record was refused: ${closing.status} ${JSON.stringify(closing.body)}`);
  }

  // 5. Anchored on the Main Chain (the same proof again if it already is).
  const proof = await request('POST', `${chainPath}/submit-proof`);
  if (proof.status !== 200)
    throw new ImportError(`the import is complete, but its proof was refused: ${proof.status} ${JSON.stringify(proof.body)}; submit it again`);
  return { summary, resumedAfter, eventsAppended, batches, alreadyComplete, proofId: proof.body.proof_id ?? null, record: record! };
}
