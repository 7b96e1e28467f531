/**
 * `<SVC_DATA_DIR>/stack.json`: written by a running `npm start`, removed when it stops, so that local
 * tools (`npm run keys`) use the same DynamoDB instead of opening its data file a second time.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface StackFile {
  pid: number;
  url: string;
  dynamodb_endpoint: string;
  /**
   * The access key id the stack calls it with (its own DynamoDB Local's, or SVC_DYNAMODB_ACCESS_KEY_ID): DynamoDB Local
   * keeps a database per key. Safe here as in the data dir's `access-key`: the file is its user's alone (0600).
   */
  dynamodb_access_key_id?: string;
  /** The region it signs with: with the key, what names its database in DynamoDB Local. */
  dynamodb_region?: string;
  /** The tables it uses, by setting (SVC_LEDGER_TABLE: 'ledger', …): a tool that names none uses these. */
  tables?: Record<string, string>;
}

const path = (dataDir: string) => join(dataDir, 'stack.json');

export function writeStackFile(dataDir: string, stack: StackFile): void {
  writeFileSync(path(dataDir), `${JSON.stringify(stack, null, 2)}\n`, { mode: 0o600 });
}

export function removeStackFile(dataDir: string, pid: number): void {
  if (readStackFile(dataDir)?.pid === pid) rmSync(path(dataDir), { force: true });
}

/** The running stack of this data dir, if its process is alive. */
export function readStackFile(dataDir: string): StackFile | undefined {
  try {
    const stack = JSON.parse(readFileSync(path(dataDir), 'utf8')) as StackFile;
    process.kill(stack.pid, 0);
    return stack;
  } catch {
    return undefined;
  }
}
