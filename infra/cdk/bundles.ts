/**
 * Each function's Lambda asset: its bundle, built by the same esbuild call as the local stack's (infra/bundling.ts)
 * for the Node major of Lambda's runtime, with the files it reads copied beside it. The folder is the asset CDK
 * hashes and uploads, so a deploy ships exactly what `npm run sim` and `npm run check:cloud` ran.
 *
 * Kept in node_modules/.cache/verifiable-ledger/cloud-functions-<checkout> and built again only when an input changed (size or
 * modification time of every file esbuild read, and of every file copied beside it): a synth costs about 4 s, not
 * the 20 s of bundling ten functions each time (CDK's NodejsFunction bundles at every synth, and `npm test` and
 * `npm run check:cloud` synthesize six times). `npm ci` builds them (infra/local/prebuild.ts).
 *
 * Each build is a folder of its own that is never changed: a synth copying one folder while another process builds
 * the next never sees half of either. A record beside names the current one; a folder is removed once it is not the
 * current one and nobody was handed it for an hour.
 */
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { build, buildSync, type Metafile } from 'esbuild';
import { ROOT, STAMP_RULE, type Stamps, bundleFileSources, bundleOptions, cacheFolder, removeStale, stamps, unchanged } from '../bundling.ts';
import { EVENT_FUNCTIONS, GROUPS } from '../routes.ts';

export const CLOUD_BUNDLE_CACHE = cacheFolder('cloud-functions');
const BUNDLE_FILE = 'index.mjs';
/** The handler Lambda calls in the asset. */
export const CLOUD_HANDLER = 'index.handler';

interface Record_ {
  build: string;
  inputs: Stamps;
  /** The folder, under CLOUD_BUNDLE_CACHE, holding this build. */
  folder: string;
}

/** What makes two builds different apart from their inputs: this checkout, the options, esbuild's version. */
function buildKey(entry: string, nodeMajor: number, files: { from: string; as: string }[]): string {
  const esbuild = (createRequire(join(ROOT, 'package.json'))('esbuild/package.json') as { version: string }).version;
  return JSON.stringify({ options: bundleOptions(entry, BUNDLE_FILE, nodeMajor), esbuild, files, root: ROOT, stamps: STAMP_RULE });
}

/** Every file and folder under `path`, itself included: a folder's own time changes when a file is added to it or removed. */
function pathsUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return [path, ...readdirSync(path).flatMap((name) => pathsUnder(join(path, name)))];
}

function current(name: string, key: string): string | undefined {
  try {
    const record = JSON.parse(readFileSync(join(CLOUD_BUNDLE_CACHE, `${name}.json`), 'utf8')) as Record_;
    if (record.build !== key || !unchanged(record.inputs)) return undefined;
    const folder = join(CLOUD_BUNDLE_CACHE, record.folder);
    statSync(join(folder, BUNDLE_FILE));
    // Its time is when it was last handed out: another synth's rebuild removes only folders nobody took for an hour.
    const now = new Date();
    utimesSync(folder, now, now);
    return folder;
  } catch {
    return undefined;
  }
}

/** Steps after esbuild wrote the bundle into `staging`: the files beside it, the folder in place, the record, old builds removed. */
function keep(name: string, key: string, staging: string, metafileInputs: string[], files: { from: string; as: string }[]): string {
  for (const { from, as } of files) {
    mkdirSync(dirname(join(staging, as)), { recursive: true });
    cpSync(from, join(staging, as), { recursive: true, dereference: true });
  }
  const folder = staging.slice(0, -'.building'.length);
  renameSync(staging, folder);
  const inputs = stamps([...metafileInputs.map((path) => join(ROOT, path)), ...files.flatMap(({ from }) => pathsUnder(from))]);
  const record = join(CLOUD_BUNDLE_CACHE, `${name}.json`);
  const aside = `${record}.${process.pid}.tmp`;
  writeFileSync(aside, JSON.stringify({ build: key, inputs, folder: folder.slice(CLOUD_BUNDLE_CACHE.length + 1) } satisfies Record_));
  renameSync(aside, record);
  removeStale(CLOUD_BUNDLE_CACHE, (old) => old.startsWith(`${name}-`) && join(CLOUD_BUNDLE_CACHE, old) !== folder, 3_600_000);
  return folder;
}

/**
 * What building `name`'s asset takes: the kept folder when it is current; else esbuild's options, writing into a new
 * folder of its own, and what to do with esbuild's result.
 */
function plan(
  name: string,
  entry: string,
  nodeMajor: number,
  files: { from: string; as: string }[],
): { found: string } | { options: ReturnType<typeof bundleOptions>; finish: (result: { metafile: Metafile }) => string } {
  const key = buildKey(entry, nodeMajor, files);
  const found = current(name, key);
  if (found) return { found };
  mkdirSync(CLOUD_BUNDLE_CACHE, { recursive: true });
  const staging = join(CLOUD_BUNDLE_CACHE, `${name}-${randomBytes(6).toString('hex')}.building`);
  return {
    options: bundleOptions(entry, join(staging, BUNDLE_FILE), nodeMajor),
    finish: (result) => keep(name, key, staging, Object.keys(result.metafile.inputs), files),
  };
}

/**
 * The folder of `name`'s Lambda asset: its bundle of `entry` for Node `nodeMajor` and `files` beside it, built now
 * (synchronously: a CDK construct is made in a constructor) unless the kept one is current.
 */
export function cloudBundle(name: string, entry: string, nodeMajor: number, files: { from: string; as: string }[]): string {
  const next = plan(name, entry, nodeMajor, files);
  return 'found' in next ? next.found : next.finish(buildSync(next.options));
}

/** The same, built concurrently for many functions (at install time, where nothing needs it to be synchronous). */
export async function cloudBundleAsync(name: string, entry: string, nodeMajor: number, files: { from: string; as: string }[]): Promise<string> {
  const next = plan(name, entry, nodeMajor, files);
  return 'found' in next ? next.found : next.finish(await build(next.options));
}

/** Every function's Lambda asset for Node `nodeMajor`, built concurrently where missing or stale (`npm ci` runs this). */
export async function cloudBundles(nodeMajor: number): Promise<string[]> {
  const specs = [...Object.entries(GROUPS), ...Object.entries(EVENT_FUNCTIONS)] as [string, Parameters<typeof bundleFileSources>[0] & { entry: string }][];
  return Promise.all(specs.map(([name, spec]) => cloudBundleAsync(name, spec.entry, nodeMajor, bundleFileSources(spec))));
}
