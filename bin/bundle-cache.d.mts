/** bin/bundle-cache.mjs: the path of a kept plain-JavaScript bundle of `entry`, or undefined when none can be had. */
export function cachedBundle(entry: string, embed?: Record<string, string>): string | undefined;
/** bin/bundle-cache.mjs: the path of the kept bundle of `entry` (the launcher's kind) in node_modules/.cache/`folder`, or undefined. */
export function keptBundle(entry: string, folder: string): Promise<string | undefined>;
/** bin/bundle-cache.mjs: the files whose stamps stand for a bundle's inputs (a dependency's by its package.json and npm's record of what it installed). */
export function stampedFiles(files: string[]): string[];
/** bin/bundle-cache.mjs: whether a record of stamps names `files` as stampedFiles would now. */
export function stampedAsNow(files: string[]): boolean;
/** bin/bundle-cache.mjs: a kept bundle's record of its inputs (relative path to stamp). */
export function inputStamps(inputs: string[]): Record<string, string>;
/** bin/bundle-cache.mjs: whether a record made by inputStamps still holds. */
export function inputsUnchanged(recorded: Record<string, string>): boolean;
/** bin/bundle-cache.mjs: the rule stampedFiles follows, named in every record's build key. */
export const STAMP_RULE: string;
