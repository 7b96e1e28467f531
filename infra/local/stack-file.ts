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
  /**
   * When its process started (Linux: clock ticks since boot, `/proc/<pid>/stat`), so that a pid the system gave another
   * process after the stack was killed is not taken for it. Written where it can be read; elsewhere the pid alone.
   */
  process_start?: string;
}

const path = (dataDir: string) => join(dataDir, 'stack.json');

/** A process's start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`), where the system tells it. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command's name, which may hold spaces and parentheses: from the third (the state) on.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export function writeStackFile(dataDir: string, stack: StackFile): void {
  const start = stack.process_start ?? processStart(stack.pid);
  writeFileSync(path(dataDir), `${JSON.stringify({ ...stack, ...(start ? { process_start: start } : {}) }, null, 2)}\n`, { mode: 0o600 });
}

export function removeStackFile(dataDir: string, pid: number): void {
  if (readStackFile(dataDir)?.pid === pid) rmSync(path(dataDir), { force: true });
}

/**
 * The running stack of this data dir, if its process is alive and is the one that wrote the file: a stack killed
 * without its stop leaves the file, and its pid, given to another process, had kept `npm run keys` and the other
 * commands on a DynamoDB that no longer ran (each failed connecting rather than start its own).
 */
export function readStackFile(dataDir: string): StackFile | undefined {
  try {
    const stack = JSON.parse(readFileSync(path(dataDir), 'utf8')) as StackFile;
    process.kill(stack.pid, 0);
    if (stack.process_start !== undefined) {
      const now = processStart(stack.pid);
      if (now !== undefined && now !== stack.process_start) return undefined;
    }
    return stack;
  } catch {
    return undefined;
  }
}
