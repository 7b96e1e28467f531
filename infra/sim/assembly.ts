/** The cloud assembly the simulator serves: `cdk synth` output, made again only when a source is newer. */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../bundling.ts';

/** The files whose change makes a synthesized assembly stale. */
const SOURCES = ['shared', 'functions', 'infra/cdk', 'infra/routes.ts', 'infra/bundling.ts', 'explorer/dist', 'package-lock.json', 'cdk.json'];

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((newest, name) => Math.max(newest, newestMtime(join(path, name))), stat.mtimeMs);
}

/** Synthesizes into `out` unless it holds an assembly newer than every source. */
export function ensureAssembly(out: string): 'synthesized' | 'reused' {
  const manifest = join(out, 'manifest.json');
  if (existsSync(manifest) && statSync(manifest).mtimeMs > Math.max(...SOURCES.map((p) => newestMtime(join(ROOT, p))))) return 'reused';
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'aws-cdk', 'bin', 'cdk'), 'synth', '--quiet', '--no-notices', '--output', out], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    const e = error as { stderr?: Buffer; message: string };
    throw new Error(`cdk synth failed:\n${e.stderr?.toString() ?? e.message}`);
  }
  return 'synthesized';
}
