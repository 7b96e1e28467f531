/**
 * How a function is bundled, written once for the cloud stack (NodejsFunction) and the local instance
 * pool, so that the local stack runs the same kind of artefact Lambda runs: one ESM file per function,
 * every dependency inside (the AWS SDK too), and the files a function reads beside it.
 */
import { createRequire } from 'node:module';
import type { GroupSpec } from '../shared/api/routes.ts';

export const ROOT = new URL('../', import.meta.url).pathname;
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
/** ESM bundles still meet CommonJS dependencies that call require(). */
export const BUNDLE_BANNER = "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

/** The files a function reads beside its bundle: where each comes from, and its name there. */
export function bundleFileSources(spec: Pick<GroupSpec, 'bundleFiles'>): { from: string; as: string }[] {
  return (spec.bundleFiles ?? []).map((file) => ({ from: 'module' in file ? requireFromRoot.resolve(file.module) : `${ROOT}${file.path}`, as: file.as }));
}
