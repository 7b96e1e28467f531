/** Starts `npm run witness` (infra/witness/main.ts) as its own process, as a user would, and stops it by pid. */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { freePort } from '#infra/local/ports';

const ROOT = new URL('../../', import.meta.url).pathname;

export interface WitnessProcess {
  url: string;
  vkey: string;
  pid: number;
  output(): string;
  stop(): Promise<void>;
}

/** The witness's cosigner vkey in `dir` (its key is made on first use), before it serves. */
export function witnessVkey(dir: string, name = 'witness.local/w1'): string {
  return execFileSync(process.execPath, ['bin/run.mjs', 'infra/witness/main.ts', '--print-vkey', '--dir', dir, '--name', name], {
    cwd: ROOT,
    encoding: 'utf8',
  }).trim();
}

export async function startWitness(options: { dir: string; logs: string[]; port?: number; name?: string; args?: string[] }): Promise<WitnessProcess> {
  const port = options.port ?? (await freePort());
  const args = ['bin/run.mjs', 'infra/witness/main.ts', '--dir', options.dir, '--port', String(port), '--name', options.name ?? 'witness.local/w1'];
  for (const log of options.logs) args.push('--log', log);
  args.push(...(options.args ?? []));
  const child: ChildProcess = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const ready = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the witness did not start:\n${output}`));
    }, 20_000);
    child.stdout!.on('data', () => {
      const match = /witness ready at (http:\/\/\S+) vkey (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the witness exited:\n${output}`));
    });
  });
  return {
    url: ready[1]!,
    vkey: ready[2]!,
    pid: child.pid!,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
