/**
 * A long-running command started as a reader types it (`npm start`, `npm run sim`, `npm run witness`), for the tests
 * that stop it through npm itself. It runs in a process group of its own, so that whatever outlives a failed check
 * is stopped with the group (`stopGroup`); its output is collected.
 */
import { type ChildProcess, spawn } from 'node:child_process';

const ROOT = new URL('../../', import.meta.url).pathname;

export interface NpmCommand {
  /** npm's own process: `npm.kill('SIGTERM')` signals npm alone, as `kill %1` does. */
  npm: ChildProcess;
  output(): string;
  /** Waits (up to `timeoutMs`) until the output matches; answers the output either way. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<string>;
  /** SIGKILL to the whole group: npm, its shell and whatever they started. */
  stopGroup(): void;
}

export function startNpmCommand(args: string[], env: NodeJS.ProcessEnv = process.env): NpmCommand {
  const npm = spawn('npm', args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  npm.stdout!.on('data', (c) => (output += c));
  npm.stderr!.on('data', (c) => (output += c));
  return {
    npm,
    output: () => output,
    async waitFor(pattern, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(output) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      return output;
    },
    stopGroup() {
      try {
        process.kill(-npm.pid!, 'SIGKILL');
      } catch {
        // the group is gone
      }
    },
  };
}
