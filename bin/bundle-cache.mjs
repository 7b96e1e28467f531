// Code run as a command, bundled once into plain JavaScript and kept: the verifier's (cachedBundle) and the local
// stack's launcher (keptBundle).
//
// The verifier's code, bundled once into plain JavaScript and kept, so that `ledger-verify` starts on about 0.1 s of
// CPU: loading its TypeScript through tsx at every start cost about 0.4 s, and bundling its page worker with esbuild
// another 0.27 s (the worker's code is bundled into the kept file).
//
// Kept in node_modules/.cache/ledger-verify with the size and modification time of every source file that went into
// it: a bundle whose sources changed, or that another Node or esbuild made, is built again. Only there, beside the
// code itself and as trusted as it: a shared temporary directory would let another user of the machine plant the code
// an audit runs. A bundle that cannot be built or kept there is not an error: the caller runs the sources as before.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The file a bundle is kept in, and its record of sources; both under one name per root, entry and embedded code. */
function placeOf(entry, embed, folder = 'ledger-verify') {
  const dir = join(ROOT, 'node_modules', '.cache', folder);
  const name = `${entry.replace(/[^a-z0-9]+/gi, '-')}-${createHash('sha256')
    .update(JSON.stringify([ROOT, entry, embed]))
    .digest('hex')
    .slice(0, 12)}`;
  return { dir, code: join(dir, `${name}.mjs`), record: join(dir, `${name}.json`) };
}

const stamp = (file) => {
  const s = statSync(file);
  return `${s.size}:${s.mtimeMs}`;
};

/** npm's record of what it installed, rewritten by every `npm ci` and `npm install` that changes node_modules. */
const INSTALLED = join(ROOT, 'node_modules', '.package-lock.json');

/** The folder of the package a file inside node_modules belongs to (the innermost node_modules), else undefined. */
function packageOf(file) {
  const parts = relative(ROOT, file).split(sep);
  const at = parts.lastIndexOf('node_modules');
  if (at === -1) return undefined;
  const name = parts[at + 1]?.startsWith('@') ? 2 : 1;
  return join(ROOT, ...parts.slice(0, at + 1 + name));
}

/**
 * The files whose stamps stand for a bundle's inputs (`files`, absolute): the repository's own, each; each dependency
 * by its package.json (its name and version as installed, whichever tool installed it), and all of them by npm's record
 * of what it installed when there is one. A bundle of the service reads about 1,600 files inside node_modules (from
 * about 120 packages): stamping each at every check took 0.4-0.5 s of a stack's start (22,000 stamps for its launcher's
 * and its ten functions' bundles, and their records read; now about 3,000) and about 15 ms of every command. A file edited in place
 * inside a dependency is not noticed: delete node_modules/.cache to build again.
 */
export function stampedFiles(files) {
  const own = [];
  const packages = new Set();
  const found = new Map();
  for (const file of files) {
    if (file === INSTALLED) continue;
    const pkg = packageOf(file);
    const manifest = pkg === undefined ? undefined : join(pkg, 'package.json');
    if (manifest !== undefined && !found.has(manifest)) found.set(manifest, existsSync(manifest));
    // A file in a folder of node_modules that is no package (no package.json) is stamped itself.
    if (manifest === undefined || !found.get(manifest)) own.push(file);
    else packages.add(manifest);
  }
  if (packages.size === 0 && !files.includes(INSTALLED)) return own;
  return [...own, ...[...packages].sort(), ...(existsSync(INSTALLED) ? [INSTALLED] : [])];
}

/** The rule stampedFiles follows, named in every record's build key: a record made by an earlier rule is built again. */
export const STAMP_RULE = 'own files each; node_modules by package.json and npm record';

/** Whether a record of stamps names `files` (absolute) as stampedFiles would now: else it was made another way. */
export function stampedAsNow(files) {
  const now = stampedFiles(files);
  const recorded = new Set(files);
  return now.length === recorded.size && now.every((file) => recorded.has(file));
}

/** The record of a build's inputs (relative to the repository, as esbuild's metafile names them): file to stamp. */
export function inputStamps(inputs) {
  const files = stampedFiles(inputs.filter((file) => !file.includes(':')).map((file) => resolve(ROOT, file)));
  return Object.fromEntries(files.map((file) => [relative(ROOT, file), stamp(file)]));
}

/** Whether a record made by inputStamps still holds: stamped as now, and every stamp the same. */
export function inputsUnchanged(recorded) {
  try {
    if (!stampedAsNow(Object.keys(recorded).map((file) => resolve(ROOT, file)))) return false;
    return Object.entries(recorded).every(([file, was]) => stamp(resolve(ROOT, file)) === was);
  } catch {
    return false; // an input was removed
  }
}

function esbuildVersion() {
  return createRequire(join(ROOT, 'package.json'))('esbuild/package.json').version;
}

/** A kept bundle still made from the sources as they are now, by this Node and this esbuild: its path; else undefined. */
function fresh(place, versions, entry) {
  try {
    const record = JSON.parse(readFileSync(place.record, 'utf8'));
    // A record that does not name its entry among its inputs (say, none at all) would never go stale: built again.
    if (record.versions !== versions || record.inputs?.[entry] === undefined || !inputsUnchanged(record.inputs)) return undefined;
    statSync(place.code);
    return place.code;
  } catch {
    return undefined;
  }
}

/**
 * The path of a plain-JavaScript bundle of `entry` (relative to the repository), built and kept if none is fresh;
 * `embed` names bundles of other entries whose code `entry` reads as a constant (the page worker's). Undefined when
 * no bundle can be had (esbuild missing, node_modules not writable): the caller runs the TypeScript itself.
 */
export function cachedBundle(entry, embed = {}) {
  let versions;
  try {
    versions = `node ${process.version}, esbuild ${esbuildVersion()}, ${STAMP_RULE}`;
  } catch {
    return undefined;
  }
  const place = placeOf(entry, embed);
  const found = fresh(place, versions, entry);
  if (found) return found;
  let built;
  try {
    built = build(entry, embed);
  } catch {
    return undefined;
  }
  try {
    mkdirSync(place.dir, { recursive: true });
    // Written aside and renamed: two verifiers starting at once each keep a whole bundle, never half of one.
    const suffix = `.${process.pid}.tmp`;
    writeFileSync(place.code + suffix, built.code);
    writeFileSync(place.record + suffix, JSON.stringify({ versions, inputs: built.inputs }));
    renameSync(place.code + suffix, place.code);
    renameSync(place.record + suffix, place.record);
    return place.code;
  } catch {
    return undefined; // not writable: the sources are run
  }
}

/**
 * `entry` bundled as an ES module (with `embed`'s entries bundled into constants): `{code, inputs}`, the inputs' stamps.
 * The verifier's package (verifier/build.mjs) is built by it too.
 */
export function build(entry, embed) {
  const { buildSync } = createRequire(join(ROOT, 'package.json'))('esbuild');
  const inputs = {};
  const define = {};
  const bundle = (path, format, defines) => {
    const result = buildSync({
      entryPoints: [join(ROOT, path)],
      absWorkingDir: ROOT,
      bundle: true,
      platform: 'node',
      format,
      target: 'node20',
      write: false,
      metafile: true,
      logLevel: 'silent',
      define: defines,
      // Modules a bundle cannot carry (esbuild's own binary): loaded from node_modules when used at all.
      external: ['esbuild'],
      ...(format === 'esm'
        ? { banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" } }
        : {}),
    });
    Object.assign(inputs, inputStamps(Object.keys(result.metafile.inputs)));
    return result.outputFiles[0].text;
  };
  for (const [constant, path] of Object.entries(embed)) define[constant] = JSON.stringify(bundle(path, 'cjs', {}));
  return { code: bundle(entry, 'esm', define), inputs };
}

/**
 * The launcher's kind of bundle: the path of a plain-JavaScript bundle of `entry` kept in node_modules/.cache/`folder`,
 * built (asynchronously) if none is fresh; undefined when none can be had (the caller runs the sources through tsx).
 *
 * Each of the repository's own modules keeps its `import.meta.url` (its source file's URL, written into the bundle), so
 * that paths a module finds from where it lives (the repository's root, files beside it) are the same bundled or not;
 * and a module's "run me alone" check (its URL against the process's script) never mistakes the bundle for itself.
 */
export async function keptBundle(entry, folder) {
  let versions;
  try {
    versions = `node ${process.version}, esbuild ${esbuildVersion()}, sources' own import.meta.url, ${STAMP_RULE}`;
  } catch {
    return undefined;
  }
  // One place per Node major: the simulation's seeds run on Lambda's Node beside commands run on this one, and
  // each would otherwise rebuild the other's bundle.
  const place = placeOf(entry, { node: process.versions.node.split('.')[0] }, folder);
  const found = fresh(place, versions, entry);
  if (found) return found;
  let built;
  try {
    built = await buildKeepingUrls(entry);
  } catch (error) {
    process.stderr.write(`Could not bundle ${entry} (${error.message.split('\n')[0]}); running its sources instead\n`);
    return undefined;
  }
  try {
    mkdirSync(place.dir, { recursive: true });
    const suffix = `.${process.pid}.tmp`;
    writeFileSync(place.code + suffix, built.code);
    writeFileSync(place.record + suffix, JSON.stringify({ versions, inputs: built.inputs }));
    renameSync(place.code + suffix, place.code);
    renameSync(place.record + suffix, place.record);
    return place.code;
  } catch {
    return undefined;
  }
}

async function buildKeepingUrls(entry) {
  const { build, transform } = createRequire(join(ROOT, 'package.json'))('esbuild');
  const { readFile } = await import('node:fs/promises');
  const ownUrl = {
    name: 'own-import-meta-url',
    setup(on) {
      // The repository's TypeScript and JavaScript, not its dependencies' (they find packages from node_modules,
      // which the kept bundle sits inside).
      on.onLoad({ filter: /\.(ts|mts|mjs|js)$/ }, async ({ path }) => {
        if (path.includes('/node_modules/') || !path.startsWith(`${ROOT}/`)) return undefined;
        const source = await readFile(path, 'utf8');
        if (!source.includes('import.meta.url')) return undefined;
        // As a define, not a text replacement: only the expression itself, never the words inside a string.
        const { code } = await transform(source, {
          loader: path.endsWith('ts') ? 'ts' : 'js',
          format: 'esm',
          define: { 'import.meta.url': JSON.stringify(pathToFileURL(path).href) },
          sourcefile: path,
        });
        return { contents: code, loader: 'js', resolveDir: dirname(path) };
      });
    },
  };
  const result = await build({
    entryPoints: [join(ROOT, entry)],
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node.split('.')[0]}`,
    write: false,
    metafile: true,
    logLevel: 'silent',
    plugins: [ownUrl],
    // Modules a bundle cannot carry (esbuild's own binary, tsx's loader): loaded from node_modules when used at all.
    external: ['esbuild', 'tsx', 'tsx/*'],
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  });
  return { code: result.outputFiles[0].text, inputs: inputStamps(Object.keys(result.metafile.inputs)) };
}
