/**
 * The function bundles the local instance pool runs: each function's entry bundled by esbuild as the
 * cloud stack bundles it (a folder of ESM: the entry and the chunks it loads when a request needs them, every
 * dependency inside, its files beside it), so an instance starts the way a Lambda instance does: load the entry, no
 * TypeScript compiler, its own module state.
 *
 * Bundles are kept in node_modules/.cache and rebuilt only when one of their input files changed (size
 * or modification time), so starting a stack costs a build once per change, not once per start.
 */
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';
import { EVENT_FUNCTIONS, GROUPS } from '../routes.ts';
import {
  BUNDLE_BANNER,
  BUNDLE_FORMAT,
  BUNDLE_MAIN_FIELDS,
  BUNDLE_MINIFY,
  ROOT,
  bundleFileSources,
  BUNDLE_SOURCE_MAP,
  bundleOptions,
  cacheFolder,
  removeStale,
  STAMP_RULE,
  type Stamps,
  stamps,
  unchanged,
} from '../bundling.ts';

/**
 * One folder per Node major: a stack on another Node (the tests run on Lambda's, `npm start` on this machine's) keeps
 * its own bundles beside these, instead of building over them (each build removed the other's, in place).
 */
const NODE_MAJOR = process.versions.node.split('.')[0]!;
export const BUNDLE_CACHE = cacheFolder(`functions-node${NODE_MAJOR}`);
const BUNDLE_FILE = 'index.mjs';
const INPUTS_FILE = 'inputs.json';

export type FunctionName = keyof typeof GROUPS | keyof typeof EVENT_FUNCTIONS;

export interface FunctionBundle {
  name: FunctionName;
  /** The bundle's file: import it and call its `handler`. */
  file: string;
}

/**
 * How bundles are built, and from which checkout: a bundle built another way (say, before minifying), or
 * from another checkout's files (two worktrees sharing one node_modules, whose cache records the other's
 * paths), is built again.
 */
export const buildKey = (root = ROOT) =>
  JSON.stringify({
    root,
    format: BUNDLE_FORMAT,
    mainFields: BUNDLE_MAIN_FIELDS,
    banner: BUNDLE_BANNER,
    minify: BUNDLE_MINIFY,
    sourceMap: BUNDLE_SOURCE_MAP,
    // The output's layout (one file, or an entry with chunks) and the target.
    options: bundleOptions('', BUNDLE_FILE, NODE_MAJOR),
    node: NODE_MAJOR,
    stamps: STAMP_RULE,
  });
const BUILD = buildKey();

/** Whether the bundle in `dir` was built this way, from this checkout's files as they are now. */
export function isCurrent(dir: string): boolean {
  if (!existsSync(join(dir, BUNDLE_FILE)) || !existsSync(join(dir, INPUTS_FILE))) return false;
  try {
    const { build, inputs: recorded } = JSON.parse(readFileSync(join(dir, INPUTS_FILE), 'utf8')) as { build?: string; inputs: Stamps };
    return build === BUILD && unchanged(recorded);
  } catch {
    return false; // an input was removed, or the record is unreadable: build again
  }
}

/**
 * The chunks of the build being replaced, linked into the new one beside its own: an instance of a stack still running
 * loaded the old `index.mjs` and imports its chunks (named by their content) only when a request needs them, from this
 * same folder. Kept for a week after they were built.
 */
export function carryChunksOver(from: string, into: string): void {
  const aWeekAgo = Date.now() - 7 * 24 * 3_600_000;
  let names: string[];
  try {
    names = readdirSync(from);
  } catch {
    return; // no earlier build
  }
  for (const name of names) {
    if (!name.startsWith('chunk-') || existsSync(join(into, name))) continue;
    try {
      if (statSync(join(from, name)).mtimeMs > aWeekAgo) linkSync(join(from, name), join(into, name));
    } catch {
      // removed meanwhile by another build: nothing to keep
    }
  }
}

/** Bundles `entry` (relative to the repository) into the cache under `name`, unless the cached one is current. */
async function buildCached(name: string, entry: string, files: { from: string; as: string }[]): Promise<string> {
  const dir = join(BUNDLE_CACHE, name);
  if (isCurrent(dir)) return join(dir, BUNDLE_FILE);

  // Built beside, then moved into place: two stacks starting at once never see half a bundle. What a process stopped
  // mid-build left beside (an hour old) goes.
  removeStale(BUNDLE_CACHE, (left) => left.startsWith(`${name}.`) && /\.(tmp|old)-\d+-\d+$/.test(left), 3_600_000);
  const staging = `${dir}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(staging, { recursive: true });
  const result = await build(bundleOptions(entry, join(staging, BUNDLE_FILE), NODE_MAJOR));
  const inputs = Object.keys(result.metafile.inputs).map((path) => join(ROOT, path));
  writeFileSync(join(staging, INPUTS_FILE), JSON.stringify({ build: BUILD, inputs: stamps(inputs) }));
  // The files the function reads beside its bundle, linked rather than copied (the explorer is rebuilt in place).
  for (const { from, as } of files) {
    mkdirSync(dirname(join(staging, as)), { recursive: true });
    symlinkSync(from, join(staging, as));
  }
  // Another stack starting beside this one built the same meanwhile: its instances may be loading from it, keep it.
  if (isCurrent(dir)) {
    rmSync(staging, { recursive: true, force: true });
    return join(dir, BUNDLE_FILE);
  }
  carryChunksOver(dir, staging);
  // The old build moved aside, then the new one in its place: a running instance's chunk import misses it for the
  // moment between two renames only, not while a folder is removed.
  const aside = `${dir}.old-${process.pid}-${Date.now()}`;
  try {
    renameSync(dir, aside);
  } catch {
    // no earlier build
  }
  try {
    renameSync(staging, dir);
  } catch (error) {
    // Another stack moved its (equal) build into place first: use that one.
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(join(dir, BUNDLE_FILE))) throw error;
  } finally {
    rmSync(aside, { recursive: true, force: true });
  }
  return join(dir, BUNDLE_FILE);
}

/** Every function's bundle, and the instance bootstrap that runs them, built where missing or stale. */
export async function functionBundles(): Promise<{ functions: Record<FunctionName, FunctionBundle>; worker: string }> {
  const names = [...Object.keys(GROUPS), ...Object.keys(EVENT_FUNCTIONS)] as FunctionName[];
  const [worker, ...built] = await Promise.all([
    buildCached('instance-worker', 'infra/local/instance-worker.ts', []),
    ...names.map(async (name) => {
      const spec = name in GROUPS ? GROUPS[name as keyof typeof GROUPS] : EVENT_FUNCTIONS[name as keyof typeof EVENT_FUNCTIONS];
      return { name, file: await buildCached(name, spec.entry, bundleFileSources('bundleFiles' in spec ? spec : {})) };
    }),
  ]);
  return { worker: worker!, functions: Object.fromEntries(built.map((b) => [b.name, b])) as Record<FunctionName, FunctionBundle> };
}

/** The instance bootstrap alone (the simulator runs the cloud assembly's bundles, not these). */
export function instanceWorkerBundle(): Promise<string> {
  return buildCached('instance-worker', 'infra/local/instance-worker.ts', []);
}
