/** bin/bundle-cache.mjs: the path of a kept plain-JavaScript bundle of `entry`, or undefined when none can be had. */
export function cachedBundle(entry: string, embed?: Record<string, string>): string | undefined;
/** bin/bundle-cache.mjs: the path of the kept bundle of `entry` (the launcher's kind) in node_modules/.cache/`folder`, or undefined. */
export function keptBundle(entry: string, folder: string): Promise<string | undefined>;
/** bin/bundle-cache.mjs: the files whose stamps stand for a bundle's inputs (npm's record of what it installed for those in node_modules). */
export function stampedFiles(files: string[]): string[];
/** bin/bundle-cache.mjs: whether a record of stamps names `files` as stampedFiles would now. */
export function stampedAsNow(files: string[]): boolean;
