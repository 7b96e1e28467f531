/**
 * How a function is bundled, written once for the cloud stack (infra/cdk/bundles.ts) and the local instance
 * pool (infra/local/bundles.ts), so that the local stack runs the same artefact Lambda runs: one folder of ESM per
 * function built by the same esbuild call, every dependency inside (the AWS SDK too), and the files a function
 * reads beside it. The folder holds `index.mjs` and the chunks it imports when it needs them (esbuild's code
 * splitting): what a function loads only on the requests that use it (the IPFS client, the SDK's credential
 * providers) is not compiled at every cold start. Importing the ledger function took 176-185 ms of CPU split, against
 * 214-219 ms as one file (Node 20 here, five runs each). Only the Node major it is built for differs (Lambda's runtime, or the Node running locally).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import type { BuildOptions } from 'esbuild';
import { STAMP_RULE, stampedAsNow, stampedFiles } from '../bin/bundle-cache.mjs';
import type { GroupSpec } from '../shared/api/routes.ts';

export { STAMP_RULE };

export const ROOT = new URL('../', import.meta.url).pathname;

/**
 * Where this checkout keeps what it builds (`node_modules/.cache/verifiable-ledger/<kind>-<checkout>`): one folder per
 * checkout, so that worktrees sharing one node_modules keep their own bundles instead of building each other's again
 * at every start (each records its own files' paths).
 */
export const cacheFolder = (kind: string) =>
  join(ROOT, 'node_modules', '.cache', 'verifiable-ledger', `${kind}-${createHash('sha256').update(ROOT).digest('hex').slice(0, 8)}`);
const requireFromRoot = createRequire(`${ROOT}package.json`);

export const BUNDLE_FORMAT = 'esm' as const;
export const BUNDLE_MAIN_FIELDS = ['module', 'main'];
/**
 * Minified whitespace and syntax, identifiers kept. Kept names matter: domain errors name themselves after
 * their class (`DomainError`'s `this.name = new.target.name`) and GraphQL tells clients that name as the
 * error's `code`; with identifiers mangled it read `Xn`. Keeping them this way also loads fastest (measured
 * on the tlog bundle: 83 ms to import, against 88 fully minified, 95 with esbuild's keepNames, 90 unminified).
 */
export const BUNDLE_MINIFY = { minifyWhitespace: true, minifySyntax: true, minifyIdentifiers: false } as const;
/**
 * A source map beside each bundle, without the sources' text: Lambda runs the functions with `--enable-source-maps`
 * (stack traces name the TypeScript file and line), and Node reads and parses the whole map as it loads the bundle, at
 * every cold start. With the sources' text inside, the ledger function's map was 5.9 MB and its import took 415 ms of
 * CPU on Node 24 here; without it the map is 1.7 MB and the import 325 ms (273 ms with no source maps at all; medians
 * of 9, `bench/probes/cold-import.ts`). A stack trace needs only the positions.
 */
export const BUNDLE_SOURCE_MAP = { sourcemap: 'linked', sourcesContent: false } as const;
/** ESM bundles still meet CommonJS dependencies that call require(). */
export const BUNDLE_BANNER = "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

/** The files a function reads beside its bundle: where each comes from, and its name there. */
export function bundleFileSources(spec: Pick<GroupSpec, 'bundleFiles'>): { from: string; as: string }[] {
  return (spec.bundleFiles ?? []).map((file) => ({ from: 'module' in file ? requireFromRoot.resolve(file.module) : `${ROOT}${file.path}`, as: file.as }));
}

/**
 * esbuild's options for one function's bundle, its entry written to `outfile` (`<folder>/index.mjs`) and its chunks
 * beside it, for the Node major it will run on.
 */
export function bundleOptions(entry: string, outfile: string, nodeMajor: string | number): BuildOptions & { metafile: true } {
  return {
    entryPoints: [join(ROOT, entry)],
    outdir: dirname(outfile),
    entryNames: basename(outfile).replace(/\.mjs$/, ''),
    chunkNames: 'chunk-[hash]',
    outExtension: { '.js': '.mjs' },
    splitting: true,
    // The metafile names inputs relative to this folder: the repository, wherever the command runs from.
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: BUNDLE_FORMAT,
    target: `node${nodeMajor}`,
    mainFields: BUNDLE_MAIN_FIELDS,
    banner: { js: BUNDLE_BANNER },
    ...BUNDLE_SOURCE_MAP,
    ...BUNDLE_MINIFY,
    metafile: true,
    logLevel: 'silent',
  };
}

export type Stamps = Record<string, { size: number; mtimeMs: number }>;

/**
 * The size and modification time of each file: what a kept bundle records of its inputs, and checks again. The files in
 * node_modules are stood for by their packages' package.json and npm's record of what it installed (bin/bundle-cache.mjs,
 * `stampedFiles`).
 */
export function stamps(paths: string[]): Stamps {
  return stampEach(stampedFiles(paths));
}

const stampEach = (paths: string[]): Stamps =>
  Object.fromEntries(
    paths.map((path) => {
      const stat = statSync(path);
      return [path, { size: stat.size, mtimeMs: stat.mtimeMs }];
    }),
  );

/**
 * Whether every recorded file is still as it was (a removed one is not). A record that stamped node_modules another way
 * (file by file, made before their packages stood for them) is not: the bundle is built again.
 */
export function unchanged(recorded: Stamps): boolean {
  try {
    const paths = Object.keys(recorded);
    if (!stampedAsNow(paths)) return false;
    const now = stampEach(paths);
    return Object.entries(recorded).every(([path, was]) => now[path]!.size === was.size && now[path]!.mtimeMs === was.mtimeMs);
  } catch {
    return false;
  }
}

/**
 * Removes what `cache` holds beside the builds in use that nobody touched for `olderThanMs`: earlier builds, and folders
 * a process stopped mid-build left. `matches` names them; one removed meanwhile by another process is passed over.
 */
export function removeStale(cache: string, matches: (name: string) => boolean, olderThanMs: number): void {
  const before = Date.now() - olderThanMs;
  for (const name of existsSync(cache) ? readdirSync(cache) : []) {
    if (!matches(name)) continue;
    const path = join(cache, name);
    try {
      if (statSync(path).mtimeMs < before) rmSync(path, { recursive: true, force: true });
    } catch {
      // removed meanwhile
    }
  }
}
